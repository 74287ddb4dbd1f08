//! The `monotone` option: which features the model's output may only rise
//! (`+1`) or only fall (`-1`) with, as `feature:+1,other:-1`; parsed and
//! shown here, and resolved against the training data's features (numeric
//! ones only) into a direction per feature for the grower
//! (docs/algorithms.md, "Monotone constraints").

use crate::params::rules::invalid;
use crate::params::types::MonotoneConstraints;
use crate::{Feature, Loss, Result};
use arbor_quantize::FeatureType;

/// The key's name, as errors say it.
const KEY: &str = "monotone";

/// Parses `feature:+1,other:-1` (directions `+1`, `1`, `-1` or `0`; a
/// feature's name is everything before its last `:`), or `none`. Each feature once.
pub(crate) fn parse(value: &str) -> Result<MonotoneConstraints> {
    let mut out: MonotoneConstraints = Vec::new();
    if value == "none" {
        return Ok(out);
    }
    for item in value.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()) {
        let Some((name, direction)) = item.rsplit_once(':') else {
            return Err(invalid(KEY, format!("expected feature:+1 or feature:-1, got '{item}'")));
        };
        let direction = match direction {
            "+1" | "1" => 1,
            "-1" => -1,
            "0" => 0,
            other => {
                return Err(invalid(
                    KEY,
                    format!("feature '{name}': expected a direction of +1, -1 or 0, got '{other}'"),
                ))
            }
        };
        if name.is_empty() {
            return Err(invalid(KEY, format!("expected a feature name before ':' in '{item}'")));
        }
        if out.iter().any(|(n, _)| n == name) {
            return Err(invalid(KEY, format!("feature '{name}' is given twice")));
        }
        out.push((name.to_owned(), direction));
    }
    Ok(out)
}

/// The constraints as the option spells them (`a:+1,b:-1`), for reports
/// and model files; [`parse`] reads it back.
pub(crate) fn show(constraints: &MonotoneConstraints) -> String {
    let direction = |d: i8| match d {
        1 => "+1",
        -1 => "-1",
        _ => "0",
    };
    constraints.iter().map(|(name, d)| format!("{name}:{}", direction(*d))).collect::<Vec<_>>().join(",")
}

/// Each training feature's direction (`0`: free), or an empty list when no
/// feature is constrained. A name that is not a feature, or a categorical
/// feature (its categories have no order), is an error naming it.
pub(crate) fn directions(constraints: &MonotoneConstraints, features: &[Feature]) -> Result<Vec<i8>> {
    if constraints.iter().all(|(_, d)| *d == 0) {
        // Still every name must be a feature.
        check_names(constraints, features)?;
        return Ok(Vec::new());
    }
    check_names(constraints, features)?;
    let mut out = vec![0; features.len()];
    for (name, d) in constraints {
        let f = features.iter().position(|f| &f.name == name).expect("checked above");
        if features[f].kind == FeatureType::Categorical && *d != 0 {
            return Err(invalid(
                KEY,
                format!("feature '{name}' is categorical: its categories have no order to keep; constrain numeric features only"),
            ));
        }
        out[f] = *d;
    }
    Ok(out)
}

/// The directions a tree grows under ([`directions`]), once the model's
/// kind is known: a forest keeps one value per leaf monotone only for
/// regression and two classes (the second class's share, as scikit-learn);
/// boosting keeps every output's score monotone, but not under a loss that
/// re-fits its leaves after growth (their quantiles ignore the ranges).
pub(crate) fn for_training(
    constraints: &MonotoneConstraints,
    features: &[Feature],
    n_classes: usize,
    loss: Option<Loss>,
) -> Result<Vec<i8>> {
    let directions = directions(constraints, features)?;
    if directions.is_empty() {
        return Ok(directions);
    }
    match loss {
        None if n_classes > 2 => Err(invalid(
            KEY,
            format!(
                "a random forest of {n_classes} classes has no one value to keep monotone; \
                 constraints apply to regression and to two classes (the second class's share)"
            ),
        )),
        Some(loss) if loss.refits_leaves() => Err(invalid(
            KEY,
            format!(
                "loss={} re-fits its leaves to quantiles after growing, which would break the constraints",
                loss.name()
            ),
        )),
        _ => Ok(directions),
    }
}

/// Every constrained name is a training feature.
fn check_names(constraints: &MonotoneConstraints, features: &[Feature]) -> Result<()> {
    for (name, _) in constraints {
        if !features.iter().any(|f| &f.name == name) {
            let known: Vec<&str> = features.iter().map(|f| f.name.as_str()).collect();
            return Err(invalid(KEY, format!("'{name}' is not a feature; the features are {}", known.join(", "))));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constraints_parse_and_show_back() {
        let parsed = parse("price:+1, age:-1,size:1 odd:name:0").unwrap();
        let expected: MonotoneConstraints =
            vec![("price".into(), 1), ("age".into(), -1), ("size".into(), 1), ("odd:name".into(), 0)];
        assert_eq!(parsed, expected);
        assert_eq!(show(&parsed), "price:+1,age:-1,size:+1,odd:name:0");
        assert_eq!(parse(&show(&parsed)).unwrap(), parsed);
        assert!(parse("").unwrap().is_empty() && parse("none").unwrap().is_empty());
    }

    #[test]
    fn bad_constraints_name_what_is_wrong() {
        let message = |v: &str| parse(v).unwrap_err().to_string();
        assert!(message("price").contains("expected feature:+1 or feature:-1, got 'price'"), "{}", message("price"));
        assert!(message("price:2").contains("feature 'price': expected a direction of +1, -1 or 0, got '2'"));
        assert!(message(":+1").contains("expected a feature name"));
        assert!(message("a:+1,a:-1").contains("feature 'a' is given twice"));
    }
}
