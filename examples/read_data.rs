//! Reads data files with the crate's readers ([`milsvm::data`]) and describes them, without
//! Python.
//!
//! ```text
//! cargo run --release --example read_data -- [--json] [--n-features D] FILE...
//! ```
//!
//! A `.csv` file (any case) is read in the layout of the `mil` package, any other file as MILL
//! (the choice of `milsvm predict`'s automatic format, without its UCI MUSK detection);
//! `--n-features` is passed to the MILL reader. For every file it prints one line: the number
//! of bags, instances and features, dense or sparse, and the bags per label; or the error, which
//! names the file and the line. With `--json`, the line is the whole data set as one JSON
//! object: `path`, `format` (`"mill"` or `"csv"`), `bag_names`, `labels`, `bag_ptr` (bag `i`
//! holds instance rows `bag_ptr[i]..bag_ptr[i+1]`), `n_features`, `sparse`, and the values:
//! `dense` (row-major) or `indptr`, `indices` (0-based), `data` (CSR); or `path` and `error`.
//! The exit status is 1 if a file could not be read.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use milsvm::data::{read_mil_csv, read_mill, Dataset};
use milsvm::Instances;
use serde_json::json;

fn is_csv(path: &str) -> bool {
    Path::new(path)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
}

fn read(path: &str, n_features: Option<usize>) -> milsvm::Result<Dataset> {
    if is_csv(path) {
        read_mil_csv(path)
    } else {
        read_mill(path, n_features)
    }
}

fn as_json(path: &str, data: &Dataset) -> serde_json::Value {
    let mut out = json!({
        "path": path,
        "format": if is_csv(path) { "csv" } else { "mill" },
        "bag_names": data.bag_names,
        "labels": data.labels,
        "bag_ptr": data.bags.bag_ptr(),
        "n_features": data.bags.n_features(),
        "sparse": data.bags.is_sparse(),
    });
    match data.bags.instances() {
        Instances::Dense(_) | Instances::Dense32(_) => {
            out["dense"] = json!(data.bags.instances().to_dense().iter().collect::<Vec<_>>())
        }
        Instances::Sparse(x) => {
            out["indptr"] = json!(x.indptr());
            out["indices"] = json!(x.indices());
            out["data"] = json!(x.data());
        }
    }
    out
}

fn summary(path: &str, data: &Dataset) -> String {
    let mut per_label: BTreeMap<i64, usize> = BTreeMap::new();
    for &l in &data.labels {
        *per_label.entry(l).or_default() += 1;
    }
    let labels: Vec<String> = per_label
        .iter()
        .map(|(l, n)| format!("{n} of label {l}"))
        .collect();
    let kind = match data.bags.instances() {
        Instances::Dense(_) => "dense".to_string(),
        Instances::Dense32(_) => "dense, float32".to_string(),
        Instances::Sparse(x) => format!("sparse, {} stored values", x.nnz()),
    };
    format!(
        "{path}: {} bags ({}), {} instances, {} features ({kind})",
        data.bags.n_bags(),
        labels.join(", "),
        data.bags.n_instances(),
        data.bags.n_features()
    )
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (mut json_out, mut n_features, mut paths) = (false, None, Vec::new());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--json" => json_out = true,
            "--n-features" => match args.next().and_then(|v| v.parse().ok()) {
                Some(d) => n_features = Some(d),
                None => {
                    eprintln!("read_data: error: --n-features needs a number");
                    return ExitCode::from(2);
                }
            },
            _ => paths.push(arg),
        }
    }
    if paths.is_empty() {
        eprintln!("usage: read_data [--json] [--n-features D] FILE...");
        return ExitCode::from(2);
    }
    let mut status = ExitCode::SUCCESS;
    for path in &paths {
        match (read(path, n_features), json_out) {
            (Ok(data), true) => println!("{}", as_json(path, &data)),
            (Ok(data), false) => println!("{}", summary(path, &data)),
            (Err(e), true) => {
                println!("{}", json!({"path": path, "error": e.to_string()}));
                status = ExitCode::FAILURE;
            }
            (Err(e), false) => {
                println!("{path}: error: {e}");
                status = ExitCode::FAILURE;
            }
        }
    }
    status
}
