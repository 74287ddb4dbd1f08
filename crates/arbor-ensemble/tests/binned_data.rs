//! Binned data: every way in bins the same rows alike and trains the same
//! model, binned data trains again with other options, and options that
//! would bin the rows otherwise are refused.

mod common;

use arbor_ensemble::{BinnedData, TrainParams, Trainer, BIN_SAMPLE_ROWS};
use arrow::array::RecordBatch;
use common::read;

fn trainer(options: &str) -> Trainer<'static> {
    Trainer::new(TrainParams::parse_options(options).unwrap())
}

/// Batches (whole, or cut and reordered), a column at a time, and
/// prepared data all give the same model bytes: the bins come from a
/// sample chosen by content (flights has more rows than the sample) and
/// the rows are put in one order by their bins.
#[test]
fn every_way_in_bins_alike() {
    let batch = read("flights_cls_train.parquet", usize::MAX);
    assert!(batch.num_rows() > 2 * BIN_SAMPLE_ROWS, "the sample is a part of the rows");
    let n = batch.num_rows();
    let pieces: Vec<RecordBatch> = [(n / 2, n - n / 2), (0, 70_001), (70_001, n / 2 - 70_001)]
        .iter()
        .map(|&(at, len)| batch.slice(at, len))
        .collect();
    for options in ["n_trees=3 max_depth=8 oob=true", "algorithm=gradient-boosting n_rounds=5 sample_fraction=0.5"] {
        let trainer = trainer(options);
        let whole = trainer.fit(&batch).unwrap().to_bytes();
        assert_eq!(trainer.fit(pieces.clone()).unwrap().to_bytes(), whole, "{options}: batches cut and reordered");
        let quantize = trainer.params().tree().quantize_params();
        let by_column = BinnedData::read_columns(&batch.schema(), trainer.roles(), None, quantize, |name| {
            Ok(pieces.iter().map(|p| p.column_by_name(name).unwrap().clone()).collect())
        })
        .unwrap();
        assert_eq!(trainer.fit_binned(&by_column).unwrap().model.to_bytes(), whole, "{options}: a column at a time");
        let prepared = trainer.training_data(&batch).unwrap();
        assert_eq!(trainer.fit_data(&prepared).unwrap().model.to_bytes(), whole, "{options}: prepared data");
    }
}

/// Binned once, trained many times: each fit is the model `fit` trains
/// with those options, and the binned data is unchanged by training.
#[test]
fn binned_data_trains_again_with_other_options() {
    let batch = read("diamonds_reg_train.parquet", 20_000);
    let binned = trainer("n_trees=4").bin(std::slice::from_ref(&batch)).unwrap();
    assert_eq!(binned.n_rows(), 20_000);
    for options in ["n_trees=4", "n_trees=6 max_depth=5 seed=3", "algorithm=gradient-boosting n_rounds=8"] {
        let trainer = trainer(options);
        let once = trainer.fit_binned(&binned).unwrap().model.to_bytes();
        assert_eq!(once, trainer.fit(&batch).unwrap().to_bytes(), "{options}");
        assert_eq!(trainer.fit_binned(&binned).unwrap().model.to_bytes(), once, "{options}, again");
    }
}

/// Options that change the bins, or the task, are refused by name with both values.
#[test]
fn options_that_bin_otherwise_are_refused() {
    let batch = read("diamonds_reg_train.parquet", 2_000);
    let binned = trainer("max_bins=64").bin(std::slice::from_ref(&batch)).unwrap();
    let refusal = |options: &str| trainer(options).fit_binned(&binned).unwrap_err().to_string();
    let e = refusal("n_trees=2");
    assert!(e.contains("max_bins") && e.contains("256") && e.contains("64"), "{e}");
    let e = refusal("max_bins=64 min_bin_size=9");
    assert!(e.contains("min_bin_size") && e.contains('9') && e.contains('5'), "{e}");
    let e = refusal("max_bins=64 bin_boundaries=greedy");
    assert!(e.contains("bin_boundaries") && e.contains("greedy") && e.contains("quantile"), "{e}");
    let e = refusal("max_bins=64 split_method=exact");
    assert!(e.contains("split_method") && e.contains("exact") && e.contains("hist"), "{e}");
    let e = refusal("max_bins=64 task=classification");
    assert!(e.contains("task"), "{e}");
    assert!(trainer("max_bins=64 n_trees=2").fit_binned(&binned).is_ok());
}

/// A forest or boosting whose size alone would not fit in memory is an
/// error naming the option and the bytes, before anything is allocated.
#[test]
fn ensembles_too_large_for_memory_are_errors_that_name_the_option() {
    let batch = read("diamonds_reg_train.parquet", 500);
    let e = trainer("n_trees=1000000000").fit(&batch).unwrap_err().to_string();
    assert!(e.contains("n_trees=1000000000") && e.contains("GB") && e.contains("needs"), "{e}");
    let e = trainer("algorithm=gradient-boosting n_rounds=1000000000").fit(&batch).unwrap_err().to_string();
    assert!(e.contains("boosting with n_rounds=1000000000 needs"), "{e}");
}

/// Cross-validation deals every row into one fold, trains each fold's model
/// on the others with the table's bins, and scores it on its own rows: the
/// scores are what held-out data shows (flights' accuracy about 0.89, the
/// diamonds forest's RMSE near its test file's).
#[test]
fn cross_validation_scores_each_fold_on_its_own_rows() {
    let flights = read("flights_cls_train.parquet", 30_000);
    let forest = trainer("n_trees=10 seed=4");
    let binned = forest.bin(std::slice::from_ref(&flights)).unwrap();
    let folds = forest.cross_validate(&binned, 5).unwrap();
    assert_eq!(folds.len(), 5);
    assert!(folds.iter().all(|f| f.held_out_rows == 6_000 && f.training_rows == 24_000));
    for fold in &folds {
        assert!((0.86..0.93).contains(&fold.score), "fold accuracy {}", fold.score);
    }
    let again = forest.cross_validate(&binned, 5).unwrap();
    assert!(folds.iter().zip(&again).all(|(a, b)| a.model.to_bytes() == b.model.to_bytes()), "seeded folds");

    let diamonds = read("diamonds_reg_train.parquet", 20_000);
    let forest = trainer("n_trees=10");
    let binned = forest.bin(std::slice::from_ref(&diamonds)).unwrap();
    let folds = forest.cross_validate(&binned, 4).unwrap();
    let test = read("diamonds_reg_test.parquet", usize::MAX);
    let tested = common::rmse(&forest.fit(&diamonds).unwrap(), &test);
    for fold in &folds {
        assert!(
            (fold.score - tested).abs() < 0.25 * tested,
            "fold RMSE {} against the test file's {tested}",
            fold.score
        );
    }
    let e = forest.cross_validate(&binned, 1).unwrap_err();
    assert!(e.to_string().contains("folds"), "{e}");
}

/// Taking rows by their places in reading order (as scikit-learn indexes a
/// table) gives those rows in that order: their labels and the values
/// trees test follow the positions given; all rows in order train the
/// model the whole data trains; a row past the end or taken twice is an
/// error; and a fold's per-row out-of-bag results follow its own rows.
#[test]
fn rows_taken_by_place_come_in_the_order_asked() {
    let flights = read("flights_cls_train.parquet", 20_000);
    let forest = trainer("n_trees=4 oob_per_observation=true");
    let binned = forest.bin(std::slice::from_ref(&flights)).unwrap();
    let n = binned.n_rows() as u32;
    let labels = |data: &BinnedData| -> Vec<u32> {
        let arbor_ensemble::Target::Classes(classes) = data.target() else { panic!("classification") };
        data.reading_order().iter().map(|&r| classes[r as usize]).collect()
    };
    let all = labels(&binned);
    let positions: Vec<u32> = (0..n).rev().step_by(3).collect();
    let taken = binned.take(&positions).unwrap();
    assert_eq!(taken.n_rows(), positions.len());
    assert_eq!(labels(&taken), positions.iter().map(|&p| all[p as usize]).collect::<Vec<_>>());
    let values = binned.tested_values(&binned.reading_order());
    let taken_values = taken.tested_values(&taken.reading_order());
    for (f, column) in taken_values.iter().enumerate() {
        assert!(positions.iter().zip(column).all(|(&p, &v)| values[f][p as usize].to_bits() == v.to_bits()));
    }
    let everything = binned.take(&(0..n).collect::<Vec<_>>()).unwrap();
    assert_eq!(
        forest.fit_binned(&everything).unwrap().model.to_bytes(),
        forest.fit_binned(&binned).unwrap().model.to_bytes()
    );
    assert!(binned.take(&[n]).unwrap_err().to_string().contains("past"));
    assert!(binned.take(&[4, 9, 4]).unwrap_err().to_string().contains("row 4 is taken twice"));
    let trained = forest.fit_binned(&taken).unwrap();
    let per_row = trained.out_of_bag.and_then(|o| o.per_observation).expect("out-of-bag results per row");
    assert_eq!(per_row.len(), positions.len());
}

/// A row of weight zero counts for nothing: the model is the one the other
/// rows train, byte for byte, even where a whole batch has weight zero.
#[test]
fn rows_of_weight_zero_are_rows_left_out() {
    use arrow::array::Float64Array;
    let flights = read("flights_cls_train.parquet", 12_000);
    let n = flights.num_rows();
    let weights: Vec<f64> =
        (0..n).map(|i| if i % 5 == 0 || i >= 10_000 { 0.0 } else { 1.0 + (i % 3) as f64 }).collect();
    let with_weights = |batch: &RecordBatch, w: Vec<f64>| {
        let mut columns = batch.columns().to_vec();
        columns.push(std::sync::Arc::new(Float64Array::from(w)));
        let mut fields: Vec<_> = batch.schema().fields().iter().cloned().collect();
        fields.push(std::sync::Arc::new(arrow::datatypes::Field::new("w", arrow::datatypes::DataType::Float64, false)));
        RecordBatch::try_new(std::sync::Arc::new(arrow::datatypes::Schema::new(fields)), columns).unwrap()
    };
    let weighted = with_weights(&flights, weights.clone());
    let kept: Vec<u32> = (0..n as u32).filter(|&i| weights[i as usize] > 0.0).collect();
    let kept = arrow::compute::take_record_batch(&weighted, &arrow::array::UInt32Array::from(kept)).unwrap();
    for options in ["n_trees=3 max_depth=8", "n_trees=2 split_method=exact", "algorithm=gradient-boosting n_rounds=4"] {
        let trainer = trainer(options).weight("w");
        // The last batch (rows 10,000 on) has weight zero throughout.
        let batches = vec![weighted.slice(0, 10_000), weighted.slice(10_000, n - 10_000)];
        let model = trainer.fit(batches).unwrap();
        assert_eq!(model.to_bytes(), trainer.fit(&kept).unwrap().to_bytes(), "{options}");
    }
    let zero = with_weights(&flights, vec![0.0; n]);
    let e = trainer("n_trees=2").weight("w").fit(vec![zero.slice(0, 100), zero.slice(100, n - 100)]).unwrap_err();
    assert!(e.to_string().contains("weight column 'w' sums to zero"), "{e}");
}
