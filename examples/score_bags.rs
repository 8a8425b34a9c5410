//! Scores the bags of a data file with a saved model, without Python.
//!
//! ```text
//! cargo run --release --example score_bags -- [--proba] MODEL.json DATA
//! ```
//!
//! `MODEL.json` is a model file written by any milsvm estimator (`est.save(path)` in Python,
//! `Model::save` in Rust). `DATA` is read by the crate's readers ([`milsvm::data`]), chosen by
//! the extension as `milsvm predict` does: a `.csv` file is in the layout of the `mil` package
//! (`label,bag_id,features...`, header optional), any other file is MILL (one instance per
//! line, `instance_name,bag_name,label,features...`, the features dense `v1,...,vd` or sparse
//! `index:value,...`, 1-based). Prints one line per bag, tab-separated, in the column order of
//! `milsvm predict`: the bag name, the scores (one per output; each in the shortest form that
//! reads back to the same `f64`) and the predicted label. The accuracy against the file's
//! labels goes to standard error when the model's classes include them.
//!
//! It shows the serving API: the model is compiled once into a [`Predictor`] (`Send + Sync`),
//! and each bag is scored through [`Predictor::score_bag`] with one reusable [`Workspace`],
//! which allocates nothing once it has seen the largest bag. A model saved from a pipeline
//! (`milsvm.save(pipeline, path)`, `milsvm fit`) standardises every bag with its scaler inside
//! `score_bag`; a model fitted with `probability=True` or `"ensemble"` gives class probabilities
//! with [`Predictor::predict_proba_bag`] (with `--proba`, printed after the label, one per
//! class).

use std::error::Error;
use std::path::Path;
use std::process::ExitCode;

use milsvm::data::{read_mil_csv, read_mill, Dataset};
use milsvm::model::{BagView, Model, Predictor, Workspace};
use milsvm::Instances;

/// Reads `path` as CSV (`.csv`, any case) or MILL; a MILL file must have `n_features`.
fn read_data(path: &str, n_features: usize) -> milsvm::Result<Dataset> {
    let is_csv = Path::new(path)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    if is_csv {
        read_mil_csv(path)
    } else {
        read_mill(path, Some(n_features))
    }
}

fn run(model_path: &str, data_path: &str, proba: bool) -> Result<(), Box<dyn Error>> {
    let model = Model::load(model_path)?;
    let predictor = Predictor::new(&model)?;
    let d = predictor.n_features();
    let data = read_data(data_path, d)?;
    if data.bags.n_features() != d {
        return Err(format!(
            "{data_path}: {} features, the model was fitted on {d}",
            data.bags.n_features()
        )
        .into());
    }
    let label = |k: usize| match model.classes.as_ref().and_then(|c| c.get(k)) {
        Some(c) => c.to_string().trim_matches('"').to_string(),
        None => k.to_string(),
    };
    let mut ws = Workspace::default();
    let mut scores = vec![0.0; predictor.n_outputs()];
    let mut probabilities = vec![0.0; predictor.n_classes()];
    let mut indptr = Vec::new(); // a CSR bag's offsets, from 0
    let mut correct = 0;
    for (i, name) in data.bag_names.iter().enumerate() {
        let rows = data.bags.bag_range(i);
        let view = match data.bags.instances() {
            Instances::Dense(x) => BagView::dense(&x.as_slice()[rows.start * d..rows.end * d], d)?,
            Instances::Dense32(x) => {
                BagView::dense32(&x.as_slice()[rows.start * d..rows.end * d], d)?
            }
            Instances::Sparse(x) => {
                let (lo, hi) = (x.indptr()[rows.start], x.indptr()[rows.end]);
                indptr.clear();
                indptr.extend(x.indptr()[rows.start..=rows.end].iter().map(|p| p - lo));
                BagView::csr(&indptr, &x.indices()[lo..hi], &x.data()[lo..hi], d)?
            }
        };
        predictor.score_bag(view, &mut ws, &mut scores)?;
        let k = if scores.len() == 1 {
            usize::from(scores[0] > 0.0)
        } else {
            (0..scores.len())
                .max_by(|&a, &b| scores[a].total_cmp(&scores[b]).then(b.cmp(&a)))
                .unwrap_or(0)
        };
        let cols: Vec<String> = scores.iter().map(|s| s.to_string()).collect();
        if proba {
            predictor.predict_proba_bag(view, &mut ws, &mut probabilities)?;
            let p: Vec<String> = probabilities.iter().map(|v| v.to_string()).collect();
            println!(
                "{name}\t{}\t{}\t{}",
                cols.join("\t"),
                label(k),
                p.join("\t")
            );
        } else {
            println!("{name}\t{}\t{}", cols.join("\t"), label(k));
        }
        correct += usize::from(label(k) == data.labels[i].to_string());
    }
    let known = |l: &i64| {
        let classes = model.classes.as_deref().unwrap_or(&[]);
        classes
            .iter()
            .any(|c| c.to_string().trim_matches('"') == l.to_string())
    };
    if data.labels.iter().all(known) {
        let accuracy = 100.0 * correct as f64 / data.labels.len() as f64;
        eprintln!("accuracy against the file's labels: {accuracy:.2} %");
    }
    Ok(())
}

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().collect();
    let proba = args.iter().any(|a| a == "--proba");
    args.retain(|a| a != "--proba");
    if args.len() != 3 {
        eprintln!("usage: score_bags [--proba] MODEL.json DATA (MILL .data, or mil-package .csv)");
        return ExitCode::from(2);
    }
    match run(&args[1], &args[2], proba) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("score_bags: error: {e}");
            ExitCode::from(1)
        }
    }
}
