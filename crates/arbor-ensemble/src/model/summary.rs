//! What `arbor inspect` and `forest_info` tell about a model.

use serde_json::{json, Value};

use crate::model::tree::TreeShape;
use crate::model::Model;

impl Model {
    /// Size and shape of every tree.
    pub fn tree_shapes(&self) -> Vec<TreeShape> {
        self.trees.shapes()
    }

    /// What a user should know before relying on the model, one sentence
    /// each (`arbor train` prints them, `inspect` and `forest_info` show
    /// them): a label that held a single class.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if let Some(class) = self.single_class() {
            warnings.push(format!(
                "label '{}' held a single class ('{class}') in training: the model predicts '{class}' for every \
                 row, with probability 1",
                self.label.name
            ));
        }
        warnings
    }

    /// The model as one JSON object: `task`, `algorithm`, `classes`, `label`,
    /// `features` (`name`, `type`, `importance`), `trees` (`nodes`, `leaves`,
    /// `depth`), `params`, `oob_error`, `training_rows`, `skipped_null_labels`,
    /// `node_cover` (whether the model records it, and so can explain its
    /// predictions), `warnings` (a list of sentences, empty for most models).
    pub fn summary_json(&self) -> Value {
        let features: Vec<Value> = self
            .features
            .iter()
            .enumerate()
            .map(|(i, f)| {
                json!({
                    "name": f.name,
                    "type": f.data_type,
                    "kind": f.kind.name(),
                    "importance": self.importance.as_ref().map(|imp| imp[i]),
                })
            })
            .collect();
        let trees: Vec<Value> = self
            .tree_shapes()
            .iter()
            .map(|s| json!({"nodes": s.nodes, "leaves": s.leaves, "depth": s.depth}))
            .collect();
        let params: serde_json::Map<String, Value> =
            self.params.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
        let boosting = self.boosting.as_ref().map(|b| {
            json!({
                "loss": b.loss.name(),
                "metric": b.loss.metric(),
                "base_score": b.base_score,
                "outputs": b.outputs,
                "rounds": self.trees.len() / b.outputs.max(1),
                "early_stopping": b.early_stopping.as_ref().map(|e| json!({
                    "rounds_run": e.rounds_run,
                    "best_round": e.best_round,
                    "best_loss": e.best_loss,
                    "validation_rows": e.validation_rows,
                    // per round run; null for models written before format 5
                    "curve": (!e.curve.is_empty()).then(|| json!({
                        "training": e.curve.iter().map(|r| r.training).collect::<Vec<_>>(),
                        "validation": e.curve.iter().map(|r| r.validation).collect::<Vec<_>>(),
                    })),
                })),
            })
        });
        json!({
            "boosting": boosting,
            "task": self.task.name(),
            "algorithm": self.algorithm.name(),
            "label": {"name": self.label.name, "type": self.label.data_type},
            "classes": self.label.classes.as_ref().map(|c| c.to_json()),
            "features": features,
            "trees": trees,
            "params": params,
            "oob_error": self.oob_error,
            "training_rows": self.training_rows,
            "skipped_null_labels": self.skipped_null_labels,
            "node_cover": self.cover.is_some(),
            "warnings": self.warnings(),
        })
    }

    /// A human-readable report of the model.
    pub fn summary_text(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let shapes = self.tree_shapes();
        let _ = writeln!(s, "task         {}", self.task.name());
        let _ = writeln!(s, "algorithm    {}", self.algorithm.name());
        let _ = writeln!(s, "label        {} ({})", self.label.name, self.label.data_type);
        if let Some(c) = &self.label.classes {
            let _ = writeln!(s, "classes      {}", c.names().join(", "));
        }
        for warning in self.warnings() {
            let _ = writeln!(s, "warning      {warning}");
        }
        let source = self.param("imported_from").map(|v| format!("imported from {v}"));
        match source.or(self.param("built_by").map(str::to_owned)) {
            Some(source) if self.training_rows == 0 => {
                let _ = writeln!(s, "training     not recorded ({source})");
            }
            _ => {
                let _ = writeln!(
                    s,
                    "training     {} rows ({} skipped for a null label)",
                    self.training_rows, self.skipped_null_labels
                );
            }
        }
        let nodes: usize = shapes.iter().map(|t| t.nodes).sum();
        let leaves: usize = shapes.iter().map(|t| t.leaves).sum();
        let depth = shapes.iter().map(|t| t.depth).max().unwrap_or(0);
        let _ = writeln!(
            s,
            "trees        {} ({} nodes, {} leaves in all; mean {:.0} leaves, max depth {})",
            shapes.len(),
            nodes,
            leaves,
            leaves as f64 / shapes.len().max(1) as f64,
            depth
        );
        let explains = match self.cover {
            Some(_) => "yes (node covers recorded: predict --contributions)",
            None => "no (no node covers: written before format 4; train or import it again)",
        };
        let _ = writeln!(s, "explains     {explains}");
        if let Some(b) = &self.boosting {
            let base: Vec<String> = b.base_score.iter().map(|v| format!("{v:.6}")).collect();
            let _ = writeln!(
                s,
                "boosting     loss {}, {} rounds of {} tree(s), base score {}",
                b.loss.name(),
                self.trees.len() / b.outputs.max(1),
                b.outputs,
                base.join(", ")
            );
            if let Some(e) = &b.early_stopping {
                let _ = writeln!(
                    s,
                    "             early stopping: best round {} of {} run, validation {} {:.6} on {} rows",
                    e.best_round,
                    e.rounds_run,
                    b.loss.metric(),
                    e.best_loss,
                    e.validation_rows
                );
            }
        }
        let _ =
            writeln!(s, "oob_error    {}", self.oob_error.map_or("not computed".to_string(), |e| format!("{e:.6}")));
        let kind = self.param("importance").unwrap_or("mdi");
        let measure = match kind {
            "mda_raw" => "mean decrease of accuracy, raw",
            "mda_scaled" => "mean decrease of accuracy, scaled",
            "none" => "not computed",
            _ if self.boosting.is_some() => "total gain",
            _ => "mean decrease of impurity",
        };
        let _ = writeln!(s, "features     (importance: {measure})");
        let mut order: Vec<usize> = (0..self.features.len()).collect();
        if let Some(imp) = &self.importance {
            order.sort_by(|&a, &b| imp[b].total_cmp(&imp[a]));
        }
        let width = self.features.iter().map(|f| f.name.len()).max().unwrap_or(0);
        for i in order {
            let f = &self.features[i];
            let imp = self.importance.as_ref().map_or("-".to_string(), |imp| format!("{:.4}", imp[i]));
            let _ = writeln!(s, "  {:width$}  {:11}  {:>8}  {}", f.name, f.kind.name(), imp, f.data_type);
        }
        let _ = writeln!(s, "params");
        for (k, v) in &self.params {
            let _ = writeln!(s, "  {k} = {v}");
        }
        s
    }
}
