//! The rules option values obey, each shared by parsing (`set`), by
//! `check` on typed values and by `docs/parameters.md`, and the error every
//! option reports.

use crate::{ArborError, Result};

/// The error of option `key`.
pub(crate) fn invalid(key: &str, message: impl Into<String>) -> ArborError {
    ArborError::InvalidOption { key: key.to_owned(), message: message.into() }
}

/// The range a numeric option admits.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Rule {
    /// An integer of at least `min`.
    Count { min: usize },
    /// An integer in `[min, max]`.
    CountIn { min: usize, max: usize },
    /// A finite number in `(0, high]` when `low_open`, else in `[0, high]`.
    Fraction { low_open: bool, high: f64 },
    /// A finite number of at least 0.
    NonNegative,
    /// A finite number above 0.
    Positive,
    /// A number strictly between `low` and `high`.
    Between { low: f64, high: f64 },
}

impl Rule {
    /// The values the rule admits, in words (as its errors say them).
    pub(crate) fn describe(self) -> String {
        match self {
            Rule::Count { min } => format!("an integer >= {min}"),
            Rule::CountIn { min, max } => format!("an integer in [{min}, {max}]"),
            Rule::Fraction { low_open: true, high } => format!("a number in (0, {high}]"),
            Rule::Fraction { low_open: false, high } => format!("a number in [0, {high}]"),
            Rule::NonNegative => "a finite number >= 0".into(),
            Rule::Positive => "a finite number > 0".into(),
            Rule::Between { low, high } => format!("a number in ({low}, {high})"),
        }
    }

    /// Parses an integer `value` of `key` and checks it.
    pub(crate) fn parse_count(self, key: &str, value: &str) -> Result<usize> {
        match value.parse::<usize>() {
            Ok(v) => self.check_count(key, v, value),
            Err(_) => Err(self.count_error(key, value, false)),
        }
    }

    /// Checks integer `v` of `key`, shown as `shown` in the error.
    pub(crate) fn check_count(self, key: &str, v: usize, shown: &str) -> Result<usize> {
        match self {
            Rule::Count { min } | Rule::CountIn { min, .. } if v < min => Err(self.count_error(key, shown, false)),
            Rule::CountIn { max, .. } if v > max => Err(self.count_error(key, shown, true)),
            _ => Ok(v),
        }
    }

    /// The error of an integer below the range (or unreadable), or above it.
    fn count_error(self, key: &str, shown: &str, above: bool) -> ArborError {
        match self {
            Rule::CountIn { min, max } if above => {
                invalid(key, format!("expected an integer in [{min}, {max}], got '{shown}'"))
            }
            Rule::Count { min } | Rule::CountIn { min, .. } => {
                invalid(key, format!("expected an integer >= {min}, got '{shown}'"))
            }
            _ => unreachable!("a count rule"),
        }
    }

    /// Parses a number `value` of `key` and checks it.
    pub(crate) fn parse_number(self, key: &str, value: &str) -> Result<f64> {
        match value.parse::<f64>() {
            Ok(v) => self.check_number(key, v, value),
            Err(_) => Err(self.number_error(key, value)),
        }
    }

    /// Checks number `v` of `key`, shown as `shown` in the error.
    pub(crate) fn check_number(self, key: &str, v: f64, shown: &str) -> Result<f64> {
        let admitted = match self {
            Rule::Fraction { low_open, high } => v.is_finite() && v <= high && (v > 0.0 || !low_open && v == 0.0),
            Rule::NonNegative => v.is_finite() && v >= 0.0,
            Rule::Positive => v.is_finite() && v > 0.0,
            Rule::Between { low, high } => v > low && v < high,
            _ => unreachable!("a number rule"),
        };
        if admitted {
            Ok(v)
        } else {
            Err(self.number_error(key, shown))
        }
    }

    /// The error of a number out of range.
    fn number_error(self, key: &str, shown: &str) -> ArborError {
        match self {
            Rule::Fraction { low_open, high } => {
                let range = if low_open { format!("in (0, {high}]") } else { format!("in [0, {high}]") };
                invalid(key, format!("expected a number {range}, got '{shown}'"))
            }
            Rule::NonNegative | Rule::Positive | Rule::Between { .. } => {
                invalid(key, format!("expected {}, got '{shown}'", self.describe()))
            }
            _ => unreachable!("a number rule"),
        }
    }

    /// Checks typed integer `v` of `key` (for `check`).
    pub(crate) fn count(self, key: &str, v: usize) -> Result<()> {
        self.check_count(key, v, &v.to_string()).map(drop)
    }

    /// Checks typed number `v` of `key` (for `check`).
    pub(crate) fn number(self, key: &str, v: f64) -> Result<()> {
        self.check_number(key, v, &v.to_string()).map(drop)
    }
}

/// Parses a boolean `value` of `key`.
pub(crate) fn parse_bool(key: &str, value: &str) -> Result<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(invalid(key, format!("expected true or false, got '{value}'"))),
    }
}

/// Parses `value` of `key` as one of the named `choices` (any case).
pub(crate) fn parse_choice<T: Copy>(key: &str, value: &str, choices: &[(&str, T)]) -> Result<T> {
    choices.iter().find(|(name, _)| name.eq_ignore_ascii_case(value)).map(|(_, v)| *v).ok_or_else(|| {
        let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
        invalid(key, format!("expected one of {}, got '{value}'", names.join(", ")))
    })
}
