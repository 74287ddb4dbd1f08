//! Training options by name: parsing (`set`), the checks of a whole set of
//! options (`check`, which makes the [`CheckedParams`] training takes) and
//! the report of their effective values (`describe`), all read from the
//! table of keys.

use crate::params::checked::CheckedParams;
use crate::params::keys::{
    key_spec, loss_of_parameter, with_its_loss, Applies, Report, BOOSTING_RECORD_ORDER, KEYS, OPTION_KEYS,
};
use crate::params::rules::invalid;
use crate::params::types::{Algorithm, CriterionKind, ImportanceKind, Loss, Task, TrainParams, Voting};
use crate::{ArborError, Result};

/// Keys whose value is a list that may hold the options' separators.
const LIST_KEYS: &[&str] = &["monotone", "interaction_constraints", "class_weight"];

impl TrainParams {
    /// Parses an options string: `key=value` pairs separated by spaces or commas.
    ///
    /// ```
    /// use arbor_ensemble::{TrainParams, Task};
    /// let p = TrainParams::parse_options("task=regression n_trees=20, max_depth=8").unwrap();
    /// assert_eq!(p.task, Some(Task::Regression));
    /// assert_eq!(p.forest.n_trees, 20);
    /// assert_eq!(p.forest.tree.max_depth, 8);
    /// assert!(TrainParams::parse_options("n_tree=20").is_err());
    /// ```
    pub fn parse_options(options: &str) -> Result<TrainParams> {
        let mut params = TrainParams::default();
        for (key, value) in TrainParams::option_pairs(options)? {
            params.set(key, value)?;
        }
        Ok(params)
    }

    /// The `key=value` pairs of an options string (separated by spaces or
    /// commas), unchecked: for callers that take some keys of their own first.
    /// A list-valued key (`monotone=a:+1,b:-1`) takes the pieces without
    /// `=` that follow it into its value.
    pub fn option_pairs(options: &str) -> Result<Vec<(&str, &str)>> {
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        let start = |piece: &str| piece.as_ptr() as usize - options.as_ptr() as usize;
        for piece in options.split(|c: char| c.is_whitespace() || c == ',').filter(|s| !s.is_empty()) {
            match (piece.split_once('='), pairs.last_mut()) {
                (Some((key, value)), _) => pairs.push((key.trim(), value.trim())),
                (None, Some((key, value))) if LIST_KEYS.contains(key) => {
                    // The value runs on to the end of this piece, separators and all.
                    *value = &options[start(value)..start(piece) + piece.len()];
                }
                (None, _) => return Err(invalid(piece, "expected key=value".to_owned())),
            }
        }
        Ok(pairs)
    }

    /// Sets one option by name, checking its value. Tree settings both
    /// algorithms have (`max_depth`, `min_samples_leaf`, ...) set both's
    /// [`TreeParams`](crate::TreeParams); which algorithm a key applies to is
    /// checked by [`TrainParams::check`].
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let spec = key_spec(key)
            .ok_or_else(|| ArborError::UnknownOption { key: key.to_owned(), accepted: OPTION_KEYS.join(", ") })?;
        (spec.set)(self, key, value)?;
        if !self.explicit.iter().any(|k| k == key) {
            self.explicit.push(key.to_owned());
        }
        Ok(())
    }

    /// The defaults of training given a query column: gradient boosting
    /// with `loss=lambdarank`, unless the algorithm or the loss were chosen
    /// (a choice that does not rank is then refused when training starts,
    /// naming the query column).
    pub fn rank_by_default(&mut self) {
        let chosen = |p: &TrainParams, key: &str| p.explicit.iter().any(|k| k == key);
        if !chosen(self, "algorithm") {
            self.set("algorithm", "gradient-boosting").expect("a known algorithm");
        }
        if !chosen(self, "loss") && self.algorithm.0 == Algorithm::GradientBoosting {
            self.set("loss", "lambdarank").expect("a known loss");
        }
    }

    /// Checks the combination of options, once, into the [`CheckedParams`]
    /// training takes; each error names its key. Keys of the other
    /// algorithm, and options this build does not implement yet, are refused
    /// here, never ignored. The rules that depend on the task (`criterion`,
    /// `voting`) apply here when `task` is set, else when the data's task is
    /// known ([`CheckedParams::for_task`]).
    ///
    /// ```
    /// use arbor_ensemble::TrainParams;
    /// let checked = TrainParams::parse_options("n_trees=20")?.check()?;
    /// assert_eq!(checked.forest.n_trees, 20); // read-only: no way to change it now
    /// assert!(TrainParams::parse_options("oob=true bootstrap=false")?.check().is_err());
    /// # Ok::<(), arbor_ensemble::ArborError>(())
    /// ```
    pub fn check(&self) -> Result<CheckedParams> {
        self.check_options()?;
        if let Some(task) = self.task {
            self.check_task(task)?;
        }
        Ok(CheckedParams::new(self.clone()))
    }

    /// The rules that need no task: the algorithm's keys, each key's range
    /// and the combinations of keys.
    fn check_options(&self) -> Result<()> {
        let algorithm = self.algorithm.0;
        for key in &self.explicit {
            let Some(spec) = key_spec(key).filter(|spec| !spec.applies.to(algorithm)) else { continue };
            let other_name = match spec.applies {
                Applies::Boosting => Algorithm::GradientBoosting.name(),
                _ => Algorithm::RandomForest.name(),
            };
            let own: Vec<&str> = KEYS.iter().filter(|k| k.applies.to(algorithm)).map(|k| k.name).collect();
            return Err(invalid(
                key,
                format!("applies to algorithm={other_name} only; {} accepts {}", algorithm.name(), own.join(", ")),
            ));
        }
        // Every key's range, on the typed values (set checked the parsed ones by the same rules).
        for spec in KEYS.iter().filter(|k| k.applies.to(algorithm)) {
            (spec.check)(self, spec.name)?;
        }
        if self.tree().exact {
            if let Some(key) =
                self.explicit.iter().find(|k| ["max_bins", "min_bin_size", "bin_boundaries"].contains(&k.as_str()))
            {
                return Err(invalid(key, "applies to split_method=hist; exact gives every distinct value a bin"));
            }
        }
        let mda = matches!(self.importance, ImportanceKind::MdaRaw | ImportanceKind::MdaScaled);
        if algorithm == Algorithm::GradientBoosting {
            if mda {
                return Err(invalid("importance", "gradient boosting accepts mdi (total gain) or none"));
            }
            if self.boosting.early_stopping_rounds == 0 && self.explicit.iter().any(|k| k == "validation_fraction") {
                return Err(invalid("validation_fraction", "needs early_stopping_rounds > 0"));
            }
            let quantized = &self.boosting;
            if let Some(key) = self.explicit.iter().find(|k| {
                !quantized.use_quantized_grad && (*k == "num_grad_quant_bins" || *k == "quant_train_renew_leaf")
            }) {
                return Err(invalid(key, "applies with use_quantized_grad=true only"));
            }
            if quantized.use_quantized_grad && quantized.quant_train_renew_leaf && !quantized.tree.monotone.is_empty() {
                return Err(invalid(
                    "quant_train_renew_leaf",
                    "would set leaves past their monotone bounds; leave it false with monotone constraints",
                ));
            }
            for key in &self.explicit {
                let Some(owner) = loss_of_parameter(key) else { continue };
                if !with_its_loss(self, key) {
                    let chosen = self.boosting.loss.map_or("the default", |l| l.name());
                    return Err(invalid(key, format!("applies to loss={owner} only; the loss is {chosen}")));
                }
            }
            return Ok(());
        }
        let f = &self.forest;
        let wants_oob = f.oob || f.oob_per_observation;
        if (wants_oob || mda) && !f.bootstrap && f.tree.sample_fraction >= 1.0 {
            let key = if f.oob {
                "oob"
            } else if f.oob_per_observation {
                "oob_per_observation"
            } else {
                "importance"
            };
            return Err(invalid(
                key,
                "needs out-of-bag rows: set bootstrap=true or sample_fraction below 1 \
                 (every tree sees every row with bootstrap=false sample_fraction=1)",
            ));
        }
        Ok(())
    }

    /// The rules that depend on the task: a forest's criterion and voting.
    pub(crate) fn check_task(&self, task: Task) -> Result<()> {
        if self.algorithm.0 != Algorithm::RandomForest {
            return Ok(());
        }
        match (task, self.forest.criterion) {
            (Task::Classification, CriterionKind::Mse | CriterionKind::Poisson | CriterionKind::AbsoluteError) => {
                return Err(invalid(
                    "criterion",
                    "mse, poisson and absolute_error are for regression; classification accepts gini or entropy",
                ))
            }
            (Task::Regression, CriterionKind::Gini | CriterionKind::Entropy) => {
                return Err(invalid("criterion", "regression accepts mse, poisson or absolute_error"))
            }
            (Task::Regression, CriterionKind::AbsoluteError) if !self.forest.tree.monotone.is_empty() => {
                return Err(invalid(
                    "monotone",
                    "is not supported with criterion=absolute_error (its leaves are medians); use mse or poisson",
                ))
            }
            _ => {}
        }
        if task == Task::Regression && self.forest.voting == Voting::Unweighted {
            return Err(invalid("voting", "applies to classification only; regression averages the trees"));
        }
        Ok(())
    }

    /// The effective value of every option of the chosen algorithm, for
    /// reports and the model file, in the key table's order (gradient
    /// boosting: in the order its first models recorded); `loss` is the resolved
    /// boosting loss.
    pub fn describe(&self, task: Task, n_features: usize, loss: Option<Loss>) -> Vec<(String, String)> {
        let report = Report { params: self, task, n_features: Some(n_features), loss };
        let algorithm = self.algorithm.0;
        let mut specs: Vec<_> = KEYS.iter().filter(|k| k.applies.to(algorithm) && (k.recorded)(self)).collect();
        if algorithm == Algorithm::GradientBoosting {
            // A stable sort: keys the old order does not name keep the table's order, after it.
            specs.sort_by_key(|k| BOOSTING_RECORD_ORDER.iter().position(|name| *name == k.name).unwrap_or(usize::MAX));
        }
        specs.into_iter().map(|k| (k.name.to_owned(), (k.value)(&report))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::types::{MaxFeatures, Voting};

    /// Checks `p` for `task`, as training does.
    fn check_for(p: &TrainParams, task: Task) -> Result<CheckedParams> {
        p.check()?.for_task(task)
    }

    #[test]
    fn defaults_match_the_reference() {
        let p = TrainParams::default();
        assert_eq!(p.forest.n_trees, 100);
        assert_eq!((p.forest.tree.seed, p.boosting.tree.seed), (777, 777));
        assert_eq!(p.forest.tree.min_samples_leaf(Task::Classification), 1);
        assert_eq!(p.forest.tree.min_samples_leaf(Task::Regression), 5);
        assert_eq!((p.forest.tree.min_samples_category, p.boosting.tree.min_samples_category), (10, 10));
        assert_eq!(p.forest.features_per_node(12, Task::Classification).unwrap(), 3);
        assert_eq!(p.forest.features_per_node(9, Task::Regression).unwrap(), 3);
        assert_eq!(p.importance, ImportanceKind::Mdi);
    }

    #[test]
    fn errors_name_the_key_and_the_accepted_values() {
        let e = TrainParams::parse_options("n_trees=0").unwrap_err().to_string();
        assert!(e.contains("n_trees") && e.contains(">= 1"), "{e}");
        let e = TrainParams::parse_options("sample_fraction=1.5").unwrap_err().to_string();
        assert!(e.contains("sample_fraction") && e.contains("(0, 1]"), "{e}");
        let e = TrainParams::parse_options("min_samples_category=0").unwrap_err().to_string();
        assert!(e.contains("min_samples_category") && e.contains(">= 1"), "{e}");
        let e = TrainParams::parse_options("voting=loud").unwrap_err().to_string();
        assert!(e.contains("weighted, unweighted"), "{e}");
        let e = TrainParams::parse_options("ntrees=3").unwrap_err().to_string();
        assert!(e.contains("unknown option 'ntrees'") && e.contains("n_trees"), "{e}");
        let e = TrainParams::parse_options("n_trees").unwrap_err().to_string();
        assert!(e.contains("key=value"), "{e}");
    }

    #[test]
    fn every_described_key_is_accepted_and_listed() {
        for algorithm in ["random-forest", "gradient-boosting"] {
            let mut p = TrainParams::parse_options(&format!("algorithm={algorithm}")).unwrap();
            for (key, value) in p.clone().describe(Task::Classification, 4, Some(Loss::Logistic)) {
                assert!(OPTION_KEYS.contains(&key.as_str()), "{key}");
                p.set(&key, &value).unwrap_or_else(|e| panic!("{key}={value}: {e}"));
            }
            check_for(&p, Task::Classification).unwrap();
        }
        assert_eq!(KEYS.len(), OPTION_KEYS.len());
        let mut names = OPTION_KEYS.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), KEYS.len(), "no key twice");
    }

    #[test]
    fn boosting_defaults_match_the_reference() {
        let b = TrainParams::default().boosting;
        let t = &b.tree;
        assert_eq!((b.n_rounds, t.max_depth, b.min_samples_leaf(), t.max_bins, t.min_bin_size), (50, 6, 5, 256, 5));
        assert_eq!((b.learning_rate, b.lambda, b.min_split_loss, t.sample_fraction), (0.3, 1.0, 0.0, 1.0));
        assert_eq!(b.features_per_node(12).unwrap(), 12);
        assert_eq!(b.resolve_loss(Task::Classification, 2).unwrap(), Loss::Logistic);
        assert_eq!(b.resolve_loss(Task::Classification, 10).unwrap(), Loss::Softmax);
        assert_eq!(b.resolve_loss(Task::Regression, 0).unwrap(), Loss::Squared);
    }

    /// The regression losses take their parameters by key, each checked by
    /// its range and refused without its loss; a loss that does not fit the
    /// task names the ones that do.
    #[test]
    fn losses_take_their_parameters_and_refuse_the_wrong_ones() {
        let gb = |options: &str| TrainParams::parse_options(&format!("algorithm=gradient-boosting {options}"));
        let resolved = |options: &str| gb(options).unwrap().check().unwrap().boosting.resolve_loss(Task::Regression, 0);
        assert_eq!(resolved("loss=quantile alpha=0.9").unwrap(), Loss::Quantile { alpha: 0.9 });
        assert_eq!(resolved("alpha=0.25 loss=quantile").unwrap(), Loss::Quantile { alpha: 0.25 }, "any order");
        assert_eq!(resolved("loss=quantile").unwrap(), Loss::Quantile { alpha: 0.5 });
        assert_eq!(resolved("loss=huber huber_delta=3").unwrap(), Loss::Huber { delta: 3.0 });
        assert_eq!(resolved("loss=tweedie").unwrap(), Loss::Tweedie { power: 1.5 });
        assert_eq!(resolved("loss=Poisson").unwrap(), Loss::Poisson);
        assert_eq!(resolved("loss=gamma").unwrap(), Loss::Gamma);
        assert_eq!(resolved("loss=absolute").unwrap(), Loss::Absolute);
        for (options, expected) in [
            ("loss=quantile alpha=1.5", "'alpha': expected a number in (0, 1), got '1.5'"),
            ("loss=quantile alpha=0", "'alpha': expected a number in (0, 1), got '0'"),
            ("loss=tweedie tweedie_power=3", "'tweedie_power': expected a number in (1, 2), got '3'"),
            ("loss=huber huber_delta=-1", "'huber_delta': expected a finite number > 0, got '-1'"),
            ("loss=huber huber_delta=inf", "'huber_delta': expected a finite number > 0, got 'inf'"),
            ("loss=median", "expected one of squared, logistic, softmax, quantile, huber"),
        ] {
            let e = gb(options).unwrap_err().to_string();
            assert!(e.contains(expected), "{options}: {e}");
        }
        for (options, expected) in [
            ("alpha=0.9", "'alpha': applies to loss=quantile only; the loss is the default"),
            ("loss=huber tweedie_power=1.2", "'tweedie_power': applies to loss=tweedie only; the loss is huber"),
        ] {
            let e = gb(options).unwrap().check().unwrap_err().to_string();
            assert!(e.contains(expected), "{options}: {e}");
        }
        let e = gb("loss=poisson").unwrap().check().unwrap().boosting.resolve_loss(Task::Classification, 2);
        let e = e.unwrap_err().to_string();
        assert!(e.contains("poisson does not fit a classification task") && e.contains("logistic or softmax"), "{e}");
        let e = gb("loss=logistic").unwrap().check().unwrap().boosting.resolve_loss(Task::Regression, 0);
        assert!(e
            .unwrap_err()
            .to_string()
            .contains("use squared, quantile, huber, absolute, poisson, gamma, tweedie or lambdarank"));
        // A ranker reads grades as numbers: regression unless the task is given, with its cut-off.
        let ranking = gb("loss=lambdarank ndcg_at=5").unwrap();
        assert_eq!(ranking.task, Some(Task::Regression));
        let checked = ranking.check().unwrap();
        assert_eq!(
            checked.boosting.resolve_loss(Task::Regression, 0).unwrap(),
            Loss::Lambdarank { ndcg_at: 5, truncation: 30, sigmoid: 1.0, exp_gain: true }
        );
        let deep = gb("loss=lambdarank lambdarank_truncation_level=100").unwrap().check().unwrap();
        let deep = deep.boosting.resolve_loss(Task::Regression, 0).unwrap();
        assert_eq!(deep, Loss::Lambdarank { ndcg_at: 10, truncation: 100, sigmoid: 1.0, exp_gain: true });
        let steep = gb("loss=lambdarank sigmoid=2.5").unwrap().check().unwrap();
        let steep = steep.boosting.resolve_loss(Task::Regression, 0).unwrap();
        assert_eq!(steep, Loss::Lambdarank { ndcg_at: 10, truncation: 30, sigmoid: 2.5, exp_gain: true });
        let e = gb("task=classification loss=lambdarank").unwrap().check().unwrap();
        let e = e.boosting.resolve_loss(Task::Classification, 5).unwrap_err().to_string();
        assert!(e.contains("lambdarank does not fit a classification task"), "{e}");
        for (options, expected) in [
            ("loss=lambdarank ndcg_at=0", "'ndcg_at': expected an integer"),
            ("ndcg_at=5", "'ndcg_at': applies to loss=lambdarank only"),
            ("loss=lambdarank lambdarank_truncation_level=0", "'lambdarank_truncation_level': expected an integer"),
            ("loss=lambdarank sigmoid=0", "'sigmoid'"),
            ("loss=lambdarank sigmoid=inf", "'sigmoid'"),
            ("sigmoid=2", "'sigmoid': applies to loss=lambdarank only"),
        ] {
            let e = gb(options).and_then(|p| p.check().map(|_| ())).unwrap_err().to_string();
            assert!(e.contains(expected), "{options}: {e}");
        }
        // Recorded with its loss only.
        let described =
            gb("loss=quantile alpha=0.9").unwrap().describe(Task::Regression, 3, Some(Loss::Quantile { alpha: 0.9 }));
        assert!(described.contains(&("alpha".into(), "0.9".into())), "{described:?}");
        assert!(!described.iter().any(|(k, _)| k == "huber_delta" || k == "tweedie_power"), "{described:?}");
    }

    #[test]
    fn keys_of_the_other_algorithm_are_refused() {
        let p = TrainParams::parse_options("algorithm=gradient-boosting n_trees=10").unwrap();
        let e = p.check().unwrap_err().to_string();
        assert!(e.contains("'n_trees'") && e.contains("random-forest") && e.contains("n_rounds"), "{e}");
        let p = TrainParams::parse_options("learning_rate=0.1").unwrap();
        let e = p.check().unwrap_err().to_string();
        assert!(e.contains("'learning_rate'") && e.contains("gradient-boosting"), "{e}");
        let p = TrainParams::parse_options("max_depth=3 algorithm=gradient-boosting lambda=2").unwrap();
        assert_eq!(p.boosting.tree.max_depth, 3, "tree keys apply whatever their order");
        assert_eq!(p.forest.tree.max_depth, 3, "a tree key sets both algorithms' tree settings");
        check_for(&p, Task::Regression).unwrap();
        let p = TrainParams::parse_options("algorithm=gradient-boosting loss=logistic").unwrap();
        let e = p.boosting.resolve_loss(Task::Classification, 3).unwrap_err().to_string();
        assert!(e.contains("'loss'") && e.contains("softmax"), "{e}");
    }

    #[test]
    fn task_rules_apply_once_the_task_is_known() {
        // No task yet: the criterion waits for the data's task.
        let checked = TrainParams::parse_options("criterion=mse").unwrap().check().unwrap();
        let e = checked.for_task(Task::Classification).unwrap_err().to_string();
        assert!(e.contains("'criterion'") && e.contains("regression"), "{e}");
        assert_eq!(checked.for_task(Task::Regression).unwrap().task, Some(Task::Regression));
        // A task given: the check applies them at once.
        let e = TrainParams::parse_options("task=regression voting=unweighted").unwrap().check().unwrap_err();
        assert!(e.to_string().contains("'voting'"), "{e}");
        // Boosting has no task rules of a forest's.
        TrainParams::parse_options("algorithm=gradient-boosting")
            .unwrap()
            .check()
            .unwrap()
            .for_task(Task::Regression)
            .unwrap();
    }

    #[test]
    fn a_list_value_runs_on_across_the_separators() {
        let p = TrainParams::parse_options("n_trees=5 monotone=a:+1, b:-1,c:0 max_depth=3").unwrap();
        let expected: crate::MonotoneConstraints = vec![("a".into(), 1), ("b".into(), -1), ("c".into(), 0)];
        assert_eq!((p.forest.tree.monotone.clone(), p.forest.tree.max_depth), (expected.clone(), 3));
        assert_eq!(p.boosting.tree.monotone, expected, "a tree setting of both algorithms");
        let described = p.describe(Task::Regression, 3, None);
        assert!(described.contains(&("monotone".into(), "a:+1,b:-1,c:0".into())), "{described:?}");
        // Only a list key takes pieces without '='.
        let error = TrainParams::parse_options("max_depth=3 a:+1").unwrap_err().to_string();
        assert!(error.contains("option 'a:+1': expected key=value"), "{error}");
        assert!(TrainParams::parse_options("stray n_trees=5").is_err());
    }

    #[test]
    fn reports_keep_the_order_models_record() {
        let p = TrainParams::parse_options("early_stopping_rounds=3").unwrap();
        let forest: Vec<String> = p.describe(Task::Regression, 4, None).into_iter().map(|(k, _)| k).collect();
        let expected = "task algorithm n_trees max_features bootstrap sample_fraction split_method splitter max_bins \
            min_bin_size max_depth max_leaf_nodes min_samples_leaf min_samples_split min_samples_category category_penalty \
            min_weight_fraction_leaf impurity_threshold min_impurity_decrease criterion voting oob oob_per_observation \
            importance seed";
        assert_eq!(forest, expected.split_whitespace().collect::<Vec<_>>());
        let mut p = p;
        p.set("algorithm", "gradient-boosting").unwrap();
        let boosting: Vec<String> = p.describe(Task::Regression, 4, None).into_iter().map(|(k, _)| k).collect();
        let expected = "task algorithm n_rounds max_depth learning_rate min_split_loss lambda sample_fraction \
            max_features min_samples_leaf min_samples_category category_penalty split_method max_bins min_bin_size loss \
            early_stopping_rounds importance seed validation_fraction";
        assert_eq!(boosting, expected.split_whitespace().collect::<Vec<_>>());
    }

    #[test]
    fn a_forest_reports_in_the_table_order_and_boosting_in_its_record_order() {
        let p = TrainParams::default();
        // Every forest key a default model records (`monotone` only when set).
        let forest: Vec<&str> =
            KEYS.iter().filter(|k| k.applies.to(Algorithm::RandomForest) && (k.recorded)(&p)).map(|k| k.name).collect();
        assert!(!forest.contains(&"monotone"));
        let described: Vec<String> = p.describe(Task::Regression, 4, None).into_iter().map(|(k, _)| k).collect();
        assert_eq!(described, forest);
        // The boosting order names each boosting key once, and no other key.
        let mut boosting: Vec<&str> =
            KEYS.iter().filter(|k| k.applies.to(Algorithm::GradientBoosting)).map(|k| k.name).collect();
        let mut recorded = BOOSTING_RECORD_ORDER.to_vec();
        boosting.sort_unstable();
        recorded.sort_unstable();
        assert_eq!(recorded, boosting);
    }

    #[test]
    fn typed_values_out_of_range_are_refused_naming_the_key() {
        let mut p = TrainParams::default();
        p.forest.n_trees = 0;
        let e = p.check().unwrap_err().to_string();
        assert!(e.contains("'n_trees'") && e.contains("expected an integer >= 1, got '0'"), "{e}");
        let mut p = TrainParams::default();
        p.forest.tree.max_bins = 70_000;
        let e = p.check().unwrap_err().to_string();
        assert!(e.contains("'max_bins'") && e.contains("in [2, 65536]"), "{e}");
        let mut p = TrainParams::parse_options("algorithm=gradient-boosting").unwrap();
        p.boosting.learning_rate = f64::NAN;
        let e = p.check().unwrap_err().to_string();
        assert!(e.contains("'learning_rate'") && e.contains("(0, 1]"), "{e}");
        p.boosting.learning_rate = 0.1;
        p.boosting.tree.max_features = MaxFeatures::Count(0);
        let e = p.check().unwrap_err().to_string();
        assert!(e.contains("'max_features'"), "{e}");
        p.boosting.tree.max_features = MaxFeatures::All;
        p.forest.n_trees = 0; // not the chosen algorithm's: not checked
        p.forest.voting = Voting::Weighted;
        check_for(&p, Task::Regression).unwrap();
        let mut p = TrainParams::default();
        p.forest.tree.min_samples_leaf = Some(0);
        let e = p.check().unwrap_err().to_string();
        assert!(e.contains("'min_samples_leaf'"), "{e}");
        let mut p = TrainParams::parse_options("algorithm=gradient-boosting").unwrap();
        p.importance = ImportanceKind::MdaRaw;
        let e = p.check().unwrap_err().to_string();
        assert!(e.contains("'importance'") && e.contains("mdi"), "{e}");
    }
}
