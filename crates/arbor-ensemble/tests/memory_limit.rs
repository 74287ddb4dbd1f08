//! The memory limit a caller sets: binning refuses data whose bins alone
//! would pass it, with an error naming the bytes (its own test binary: the
//! limit is the process's).

mod common;

use arbor_ensemble::{set_memory_limit, TrainParams, Trainer};

#[test]
fn a_table_whose_bins_pass_the_limit_is_refused_by_name() {
    let batch = common::read("diamonds_reg_train.parquet", 20_000);
    let trainer = Trainer::new(TrainParams::parse_options("n_trees=2").unwrap());
    set_memory_limit(Some(10_000));
    let e = trainer.fit(&batch).unwrap_err().to_string();
    set_memory_limit(None);
    assert!(e.starts_with("binning 20000 rows") && e.contains("the memory limit set is 10.0 KB"), "{e}");
    assert!(trainer.fit(&batch).is_ok(), "without the limit it trains");
}

/// Under a limit too tight for the trees' row records, classification
/// forests read the columns by row id instead: slower, and the same model
/// bytes (regression forests keep their records: same bytes trivially).
#[test]
fn forests_under_a_tight_limit_train_the_same_bytes() {
    for (file, options) in [("flights_cls_train.parquet", "n_trees=4"), ("diamonds_reg_train.parquet", "n_trees=4")] {
        let batch = common::read(file, 30_000);
        let trainer = Trainer::new(TrainParams::parse_options(options).unwrap());
        let free = trainer.fit(&batch).unwrap().to_bytes();
        for limit in [1_000_000, 2_000_000] {
            set_memory_limit(Some(limit));
            let tight = trainer.fit(&batch).map(|m| m.to_bytes());
            set_memory_limit(None);
            assert_eq!(tight.unwrap(), free, "{file} under {limit} bytes");
        }
    }
}
