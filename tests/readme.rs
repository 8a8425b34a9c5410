//! The Rust snippets of the README and of the documentation pages, run: every ```rust block of
//! those pages must appear, line for line, in one function below (which supplies the variables
//! the snippet takes as given).

mod common;

use common::{toy, TestResult};
use ndarray::Array2;

/// The pages that show Rust code, each with the number of its ```rust blocks (so that a snippet
/// added to a page is noticed and run here too).
const PAGES: [(&str, &str, usize); 4] = [
    ("README.md", include_str!("../README.md"), 1),
    (
        "docs/getting-started.md",
        include_str!("../docs/getting-started.md"),
        1,
    ),
    (
        "docs/guide/data.md",
        include_str!("../docs/guide/data.md"),
        1,
    ),
    (
        "docs/guide/serving.md",
        include_str!("../docs/guide/serving.md"),
        1,
    ),
];

/// The ```rust blocks of a Markdown page, one list of non-blank lines each.
fn rust_blocks(page: &str) -> Vec<Vec<String>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<String>> = None;
    for line in page.lines() {
        match (&mut current, line.trim()) {
            (None, "```rust") => current = Some(Vec::new()),
            (Some(_), "```") => blocks.extend(current.take()),
            (Some(b), l) if !l.is_empty() => b.push(l.to_string()),
            _ => {}
        }
    }
    blocks
}

#[test]
fn every_snippet_of_the_readme_and_the_docs_is_run_here() {
    // compared without white space, so that rustfmt may lay the code out its own way
    let squeeze = |s: &str| s.split_whitespace().collect::<String>();
    let source = squeeze(include_str!("readme.rs"));
    for (name, page, expected) in PAGES {
        let blocks = rust_blocks(page);
        assert_eq!(blocks.len(), expected, "{name} snippets: {blocks:?}");
        for block in blocks {
            let snippet = squeeze(&block.join("\n"));
            assert!(
                source.contains(&snippet),
                "{name} snippet not run by tests/readme.rs:\n{block:#?}"
            );
        }
    }
}

/// The quick tour of the README and of getting-started (the snippet as written; rustfmt keeps
/// its layout).
#[rustfmt::skip]
fn quick_tour_snippet(arrays: Vec<Array2<f64>>, labels: Vec<usize>) -> milsvm::Result<Array2<f64>> {
    use milsvm::{Bags, SparseMiParams};
    let bags = Bags::from_dense_bags(&arrays)?;      // one ndarray::Array2<f64> per bag
    let fit = SparseMiParams::new().n_xv(10).c(10.0).fit(&bags, &labels)?;
    let scores = fit.model.decision_function(&bags)?;
    Ok(scores)
}

/// The data-reading snippet of the data-formats page (as written).
#[rustfmt::skip]
fn reading_snippet(path: std::path::PathBuf) -> milsvm::Result<(Vec<i64>, milsvm::SparseMiFit)> {
    use milsvm::SparseMiParams;
    use milsvm::data::{read_mil_csv, read_mill};
    let data = read_mill(&path, None)?;              // MILL, dense or sparse (CSR); or read_mil_csv
    let (classes, y) = data.class_indices();         // the labels as written -> class indices
    let fit = SparseMiParams::new().n_xv(10).fit(&data.bags, &y)?;
    let _ = read_mil_csv(path.with_extension("csv"));
    Ok((classes, fit))
}

/// The serving snippet of the serving page (as written).
#[rustfmt::skip]
fn serving_snippet(
    path: std::path::PathBuf,
    instances: Vec<f64>,
    bags: milsvm::Bags,
) -> milsvm::Result<(Vec<f64>, Array2<f64>)> {
    use milsvm::model::{BagView, Model, Predictor, Workspace};

    let model = Model::load(&path)?;                 // a file saved from Python or Rust
    let predictor = Predictor::new(&model)?;         // Send + Sync: share it between threads
    let mut ws = Workspace::default();               // one per thread; no allocation once warm
    let mut scores = vec![0.0; predictor.n_outputs()];
    predictor.score_bag(BagView::dense(&instances, predictor.n_features())?, &mut ws, &mut scores)?;
    let all = predictor.decision_function(&bags)?;   // many bags, in parallel
    Ok((scores, all))
}

#[test]
fn quick_tour() -> TestResult {
    let (toy_bags, labels) = toy(0, 20);
    let arrays: Vec<Array2<f64>> = (0..toy_bags.n_bags())
        .map(|i| {
            toy_bags
                .instances()
                .dense_rows(&toy_bags.bag_range(i).collect::<Vec<_>>())
        })
        .collect();
    let scores = quick_tour_snippet(arrays, labels)?;
    assert_eq!(scores.dim(), (20, 1));
    Ok(())
}

#[test]
fn serving() -> TestResult {
    let (bags, labels) = toy(1, 20);
    let dir = std::env::temp_dir().join(format!("milsvm-readme-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("model.json");
    let fit = milsvm::SparseMiParams::new().n_xv(3).fit(&bags, &labels)?;
    fit.model.save(&path)?;
    // one bag of two instances, row-major: near the negatives' noise and near (3, 3)
    let (scores, all) = serving_snippet(path, vec![-1.0, -1.0, 3.0, 3.0], bags.clone())?;
    assert_eq!(all, fit.model.decision_function(&bags)?);
    assert_eq!(scores.len(), 1);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

#[test]
fn reading() -> TestResult {
    let (bags, labels) = toy(2, 20);
    let dir = std::env::temp_dir().join(format!("milsvm-readme-data-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("toy.data");
    // the toy bags as MILL, labels written -1 / 1
    let mut text = String::new();
    for (i, &class) in labels.iter().enumerate() {
        for r in bags.bag_range(i) {
            let row = bags.instances().dense_row(r);
            let label = if class == 1 { 1 } else { -1 };
            text.push_str(&format!("i{r},bag{i},{label},{},{}\n", row[0], row[1]));
        }
    }
    std::fs::write(&path, text)?;
    let (classes, fit) = reading_snippet(path)?;
    assert_eq!(classes, [-1, 1]);
    assert_eq!(fit.model.decision_function(&bags)?.dim(), (20, 1));
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
