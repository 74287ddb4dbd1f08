//! The model report: one self-contained page whose charts and figures say
//! what the model holds and how it does on the data given.

mod common;

use arbor_ensemble::Model;
use arrow::array::RecordBatch;

/// The `(name, value, width)` of every importance bar, in page order.
fn bars(html: &str) -> Vec<(String, f64, f64)> {
    let attribute = |tag: &str, name: &str| -> String {
        let start = tag.find(&format!(" {name}=\"")).unwrap_or_else(|| panic!("{name} in {tag}")) + name.len() + 3;
        tag[start..].split('"').next().unwrap().to_owned()
    };
    html.split("<rect class=\"bar\"")
        .skip(1)
        .map(|tag| {
            let tag = &tag[..tag.find("/>").unwrap()];
            let tag = format!(" {tag}");
            (
                attribute(&tag, "data-name"),
                attribute(&tag, "data-value").parse().unwrap(),
                attribute(&tag, "width").parse().unwrap(),
            )
        })
        .collect()
}

/// The page stands alone: nothing fetched, no script.
fn assert_self_contained(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    for outside in ["http://", "https://", "<script", " src=", "<link"] {
        assert!(!html.contains(outside), "the page holds {outside}");
    }
}

/// The figure the page shows after a row's heading.
fn figure<'a>(html: &'a str, name: &str) -> &'a str {
    let at = html.find(&format!("<th>{name}</th><td>")).unwrap_or_else(|| panic!("no {name}")) + name.len() + 13;
    html[at..].split('<').next().unwrap()
}

#[test]
fn a_classifier_report_draws_its_importance_and_measures_the_data() {
    let train = common::read("flights_cls_train.parquet", 20_000);
    let test = common::read("flights_cls_test.parquet", 5_000);
    let model = common::fit(&train, "algorithm=gradient-boosting n_rounds=15");
    let html = model.report_html(Some(&test)).unwrap();
    assert_self_contained(&html);
    for section in ["summary", "parameters", "importance", "metrics", "shap", "dependence", "training", "tree"] {
        assert!(html.contains(&format!("<section id=\"{section}\">")), "section {section}");
    }
    // The bars follow the importance: sorted by it, each as long as its share.
    let drawn = bars(&html);
    let importance = model.importance().unwrap();
    assert_eq!(drawn.len(), model.features().len().min(15));
    for (name, value, _) in &drawn {
        let f = model.features().iter().position(|f| &f.name == name).unwrap();
        assert_eq!(*value, importance[f], "{name}");
    }
    assert!(drawn.windows(2).all(|w| w[0].1 >= w[1].1 && w[0].2 >= w[1].2), "{drawn:?}");
    let (_, top, top_width) = &drawn[0];
    for (name, value, width) in &drawn {
        assert!((width - value / top * top_width).abs() < 0.01, "{name}: {width} for {value}");
    }
    // The accuracy shown is the model's on those rows.
    let accuracy: f64 = figure(&html, "accuracy").parse().unwrap();
    assert!((accuracy - common::accuracy(&model, &test)).abs() < 5e-5, "{accuracy}");
    let auc: f64 = figure(&html, "AUC").parse().unwrap();
    assert!(auc > 0.85 && auc < 1.0, "{auc}");
    assert!(html.contains("<h3>ROC curve</h3>") && html.contains("<h3>Confusion matrix</h3>"));
    assert!(html.contains("<h3>dep_delay</h3>"), "the top feature's partial dependence");
    assert_eq!(html.matches("<circle").count(), 500 * 12, "one dot per explained row and feature");
}

#[test]
fn a_regression_report_gives_its_errors() {
    let train = common::read("diamonds_reg_train.parquet", 8_000);
    let test = common::read("diamonds_reg_test.parquet", 3_000);
    let model = common::fit(&train, "algorithm=random-forest n_trees=10 max_depth=8");
    let html = model.report_html(Some(&test)).unwrap();
    assert_self_contained(&html);
    let rmse: f64 = figure(&html, "RMSE").parse().unwrap();
    let expected = common::rmse(&model, &test);
    assert!((rmse - expected).abs() <= expected * 1e-3, "{rmse} vs {expected}");
    assert!(html.contains("<h3>Predicted against actual</h3>"));
}

#[test]
fn without_data_or_label_the_report_says_what_it_lacks() {
    let train = common::read("diamonds_reg_train.parquet", 3_000);
    let model = common::fit(&train, "algorithm=gradient-boosting n_rounds=5");
    let html = model.report_html(None).unwrap();
    assert_self_contained(&html);
    assert!(!html.contains("<section id=\"metrics\">"));
    assert!(html.contains("<section id=\"tree\">") && html.contains("<svg class=\"tree\""));
    let unlabelled = train.project(&(0..train.num_columns() - 1).collect::<Vec<_>>()).unwrap();
    assert!(unlabelled.schema().column_with_name("label").is_none());
    let html = model.report_html(Some(&unlabelled)).unwrap();
    assert!(html.contains("The data has no label column 'label': no metrics."));

    let empty = RecordBatch::new_empty(train.schema());
    let e = model.report_html(Some(&empty)).unwrap_err().to_string();
    assert!(e.contains("the report's data has no rows"), "{e}");
    let no_carat = train.project(&(1..train.num_columns()).collect::<Vec<_>>()).unwrap();
    let e = model.report_html(Some(&no_carat)).unwrap_err().to_string();
    assert!(e.contains("carat"), "the missing feature is named: {e}");
    assert!(Model::summary_html(&model).contains("<rect class=\"bar\""));
}

/// The section `id`'s HTML.
fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let at = html.find(&format!("<section id=\"{id}\">")).unwrap_or_else(|| panic!("no section {id}"));
    &html[at..at + html[at..].find("</section>").unwrap()]
}

/// The `(x, y)` pixels of the polyline named `name`.
fn polyline(html: &str, name: &str) -> Vec<(f64, f64)> {
    let tag = html.split("<polyline").find(|tag| tag.contains(&format!("data-name=\"{name}\""))).unwrap();
    let points = tag.split("points=\"").nth(1).unwrap().split('"').next().unwrap();
    points
        .split(' ')
        .map(|p| {
            let (x, y) = p.split_once(',').unwrap();
            (x.parse().unwrap(), y.parse().unwrap())
        })
        .collect()
}

#[test]
fn a_boosted_report_draws_the_training_curve_it_recorded() {
    let train = common::read("flights_cls_train.parquet", 20_000);
    let model = common::fit(
        &train,
        "algorithm=gradient-boosting n_rounds=200 learning_rate=0.8 early_stopping_rounds=4 validation_fraction=0.2",
    );
    let stop = model.boosting().unwrap().early_stopping.clone().unwrap();
    assert!(stop.rounds_run < 200, "{stop:?}");
    let html = model.report_html(None).unwrap();
    let training = section(&html, "training");
    assert!(training.contains(&format!("ran {} rounds and kept {}", stop.rounds_run, stop.best_round)), "{training}");
    // One point a round on each line, the lowest validation point (highest
    // on screen is lowest loss: the y axis grows down) at the round kept,
    // where the dashed guide stands.
    let (train_line, valid_line) = (polyline(training, "training"), polyline(training, "validation"));
    assert_eq!((train_line.len(), valid_line.len()), (stop.rounds_run, stop.rounds_run));
    let lowest = valid_line.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    let kept = valid_line[stop.best_round - 1];
    assert_eq!(kept.1, lowest, "{valid_line:?}");
    let guide = training.split("<line class=\"guide\" x1=\"").nth(1).unwrap().split('"').next().unwrap();
    assert_eq!(guide.parse::<f64>().unwrap(), kept.0);
    // The training loss ends lower than it starts (drawn lower: a larger y).
    assert!(train_line.last().unwrap().1 > train_line[0].1);

    // A forest has none.
    let forest = common::fit(&train, "n_trees=3 max_depth=4");
    assert!(section(&forest.report_html(None).unwrap(), "training").contains("Not recorded"));
}
