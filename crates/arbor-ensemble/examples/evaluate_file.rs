//! Trains on one Parquet file and scores another, for trying a change to the
//! trainer against held-out data without a release build:
//! `cargo run --profile profiling -p arbor-ensemble --example evaluate_file -- TRAIN TEST "OPTIONS"`
//! (the label column is `label`; OPTIONS as `arbor train --set`, space-separated).
//! Prints the training time and the test accuracy (classification; with the
//! AUC of the second class for two classes) or RMSE.

use std::fs::File;
use std::time::Instant;

use arbor_ensemble::{Task, TrainParams, Trainer};
use arrow::array::{Array, AsArray, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Float64Type};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

fn read(path: &str) -> Result<Vec<RecordBatch>, Box<dyn std::error::Error>> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path)?)?.build()?;
    Ok(reader.collect::<Result<_, _>>()?)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: evaluate_file TRAIN TEST \"OPTIONS\"";
    let (train, test, options) = (args.next().ok_or(usage)?, args.next().ok_or(usage)?, args.next().ok_or(usage)?);
    let params = TrainParams::parse_options(&options)?;
    let train = read(&train)?;
    let start = Instant::now();
    let model = Trainer::new(params).label("label").fit(&train)?;
    let seconds = start.elapsed().as_secs_f64();
    let (mut hits, mut squares, mut rows) = (0usize, 0.0f64, 0usize);
    // Two classes: each row's probability of the second class and whether it is that class.
    let mut scored: Vec<(f64, bool)> = Vec::new();
    for batch in read(&test)? {
        let label = batch.column_by_name("label").ok_or("the test file has no `label` column")?;
        let predicted = model.predict(&batch)?;
        rows += batch.num_rows();
        match model.task() {
            Task::Classification => {
                let (truth, guess) = (cast(label, &DataType::Utf8)?, cast(&predicted, &DataType::Utf8)?);
                let (truth, guess) = (truth.as_string::<i32>(), guess.as_string::<i32>());
                hits += (0..truth.len()).filter(|&i| truth.value(i) == guess.value(i)).count();
                if let [_, positive] = model.class_names().as_slice() {
                    let proba = model.predict_proba(&batch)?;
                    let proba = proba.values().as_primitive::<Float64Type>();
                    scored.extend(
                        (0..truth.len()).map(|i| (proba.value(2 * i + 1), truth.value(i) == positive.as_str())),
                    );
                }
            }
            Task::Regression => {
                let truth = cast(label, &DataType::Float64)?;
                let (truth, guess) = (truth.as_primitive::<Float64Type>(), predicted.as_primitive::<Float64Type>());
                squares += truth.values().iter().zip(guess.values()).map(|(t, g)| (t - g) * (t - g)).sum::<f64>();
            }
        }
    }
    match model.task() {
        Task::Classification if !scored.is_empty() => {
            println!("accuracy {:.4} auc {:.5} in {seconds:.3} s", hits as f64 / rows as f64, auc(&mut scored))
        }
        Task::Classification => println!("accuracy {:.4} in {seconds:.3} s", hits as f64 / rows as f64),
        Task::Regression => println!("rmse {:.4} in {seconds:.3} s", (squares / rows as f64).sqrt()),
    }
    Ok(())
}

/// The area under the ROC curve of `(score, positive)` pairs: the
/// Mann-Whitney statistic, tied scores sharing their average rank.
fn auc(scored: &mut [(f64, bool)]) -> f64 {
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut rank_sum, mut positives, mut i) = (0.0, 0usize, 0);
    while i < scored.len() {
        let tied = scored[i..].iter().take_while(|s| s.0 == scored[i].0).count();
        let average = i as f64 + (tied as f64 + 1.0) / 2.0;
        let hits = scored[i..i + tied].iter().filter(|s| s.1).count();
        rank_sum += average * hits as f64;
        positives += hits;
        i += tied;
    }
    let negatives = scored.len() - positives;
    (rank_sum - (positives * (positives + 1)) as f64 / 2.0) / (positives * negatives) as f64
}
