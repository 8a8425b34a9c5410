//! The fitted model form shared by every estimator of the crate, its compiled predictor, and its
//! versioned JSON file.
//!
//! `f(x) = sum_k beta_k k(z_k, x) + b` over a basis `Z` of expansion vectors (dense or CSR), with
//! the bag score pooled from the instance scores ([`Pooling`]): the label mean
//! `F(X) = (1/|X|) sum_p f(x_p)` (Fu et al. 2013, eq. 3; SparseMI, RSVM, MI-Kernel by Lemma 1,
//! NSK with `norm = "l1"`, sMIL), the label max `F(X) = max_p f(x_p)` (mi-SVM, MI-SVM, the
//! annealing methods, SVM-CC, the one-class MI-SVM), or the feature-space-normalised mean (NSK
//! with `norm = "l2"`), or, for MILES, the max per expansion vector before the linear
//! combination, `F(X) = sum_k beta_k max_p k(z_k, x_p) + b` ([`Pooling::XvMax`]). One output
//! per one-vs-rest problem: a binary model has one output
//! (positive = class 1), a multi-class model one per class.
//!
//! * [`Model`]: the data of a fitted model, checked by [`Model::check`], read and written as
//!   JSON ([`Model::to_json`], [`Model::from_json`], [`Model::save`], [`Model::load`]; the
//!   format is described in [`file`](mod@file)).
//! * [`Scaler`] and [`Calibration`]: what a model may carry besides the kernel expansion: the
//!   standardisation of a saved pipeline, applied before the kernel, and Platt's sigmoids
//!   ([`fit_sigmoid`]) for class probabilities.
//! * [`Predictor`]: a model compiled for prediction (validated once, basis norms and layouts
//!   precomputed), `Send + Sync`, scoring one bag without allocating ([`Predictor::score_bag`]
//!   with a [`Workspace`]) or many bags in parallel ([`Predictor::decision_function`]).
//! * [`decision_functions`]: several models of one kernel scored at once, over the union of
//!   their expansion vectors (the models of a `C` path).
//!
//! ```
//! use milsvm::model::{BagView, Model, Pooling, Predictor, Workspace};
//! use milsvm::Kernel;
//! use ndarray::array;
//!
//! let model = Model::new(
//!     Kernel::Rbf { gamma: 0.5 },
//!     array![[0.0, 0.0], [3.0, 3.0]],
//!     array![[-1.0, 2.0]],
//!     array![0.1],
//!     2,
//!     Pooling::Max,
//! );
//! let predictor = Predictor::new(&model)?;
//! let mut ws = Workspace::default();
//! let mut score = [0.0];
//! // a bag of two instances, row-major
//! predictor.score_bag(BagView::dense(&[0.1, 0.0, 2.9, 3.1], 2)?, &mut ws, &mut score)?;
//! assert!(score[0] > 0.0);
//! # Ok::<(), milsvm::Error>(())
//! ```

mod bag_features;
mod calibration;
pub mod file;
mod predictor;
mod scaler;
mod stack;

use ndarray::{Array1, Array2};
use serde_json::{Map, Value};

use crate::bags::{Bags, Instances};
use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::linalg::all_finite;
pub(crate) use bag_features::bags_min_max;
pub use bag_features::{min_max_bags, min_max_into, min_max_rows, BagFeatures};
pub use calibration::{fit_sigmoid, Calibration};
pub use file::FORMAT_VERSION;
pub use predictor::{BagValue, BagView, Predictor, Workspace, ROW_KERNEL_MAX_XV};
pub use scaler::Scaler;
pub use stack::decision_functions;
#[cfg(feature = "python")]
pub(crate) use stack::decision_functions_of_checked;

crate::choice::choices! {
/// How a bag's score is formed from the scores of its instances.
pub enum Pooling {
    /// Label mean `F(X) = (1/|X|) sum_p f(x_p)` (Fu et al. 2013, eq. 3).
    Mean = "mean",
    /// Label max `F(X) = max_p f(x_p)` (the MI assumption of mi-SVM / MI-SVM and the annealing
    /// methods; Gehler & Chapelle 2007).
    Max = "max",
    /// The mean of the bias-free instance scores divided by the bag's feature-space norm,
    /// `F(X) = (1/|X|) sum_p (f(x_p) - b) / sqrt(k_set(X, X)) + b` with
    /// `k_set(X, X) = (1/|X|^2) sum_p sum_q k(x_p, x_q)` (NSK with `norm = "l2"`; Gaertner et al.
    /// 2002). [`Predictor`] applies the normalisation after the mean.
    NormalizedMean = "normalized_mean",
    /// The mean shifted by the midpoint of sMIL's two margins for a bag of this size:
    /// `F(X) = (1/|X|) sum_p f(x_p) + 1 - 1/|X|`. sMIL (Bunescu & Mooney 2007, eq. 8-9) trains
    /// negative instances to `f <= -1` (so a negative bag's mean is at most -1) and a positive
    /// bag's mean to at least `(2 - |X|) / |X|` (one positive instance at +1, the others at -1);
    /// the bag is called positive above the midpoint `1/|X| - 1` of the two (0 for a
    /// one-instance bag). The shift depends on the bag's size, so it reorders bags of different
    /// sizes, not only the threshold: the rule `bag_score = "smil_mean"` of sMIL and stMIL, which
    /// sMIL's default `"auto"` keeps unless the plain mean is clearly better out of fold
    /// (`SmilBagScore` of the sMIL family).
    SmilMean = "smil_mean",
    /// The max over the bag's instances per expansion vector, then the linear combination:
    /// `F(X) = sum_k beta_k max_p k(z_k, x_p) + b` (MILES; Chen, Bi & Wang 2006: a bag is
    /// embedded by its similarity to each concept `z_k`, its most similar instance's, and
    /// classified by a linear function of the embedding). Not a pooling of the instance scores
    /// `f(x)`: [`Predictor::bag_instance_scores`] gives each instance its share instead (the
    /// terms `beta_k k(z_k, x_p)` of the vectors whose max it attains, plus `b / |U|`, `U` the
    /// instances attaining a max), and these shares *sum* to the bag score.
    XvMax = "xv_max",
}
}

crate::choice::choices! {
/// The type of the instance values a model was fitted on (recorded in its file; the predictor
/// scores either type).
pub enum Dtype {
    /// Double precision.
    Float64 = "float64",
    /// Single precision ([`crate::bags::Instances::Dense32`]).
    Float32 = "float32",
}
}

impl Dtype {
    /// The type of `x`'s stored values.
    pub fn of(x: &Instances) -> Self {
        match x {
            Instances::Dense32(_) => Dtype::Float32,
            Instances::Dense(_) | Instances::Sparse(_) => Dtype::Float64,
        }
    }
}

/// A fitted kernel model: basis, coefficients, biases, pooling, plus what a file needs to
/// rebuild the estimator (class labels, estimator name and parameters, training record).
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    /// Kernel between instances and expansion vectors.
    pub kernel: Kernel,
    /// Expansion vectors, one per row (`n_xv x n_features`), dense or CSR; owned
    /// ([`Model::check`] refuses a borrowed basis).
    pub xv: Instances,
    /// Coefficients, one row per output (`n_outputs x n_xv`).
    pub coef: Array2<f64>,
    /// Bias of each output.
    pub intercept: Array1<f64>,
    /// Number of classes (a binary model has 2 classes and 1 output).
    pub n_classes: usize,
    /// How instance scores make a bag score.
    pub pooling: Pooling,
    /// What the kernel expansion scores: each instance (then [`Model::pooling`]), or one vector
    /// of min/max statistics per bag ([`BagFeatures::MinMax`], STK; the basis has twice the
    /// input features and the pooling is [`Pooling::Mean`] over that one vector).
    pub bag_features: BagFeatures,
    /// The class labels (JSON numbers or strings), `n_classes` of them, if known.
    pub classes: Option<Vec<Value>>,
    /// The estimator that fitted the model (its Python class name, e.g. `"SparseMI"`), if known.
    pub estimator: Option<String>,
    /// The estimator's hyperparameters (JSON scalars), for rebuilding it.
    pub params: Map<String, Value>,
    /// The training record (iterations, objective history, estimator-specific attributes).
    pub info: Map<String, Value>,
    /// Standardisation applied to every instance before the kernel (a saved pipeline's
    /// `BagStandardScaler`), if any.
    pub scaler: Option<Scaler>,
    /// Platt's sigmoid of every output (an estimator fitted with `probability=True`), if any:
    /// [`Predictor::probabilities`].
    pub calibration: Option<Calibration>,
    /// The calibrated members of an ensemble (an estimator fitted with
    /// `probability="ensemble"`; empty otherwise): the models fitted on the training parts of
    /// the internal cross-validation, each with Platt's sigmoid fitted on its own held-out
    /// part. The class probabilities are the mean of the members' calibrated probabilities
    /// (the protocol of scikit-learn's `CalibratedClassifierCV(method="sigmoid",
    /// ensemble=True)`), [`Predictor::predict_proba_bag`]; the model's own expansion still
    /// gives the scores. A member has the model's kernel family, pooling, bag features,
    /// classes and scaler, a calibration, and no ensemble of its own.
    pub ensemble: Vec<Model>,
    /// The type of the training instances (informative: prediction takes either type).
    pub input_dtype: Dtype,
}

impl Model {
    /// A model with no metadata (fields can be set afterwards); `xv` is an `Array2` (dense) or
    /// [`Instances`] (dense or CSR). The basis is held in `f64` and owned: `f32` rows are
    /// widened (exactly), and rows borrowed from a caller's buffer are copied, so that a model
    /// never changes with, or keeps alive, the data it was fitted on.
    pub fn new(
        kernel: Kernel,
        xv: impl Into<Instances>,
        coef: Array2<f64>,
        intercept: Array1<f64>,
        n_classes: usize,
        pooling: Pooling,
    ) -> Self {
        let xv = match xv.into() {
            Instances::Dense32(z) => Instances::from(z.view().mapv(f64::from)),
            Instances::Dense(z) if z.is_borrowed() => Instances::from(z.view().to_owned()),
            xv => xv,
        };
        Self {
            kernel,
            xv,
            coef,
            intercept,
            n_classes,
            pooling,
            bag_features: BagFeatures::Instances,
            classes: None,
            estimator: None,
            params: Map::new(),
            info: Map::new(),
            scaler: None,
            calibration: None,
            ensemble: Vec::new(),
            input_dtype: Dtype::Float64,
        }
    }

    /// Sets the standardisation applied before the kernel (`None` removes it), on the model
    /// and on every member of its [`Model::ensemble`], which share it.
    pub fn set_scaler(&mut self, scaler: Option<Scaler>) {
        for member in &mut self.ensemble {
            member.scaler = scaler.clone();
        }
        self.scaler = scaler;
    }

    /// The model whose expansion vectors are the rows of `x` that carry a nonzero coefficient in
    /// some output (at least one row is kept), from per-output coefficients over every row of
    /// `x` (`coefs[c][t]`): the dual methods' instance expansions. CSR rows stay CSR. With the
    /// linear kernel the expansion is collapsed into one weight vector per output,
    /// `w_c = sum_t coefs[c][t] x_t` (the basis holds the `w_c`, the coefficients are the
    /// identity): the same decision function, one row per output however many support
    /// vectors. Not with [`Pooling::XvMax`], whose score is not linear in the basis: there the
    /// selected rows are kept.
    pub fn from_instance_coefficients(
        kernel: Kernel,
        x: &Instances,
        coefs: &[&[f64]],
        intercept: Array1<f64>,
        n_classes: usize,
        pooling: Pooling,
    ) -> Self {
        if kernel == Kernel::Linear && pooling != Pooling::XvMax {
            let n_out = coefs.len();
            let mut all = Array2::zeros((n_out, x.n_rows()));
            for (mut row, c) in all.rows_mut().into_iter().zip(coefs) {
                row.iter_mut().zip(c.iter()).for_each(|(o, &v)| *o = v);
            }
            let mut model = Self::new(
                kernel,
                x.combine_rows(&all),
                Array2::eye(n_out),
                intercept,
                n_classes,
                pooling,
            );
            model.input_dtype = Dtype::of(x);
            return model;
        }
        let keep: Vec<usize> = (0..x.n_rows())
            .filter(|&t| coefs.iter().any(|c| c[t] != 0.0))
            .collect();
        let keep = if keep.is_empty() { vec![0] } else { keep };
        let mut coef = Array2::zeros((coefs.len(), keep.len()));
        for (mut row, c) in coef.rows_mut().into_iter().zip(coefs) {
            for (o, &t) in row.iter_mut().zip(&keep) {
                *o = c[t];
            }
        }
        let mut model = Self::new(
            kernel,
            x.select_rows(&keep),
            coef,
            intercept,
            n_classes,
            pooling,
        );
        model.input_dtype = Dtype::of(x);
        model
    }

    /// Number of features the model expects of an instance (half the basis width for
    /// [`BagFeatures::MinMax`]).
    pub fn n_features(&self) -> usize {
        self.bag_features
            .input_width(self.xv.n_features())
            .unwrap_or(0)
    }

    /// Number of expansion vectors.
    pub fn n_xv(&self) -> usize {
        self.xv.n_rows()
    }

    /// Number of outputs (1 for a binary model, else one per class).
    pub fn n_outputs(&self) -> usize {
        self.coef.nrows()
    }

    /// Checks that the parts fit together: at least one expansion vector, feature and output;
    /// coefficients of shape `n_outputs x n_xv`; one bias per output; one output for two
    /// classes or one per class; `n_classes` labels when labels are given; finite values and a
    /// valid kernel width; a basis of its own, not borrowed. Every message names the field at
    /// fault.
    pub fn check(&self) -> Result<()> {
        let bad = |msg: String| Err(Error::ModelFile(msg));
        let (n_out, n_coef) = self.coef.dim();
        if self.n_xv() == 0 || self.xv.n_features() == 0 {
            return bad(format!(
                "xv: the basis must have at least one row and one column, got {} x {}",
                self.n_xv(),
                self.xv.n_features()
            ));
        }
        if self.bag_features == BagFeatures::MinMax {
            if !self.xv.n_features().is_multiple_of(2) {
                return bad(format!(
                    "bag_features: \"min_max\" needs a basis of an even width (minima then \
                     maxima), got {} columns",
                    self.xv.n_features()
                ));
            }
            if self.pooling != Pooling::Mean {
                return bad(format!(
                    "pooling: a \"min_max\" model scores one vector per bag; its pooling must \
                     be \"mean\", got {:?}",
                    self.pooling.as_str()
                ));
            }
        }
        if matches!(&self.xv, Instances::Dense(z) if z.is_borrowed()) {
            return bad(
                "xv: the basis is borrowed from a caller's buffer; a model owns its \
                 basis (Model::new copies a borrowed one)"
                    .into(),
            );
        }
        if self.n_xv().max(self.xv.n_features()) > i64::MAX as usize {
            return bad(format!(
                "xv: a shape of {} x {} exceeds the largest index of a NumPy array (2^63 - 1)",
                self.n_xv(),
                self.xv.n_features()
            ));
        }
        if n_out == 0 || n_coef != self.n_xv() {
            return bad(format!(
                "coef: shape {n_out} x {n_coef} does not fit {} expansion vectors (expected \
                 n_outputs x {})",
                self.n_xv(),
                self.n_xv()
            ));
        }
        if self.intercept.len() != n_out {
            return bad(format!(
                "intercept: {} values for {n_out} outputs",
                self.intercept.len()
            ));
        }
        if !((n_out == 1 && self.n_classes == 2) || (n_out >= 3 && n_out == self.n_classes)) {
            return bad(format!(
                "n_classes: {} classes do not fit {n_out} outputs (binary: 1 output, else one \
                 per class)",
                self.n_classes
            ));
        }
        if let Some(classes) = &self.classes {
            if classes.len() != self.n_classes {
                return bad(format!(
                    "classes: {} labels for {} classes",
                    classes.len(),
                    self.n_classes
                ));
            }
            if let Some(c) = classes
                .iter()
                .find(|c| !(c.is_number() || c.is_string() || c.is_boolean()))
            {
                return bad(format!(
                    "classes: a label must be a number, a string or a boolean, got {c}"
                ));
            }
        }
        if self.xv_has_non_finite() {
            return bad("xv: the basis holds a non-finite value".into());
        }
        if self.coef.iter().any(|v| !v.is_finite()) {
            return bad("coef: a coefficient is not finite".into());
        }
        if let Some(scaler) = &self.scaler {
            scaler.check(self.n_features())?;
        }
        if let Some(calibration) = &self.calibration {
            calibration.check(n_out)?;
        }
        self.check_ensemble()?;
        if self.intercept.iter().any(|v| !v.is_finite()) {
            return bad("intercept: a bias is not finite".into());
        }
        if let Kernel::Rbf { gamma } = self.kernel {
            if !(gamma.is_finite() && gamma > 0.0) {
                return bad(format!(
                    "kernel: the width gamma must be finite and > 0, got {gamma}"
                ));
            }
        }
        Ok(())
    }

    /// The rules of [`Model::ensemble`]; a member's own faults are named under
    /// `ensemble[k]`.
    fn check_ensemble(&self) -> Result<()> {
        if self.ensemble.is_empty() {
            return Ok(());
        }
        if self.calibration.is_some() {
            return Err(Error::ModelFile(
                "calibration: a model with an ensemble takes its probabilities from the \
                 members and has no calibration of its own"
                    .into(),
            ));
        }
        for (k, member) in self.ensemble.iter().enumerate() {
            let bad = |msg: String| Err(Error::ModelFile(format!("ensemble[{k}]: {msg}")));
            if let Err(e) = member.check() {
                let msg = match e {
                    Error::ModelFile(msg) => msg,
                    other => other.to_string(),
                };
                return bad(msg);
            }
            if member.calibration.is_none() {
                return bad("calibration: a member needs its sigmoid".into());
            }
            if !member.ensemble.is_empty() {
                return bad("ensemble: a member has no ensemble of its own".into());
            }
            if member.n_outputs() != self.n_outputs() || member.n_classes != self.n_classes {
                return bad(format!(
                    "coef: {} outputs for {} classes, the model has {} for {}",
                    member.n_outputs(),
                    member.n_classes,
                    self.n_outputs(),
                    self.n_classes
                ));
            }
            if member.n_features() != self.n_features() {
                return bad(format!(
                    "xv: {} features, the model has {}",
                    member.n_features(),
                    self.n_features()
                ));
            }
            if member.pooling != self.pooling || member.bag_features != self.bag_features {
                return bad(
                    "pooling: a member pools and reads bags as the model does (same pooling \
                     and bag_features)"
                        .into(),
                );
            }
            if std::mem::discriminant(&member.kernel) != std::mem::discriminant(&self.kernel) {
                return bad("kernel: a member has the model's kernel family".into());
            }
            if member.scaler != self.scaler {
                return bad("scaler: a member has the model's scaler".into());
            }
        }
        Ok(())
    }

    fn xv_has_non_finite(&self) -> bool {
        match &self.xv {
            Instances::Dense(z) => !all_finite(z.as_slice()),
            Instances::Dense32(z) => !all_finite(z.as_slice()),
            Instances::Sparse(z) => !all_finite(z.data()),
        }
    }

    /// The compiled form of the model (checks it once); see [`Predictor`].
    pub fn predictor(&self) -> Result<Predictor> {
        Predictor::new(self)
    }

    /// Bag scores (`n_bags x n_outputs`), in parallel over bags. For repeated calls, compile
    /// the model once with [`Model::predictor`].
    pub fn decision_function(&self, bags: &Bags) -> Result<Array2<f64>> {
        self.predictor()?.decision_function(bags)
    }

    /// Instance scores `f(x)` (`n_instances x n_outputs`).
    pub fn instance_decision_function(&self, instances: &Instances) -> Result<Array2<f64>> {
        self.predictor()?.instance_decision_function(instances)
    }

    /// The score of one bag given as a dense `n_instances x n_features` slice (row-major).
    /// For a hot loop, use [`Predictor::score_bag`] with a [`Workspace`], which allocates
    /// nothing.
    pub fn decision_function_bag(&self, instances: &[f64]) -> Result<Vec<f64>> {
        let predictor = self.predictor()?;
        let mut out = vec![0.0; predictor.n_outputs()];
        predictor.score_bag(
            BagView::dense(instances, self.n_features())?,
            &mut Workspace::default(),
            &mut out,
        )?;
        Ok(out)
    }
}
