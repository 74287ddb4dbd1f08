"""The model report from Python and the command line: a self-contained page
of the model and of how it does on the data given."""

from __future__ import annotations

import re
import subprocess

import pytest
from arbor import _arbor
from conftest import DATA, read


def trained(rows: int = 10_000):
    table = read("flights_cls_train").slice(0, rows)
    model = _arbor.train(
        table.drop_columns(["label"]), table.column("label").combine_chunks(), options=[("algorithm", "gradient-boosting"), ("n_rounds", "10")]
    )
    return model, read("flights_cls_test").slice(0, 3000)


def test_report_writes_one_page_measured_on_the_data(tmp_path):
    model, test = trained()
    model.report(tmp_path / "report.html", data=test)
    html = (tmp_path / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html and "http" not in html
    for section in ["summary", "importance", "metrics", "shap", "dependence", "tree"]:
        assert f'<section id="{section}">' in html
    shown = float(re.search(r"<th>accuracy</th><td>([0-9.]+)<", html).group(1))
    predicted = model.predict(test).to_pylist()
    truth = test.column("label").to_pylist()
    assert shown == pytest.approx(sum(p == t for p, t in zip(predicted, truth)) / len(truth), abs=5e-5)
    # Without data: what the model holds, no metrics.
    model.report(tmp_path / "bare.html")
    assert '<section id="metrics">' not in (tmp_path / "bare.html").read_text()


def test_a_model_shows_itself_in_a_notebook():
    model, _ = trained(3000)
    html = model._repr_html_()
    assert "<table>" in html and html.count('<rect class="bar"') == len(model.feature_names)


def test_report_errors_name_the_problem_and_write_nothing(tmp_path):
    model, test = trained(3000)
    with pytest.raises(ValueError, match="dep_delay"):
        model.report(tmp_path / "r.html", data=test.drop_columns(["dep_delay"]))
    assert not (tmp_path / "r.html").exists()


def test_the_command_line_writes_the_report(tmp_path, arbor_cli):
    model, _ = trained(3000)
    model.save(tmp_path / "m.arbor")
    test = str(DATA / "flights_cls_test.parquet")
    arbor_cli("report", "--model", str(tmp_path / "m.arbor"), "--data", test, "--output", str(tmp_path / "r.html"))
    html = (tmp_path / "r.html").read_text()
    assert "<th>rows</th><td>65470</td>" in html
