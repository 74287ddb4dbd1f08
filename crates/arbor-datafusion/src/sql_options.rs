//! The options string of `train_forest`: the training keys of the ensemble's
//! one table (`OPTION_KEYS`, the keys of `arbor train --set`) and the few
//! keys that only SQL has, listed once here in [`SQL_KEYS`]: parsing, the
//! check that a string column is not options passed by mistake, and the
//! reference page all read this list.

use arbor_ensemble::{ArborError, TrainParams, OPTION_KEYS};

/// What `train_forest` does with a group that has no row to train on (no
/// rows at all, a label null in every row, weights that sum to zero).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum OnGroupError {
    /// The group's model is NULL and every other group gets its model.
    #[default]
    Null,
    /// The query fails with an error that describes the group.
    Fail,
}

impl OnGroupError {
    /// The choices by name, as the options string spells them.
    const CHOICES: [(&'static str, OnGroupError); 2] = [("null", OnGroupError::Null), ("fail", OnGroupError::Fail)];
}

/// A key that `train_forest`'s options string takes besides the training
/// keys: it decides what SQL does with its arguments or its groups, so
/// `arbor train` has no such `--set` key.
pub(crate) struct SqlKey {
    /// The key's name.
    pub name: &'static str,
    /// Its default, as the reference page shows it.
    pub default: &'static str,
    /// What it does, for the reference page.
    pub description: &'static str,
}

/// The keys of SQL's own, in the order the reference page lists them.
pub(crate) const SQL_KEYS: [SqlKey; 4] = [
    SqlKey {
        name: "weight",
        default: "none (every row weighs 1)",
        description: "`weight=ARG` names the argument that holds sample weights; that argument is then not a \
                      feature. `arbor train` takes `--weight COL` instead.",
    },
    SqlKey {
        name: "group",
        default: "none",
        description: "`group=ARG` names the argument that holds query ids (integers) for `loss=lambdarank`, which \
                      ranks the rows of each query against each other; that argument is then not a feature, and \
                      a query's rows need not be contiguous. Such a call trains in one process (the cluster's \
                      level-wise training does not rank). `arbor train` takes `--group COL` instead.",
    },
    SqlKey {
        name: "on_group_error",
        default: "`null`",
        description: "What a group with no row to train on gives (no rows, e.g. after a `FILTER`; a label null \
                      in every row; weights that sum to zero): `null`, a NULL model, which `predict_forest` and \
                      the other functions answer with NULL, while every other group gets its model; or `fail`, \
                      an error that fails the query. DataFusion does not give an aggregate its group's `GROUP BY` \
                      key, so the error describes the group by its row count and the values of one of its rows; \
                      with `null`, `WHERE model IS NULL` lists such groups by their keys. `arbor train` always \
                      fails on such data.",
    },
    SqlKey {
        name: "parts",
        default: "none",
        description: "On a Ballista cluster, the number of partitions the rows arrive in, which arbor's cluster \
                      planner sets: each partition holding enough of a group's rows grows `ceil(n_trees / parts)` \
                      trees of a random forest on them, and the final aggregate merges the forests into `n_trees` \
                      trees allotted by rows. A single-node session ignores it.",
    },
];

/// Whether `key` is an option key of `train_forest` (a training key or one of SQL's own).
pub(crate) fn is_option_key(key: &str) -> bool {
    OPTION_KEYS.contains(&key) || SQL_KEYS.iter().any(|k| k.name == key)
}

/// A parsed options string of `train_forest`.
#[derive(Clone, Debug, Default)]
pub(crate) struct TrainOptions {
    /// The training parameters (keys of `arbor train --set`).
    pub params: TrainParams,
    /// The name of the argument that holds sample weights (`weight`).
    pub weight: Option<String>,
    /// The name of the argument that holds query ids (`group`, for `loss=lambdarank`).
    pub group: Option<String>,
    /// What a group with no row to train on gives (`on_group_error`).
    pub on_group_error: OnGroupError,
    /// The partitions the rows arrive in on a cluster (`parts`).
    pub parts: Option<usize>,
}

impl TrainOptions {
    /// Parses `key=value` pairs separated by spaces or commas; an unknown
    /// key is an error listing every key `train_forest` accepts.
    pub(crate) fn parse(options: &str) -> Result<TrainOptions, ArborError> {
        let mut parsed = TrainOptions::default();
        for (key, value) in TrainParams::option_pairs(options)? {
            match key {
                "weight" => parsed.weight = Some(value.to_owned()),
                "group" => parsed.group = Some(value.to_owned()),
                "parts" => {
                    parsed.parts = Some(value.parse().ok().filter(|&n: &usize| n > 0).ok_or_else(|| {
                        ArborError::InvalidOption {
                            key: key.to_owned(),
                            message: format!("expected a positive integer, got '{value}'"),
                        }
                    })?)
                }
                "on_group_error" => {
                    parsed.on_group_error = OnGroupError::CHOICES
                        .iter()
                        .find(|(name, _)| name.eq_ignore_ascii_case(value))
                        .map(|(_, choice)| *choice)
                        .ok_or_else(|| ArborError::InvalidOption {
                            key: key.to_owned(),
                            message: format!("expected one of null, fail, got '{value}'"),
                        })?
                }
                _ if OPTION_KEYS.contains(&key) => parsed.params.set(key, value)?,
                _ => {
                    let accepted: Vec<&str> =
                        OPTION_KEYS.iter().copied().chain(SQL_KEYS.iter().map(|k| k.name)).collect();
                    return Err(ArborError::UnknownOption { key: key.to_owned(), accepted: accepted.join(", ") });
                }
            }
        }
        if parsed.group.is_some() {
            parsed.params.rank_by_default();
        }
        Ok(parsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sql_keys_and_training_keys_parse_together() {
        let o = TrainOptions::parse("n_trees=7, weight=w on_group_error=fail").unwrap();
        assert_eq!(
            (o.params.forest.n_trees, o.weight.as_deref(), o.on_group_error),
            (7, Some("w"), OnGroupError::Fail)
        );
        let o = TrainOptions::parse("on_group_error=NULL").unwrap();
        assert_eq!((o.on_group_error, o.weight), (OnGroupError::Null, None));
        assert_eq!(TrainOptions::parse("").unwrap().on_group_error, OnGroupError::Null, "null is the default");
    }

    #[test]
    fn errors_name_the_key_and_what_it_accepts() {
        let e = TrainOptions::parse("on_group_error=skip").unwrap_err().to_string();
        assert_eq!(e, "option 'on_group_error': expected one of null, fail, got 'skip'");
        let e = TrainOptions::parse("on_group_eror=fail").unwrap_err().to_string();
        assert!(e.contains("unknown option 'on_group_eror'") && e.contains("n_trees") && e.contains("on_group_error"));
        let e = TrainOptions::parse("n_trees=0").unwrap_err().to_string();
        assert!(e.contains("'n_trees'"), "{e}");
    }

    #[test]
    fn no_sql_key_is_a_training_key() {
        for key in &SQL_KEYS {
            assert!(!OPTION_KEYS.contains(&key.name), "{} is in both tables", key.name);
            assert!(is_option_key(key.name));
        }
        assert!(is_option_key("n_trees") && !is_option_key("n_tres"));
    }
}
