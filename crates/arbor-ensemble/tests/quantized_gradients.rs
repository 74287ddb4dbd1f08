//! Quantized gradients (`use_quantized_grad`, LightGBM 4's key): boosting on
//! gradients and hessians rounded stochastically to power-of-two units is as
//! accurate as on exact ones on the bundled sets, gives the same bytes on
//! any number of threads, records its keys, renews leaves from exact
//! gradients when asked, and refuses keys that cannot apply.

mod common;

use arbor_ensemble::{Model, TrainParams, Trainer};
use arrow::array::{AsArray, RecordBatch};
use arrow::datatypes::Float64Type;

fn read(name: &str) -> RecordBatch {
    common::read_file(&common::data_path(name))
}

fn fit(batch: &RecordBatch, options: &str) -> Model {
    let options = format!("algorithm=gradient-boosting {options}");
    Trainer::new(TrainParams::parse_options(&options).unwrap()).label("label").fit(batch).unwrap()
}

/// The area under the ROC curve of class 1's probability (ties counted half).
fn auc(model: &Model, test: &RecordBatch) -> f64 {
    let p = model.score(test).unwrap();
    let y = arrow::compute::cast(test.column_by_name("label").unwrap(), &arrow::datatypes::DataType::Float64).unwrap();
    let y = y.as_primitive::<Float64Type>().values();
    let mut scored: Vec<(f64, bool)> = (0..y.len()).map(|i| (p.row(i)[1], y[i] == 1.0)).collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut rank_sum, mut positives, mut i) = (0.0, 0.0, 0);
    while i < scored.len() {
        let j = i + scored[i..].iter().take_while(|s| s.0 == scored[i].0).count();
        let mid_rank = (i + j + 1) as f64 / 2.0;
        let pos = scored[i..j].iter().filter(|s| s.1).count() as f64;
        rank_sum += pos * mid_rank;
        positives += pos;
        i = j;
    }
    let negatives = scored.len() as f64 - positives;
    (rank_sum - positives * (positives + 1.0) / 2.0) / (positives * negatives)
}

/// Flights (262k rows, 50 rounds at the README's settings): quantized
/// gradients with LightGBM's 4 levels lose under 0.002 AUC, renewed leaves
/// too (measured: exact 0.93416, quantized 0.93370, renewed 0.93282; the
/// rounding's draws alone move the AUC by about 0.001).
#[test]
fn quantized_boosting_is_as_accurate_on_flights() {
    let (train, test) = (read("flights_cls_train.parquet"), read("flights_cls_test.parquet"));
    let exact = auc(&fit(&train, "n_rounds=50"), &test);
    let quantized = auc(&fit(&train, "n_rounds=50 use_quantized_grad=true"), &test);
    let renewed = auc(&fit(&train, "n_rounds=50 use_quantized_grad=true quant_train_renew_leaf=true"), &test);
    eprintln!("flights_cls AUC: exact {exact:.5}, quantized {quantized:.5}, renewed {renewed:.5}");
    assert!(exact > 0.93, "exact AUC {exact}");
    assert!(quantized >= exact - 0.002, "quantized AUC {quantized} against {exact}");
    assert!(renewed >= exact - 0.002, "renewed AUC {renewed} against {exact}");
}

/// Diamonds (43k rows, log price, 100 rounds at learning rate 0.1): the RMSE
/// stays within 3% of exact gradients' (measured: exact 0.09140, quantized
/// 0.09127, renewed 0.09273).
#[test]
fn quantized_boosting_is_as_accurate_on_diamonds() {
    let (train, test) = (read("diamonds_reg_train.parquet"), read("diamonds_reg_test.parquet"));
    let exact = common::rmse(&fit(&train, "n_rounds=100 learning_rate=0.1"), &test);
    for options in ["use_quantized_grad=true", "use_quantized_grad=true quant_train_renew_leaf=true"] {
        let quantized = common::rmse(&fit(&train, &format!("n_rounds=100 learning_rate=0.1 {options}")), &test);
        eprintln!("diamonds RMSE: exact {exact:.5}, {options} {quantized:.5}");
        assert!(quantized <= exact * 1.03, "{options}: RMSE {quantized} against {exact}");
    }
}

/// One thread and many give the same bytes (the rounding hashes row ids,
/// and integer sums have no order), the keys are recorded and read back,
/// and quantized training is a different model from exact training.
#[test]
fn quantized_models_are_deterministic_and_record_their_keys() {
    let train = read("flights_cls_train.parquet").slice(0, 40_000);
    let options = "n_rounds=8 use_quantized_grad=true num_grad_quant_bins=8 quant_train_renew_leaf=true";
    let many = fit(&train, options);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let one = pool.install(|| fit(&train, options));
    assert_eq!(many.to_bytes(), one.to_bytes(), "one thread and many");
    assert_eq!(many.param("use_quantized_grad"), Some("true"));
    assert_eq!(many.param("num_grad_quant_bins"), Some("8"));
    assert_eq!(many.param("quant_train_renew_leaf"), Some("true"));
    let back = Model::from_bytes(&many.to_bytes()).unwrap();
    assert_eq!(back.to_bytes(), many.to_bytes(), "round trip");
    let exact = fit(&train, "n_rounds=8");
    assert_eq!(exact.param("use_quantized_grad"), None, "recorded only when on");
    assert_ne!(exact.to_bytes(), many.to_bytes());
    // Another seed rounds other rows the other way.
    let reseeded = fit(&train, &format!("{options} seed=5"));
    assert_ne!(reseeded.to_bytes(), many.to_bytes());
}

/// Renewed leaves are the exact `−G/(H + λ)` of their rows: for squared
/// error, each leaf of a one-round model is `Σ(y − base)/(n + λ)` over the
/// training rows that reach it, while unrenewed leaves carry the rounding.
#[test]
fn renewed_leaves_are_the_exact_newton_steps() {
    let train = read("diamonds_reg_train.parquet");
    let y = train.column_by_name("label").unwrap().as_primitive::<Float64Type>().values().to_vec();
    let base = "n_rounds=1 max_depth=3 learning_rate=1 lambda=2";
    for (options, renewed) in
        [("use_quantized_grad=true quant_train_renew_leaf=true", true), ("use_quantized_grad=true", false)]
    {
        let options = format!("{base} {options}");
        let model = fit(&train, &options);
        let base_score = model.boosting().unwrap().base_score[0];
        let predicted = model.score(&train).unwrap();
        // Rows grouped by leaf: by their prediction, base plus the leaf.
        let mut leaves: std::collections::BTreeMap<u64, (f64, f64)> = Default::default();
        for (p, y) in predicted.values().iter().zip(&y) {
            let leaf = leaves.entry(p.to_bits()).or_default();
            leaf.0 += y - base_score;
            leaf.1 += 1.0;
        }
        assert!(leaves.len() >= 4, "{options}: {} leaves", leaves.len());
        let worst = leaves
            .iter()
            .map(|(p, (sum, n))| ((f64::from_bits(*p) - base_score) - sum / (n + 2.0)).abs())
            .fold(0.0, f64::max);
        if renewed {
            assert!(worst <= 1e-9, "{options}: a leaf {worst} from its exact Newton step");
        } else {
            assert!(worst > 1e-6, "{options}: unrenewed leaves should carry the rounding");
        }
    }
}

/// Keys that cannot apply are refused by name.
#[test]
fn quantization_keys_are_checked() {
    let train = read("diamonds_reg_train.parquet").slice(0, 2000);
    let err = |options: &str| {
        let options = format!("algorithm=gradient-boosting {options}");
        match TrainParams::parse_options(&options) {
            Err(e) => e.to_string(),
            Ok(params) => Trainer::new(params).label("label").fit(&train).unwrap_err().to_string(),
        }
    };
    let e = err("num_grad_quant_bins=8");
    assert!(e.contains("num_grad_quant_bins") && e.contains("use_quantized_grad=true"), "{e}");
    let e = err("quant_train_renew_leaf=true");
    assert!(e.contains("quant_train_renew_leaf") && e.contains("use_quantized_grad=true"), "{e}");
    let e = err("use_quantized_grad=true num_grad_quant_bins=1");
    assert!(e.contains("num_grad_quant_bins"), "{e}");
    let e = err("use_quantized_grad=maybe");
    assert!(e.contains("use_quantized_grad"), "{e}");
    let e = err("use_quantized_grad=true quant_train_renew_leaf=true monotone=carat:+1");
    assert!(e.contains("quant_train_renew_leaf") && e.contains("monotone"), "{e}");
    // Monotone constraints hold with quantized gradients left unrenewed.
    let model = fit(&train, "n_rounds=5 use_quantized_grad=true monotone=carat:+1");
    assert_eq!(model.param("use_quantized_grad"), Some("true"));
}
