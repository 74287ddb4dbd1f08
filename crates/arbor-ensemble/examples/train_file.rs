//! Trains on one Parquet file, several times, for profiling the trainer
//! without a process's start-up, Parquet writing or SQL around it:
//! `cargo run --profile profiling -p arbor-ensemble --example train_file -- FILE "OPTIONS" [TIMES [MODEL]]`
//! (the label column is `label`; OPTIONS as `arbor train --set`, space-separated;
//! MODEL, when given, receives the last model's bytes, to compare two builds).

use std::fs::File;
use std::time::Instant;

use arbor_ensemble::{TrainParams, Trainer};
use arrow::array::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: train_file FILE \"OPTIONS\" [TIMES [MODEL]]";
    let path = args.next().ok_or(usage)?;
    let options = args.next().ok_or(usage)?;
    let times: usize = args.next().map_or(Ok(1), |t| t.parse())?;
    let save = args.next();
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&path)?)?.build()?;
    let batches: Vec<RecordBatch> = reader.collect::<Result<_, _>>()?;
    let params = TrainParams::parse_options(&options)?;
    for time in 1..=times {
        let start = Instant::now();
        let model = Trainer::new(params.clone()).label("label").fit(&batches)?;
        println!("{} trees in {:.3} s", model.trees().len(), start.elapsed().as_secs_f64());
        if let (Some(path), true) = (&save, time == times) {
            std::fs::write(path, model.to_bytes())?;
        }
    }
    Ok(())
}
