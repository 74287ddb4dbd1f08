//! Trains level by level on one Parquet file cut into pieces, in one
//! process, as a cluster's executors would (a shard per piece, kept for
//! every job), timing each kind of job: for profiling the level jobs'
//! per-row work without Ballista, Parquet reading or a network around it:
//! `cargo run --profile profiling -p arbor-ensemble --example level_file -- FILE "OPTIONS" [PIECES [MODEL]]`
//! (FILE may be a directory of Parquet files)
//! (the label column is `label`; OPTIONS as `arbor train --set`; MODEL,
//! when given, receives the model's bytes, to compare two builds).

use std::collections::BTreeMap;
use std::fs::File;
use std::time::{Duration, Instant};

use arbor_ensemble::{LevelStart, LevelState, LevelSummary, LevelSums, NodeKey, TrainParams, Trainer};
use arrow::array::RecordBatch;
use arrow::compute::concat_batches;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

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

    let mut times: BTreeMap<&str, (Duration, usize)> = BTreeMap::new();
    let mut timed = |what: &'static str, since: Instant| {
        let entry = times.entry(what).or_default();
        entry.0 += since.elapsed();
        entry.1 += 1;
    };
    let start = Instant::now();
    let mut summary = LevelSummary::default();
    for piece in &pieces {
        summary.merge(LevelSummary::of(piece))?;
    }
    let LevelStart::Grow(mut state) = LevelState::start(&params, summary)? else {
        return Err("these options train on one node".into());
    };
    timed("summary", start);
    let at = Instant::now();
    let shards = pieces.iter().map(|piece| state.shard(piece)).collect::<Result<Vec<_>, _>>()?;
    drop(pieces);
    timed("shards built", at);
    while !state.is_done() {
        if state.finishing().is_empty() {
            let at = Instant::now();
            let mut sums: Option<LevelSums> = None;
            for shard in &shards {
                let part = state.shard_sums(shard)?;
                match sums.as_mut() {
                    Some(sums) => sums.merge(part)?,
                    None => sums = Some(part),
                }
            }
            timed("level: sums", at);
            let at = Instant::now();
            state.grow(&params, sums.ok_or("no pieces")?)?;
            timed("level: grow", at);
        } else {
            let at = Instant::now();
            let mut by_node: BTreeMap<NodeKey, Vec<Vec<u8>>> = BTreeMap::new();
            for shard in &shards {
                for (key, records) in state.shard_records(shard)?.nodes {
                    by_node.entry(key).or_default().push(records);
                }
            }
            timed("finish: records", at);
            let at = Instant::now();
            let LevelState::Forest(forest) = state.as_ref() else { return Err("only forests finish".into()) };
            let job = forest.job_view();
            let grown = by_node
                .into_iter()
                .map(|(key, records)| {
                    let records: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
                    Ok((key, job.grow_node(&params, key, &records)?))
                })
                .collect::<Result<Vec<_>, arbor_ensemble::ArborError>>()?;
            timed("finish: grow", at);
            state.graft_nodes(&params, grown)?;
        }
    }
    let model = state.into_model(&params)?;
    println!("{} trees in {:.3} s", model.trees().len(), start.elapsed().as_secs_f64());
    for (what, (time, n)) in times {
        println!("  {what:<18} {:>8.3} s  ({n})", time.as_secs_f64());
    }
    if let Some(path) = save {
        std::fs::write(path, model.to_bytes())?;
    }
    Ok(())
}
