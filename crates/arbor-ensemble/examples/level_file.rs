//! Trains level by level on one Parquet file cut into pieces, in one
//! process, as a cluster's executors would (a shard per piece, kept for
//! every job: the in-memory backend under arbor's one driver), timing each
//! kind of job and the driver's growing between them: for profiling the level jobs'
//! per-row work without Ballista, Parquet reading or a network around it:
//! `cargo run --profile profiling -p arbor-ensemble --example level_file -- FILE "OPTIONS" [PIECES [MODEL]]`
//! (FILE may be a directory of Parquet files)
//! (the label column is `label`; OPTIONS as `arbor train --set`; MODEL,
//! when given, receives the model's bytes, to compare two builds).

use std::collections::BTreeMap;
use std::fs::File;
use std::time::{Duration, Instant};

use arbor_ensemble::distributed::{train_now, Backend, InMemory, Outcome};
use arbor_ensemble::{ArborError, Message, NodeKey, TrainParams, Trainer};
use arrow::array::RecordBatch;
use arrow::compute::concat_batches;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

/// The in-memory backend, timing each kind of job.
struct Timed {
    jobs: InMemory,
    times: BTreeMap<&'static str, (Duration, usize)>,
}

impl Timed {
    fn timed<T>(&mut self, what: &'static str, since: Instant, result: T) -> T {
        let entry = self.times.entry(what).or_default();
        entry.0 += since.elapsed();
        entry.1 += 1;
        result
    }
}

impl Backend for Timed {
    type Error = ArborError;

    async fn summary(&mut self) -> Result<Message, ArborError> {
        let at = Instant::now();
        let summary = self.jobs.summary().await;
        self.timed("summary", at, summary)
    }

    async fn level(&mut self, state: Vec<u8>) -> Result<Message, ArborError> {
        let at = Instant::now();
        let sums = self.jobs.level(state).await;
        self.timed("level job", at, sums)
    }

    async fn finish(&mut self, state: Vec<u8>) -> Result<Vec<(NodeKey, Vec<u8>)>, ArborError> {
        let at = Instant::now();
        let grown = self.jobs.finish(state).await;
        self.timed("finishing job", at, grown)
    }

    fn tasks(&self) -> usize {
        self.jobs.tasks()
    }

    fn task_of(&self, keys: &[u64], tasks: usize) -> Result<Vec<usize>, ArborError> {
        self.jobs.task_of(keys, tasks)
    }

    fn release(&mut self, shards: u64) {
        self.jobs.release(shards)
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: level_file FILE \"OPTIONS\" [PIECES [MODEL]]";
    let path = args.next().ok_or(usage)?;
    let options = args.next().ok_or(usage)?;
    let n_pieces: usize = args.next().map_or(Ok(8), |t| t.parse())?;
    let save = args.next();
    // A directory: its Parquet files, in name order.
    let mut files = vec![std::path::PathBuf::from(&path)];
    if files[0].is_dir() {
        files = std::fs::read_dir(&path)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
        files.sort();
    }
    let mut batches: Vec<RecordBatch> = Vec::new();
    for file in files {
        let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(file)?)?.build()?;
        batches.extend(reader.collect::<Result<Vec<_>, _>>()?);
    }
    let table = concat_batches(&batches[0].schema(), &batches)?;
    let trainer = Trainer::new(TrainParams::parse_options(&options)?).label("label");
    let params = trainer.params().check()?;
    let rows = table.num_rows();
    let pieces = (0..n_pieces)
        .map(|i| {
            let (at, end) = (rows * i / n_pieces, rows * (i + 1) / n_pieces);
            trainer.training_data(vec![table.slice(at, end - at)])
        })
        .collect::<Result<Vec<_>, _>>()?;

    let mut timed = Timed { jobs: InMemory::new(pieces, params.clone()), times: BTreeMap::new() };
    let start = Instant::now();
    // The first level job builds the pieces' shards, which the later jobs read.
    let Outcome::Model(model) = train_now(&mut timed, &params, 0, |_, _| {})? else {
        return Err("these options train on one node".into());
    };
    let total = start.elapsed();
    println!("{} trees in {:.3} s", model.trees().len(), total.as_secs_f64());
    let mut jobs = Duration::ZERO;
    for (what, (time, n)) in &timed.times {
        println!("  {what:<18} {:>8.3} s  ({n})", time.as_secs_f64());
        jobs += *time;
    }
    println!("  {:<18} {:>8.3} s", "driver", total.saturating_sub(jobs).as_secs_f64());
    if let Some(path) = save {
        std::fs::write(path, model.to_bytes())?;
    }
    Ok(())
}
