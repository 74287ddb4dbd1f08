"""scikit-learn estimators over arbor's forests and boosted ensembles.

Parameters are arbor's option names (``docs/parameters.md``, ``arbor train --set``,
SQL's options), written out as keyword arguments so that ``get_params``,
``set_params`` and ``clone`` see them; the defaults are arbor's (``None``
where arbor's default depends on the task), and only parameters that differ
from their default reach arbor, as only the keys written reach ``arbor train``. The one rename is ``lambda_`` for
boosting's ``lambda`` (a Python keyword). A fitted estimator holds an
``arbor.Model`` in ``model_``: the same bytes the command line and SQL make
from the same rows and options, and pickling goes through those bytes.
"""

from __future__ import annotations

import inspect
import os
import warnings

import numpy as np
import pyarrow as pa
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils import assert_all_finite
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d

from arbor import _arbor, arrow_data
from arbor.dataset import Dataset


def _option_value(value) -> str:
    """A Python parameter value as arbor's option text."""
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, float | np.floating):
        return repr(float(value))
    return str(value)


def _monotone_text(value, feature_names) -> str:
    """``monotone`` as arbor's option text (``name:+1,other:-1``): a mapping
    of feature names to directions, a sequence of one direction per feature
    in column order (as scikit-learn's ``monotonic_cst``), or the text itself."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        pairs = value.items()
    else:
        directions = list(value)
        if len(directions) != len(feature_names):
            msg = f"monotone has {len(directions)} directions; X has {len(feature_names)} features"
            raise ValueError(msg)
        pairs = zip(feature_names, directions, strict=True)
    text = []
    for name, direction in pairs:
        if direction not in (-1, 0, 1):
            msg = f"monotone: feature {name!r} has direction {direction!r}; expected -1, 0 or 1"
            raise ValueError(msg)
        if direction != 0:
            text.append(f"{name}:{int(direction):+d}")
    return ",".join(text)


def _init_model(init_model) -> _arbor.Model | None:
    """The model ``fit(..., init_model=)`` continues: an ``arbor.Model``, a
    fitted arbor estimator's, or one read from a path or from bytes."""
    if init_model is None or isinstance(init_model, _arbor.Model):
        return init_model
    if isinstance(init_model, BaseEstimator):
        check_is_fitted(init_model)
        return init_model.model_
    if isinstance(init_model, (bytes, bytearray, memoryview)):
        return _arbor.Model.from_bytes(bytes(init_model))
    if isinstance(init_model, (str, os.PathLike)):
        return _arbor.Model.load(os.fspath(init_model))
    msg = f"init_model takes an arbor.Model, a fitted arbor estimator, a path or bytes, not {type(init_model).__name__}"
    raise TypeError(msg)


def _unique_name(preferred: str | None, fallback: str, taken: set[str]) -> str:
    """A column name for the label or weights that no feature has."""
    name = preferred if preferred and preferred not in taken else fallback
    while name in taken:
        name += "_"
    return name


def _query_ids(group, rows: int) -> pa.Array:
    """A ranker's ``group``: one integer query id per row (XGBoost's ``qid``)."""
    ids = np.asarray(group)
    if ids.ndim != 1 or len(ids) != rows:
        msg = (
            f"group has shape {ids.shape}; expected one query id per row ({rows},). "
            "LightGBM's group sizes become ids with np.repeat(np.arange(len(sizes)), sizes)"
        )
        raise ValueError(msg)
    if ids.dtype.kind not in "iu":
        msg = f"group holds {ids.dtype} values; query ids must be integers"
        raise ValueError(msg)
    return pa.array(ids)


def _labels_of(X, y):
    """``y``, or the labels of a dataset given without one."""
    if y is None and isinstance(X, Dataset):
        return X.y
    return y


class _ArborEstimator(BaseEstimator):
    """What every arbor estimator shares: options, data checks, fit, predict."""

    _algorithm: str
    _task: str

    def _options(self, feature_names=()) -> list[tuple[str, str]]:
        """The options given: parameters that differ from their default, as
        ``arbor train --set`` gets only the keys a user writes (arbor checks
        given keys against each other, e.g. ``validation_fraction`` needs
        ``early_stopping_rounds``); ``feature_names`` place a ``monotone``
        given as one direction per column."""
        defaults = {
            name: p.default for name, p in inspect.signature(type(self).__init__).parameters.items() if name != "self"
        }
        options = [("algorithm", self._algorithm), ("task", self._task)]
        for name, value in self.get_params(deep=False).items():
            default = defaults.get(name)
            if value is None or (type(value) is type(default) and value == default):
                continue
            if name == "interaction_constraints" and not isinstance(value, str):
                value = ",".join("[" + ",".join(map(str, group)) + "]" for group in value)
            if name == "class_weight" and isinstance(value, dict):
                value = ",".join(f"{label}:{_option_value(weight)}" for label, weight in value.items())
            if name == "monotone":
                value = _monotone_text(value, list(feature_names))
                if value:
                    options.append((name, value))
                continue
            options.append(("lambda" if name == "lambda_" else name, _option_value(value)))
        return options

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "model_")

    # -- data -------------------------------------------------------------

    def _features(self, X, *, reset: bool) -> pa.Table | pa.RecordBatch:
        """``X`` as Arrow, checked against (or recording) the fitted features."""
        name = type(self).__name__
        data, names = arrow_data.features(X, name)
        n = data.num_columns
        if reset:
            self.n_features_in_ = n
            if names is not None:
                self.feature_names_in_ = np.asarray(names, dtype=object)
            elif hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
            return data
        fitted = getattr(self, "feature_names_in_", None)
        if fitted is not None and names is not None:
            missing = [f for f in fitted if f not in names]
            if missing:
                msg = (
                    "The feature names should match those that were passed during fit.\n"
                    f"Feature names seen at fit time, yet now missing: {', '.join(missing)}"
                )
                raise ValueError(msg)
            return data
        if n != self.n_features_in_:
            msg = f"X has {n} features, but {name} is expecting {self.n_features_in_} features as input."
            raise ValueError(msg)
        if fitted is not None:
            warnings.warn(f"X does not have valid feature names, but {name} was fitted with feature names", UserWarning)
            return data.rename_columns(list(fitted))
        if names is not None:
            warnings.warn(f"X has feature names, but {name} was fitted without feature names", UserWarning)
            return data.rename_columns([f"x{j}" for j in range(n)])
        return data

    def _label(self, y) -> pa.Array:
        raise NotImplementedError

    def fit(self, X, y=None, sample_weight=None, init_model=None):
        """Trains on ``X`` (pyarrow, pandas, polars or NumPy; strings are
        categorical, NaN/None missing) against ``y``, weighting rows by
        ``sample_weight``; or on an ``arbor.Dataset``, which carries its label
        and weights and was binned once. The GIL is released while arbor trains.

        Gradient boosting continues from ``init_model`` when given (an
        ``arbor.Model``, a fitted arbor estimator, a model file's path or its
        bytes): its rounds come first, then ``n_rounds`` more, trained on the
        model's bins, features, classes and loss."""
        return self._fit(X, y, sample_weight, init_model, group=None)

    def _fit(self, X, y, sample_weight, init_model, group):
        """``fit``, with a ranker's query ids (``group``) when given."""
        init_model = _init_model(init_model)
        if isinstance(X, Dataset):
            if group is not None:
                msg = "an arbor.Dataset carries its query ids (Dataset(..., group=column)): fit(dataset) takes no group"
                raise ValueError(msg)
            if init_model is not None:
                msg = (
                    "init_model trains on the model's bins, and an arbor.Dataset is binned on its own; "
                    "pass the rows as a table"
                )
                raise ValueError(msg)
            return self._fit_dataset(X, y, sample_weight)
        if y is None:
            msg = f"{type(self).__name__} requires y to be passed, but the target y is None (only an arbor.Dataset carries its own)"
            raise ValueError(msg)
        data = self._features(X, reset=True)
        label = self._label(y)
        rows = data.num_rows
        if len(label) != rows:
            msg = f"Found input variables with inconsistent numbers of samples: [{rows}, {len(label)}]"
            raise ValueError(msg)
        taken = set(data.schema.names)
        label_name = _unique_name(arrow_data.series_name(y), "label", taken)
        weight = None
        if sample_weight is not None:
            weight = np.asarray(sample_weight, dtype=np.float64)
            if weight.ndim == 0:
                weight = np.full(rows, float(weight))
            if weight.shape != (rows,):
                msg = f"sample_weight has shape {weight.shape}; expected ({rows},)"
                raise ValueError(msg)
            weight = pa.array(weight)
        weight_name = _unique_name("weight", "weight", taken | {label_name})
        group_name = _unique_name("group", "group", taken | {label_name, weight_name})
        self.model_ = _arbor.train(
            data,
            label,
            options=self._options(data.schema.names),
            weight=weight,
            label_name=label_name,
            weight_name=weight_name,
            init_model=init_model,
            group=None if group is None else _query_ids(group, rows),
            group_name=group_name,
        )
        self._after_fit(label)
        return self

    def _fit_dataset(self, dataset: Dataset, y, sample_weight):
        """Trains on binned rows; the label and weights are the dataset's
        (a ``y`` given, as scikit-learn's searches give it, must be them)."""
        if sample_weight is not None:
            msg = "an arbor.Dataset carries its weights: fit(dataset) takes no sample_weight"
            raise ValueError(msg)
        if y is not None and not np.array_equal(np.asarray(y), dataset.y):
            msg = "fit(dataset, y): y is not the dataset's label column; pass dataset.y (or no y)"
            raise ValueError(msg)
        self.model_ = dataset.train(self._options(dataset.feature_names))
        self._binning = dataset._rows.binning
        self.n_features_in_ = len(dataset.feature_names)
        self.feature_names_in_ = np.asarray(dataset.feature_names, dtype=object)
        self._after_fit(pa.array(dataset.y) if getattr(self, "oob", None) else None)
        return self

    def _after_fit(self, label: pa.Array | None) -> None:
        pass

    def predict(self, X) -> np.ndarray:
        """Predictions for every row of ``X`` (or of an ``arbor.Dataset`` this
        model was fitted on the bins of), as a NumPy array (classes as in ``classes_``)."""
        check_is_fitted(self)
        if isinstance(X, Dataset):
            return self._predict_binned(X, proba=False).to_numpy(zero_copy_only=False)
        data = self._features(X, reset=False)
        return self.model_.predict(data).to_numpy(zero_copy_only=False)

    def _predict_binned(self, dataset: Dataset, *, proba: bool) -> pa.Array:
        """Predictions for binned rows: only a model fitted on their bins
        reads a bin's values as the raw ones would go."""
        if getattr(self, "_binning", None) != dataset._rows.binning:
            msg = (
                "predicting an arbor.Dataset needs a model fitted on its bins (on it, or rows taken from it); "
                "pass this model the rows as a table instead"
            )
            raise ValueError(msg)
        return _arbor.predict_binned(self.model_, dataset._rows, proba=proba)


    def predict_contributions(self, X) -> np.ndarray:
        """Each feature's SHAP contribution to each row's raw score, then the bias (exact TreeSHAP).

        Shape ``(n_rows, n_outputs * (n_features + 1))``, LightGBM's ``pred_contrib``
        layout: one block of features-then-bias per output explained (the raw score
        for regression and two classes, each class's for more); each block sums to
        that output's raw score. ``model_.contribution_names`` names the columns.
        """
        check_is_fitted(self)
        data = self._features(X, reset=False)
        contributions = self.model_.predict_contributions(data)
        width = len(self.model_.contribution_names)
        return contributions.flatten().to_numpy(zero_copy_only=False).reshape(len(contributions), width)

    @property
    def feature_importances_(self) -> np.ndarray:
        """The model's feature importances (``importance`` option), in feature order."""
        check_is_fitted(self)
        importance = self.model_.importance
        if importance is None:
            msg = "feature importances were not computed (importance=none)"
            raise AttributeError(msg)
        return np.asarray(importance)

    def __getstate__(self):
        state = self.__dict__.copy()
        if "model_" in state:
            state["model_"] = bytes(state["model_"])
        return state

    def __setstate__(self, state):
        if "model_" in state:
            state["model_"] = _arbor.Model.from_bytes(state["model_"])
        self.__dict__.update(state)


class _Classifier(ClassifierMixin, _ArborEstimator):
    _task = "classification"

    def score(self, X, y=None, sample_weight=None) -> float:
        """Accuracy on ``X`` against ``y``; an ``arbor.Dataset`` brings its own labels."""
        return ClassifierMixin.score(self, X, _labels_of(X, y), sample_weight=sample_weight)

    def _label(self, y) -> pa.Array:
        values = column_or_1d(np.asarray(y), warn=True)
        check_classification_targets(values)
        if values.dtype.kind == "f":
            values = values.astype(np.int64)
        return pa.array(values)

    def _after_fit(self, label: pa.Array | None) -> None:
        self.classes_ = self.model_.classes.to_numpy(zero_copy_only=False)
        if getattr(self, "oob", None):
            self.oob_score_ = 1.0 - self.model_.oob_error

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, one row per row of ``X``, columns in ``classes_`` order."""
        check_is_fitted(self)
        if isinstance(X, Dataset):
            proba = self._predict_binned(X, proba=True)
        else:
            proba = self.model_.predict_proba(self._features(X, reset=False))
        width = len(self.classes_)
        return proba.flatten().to_numpy(zero_copy_only=False).reshape(len(proba), width)


class _Regressor(RegressorMixin, _ArborEstimator):
    _task = "regression"

    def score(self, X, y=None, sample_weight=None) -> float:
        """R² on ``X`` against ``y``; an ``arbor.Dataset`` brings its own labels."""
        return RegressorMixin.score(self, X, _labels_of(X, y), sample_weight=sample_weight)

    def _label(self, y) -> pa.Array:
        values = column_or_1d(np.asarray(y), warn=True)
        if values.dtype.kind not in "iuf":
            try:
                values = values.astype(np.float64)
            except (TypeError, ValueError) as e:
                msg = f"regression needs a numeric label; got {values.dtype}"
                raise ValueError(msg) from e
        assert_all_finite(values, input_name="y")
        return pa.array(values)

    def _after_fit(self, label: pa.Array | None) -> None:
        if getattr(self, "oob", None) and label is not None:
            y = label.to_numpy(zero_copy_only=False).astype(np.float64)
            variance = float(np.var(y))
            self.oob_score_ = 1.0 - self.model_.oob_error / variance if variance > 0 else float("nan")


class _Forest(_ArborEstimator):
    """A random forest's parameters (docs/algorithms.md, "Random forest"), by arbor's names."""

    _algorithm = "random-forest"

    def __init__(
        self,
        n_trees=100,
        *,
        max_features=None,
        bootstrap=True,
        sample_fraction=1.0,
        split_method="hist",
        splitter="best",
        max_bins=256,
        min_bin_size=5,
        bin_boundaries="quantile",
        max_depth=0,
        max_leaf_nodes=0,
        min_samples_leaf=None,
        min_samples_split=2,
        min_samples_category=10,
        category_penalty=24.0,
        min_weight_fraction_leaf=0.0,
        impurity_threshold=0.0,
        min_impurity_decrease=0.0,
        criterion=None,
        voting="weighted",
        oob=False,
        monotone=None,
        interaction_constraints=None,
        class_weight=None,
        importance="mdi",
        seed=777,
    ):
        self.n_trees = n_trees
        self.max_features = max_features
        self.bootstrap = bootstrap
        self.sample_fraction = sample_fraction
        self.split_method = split_method
        self.splitter = splitter
        self.max_bins = max_bins
        self.min_bin_size = min_bin_size
        self.bin_boundaries = bin_boundaries
        self.max_depth = max_depth
        self.max_leaf_nodes = max_leaf_nodes
        self.min_samples_leaf = min_samples_leaf
        self.min_samples_split = min_samples_split
        self.min_samples_category = min_samples_category
        self.category_penalty = category_penalty
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.impurity_threshold = impurity_threshold
        self.min_impurity_decrease = min_impurity_decrease
        self.criterion = criterion
        self.voting = voting
        self.oob = oob
        self.monotone = monotone
        self.interaction_constraints = interaction_constraints
        self.class_weight = class_weight
        self.importance = importance
        self.seed = seed


class _Boosting(_ArborEstimator):
    """Gradient boosting's parameters (docs/algorithms.md, "Gradient boosting"), by arbor's names (``lambda_`` is ``lambda``)."""

    _algorithm = "gradient-boosting"

    def __init__(
        self,
        n_rounds=50,
        *,
        max_depth=6,
        learning_rate=0.3,
        min_split_loss=0.0,
        lambda_=1.0,
        sample_fraction=1.0,
        max_features=None,
        min_samples_leaf=5,
        min_samples_category=10,
        category_penalty=1.0,
        split_method="hist",
        max_bins=256,
        min_bin_size=5,
        bin_boundaries="quantile",
        loss=None,
        alpha=None,
        huber_delta=None,
        tweedie_power=None,
        ndcg_at=None,
        lambdarank_truncation_level=None,
        sigmoid=None,
        ndcg_exp_gain=None,
        use_quantized_grad=False,
        num_grad_quant_bins=4,
        quant_train_renew_leaf=False,
        monotone=None,
        interaction_constraints=None,
        class_weight=None,
        scale_pos_weight=1.0,
        early_stopping_rounds=0,
        validation_fraction=0.1,
        importance="mdi",
        seed=777,
    ):
        self.n_rounds = n_rounds
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.min_split_loss = min_split_loss
        self.lambda_ = lambda_
        self.sample_fraction = sample_fraction
        self.max_features = max_features
        self.min_samples_leaf = min_samples_leaf
        self.min_samples_category = min_samples_category
        self.category_penalty = category_penalty
        self.split_method = split_method
        self.max_bins = max_bins
        self.min_bin_size = min_bin_size
        self.bin_boundaries = bin_boundaries
        self.loss = loss
        self.alpha = alpha
        self.huber_delta = huber_delta
        self.tweedie_power = tweedie_power
        self.ndcg_at = ndcg_at
        self.lambdarank_truncation_level = lambdarank_truncation_level
        self.sigmoid = sigmoid
        self.ndcg_exp_gain = ndcg_exp_gain
        self.use_quantized_grad = use_quantized_grad
        self.num_grad_quant_bins = num_grad_quant_bins
        self.quant_train_renew_leaf = quant_train_renew_leaf
        self.monotone = monotone
        self.interaction_constraints = interaction_constraints
        self.class_weight = class_weight
        self.scale_pos_weight = scale_pos_weight
        self.early_stopping_rounds = early_stopping_rounds
        self.validation_fraction = validation_fraction
        self.importance = importance
        self.seed = seed

    def _early_stopping(self) -> tuple[dict, str]:
        """What early stopping saw (the model's ``info()``) and the loss's metric."""
        check_is_fitted(self)
        boosting = self.model_.info()["boosting"]
        if boosting["early_stopping"] is None:
            msg = "the model was trained without early stopping (early_stopping_rounds=0)"
            raise AttributeError(msg)
        return boosting["early_stopping"], boosting["metric"]

    @property
    def best_iteration_(self) -> int:
        """The rounds early stopping kept (the round of the lowest validation loss, from 1)."""
        return self._early_stopping()[0]["best_round"]

    @property
    def evals_result_(self) -> dict:
        """The loss after each round early stopping ran, the rounds past the best
        included, as LightGBM's estimators give it:
        ``{"training": {metric: [...]}, "validation": {metric: [...]}}``."""
        stopped, metric = self._early_stopping()
        curve = stopped["curve"]
        if curve is None:
            msg = "the model predates the recorded training curve (model format 5)"
            raise AttributeError(msg)
        return {"training": {metric: curve["training"]}, "validation": {metric: curve["validation"]}}


class RandomForestClassifier(_Classifier, _Forest):
    """Random forest classification (oneDAL's decision forest; arbor's defaults).

    ``oob=True`` sets ``oob_score_`` (out-of-bag accuracy).
    """


class RandomForestRegressor(_Regressor, _Forest):
    """Random forest regression (oneDAL's decision forest; arbor's defaults).

    ``oob=True`` sets ``oob_score_``: the out-of-bag R², from arbor's
    out-of-bag mean squared error and the variance of ``y``.
    """


class GradientBoostingClassifier(_Classifier, _Boosting):
    """Gradient boosted trees for classification (logistic for two classes, softmax for more).

    ``class_weight`` (``"balanced"`` or a dict of class to weight, as
    scikit-learn's) multiplies each row's ``sample_weight`` by its class's;
    ``scale_pos_weight`` weighs the second of two classes (XGBoost's).
    """


class GradientBoostingRegressor(_Regressor, _Boosting):
    """Gradient boosted trees for regression (squared loss unless ``loss`` says otherwise).

    ``loss`` takes ``quantile`` (with ``alpha``), ``huber`` (with
    ``huber_delta``), ``absolute``, ``poisson``, ``gamma`` or ``tweedie``
    (with ``tweedie_power``); the log-link losses predict ``exp`` of the raw
    score, which ``predict_contributions`` explains.
    """


class GradientBoostingRanker(_Boosting):
    """Gradient boosted trees for learning to rank (LambdaMART, ``loss=lambdarank``).

    ``fit(X, y, group=ids)`` takes relevance grades ``y`` (whole numbers 0 to
    30) and one integer query id per row in ``group`` (XGBoost's ``qid``; a
    query's rows need not be contiguous); the trees push each query's rows
    into the order of their grades, weighing pairs by what swapping them
    would change NDCG by. ``predict`` gives the raw score that ranks rows
    within a query (higher first); ``score`` the mean NDCG@``ndcg_at`` (10
    unless set), which early stopping also watches, on whole queries held out.
    """

    _task = "regression"

    def fit(self, X, y=None, group=None, sample_weight=None, init_model=None):
        """Trains on ``X`` against grades ``y``, ranked within the queries of
        ``group``; or on an ``arbor.Dataset`` binned with ``group=``, which
        carries its grades and queries."""
        if group is None and not isinstance(X, Dataset):
            msg = "GradientBoostingRanker.fit needs group=: one query id per row"
            raise ValueError(msg)
        return self._fit(X, y, sample_weight, init_model, group=group)

    def _options(self, feature_names=()) -> list[tuple[str, str]]:
        options = super()._options(feature_names)
        if self.loss is None:
            options.append(("loss", "lambdarank"))
        return options

    def _label(self, y) -> pa.Array:
        values = column_or_1d(np.asarray(y), warn=True)
        if values.dtype.kind not in "iuf":
            msg = f"ranking needs numeric relevance grades; got {values.dtype}"
            raise ValueError(msg)
        return pa.array(values.astype(np.float64))

    def score(self, X, y, group) -> float:
        """Mean NDCG@``ndcg_at`` of the queries of ``group`` ranked by ``predict(X)``
        (gain ``2^y - 1``, or ``y`` with ``ndcg_exp_gain=False``; a query with
        nothing relevant counts 1, as LightGBM's)."""
        scores = self.predict(X)
        grades = np.asarray(y, dtype=np.float64)
        ids = np.asarray(group)
        k = self.ndcg_at or 10
        total = []
        for query in np.unique(ids):
            rows = np.flatnonzero(ids == query)
            gains = grades[rows] if self.ndcg_exp_gain is False else np.exp2(grades[rows]) - 1.0
            order = np.argsort(-scores[rows], kind="stable")
            discount = 1.0 / np.log2(np.arange(2, min(k, len(rows)) + 2))
            ideal = np.sum(np.sort(gains)[::-1][: len(discount)] * discount)
            dcg = np.sum(gains[order][: len(discount)] * discount)
            total.append(1.0 if ideal <= 0 else dcg / ideal)
        return float(np.mean(total))
