//! Train a forest on the bundled flights data and score the held-out rows:
//! `cargo run --release -p arbor-ensemble --example front_door`.

use std::fs::File;

use arbor_ensemble::{Model, TrainParams, Trainer};
use arrow::array::{AsArray, RecordBatch};
use arrow::compute::kernels::cmp::eq;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

fn read(path: &str) -> Result<Vec<RecordBatch>, Box<dyn std::error::Error>> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path)?)?.build()?;
    Ok(reader.collect::<Result<_, _>>()?)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data");
    let train = read(&format!("{dir}/flights_cls_train.parquet"))?;
    let test = read(&format!("{dir}/flights_cls_test.parquet"))?;

    // Parameters by the names of `arbor train --set` and SQL (or as typed fields);
    // they are checked once, whichever way they were built.
    let params = TrainParams::parse_options("n_trees=50 max_depth=20")?;
    let model: Model = Trainer::new(params).label("label").fit(&train)?;

    let (mut right, mut rows) = (0, 0);
    for batch in &test {
        let predicted = model.predict(batch)?; // typed like the label (Int32 here)
        let proba = model.predict_proba(batch)?; // FixedSizeList<Float64>, classes in order
        assert_eq!(proba.value_length() as usize, model.class_names().len());
        right += eq(&predicted, batch.column_by_name("label").unwrap())?.true_count();
        rows += batch.num_rows();
    }
    println!("accuracy {:.4} on {rows} flights", right as f64 / rows as f64);

    // A model is bytes: the same format `arbor train` writes and SQL reads.
    let again = Model::from_bytes(&model.to_bytes())?;
    assert_eq!(again.predict(&test[0])?.as_primitive::<arrow::datatypes::Int32Type>().len(), test[0].num_rows());
    Ok(())
}
