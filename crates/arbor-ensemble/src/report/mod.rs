//! A model report: one self-contained HTML page (inline SVG and CSS, no
//! script, nothing fetched) of what a model is and how it does, for people
//! who judge a model by looking at it ([`Model::report_html`]).
//!
//! Sections: the summary and parameters; feature importance; with data,
//! the metrics on it ([`metrics`]: accuracy, log loss, AUC, the confusion
//! matrix and ROC curve, or RMSE, MAE, R² and predictions against labels),
//! a SHAP summary and the partial dependence of the top features; the
//! training curve of boosting with early stopping; and the
//! first tree, drawn. The charts are in [`svg`].

pub(crate) mod metrics;
pub(crate) mod svg;

use std::fmt::Write;

use arbor_quantize::FeatureType;
use arrow::array::{Array, AsArray, RecordBatch, UInt32Array};
use arrow::datatypes::{DataType, Float64Type};

use crate::model::tree::Node;
use crate::model::{Model, RoundLoss};
use crate::{ArborError, Result, Task};
use svg::{escape, number};

/// Rows drawn in the charts at most (spread evenly over the data).
const CHART_ROWS: usize = 2000;
/// Rows explained for the SHAP summary at most.
const SHAP_ROWS: usize = 500;
/// Features shown in the importance and SHAP charts at most.
const TOP_FEATURES: usize = 15;
/// Features given a partial dependence chart, and points per chart.
const DEPENDENCE_FEATURES: usize = 3;
const DEPENDENCE_POINTS: usize = 20;
/// Tree levels drawn; deeper branches are shown folded.
const TREE_LEVELS: usize = 3;

const STYLE: &str = "body{font:14px/1.4 -apple-system,'Segoe UI',Helvetica,Arial,sans-serif;margin:2em auto;max-width:1000px;color:#222}\
h1{font-size:1.6em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}\
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}\
td.n{text-align:right;font-variant-numeric:tabular-nums}.label,.tick,.edge,.node{font-size:11px}.axis{font-size:12px}\
.value{font-size:10px;fill:#555}nav a{margin-right:1em}.note{color:#666}section{overflow-x:auto}";

/// The page being written: sections in order, each with a heading the
/// contents link to.
struct Page {
    sections: Vec<(&'static str, &'static str, String)>,
}

impl Page {
    fn section(&mut self, id: &'static str, title: &'static str, body: String) {
        self.sections.push((id, title, body));
    }

    fn finish(self, title: &str) -> String {
        let mut html = format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n<nav>",
            escape(title),
            escape(title)
        );
        for (id, heading, _) in &self.sections {
            let _ = write!(html, "<a href=\"#{id}\">{heading}</a>");
        }
        html.push_str("</nav>\n");
        for (id, heading, body) in self.sections {
            let _ = write!(html, "<section id=\"{id}\"><h2>{heading}</h2>\n{body}</section>\n");
        }
        html.push_str("</body></html>\n");
        html
    }
}

/// A two-column table of names and values.
fn key_values(rows: &[(String, String)]) -> String {
    let mut html = String::from("<table>");
    for (k, v) in rows {
        let _ = write!(html, "<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(v));
    }
    html.push_str("</table>\n");
    html
}

impl Model {
    /// The model's report as one self-contained HTML page. With `data`
    /// (rows holding the model's features, and its label for the metrics),
    /// the page adds the metrics on those rows, a SHAP summary and partial
    /// dependence.
    pub fn report_html(&self, data: Option<&RecordBatch>) -> Result<String> {
        let mut page = Page { sections: Vec::new() };
        page.section("summary", "Summary", key_values(&self.summary_rows()));
        page.section("parameters", "Parameters", key_values(&self.params));
        page.section("importance", "Feature importance", self.importance_chart());
        if let Some(batch) = data {
            self.data_sections(&mut page, batch)?;
        }
        page.section("training", "Training curve", self.training_curve());
        page.section("tree", "Tree 0", self.tree_drawing(0));
        Ok(page.finish(&format!("arbor model: {} {}", self.algorithm.name(), self.task.name())))
    }

    /// A short HTML view for notebooks: the summary and the importance chart.
    pub fn summary_html(&self) -> String {
        format!(
            "<div><strong>arbor model</strong>{}{}</div>",
            key_values(&self.summary_rows()),
            self.importance_chart()
        )
    }

    fn summary_rows(&self) -> Vec<(String, String)> {
        let shapes = self.tree_shapes();
        let mut rows = vec![
            ("task".to_owned(), self.task.name().to_owned()),
            ("algorithm".to_owned(), self.algorithm.name().to_owned()),
            ("label".to_owned(), format!("{} ({})", self.label.name, self.label.data_type)),
        ];
        if !self.class_names().is_empty() {
            rows.push(("classes".into(), self.class_names().join(", ")));
        }
        if let Some(b) = &self.boosting {
            rows.push(("loss".into(), b.loss.name().to_owned()));
        }
        rows.push(("trees".into(), self.trees.len().to_string()));
        let leaves: usize = shapes.iter().map(|s| s.leaves).sum();
        let depth = shapes.iter().map(|s| s.depth).max().unwrap_or(0);
        rows.push(("leaves".into(), format!("{leaves} (deepest tree: {depth} levels)")));
        rows.push(("features".into(), self.features.len().to_string()));
        rows.push(("training rows".into(), self.training_rows.to_string()));
        if let Some(oob) = self.oob_error {
            rows.push(("out-of-bag error".into(), number(oob)));
        }
        rows
    }

    fn importance_chart(&self) -> String {
        let Some(importance) = &self.importance else {
            return "<p class=\"note\">Not recorded in this model (importance=none, or an imported model).</p>\n"
                .into();
        };
        let mut items: Vec<(String, f64)> =
            self.features.iter().zip(importance).map(|(f, &v)| (f.name.clone(), v)).collect();
        items.sort_by(|a, b| b.1.total_cmp(&a.1));
        items.truncate(TOP_FEATURES);
        let what = match self.boosting {
            Some(_) => "each feature's share of the total gain",
            None => "mean decrease of impurity, or of accuracy (importance=mda_*)",
        };
        format!("<p class=\"note\">{what}; the top {}.</p>\n{}\n", items.len(), svg::bars(&items))
    }

    fn training_curve(&self) -> String {
        let Some((boosting, run)) = self.boosting.as_ref().and_then(|b| Some((b, b.early_stopping.as_ref()?))) else {
            return "<p class=\"note\">Not recorded: the model was trained without a validation set, \
                    or is a forest.</p>\n"
                .into();
        };
        let metric = boosting.loss.metric();
        let mut out = format!(
            "<p>Early stopping ran {} rounds and kept {} (validation {metric} {} on {} rows).</p>\n",
            run.rounds_run,
            run.best_round,
            number(run.best_loss),
            run.validation_rows
        );
        if run.curve.is_empty() {
            out.push_str(
                "<p class=\"note\">The per-round curve is not in this model: it was written before format 5.</p>\n",
            );
            return out;
        }
        // Rounds counted from 1; a loss that is not finite is left out of its line.
        let line = |of: fn(&RoundLoss) -> f64| -> Vec<(f64, f64)> {
            run.curve.iter().enumerate().map(|(r, l)| ((r + 1) as f64, of(l))).filter(|p| p.1.is_finite()).collect()
        };
        let series = [("training".to_owned(), line(|l| l.training)), ("validation".to_owned(), line(|l| l.validation))];
        out.push_str(&svg::lines(&series, "round", &metric, svg::Guide::AtX(run.best_round as f64)));
        out.push_str("<p class=\"note\">The dashed line marks the round kept; the loss is the one early stopping compares, on all training rows and on the rows held out.</p>\n");
        out
    }

    /// Tree `index` drawn to [`TREE_LEVELS`] levels.
    fn tree_drawing(&self, index: usize) -> String {
        let Some(tree) = self.trees.get(index) else {
            return "<p class=\"note\">The model has no trees.</p>\n".into();
        };
        let (mut nodes, mut edges) = (Vec::new(), Vec::new());
        // Depth first, left before right: (node, depth, parent and edge label).
        let mut stack: Vec<Visit> = vec![(0, 0, None)];
        while let Some((i, depth, parent)) = stack.pop() {
            let at = nodes.len();
            if let Some((p, label)) = parent {
                edges.push((p, at, label));
            }
            match &tree.nodes[i] {
                Node::Split { .. } if depth == TREE_LEVELS => nodes.push((depth, "…".to_owned(), true)),
                Node::Split { feature, test, default_left, left, right } => {
                    let f = &self.features[*feature as usize];
                    nodes.push((depth, format!("{} {}", f.name, self.test_text(test, &f.mapper)), false));
                    let (yes, no) = if *default_left { ("yes, missing", "no") } else { ("yes", "no, missing") };
                    stack.push((*right as usize, depth + 1, Some((at, no.to_owned()))));
                    stack.push((*left as usize, depth + 1, Some((at, yes.to_owned()))));
                }
                Node::Leaf { value } => {
                    let values = &tree.values[*value as usize..*value as usize + self.leaf_width()];
                    nodes.push((depth, self.leaf_label(index, values), true));
                }
            }
        }
        let folded = if tree.shape().depth > TREE_LEVELS {
            format!("<p class=\"note\">Drawn to {TREE_LEVELS} levels; … marks a folded branch.")
        } else {
            "<p class=\"note\">".to_owned()
        } + match self.boosting {
            Some(_) => " Leaves show the raw score they add.</p>\n",
            None => " Leaves show the value, or the most probable class and its share.</p>\n",
        };
        format!("{folded}{}\n", svg::tree(&nodes, &edges))
    }

    /// A leaf in a few characters: a boosted tree's raw score (with its class
    /// for softmax), a forest's
    /// value or most probable class with its share.
    fn leaf_label(&self, tree: usize, values: &[f64]) -> String {
        let classes = self.class_names();
        match (&self.boosting, values.len()) {
            (Some(b), _) if b.outputs > 1 => format!("{}: {}", classes[tree % b.outputs], number(values[0])),
            (Some(_), _) => number(values[0]),
            (None, 1) => number(values[0]),
            (None, _) => {
                let k = crate::predict::arg_max(values);
                format!("{}: {}", classes[k], number(values[k]))
            }
        }
    }

    /// The sections drawn from data: metrics, SHAP summary, partial dependence.
    fn data_sections(&self, page: &mut Page, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Err(ArborError::Data("the report's data has no rows".into()));
        }
        let scores = self.score(batch)?;
        let label = batch.column_by_name(&self.label.name);
        let sample = spread(batch.num_rows(), CHART_ROWS);
        match (label, self.task) {
            (None, _) => page.section(
                "metrics",
                "Metrics",
                format!(
                    "<p class=\"note\">The data has no label column '{}': no metrics.</p>\n",
                    escape(&self.label.name)
                ),
            ),
            (Some(label), Task::Classification) => {
                let names = self.class_names();
                let text = arrow::compute::cast(label, &DataType::Utf8)?;
                let truth: Vec<Option<usize>> =
                    text.as_string::<i32>().iter().map(|v| v.and_then(|v| names.iter().position(|n| n == v))).collect();
                let m = metrics::classification(scores.values(), scores.width(), &truth);
                let mut body = key_values(&[
                    ("rows".into(), batch.num_rows().to_string()),
                    ("accuracy".into(), number(m.accuracy)),
                    ("log loss".into(), number(m.log_loss)),
                    ("AUC".into(), m.roc.as_ref().map_or("(two classes only)".into(), |r| number(r.0))),
                ]);
                body.push_str("<h3>Confusion matrix</h3><table><tr><th>true \\ predicted</th>");
                names.iter().for_each(|n| {
                    let _ = write!(body, "<th>{}</th>", escape(n));
                });
                body.push_str("</tr>");
                let max = m.confusion.iter().flatten().copied().max().unwrap_or(1).max(1);
                for (name, row) in names.iter().zip(&m.confusion) {
                    let _ = write!(body, "<tr><th>{}</th>", escape(name));
                    for &c in row {
                        let shade = 255 - (c * 150 / max) as u8;
                        let _ = write!(body, "<td class=\"n\" style=\"background:rgb({shade},{shade},255)\">{c}</td>");
                    }
                    body.push_str("</tr>");
                }
                body.push_str("</table>\n");
                if let Some((_, curve)) = &m.roc {
                    let name = format!("class {}", names[1]);
                    body.push_str("<h3>ROC curve</h3>");
                    body.push_str(&svg::lines(
                        &[(name, curve.clone())],
                        "false positive rate",
                        "true positive rate",
                        svg::Guide::Diagonal,
                    ));
                }
                page.section("metrics", "Metrics", body);
            }
            (Some(label), Task::Regression) => {
                let truth = arrow::compute::cast(label, &DataType::Float64)?;
                let truth = truth.as_primitive::<Float64Type>();
                let values: Vec<f64> =
                    (0..truth.len()).map(|i| if truth.is_null(i) { f64::NAN } else { truth.value(i) }).collect();
                let m = metrics::regression(scores.values(), &values);
                let mut body = key_values(&[
                    ("rows".into(), batch.num_rows().to_string()),
                    ("RMSE".into(), number(m.rmse)),
                    ("MAE".into(), number(m.mae)),
                    ("R²".into(), number(m.r2)),
                ]);
                let points: Vec<(f64, f64)> = sample
                    .iter()
                    .map(|&r| (values[r as usize], scores.values()[r as usize]))
                    .filter(|p| p.0.is_finite())
                    .collect();
                body.push_str("<h3>Predicted against actual</h3>");
                body.push_str(&svg::points(&points, "label", "prediction"));
                page.section("metrics", "Metrics", body);
            }
        }
        let rows = arrow::compute::take_record_batch(batch, &UInt32Array::from(spread(batch.num_rows(), SHAP_ROWS)))?;
        page.section("shap", "SHAP summary", self.shap_summary(&rows)?);
        let rows = arrow::compute::take_record_batch(batch, &UInt32Array::from(sample))?;
        page.section("dependence", "Partial dependence", self.partial_dependence(&rows)?);
        Ok(())
    }

    /// Each top feature's contributions over `rows`, coloured by its value.
    fn shap_summary(&self, rows: &RecordBatch) -> Result<String> {
        let contributions = self.contributions(rows)?;
        let values = self.export_columns(rows)?;
        let n_features = self.features.len();
        let blocks = contributions.width() / (n_features + 1);
        // The block explained per row: the only one, or the predicted class's.
        let predicted = if blocks > 1 { self.score(rows)?.class_index() } else { Vec::new() };
        let block = |r: usize| if blocks > 1 { predicted[r] as usize } else { 0 };
        let contribution = |r: usize, f: usize| contributions.row(r)[block(r) * (n_features + 1) + f];
        let n = contributions.n_rows();
        let mut order: Vec<(usize, f64)> =
            (0..n_features).map(|f| (f, (0..n).map(|r| contribution(r, f).abs()).sum::<f64>() / n as f64)).collect();
        order.sort_by(|a, b| b.1.total_cmp(&a.1));
        order.truncate(TOP_FEATURES);
        let rows_drawn: Vec<svg::ShapRow> = order
            .iter()
            .map(|&(f, _)| {
                let categorical = self.features[f].kind == FeatureType::Categorical;
                let dots = (0..n)
                    .map(|r| {
                        let v = values[f][r];
                        (contribution(r, f), (!categorical && v.is_finite()).then_some(v))
                    })
                    .collect();
                (self.features[f].name.clone(), dots)
            })
            .collect();
        let what = match (blocks > 1, self.boosting.is_some()) {
            (true, _) => "each row's contribution to its predicted class's score",
            (false, true) => "contributions to the raw score",
            (false, false) => "contributions to the prediction",
        };
        Ok(format!(
            "<p class=\"note\">{n} rows; {what}, features by mean |contribution|; colour: the feature's value, \
             blue low, red high (grey: missing or categorical).</p>\n{}\n",
            svg::shap_summary(&rows_drawn)
        ))
    }

    /// The mean prediction over `rows` as each top numeric feature takes
    /// values across its range, the others as they are.
    fn partial_dependence(&self, rows: &RecordBatch) -> Result<String> {
        let (columns, n) = self.raw_columns(&self.feature_arrays(rows)?)?;
        let importance = self.importance.clone().unwrap_or_else(|| vec![0.0; self.features.len()]);
        let mut numeric: Vec<usize> =
            (0..self.features.len()).filter(|&f| self.features[f].kind != FeatureType::Categorical).collect();
        numeric.sort_by(|&a, &b| importance[b].total_cmp(&importance[a]));
        numeric.truncate(DEPENDENCE_FEATURES);
        let classes = self.class_names();
        let mut html = String::from(
            "<p class=\"note\">The mean prediction (a probability per class) over the drawn rows, each \
             feature set in turn to its values' quantiles; the top numeric features by importance.</p>\n",
        );
        for f in numeric {
            // The grid: quantiles of the rows' values, so it is dense where the data is.
            let mut present: Vec<f64> = columns[f].iter().copied().filter(|v| v.is_finite()).collect();
            present.sort_by(f64::total_cmp);
            let mut grid: Vec<f64> = match present.len() {
                0 => Vec::new(),
                len => (0..DEPENDENCE_POINTS).map(|i| present[i * (len - 1) / (DEPENDENCE_POINTS - 1)]).collect(),
            };
            grid.dedup();
            if grid.len() < 2 {
                continue;
            }
            let mut changed = columns.clone();
            let width = self.value_len();
            let mut series: Vec<Vec<(f64, f64)>> = vec![Vec::new(); width];
            for &x in &grid {
                changed[f].iter_mut().for_each(|v| *v = x);
                let p = self.score_columns(&changed, n)?;
                for (k, s) in series.iter_mut().enumerate() {
                    let mean = p.values().chunks_exact(width).map(|r| r[k]).sum::<f64>() / n as f64;
                    s.push((x, mean));
                }
            }
            // A binary classifier's second class says it all.
            let named: Vec<(String, Vec<(f64, f64)>)> = match width {
                1 => vec![("prediction".into(), series.remove(0))],
                2 => vec![(format!("P({})", classes[1]), series.remove(1))],
                _ => series.into_iter().enumerate().take(10).map(|(k, s)| (format!("P({})", classes[k]), s)).collect(),
            };
            let _ = writeln!(
                html,
                "<h3>{}</h3>{}",
                escape(&self.features[f].name),
                svg::lines(&named, &self.features[f].name, "mean prediction", svg::Guide::None)
            );
        }
        Ok(html)
    }
}

/// A node to draw: its index, its depth, and its drawn parent with the edge's label.
type Visit = (usize, usize, Option<(usize, String)>);

/// Up to `most` row indices spread evenly over `n` rows, in order.
fn spread(n: usize, most: usize) -> Vec<u32> {
    let take = n.min(most);
    (0..take).map(|i| (i * n / take.max(1)) as u32).collect()
}
