"""arbor: decision forests natively on Apache Arrow.

scikit-learn estimators over pyarrow, pandas, polars and NumPy data
(``RandomForestClassifier``, ``RandomForestRegressor``,
``GradientBoostingClassifier``, ``GradientBoostingRegressor``,
``GradientBoostingRanker``), ``Model`` for
arbor's model files (the same bytes as the ``arbor`` command line and SQL),
``Dataset`` and ``cv`` for rows binned once and fitted many times (a
Parquet path or pyarrow dataset binned as it is read), and
``register(ctx)``, which gives a datafusion-python ``SessionContext`` arbor's
SQL functions (``train_forest``, ``predict_forest``, ...).
"""

from arbor._arbor import OPTION_KEYS, Model, __version__
from arbor.dataset import Dataset, cv
from arbor.estimators import (
    GradientBoostingClassifier,
    GradientBoostingRanker,
    GradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from arbor.sql import register

__all__ = [
    "OPTION_KEYS",
    "Dataset",
    "GradientBoostingClassifier",
    "GradientBoostingRanker",
    "GradientBoostingRegressor",
    "Model",
    "RandomForestClassifier",
    "RandomForestRegressor",
    "__version__",
    "cv",
    "register",
]
