//! Class weights (`class_weight=balanced` or `class_weight=yes:5,no:1`) and
//! boosting's `scale_pos_weight`: parsed and shown here, and resolved
//! against the training label's classes into one factor per class, which
//! multiplies each row's sample weight. A class weight is exactly a sample
//! weight given to every row of its class: the same trees, bit for bit.

use crate::params::rules::invalid;
use crate::params::types::ClassWeight;
use crate::{Result, TrainParams};

/// The key's name, as errors say it.
const KEY: &str = "class_weight";

/// Parses `balanced`, `none`, or `class:weight,...` (a class's name is
/// everything before its last `:`; weights finite and above 0; each class once).
pub(crate) fn parse(value: &str) -> Result<ClassWeight> {
    match value {
        "balanced" => return Ok(ClassWeight::Balanced),
        "none" => return Ok(ClassWeight::None),
        _ => {}
    }
    let mut given: Vec<(String, f64)> = Vec::new();
    for item in value.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()) {
        let Some((name, weight)) = item.rsplit_once(':') else {
            return Err(invalid(KEY, format!("expected balanced or class:weight,..., got '{item}'")));
        };
        let weight = weight
            .parse::<f64>()
            .ok()
            .filter(|w| w.is_finite() && *w > 0.0)
            .ok_or_else(|| invalid(KEY, format!("class '{name}': expected a finite weight > 0, got '{weight}'")))?;
        if given.iter().any(|(n, _)| n == name) {
            return Err(invalid(KEY, format!("class '{name}' is given twice")));
        }
        given.push((name.to_owned(), weight));
    }
    if given.is_empty() {
        return Err(invalid(KEY, "expected balanced or class:weight,..., got nothing"));
    }
    Ok(ClassWeight::Given(given))
}

/// The weights as the option spells them, for reports and model files.
pub(crate) fn show(weights: &ClassWeight) -> String {
    match weights {
        ClassWeight::None => "none".into(),
        ClassWeight::Balanced => "balanced".into(),
        ClassWeight::Given(given) => given.iter().map(|(name, w)| format!("{name}:{w}")).collect::<Vec<_>>().join(","),
    }
}

/// Each class's factor (classes in the label's order, `names`), from
/// `class_weight` and `scale_pos_weight`; `None` when every factor is 1.
/// `labels` are the training rows' class indices, counted for `balanced`
/// only. A class
/// weight on a regression label, a name that is not a class, or
/// `scale_pos_weight` without two classes is an error naming it.
pub(crate) fn factors(params: &TrainParams, names: Option<&[String]>, labels: &[u32]) -> Result<Option<Vec<f64>>> {
    let scale = params.boosting.scale_pos_weight;
    let scaled = params.algorithm.0 == crate::Algorithm::GradientBoosting && scale != 1.0;
    if params.class_weight == ClassWeight::None && !scaled {
        return Ok(None);
    }
    let Some(names) = names else {
        let key = if params.class_weight == ClassWeight::None { "scale_pos_weight" } else { KEY };
        return Err(invalid(key, "applies to classification; the label is a regression target"));
    };
    let mut factors = vec![1.0; names.len()];
    match &params.class_weight {
        ClassWeight::None => {}
        ClassWeight::Balanced => {
            let mut counts = vec![0usize; names.len()];
            labels.iter().for_each(|&label| counts[label as usize] += 1);
            let (n, k) = (labels.len() as f64, names.len() as f64);
            for (f, &count) in factors.iter_mut().zip(&counts) {
                if count > 0 {
                    *f = n / (k * count as f64);
                }
            }
        }
        ClassWeight::Given(given) => {
            for (name, w) in given {
                let Some(c) = names.iter().position(|n| n == name) else {
                    let known = names.join(", ");
                    return Err(invalid(KEY, format!("'{name}' is not a class of the label; the classes are {known}")));
                };
                factors[c] = *w;
            }
        }
    }
    if scaled {
        if names.len() != 2 {
            return Err(invalid(
                "scale_pos_weight",
                format!("applies to two classes (it weighs the second); the label has {}", names.len()),
            ));
        }
        factors[1] *= scale;
    }
    Ok(Some(factors))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_weights_parse_and_show_back() {
        assert_eq!(parse("balanced").unwrap(), ClassWeight::Balanced);
        assert_eq!(parse("none").unwrap(), ClassWeight::None);
        let given = parse("yes:5, no:0.5").unwrap();
        assert_eq!(given, ClassWeight::Given(vec![("yes".into(), 5.0), ("no".into(), 0.5)]));
        assert_eq!(show(&given), "yes:5,no:0.5");
        assert_eq!(parse(&show(&given)).unwrap(), given);
        for (value, expected) in [
            ("yes", "expected balanced or class:weight,..., got 'yes'"),
            ("yes:0", "class 'yes': expected a finite weight > 0, got '0'"),
            ("yes:inf", "class 'yes': expected a finite weight > 0, got 'inf'"),
            ("yes:1,yes:2", "class 'yes' is given twice"),
            ("", "got nothing"),
        ] {
            let message = parse(value).unwrap_err().to_string();
            assert!(message.contains(expected), "{value}: {message}");
        }
    }

    #[test]
    fn factors_follow_the_classes() {
        let names: Vec<String> = vec!["no".into(), "yes".into()];
        let params = |options: &str| TrainParams::parse_options(options).unwrap();
        let labels: Vec<u32> = [0; 30].into_iter().chain([1; 10]).collect();
        let balanced = factors(&params("class_weight=balanced"), Some(&names), &labels).unwrap().unwrap();
        assert_eq!(balanced, vec![40.0 / 60.0, 40.0 / 20.0]);
        let scaled = params("algorithm=gradient-boosting class_weight=yes:2 scale_pos_weight=3");
        assert_eq!(factors(&scaled, Some(&names), &labels).unwrap().unwrap(), vec![1.0, 6.0]);
        assert_eq!(factors(&params("n_trees=3"), Some(&names), &labels).unwrap(), None);
        let unknown = factors(&params("class_weight=maybe:2"), Some(&names), &labels).unwrap_err().to_string();
        assert!(unknown.contains("'maybe' is not a class of the label; the classes are no, yes"), "{unknown}");
        let regression = factors(&params("class_weight=balanced"), None, &[]).unwrap_err().to_string();
        assert!(regression.contains("option 'class_weight': applies to classification"), "{regression}");
        let three: Vec<String> = vec!["a".into(), "b".into(), "c".into()];
        let scale = params("algorithm=gradient-boosting scale_pos_weight=2");
        let message = factors(&scale, Some(&three), &[0, 1, 2]).unwrap_err().to_string();
        assert!(message.contains("option 'scale_pos_weight': applies to two classes"), "{message}");
    }
}
