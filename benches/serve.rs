//! Criterion benchmarks of the serving path (issue 10): one MUSK1-sized bag (5 x 166) scored by a
//! 10-XV SparseMI model and by the MI-Kernel model of the same data, both fitted here on the
//! bundled MUSK1 (standardised features); and a whole-data-set batch.
//!
//! Run: `cargo bench --bench serve` (aim: under 1 us per bag for the 10-XV model). With
//! `MILSVM_SERVE_EXPORT=DIR`, the two models and the bag are also written to `DIR`
//! (`sparse_mi_10xv.json`, `mi_kernel.json`, `bag.f64`: 5 x 166 raw doubles), for the C
//! library's timing of the same bag and models (`benches/serving.py c`).

use criterion::{criterion_group, criterion_main, Criterion};
use milsvm::model::{BagView, Predictor, Workspace};
use milsvm::{Bags, MiKernelParams, SparseMiParams};
use ndarray::Array2;
use std::hint::black_box;

/// MUSK1 from the UCI file bundled with the Python package: bags of standardised instances and
/// one label per bag (molecule name, conformation, 166 features, class).
fn musk1() -> (Vec<Array2<f64>>, Vec<usize>) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/python/milsvm/data/musk1/clean1.data"
    );
    let text = std::fs::read_to_string(path).expect("bundled MUSK1");
    let mut names: Vec<String> = Vec::new();
    let mut rows: Vec<Vec<Vec<f64>>> = Vec::new();
    let mut labels = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split(',').collect();
        let x: Vec<f64> = f[2..f.len() - 1]
            .iter()
            .map(|v| v.trim().parse().expect("number"))
            .collect();
        if names.last().map(String::as_str) != Some(f[0]) {
            names.push(f[0].to_string());
            rows.push(Vec::new());
            labels.push(usize::from(f[f.len() - 1].trim().starts_with('1')));
        }
        rows.last_mut().expect("a bag").push(x);
    }
    let d = rows[0][0].len();
    let all: Vec<&Vec<f64>> = rows.iter().flatten().collect();
    let n = all.len() as f64;
    let mean: Vec<f64> = (0..d)
        .map(|j| all.iter().map(|r| r[j]).sum::<f64>() / n)
        .collect();
    let sd: Vec<f64> = (0..d)
        .map(|j| {
            (all.iter().map(|r| (r[j] - mean[j]).powi(2)).sum::<f64>() / n)
                .sqrt()
                .max(1e-12)
        })
        .collect();
    let bags = rows
        .iter()
        .map(|bag| Array2::from_shape_fn((bag.len(), d), |(p, j)| (bag[p][j] - mean[j]) / sd[j]))
        .collect();
    (bags, labels)
}

fn serving(c: &mut Criterion) {
    let (bags, labels) = musk1();
    let train = Bags::from_dense_bags(&bags).expect("bags");
    let sparse_mi = SparseMiParams::new()
        .n_xv(10)
        .c(10.0)
        .fit(&train, &labels)
        .expect("SparseMI fit")
        .model;
    let mi_kernel = MiKernelParams::new()
        .c(10.0)
        .fit(&train, &labels)
        .expect("MI-Kernel fit")
        .model
        .to_model()
        .expect("model form");
    let bag = bags
        .iter()
        .find(|b| b.nrows() == 5)
        .expect("a 5-instance bag");
    let flat: Vec<f64> = bag.iter().copied().collect();
    if let Some(dir) = std::env::var_os("MILSVM_SERVE_EXPORT") {
        let dir = std::path::PathBuf::from(dir);
        std::fs::create_dir_all(&dir).expect("export folder");
        sparse_mi
            .save(dir.join("sparse_mi_10xv.json"))
            .expect("save");
        mi_kernel.save(dir.join("mi_kernel.json")).expect("save");
        let bytes: Vec<u8> = flat.iter().flat_map(|v| v.to_le_bytes()).collect();
        std::fs::write(dir.join("bag.f64"), bytes).expect("write the bag");
    }
    for (name, model) in [("sparse_mi_10xv", &sparse_mi), ("mi_kernel", &mi_kernel)] {
        let predictor = Predictor::new(model).expect("valid model");
        let mut ws = Workspace::default();
        let mut out = vec![0.0; predictor.n_outputs()];
        c.bench_function(
            &format!("one bag 5x166, {name} ({} XVs)", predictor.n_xv()),
            |b| {
                b.iter(|| {
                    let view = BagView::dense(black_box(&flat), 166).expect("bag");
                    predictor.score_bag(view, &mut ws, &mut out).expect("score");
                    black_box(out[0])
                })
            },
        );
    }
    let predictor = Predictor::new(&sparse_mi).expect("valid model");
    c.bench_function("all MUSK1 bags (476 x 166), sparse_mi_10xv", |b| {
        b.iter(|| black_box(predictor.decision_function(&train).expect("scores")))
    });
}

criterion_group!(benches, serving);
criterion_main!(benches);
