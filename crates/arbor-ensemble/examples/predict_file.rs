//! Scores one Parquet file with a saved model, several times, for profiling
//! prediction without a process's start-up, model loading or Parquet writing:
//! `cargo run --profile profiling -p arbor-ensemble --example predict_file -- MODEL FILE [TIMES [OUT]]`
//! (MODEL as `train_file` saves it; OUT, when given, receives every score of
//! the last pass as little-endian `f64`s, to compare two builds).

use std::fs::File;
use std::time::Instant;

use arbor_ensemble::Model;
use arrow::array::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: predict_file MODEL FILE [TIMES [OUT]]";
    let model = Model::from_bytes(&std::fs::read(args.next().ok_or(usage)?)?)?;
    let path = args.next().ok_or(usage)?;
    let times: usize = args.next().map_or(Ok(1), |t| t.parse())?;
    let save = args.next();
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&path)?)?.build()?;
    let batches: Vec<RecordBatch> = reader.collect::<Result<_, _>>()?;
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    for time in 1..=times {
        let start = Instant::now();
        let scores: Vec<_> = batches.iter().map(|b| model.score(b)).collect::<Result<_, _>>()?;
        println!("{rows} rows scored in {:.4} s", start.elapsed().as_secs_f64());
        if let (Some(path), true) = (&save, time == times) {
            let bytes: Vec<u8> = scores.iter().flat_map(|s| s.values()).flat_map(|v| v.to_le_bytes()).collect();
            std::fs::write(path, bytes)?;
        }
    }
    Ok(())
}
