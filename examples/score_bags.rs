//! Scores the bags of a MILL data file with a saved model, without Python.
//!
//! ```text
//! cargo run --release --example score_bags -- MODEL.json DATA.data
//! ```
//!
//! `MODEL.json` is a model file written by any milsvm estimator (`est.save(path)` in Python,
//! `Model::save` in Rust). `DATA.data` is a MILL file: one instance per line,
//! `instance_name,bag_name,label,features...`, the features dense (`v1,...,vd`) or sparse
//! (`index:value,...`, 1-based). Prints one line per bag: the bag name, the predicted label and
//! the scores (one per output), tab-separated, each score in the shortest form that reads back
//! to the same `f64`.
//!
//! It shows the serving API: the model is compiled once into a [`Predictor`] (`Send + Sync`),
//! and each bag is scored through [`Predictor::score_bag`] with one reusable [`Workspace`],
//! which allocates nothing once it has seen the largest bag.

use std::error::Error;
use std::process::ExitCode;

use milsvm::model::{BagView, Model, Predictor, Workspace};

/// One bag of the file: its name and its instances, dense (row-major) or sparse (CSR).
struct Bag {
    name: String,
    dense: Vec<f64>,
    indptr: Vec<usize>,
    indices: Vec<usize>,
    values: Vec<f64>,
}

/// Reads a MILL file; bags are the runs of lines with the same bag name.
fn read_mill(path: &str, n_features: usize) -> Result<(Vec<Bag>, bool), Box<dyn Error>> {
    let text = std::fs::read_to_string(path)?;
    let mut bags: Vec<Bag> = Vec::new();
    let mut sparse = None;
    for (lineno, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() < 4 {
            return Err(format!(
                "{path}, line {}: expected name,bag,label,features",
                lineno + 1
            )
            .into());
        }
        let is_sparse = *sparse.get_or_insert(fields[3].contains(':'));
        if bags.last().map(|b| b.name.as_str()) != Some(fields[1]) {
            bags.push(Bag {
                name: fields[1].to_string(),
                dense: Vec::new(),
                indptr: vec![0],
                indices: Vec::new(),
                values: Vec::new(),
            });
        }
        let bag = bags.last_mut().ok_or("no bag")?;
        let bad = |what: &str| format!("{path}, line {}: {what}", lineno + 1);
        if is_sparse {
            for token in &fields[3..] {
                let (j, v) = token
                    .split_once(':')
                    .ok_or_else(|| bad("expected index:value"))?;
                let j: usize = j.parse().map_err(|_| bad("bad feature index"))?;
                if j == 0 || j > n_features {
                    return Err(bad("feature index out of range").into());
                }
                bag.indices.push(j - 1);
                bag.values.push(v.parse().map_err(|_| bad("bad value"))?);
            }
            bag.indptr.push(bag.values.len());
        } else {
            if fields.len() - 3 != n_features {
                return Err(bad(&format!("expected {n_features} features")).into());
            }
            for token in &fields[3..] {
                bag.dense.push(token.parse().map_err(|_| bad("bad value"))?);
            }
        }
    }
    Ok((bags, sparse.unwrap_or(false)))
}

fn run(model_path: &str, data_path: &str) -> Result<(), Box<dyn Error>> {
    let model = Model::load(model_path)?;
    let predictor = Predictor::new(&model)?;
    let (bags, sparse) = read_mill(data_path, predictor.n_features())?;
    let label = |k: usize| match &model.classes {
        Some(c) => c[k].to_string().trim_matches('"').to_string(),
        None => k.to_string(),
    };
    let mut ws = Workspace::default();
    let mut scores = vec![0.0; predictor.n_outputs()];
    for bag in &bags {
        let view = if sparse {
            BagView::csr(
                &bag.indptr,
                &bag.indices,
                &bag.values,
                predictor.n_features(),
            )?
        } else {
            BagView::dense(&bag.dense, predictor.n_features())?
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
        println!("{}\t{}\t{}", bag.name, label(k), cols.join("\t"));
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: score_bags MODEL.json DATA.data");
        return ExitCode::from(2);
    }
    match run(&args[1], &args[2]) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("score_bags: error: {e}");
            ExitCode::from(1)
        }
    }
}
