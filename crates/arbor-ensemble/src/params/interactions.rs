//! The `interaction_constraints` option: sets of features allowed to meet on
//! one path of a tree, as `[a,b],[c,d,e]`; parsed and shown here, and
//! resolved against the training data's features into feature indices
//! (docs/algorithms.md, "Interaction constraints").

use crate::params::rules::invalid;
use crate::params::types::InteractionSets;
use crate::{Feature, Result};

/// The key's name, as errors say it.
const KEY: &str = "interaction_constraints";

/// Parses `[a,b],[c,d,e]`: bracketed lists of feature names, separated by
/// commas or spaces, or `none`. A set holds at least one feature, each once.
pub(crate) fn parse(value: &str) -> Result<InteractionSets> {
    let mut sets: InteractionSets = Vec::new();
    if value == "none" {
        return Ok(sets);
    }
    let mut rest = value.trim();
    while !rest.is_empty() {
        let Some(body) = rest.strip_prefix('[') else {
            return Err(invalid(KEY, format!("expected sets of features as [a,b],[c,d], got '{value}'")));
        };
        let Some((inside, after)) = body.split_once(']') else {
            return Err(invalid(KEY, format!("a set opened with '[' is not closed in '{value}'")));
        };
        let mut set: Vec<String> = Vec::new();
        for name in inside.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()) {
            if name.contains('[') {
                return Err(invalid(KEY, format!("sets do not nest: '{value}'")));
            }
            if set.iter().any(|n| n == name) {
                return Err(invalid(KEY, format!("feature '{name}' is given twice in one set")));
            }
            set.push(name.to_owned());
        }
        if set.is_empty() {
            return Err(invalid(KEY, format!("an empty set in '{value}'")));
        }
        sets.push(set);
        rest = after.trim_start_matches(|c: char| c == ',' || c.is_whitespace());
    }
    Ok(sets)
}

/// The sets as the option spells them (`[a,b],[c,d,e]`), for reports and model files.
pub(crate) fn show(sets: &InteractionSets) -> String {
    sets.iter().map(|set| format!("[{}]", set.join(","))).collect::<Vec<_>>().join(",")
}

/// Each set as feature indices, or none when no set is given. A name that
/// is not a feature is an error naming it.
pub(crate) fn resolve(sets: &InteractionSets, features: &[Feature]) -> Result<Vec<Vec<usize>>> {
    sets.iter()
        .map(|set| {
            set.iter()
                .map(|name| {
                    features.iter().position(|f| &f.name == name).ok_or_else(|| {
                        let known: Vec<&str> = features.iter().map(|f| f.name.as_str()).collect();
                        invalid(KEY, format!("'{name}' is not a feature; the features are {}", known.join(", ")))
                    })
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_parse_and_show_back() {
        let sets = parse("[a,b], [c, d,e] [f]").unwrap();
        let expected: InteractionSets =
            vec![vec!["a".into(), "b".into()], vec!["c".into(), "d".into(), "e".into()], vec!["f".into()]];
        assert_eq!(sets, expected);
        assert_eq!(show(&sets), "[a,b],[c,d,e],[f]");
        assert_eq!(parse(&show(&sets)).unwrap(), sets);
        assert!(parse("").unwrap().is_empty() && parse("none").unwrap().is_empty());
    }

    #[test]
    fn bad_sets_name_what_is_wrong() {
        for (value, expected) in [
            ("a,b", "expected sets of features as [a,b],[c,d], got 'a,b'"),
            ("[a,b", "a set opened with '[' is not closed"),
            ("[a,[b]]", "sets do not nest"),
            ("[a,a]", "feature 'a' is given twice in one set"),
            ("[a],[]", "an empty set"),
        ] {
            let message = parse(value).unwrap_err().to_string();
            assert!(message.contains(expected), "{value}: {message}");
        }
    }
}
