"""Learning to rank from Python: ``GradientBoostingRanker.fit(X, y, group=ids)``
on the bundled LETOR sample ranks as ``arbor train --group`` does (the same
scores), over pandas, polars and pyarrow alike; rows of a query need not be
contiguous; ``score`` is NDCG@k; bad query ids are clear errors."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import arbor
from conftest import DATA, read

OPTIONS = dict(n_rounds=20, learning_rate=0.1)


@pytest.fixture(scope="module")
def rank():
    return read("rank_train"), read("rank_test")


def parts(table: pa.Table):
    """Features, grades and query ids of a ranking table."""
    return table.drop_columns(["label", "query"]), table.column("label"), table.column("query").to_numpy()


def test_ranker_scores_as_the_command_line_does(rank, arbor_cli, tmp_path):
    train, test = rank
    X, y, query = parts(train)
    Xt, yt, qt = parts(test)
    ranker = arbor.GradientBoostingRanker(**OPTIONS).fit(X, y, group=query)
    assert ranker.model_.info()["boosting"]["loss"] == "lambdarank"
    # The command line on the same rows, the grades as floats (as Python gives them).
    file = tmp_path / "train.parquet"
    pq.write_table(train.set_column(train.schema.get_field_index("label"), "label", pc.cast(y, pa.float64())), file)
    model = tmp_path / "cli.arbor"
    arbor_cli("train", "--input", str(file), "--label", "label", "--group", "query", "--output", str(model),
              "--set", "n_rounds=20", "--set", "learning_rate=0.1")
    cli = arbor.Model.load(str(model))
    np.testing.assert_array_equal(ranker.predict(Xt), cli.predict(Xt).to_numpy())
    # A model that ranks: far above the file's own order (NDCG@10 0.5736).
    assert ranker.score(Xt, yt, qt) > 0.68
    # pandas and polars rows, queries interleaved: the same model.
    order = np.argsort(np.arange(len(query)) % 7, kind="stable")
    shuffled = arbor.GradientBoostingRanker(**OPTIONS).fit(
        X.take(order).to_pandas(), y.take(order).to_pandas(), group=query[order]
    )
    assert bytes(shuffled.model_) == bytes(ranker.model_)
    polars = pytest.importorskip("polars")
    again = arbor.GradientBoostingRanker(**OPTIONS).fit(polars.from_arrow(X), polars.from_arrow(y), group=query)
    assert bytes(again.model_) == bytes(ranker.model_)
    # sigmoid (LightGBM's keyword) reaches the trainer: other trees, the value recorded.
    steep = arbor.GradientBoostingRanker(sigmoid=2.0, **OPTIONS).fit(X, y, group=query)
    assert steep.model_.info()["params"]["sigmoid"] == "2"
    assert not np.array_equal(steep.predict(Xt), ranker.predict(Xt))
    # ndcg_exp_gain=False (XGBoost's keyword): linear gains, in training and in score.
    linear = arbor.GradientBoostingRanker(ndcg_exp_gain=False, **OPTIONS).fit(X, y, group=query)
    assert linear.model_.info()["params"]["ndcg_exp_gain"] == "false"
    assert 0.6 < linear.score(Xt, yt, qt) != ranker.score(Xt, yt, qt)


def test_early_stopping_watches_ndcg_on_held_out_queries(rank):
    X, y, query = parts(rank[0])
    ranker = arbor.GradientBoostingRanker(
        n_rounds=300, learning_rate=0.1, early_stopping_rounds=10, validation_fraction=0.2, ndcg_at=5
    ).fit(X, y, group=query)
    assert ranker.best_iteration_ < 300
    validation = ranker.evals_result_["validation"]["1-ndcg@5"]
    assert min(validation) == pytest.approx(validation[ranker.best_iteration_ - 1])


def test_bad_queries_are_clear_errors(rank):
    X, y, query = parts(rank[0].slice(0, 300))
    with pytest.raises(ValueError, match="needs group="):
        arbor.GradientBoostingRanker(**OPTIONS).fit(X, y)
    with pytest.raises(ValueError, match=r"expected one query id per row \(300,\).*np.repeat"):
        arbor.GradientBoostingRanker(**OPTIONS).fit(X, y, group=np.array([100, 200]))
    with pytest.raises(ValueError, match="query ids must be integers"):
        arbor.GradientBoostingRanker(**OPTIONS).fit(X, y, group=query.astype(np.float64))
    grades = np.asarray(y, dtype=np.float64)
    grades[3] = 2.5
    with pytest.raises(ValueError, match="relevance grades.*2.5"):
        arbor.GradientBoostingRanker(**OPTIONS).fit(X, grades, group=query)


def test_a_dataset_binned_with_its_queries_fits_a_ranker(rank):
    train, test = rank
    dataset = arbor.Dataset(str(DATA / "rank_train.parquet"), label="label", group="query")
    assert dataset.shape == (3005, 300), "the query column is no feature"
    ranker = arbor.GradientBoostingRanker(**OPTIONS).fit(dataset)
    X, y, query = parts(train)
    from_table = arbor.GradientBoostingRanker(**OPTIONS).fit(X, y, group=query)
    Xt = parts(test)[0]
    np.testing.assert_array_equal(ranker.predict(Xt), from_table.predict(Xt))
    with pytest.raises(ValueError, match="carries its query ids"):
        arbor.GradientBoostingRanker(**OPTIONS).fit(dataset, group=query)
    # Folds of rows would cut queries apart.
    with pytest.raises(ValueError, match="keep each query whole"):
        arbor.cv({"algorithm": "gradient-boosting", "loss": "lambdarank", "n_rounds": 5}, dataset)
