//! The fitted model form shared by the kernel methods, its prediction, and its JSON file.
//!
//! `f(x) = sum_k beta_k k(z_k, x) + b` over a basis `Z` of expansion vectors, with the bag score
//! the label mean `F(X) = (1/|X|) sum_p f(x_p)` (Fu et al. 2013, eq. 3; ALGORITHMS.md section 1)
//! or the label max `F(X) = max_p f(x_p)` (mi-SVM, MI-SVM and the annealing methods).
//! One output per one-vs-rest problem: a binary model has one output (positive = class 1),
//! a multi-class model one per class.

use ndarray::{Array1, Array2};
use serde::{Deserialize, Serialize};

use crate::bags::{Bags, Instances};
use crate::error::{Error, Result};
pub use crate::kernel::Pooling;
use crate::kernel::{bag_scores, instance_scores, Basis, Kernel, Rows};

/// The current version of the model file format (2 added `pooling`; version 1 files, which
/// have none, are read as label-mean models).
pub const FORMAT_VERSION: u32 = 2;

/// A fitted label-mean kernel model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// Kernel between instances and expansion vectors.
    pub kernel: Kernel,
    /// Expansion vectors, one per row (`n_xv x n_features`).
    pub xv: Array2<f64>,
    /// Coefficients, one row per output (`n_outputs x n_xv`).
    pub coef: Array2<f64>,
    /// Bias of each output.
    pub intercept: Array1<f64>,
    /// Number of classes (a binary model has 2 classes and 1 output).
    pub n_classes: usize,
    /// How instance scores make a bag score.
    #[serde(default)]
    pub pooling: Pooling,
}

#[derive(Serialize, Deserialize)]
struct ModelFile {
    format: String,
    version: u32,
    model: Model,
}

impl Model {
    /// Number of features the model expects.
    pub fn n_features(&self) -> usize {
        self.xv.ncols()
    }

    /// Checks the shapes: at least one expansion vector and one output, coefficients of shape
    /// `n_outputs x n_xv`, one bias per output, finite values.
    pub fn check(&self) -> Result<()> {
        let (n_out, n_xv) = self.coef.dim();
        if n_xv == 0
            || n_out == 0
            || self.xv.nrows() != n_xv
            || self.intercept.len() != n_out
            || self.xv.ncols() == 0
        {
            return Err(Error::ModelFile(format!(
                "inconsistent model shapes: xv {:?}, coef {:?}, intercept {}",
                self.xv.dim(),
                self.coef.dim(),
                self.intercept.len()
            )));
        }
        if !((n_out == 1 && self.n_classes == 2) || (n_out >= 3 && n_out == self.n_classes)) {
            return Err(Error::ModelFile(format!(
                "{n_out} outputs do not fit {} classes (binary: 1 output, else one per class)",
                self.n_classes
            )));
        }
        if self
            .xv
            .iter()
            .chain(self.coef.iter())
            .chain(self.intercept.iter())
            .any(|v| !v.is_finite())
        {
            return Err(Error::ModelFile(
                "the model holds a non-finite value".into(),
            ));
        }
        if let Kernel::Rbf { gamma } = self.kernel {
            if !(gamma.is_finite() && gamma > 0.0) {
                return Err(Error::ModelFile(format!("invalid kernel width {gamma}")));
            }
        }
        Ok(())
    }

    /// Bag scores (`n_bags x n_outputs`).
    pub fn decision_function(&self, bags: &Bags) -> Result<Array2<f64>> {
        self.check()?;
        if bags.n_features() != self.n_features() {
            return Err(Error::Mismatch(format!(
                "the bags have {} features, the model was fitted on {}",
                bags.n_features(),
                self.n_features()
            )));
        }
        let basis = Basis::direct(self.xv.clone());
        let rows = Rows::from(bags.instances());
        let norms = bags.instances().sq_norms();
        Ok(bag_scores(
            self.kernel,
            rows,
            &norms,
            bags.bag_ptr(),
            &basis,
            self.coef.view(),
            self.intercept.as_slice().unwrap_or(&[]),
            self.pooling,
        ))
    }

    /// Instance scores `f(x)` (`n_instances x n_outputs`).
    pub fn instance_decision_function(&self, instances: &Instances) -> Result<Array2<f64>> {
        self.check()?;
        if instances.n_features() != self.n_features() {
            return Err(Error::Mismatch(format!(
                "the instances have {} features, the model was fitted on {}",
                instances.n_features(),
                self.n_features()
            )));
        }
        let basis = Basis::direct(self.xv.clone());
        let rows = Rows::from(instances);
        Ok(instance_scores(
            self.kernel,
            rows,
            &instances.sq_norms(),
            &basis,
            self.coef.view(),
            self.intercept.as_slice().unwrap_or(&[]),
        ))
    }

    /// The score of one bag given as a dense `n_instances x n_features` slice (row-major),
    /// without building [`Bags`]: the low-latency path for embedded prediction.
    pub fn decision_function_bag(&self, instances: &[f64]) -> Result<Vec<f64>> {
        self.check()?;
        let d = self.n_features();
        if d == 0 || instances.is_empty() || instances.len() % d != 0 {
            return Err(Error::Mismatch(format!(
                "a bag must hold a positive multiple of {d} values, got {}",
                instances.len()
            )));
        }
        if instances.iter().any(|v| !v.is_finite()) {
            return Err(Error::InvalidData("the bag has a non-finite value".into()));
        }
        let n = instances.len() / d;
        let znorms: Vec<f64> = self.xv.rows().into_iter().map(|r| r.dot(&r)).collect();
        let n_out = self.coef.nrows();
        let mut pooled = vec![
            match self.pooling {
                Pooling::Mean => 0.0,
                Pooling::Max => f64::NEG_INFINITY,
            };
            n_out
        ];
        let mut k = vec![0.0; self.xv.nrows()];
        for x in instances.chunks_exact(d) {
            let s: f64 = x.iter().map(|v| v * v).sum();
            for ((kk, z), &t) in k.iter_mut().zip(self.xv.rows()).zip(&znorms) {
                let dot: f64 = z.iter().zip(x).map(|(a, b)| a * b).sum();
                *kk = self.kernel.from_dot(dot, s, t);
            }
            for ((acc, c), &b) in pooled.iter_mut().zip(self.coef.rows()).zip(&self.intercept) {
                let f = c.iter().zip(&k).map(|(a, v)| a * v).sum::<f64>() + b;
                *acc = match self.pooling {
                    Pooling::Mean => *acc + f / n as f64,
                    Pooling::Max => acc.max(f),
                };
            }
        }
        Ok(pooled)
    }

    /// The model as versioned JSON (the format `milsvm.load` reads).
    pub fn to_json(&self) -> Result<String> {
        let file = ModelFile {
            format: "milsvm-model".into(),
            version: FORMAT_VERSION,
            model: self.clone(),
        };
        serde_json::to_string(&file).map_err(|e| Error::ModelFile(e.to_string()))
    }

    /// Reads a model from JSON written by [`Model::to_json`] (or Python's `save`).
    pub fn from_json(text: &str) -> Result<Self> {
        let file: ModelFile =
            serde_json::from_str(text).map_err(|e| Error::ModelFile(e.to_string()))?;
        if file.format != "milsvm-model" {
            return Err(Error::ModelFile(format!(
                "not a milsvm model file (format {:?})",
                file.format
            )));
        }
        if !(1..=FORMAT_VERSION).contains(&file.version) {
            return Err(Error::ModelFile(format!(
                "unsupported model file version {} (this build reads {FORMAT_VERSION})",
                file.version
            )));
        }
        let m = file.model;
        m.check()?;
        Ok(m)
    }

    /// Writes the JSON file.
    pub fn save(&self, path: impl AsRef<std::path::Path>) -> Result<()> {
        std::fs::write(path, self.to_json()?).map_err(|e| Error::ModelFile(e.to_string()))
    }

    /// Reads a JSON file.
    pub fn load(path: impl AsRef<std::path::Path>) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::ModelFile(e.to_string()))?;
        Self::from_json(&text)
    }
}
