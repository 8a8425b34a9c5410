//! The compiled model: validated once, with the basis laid out for prediction.
//!
//! * One bag ([`Predictor::score_bag`]): inner products by a SIMD dot (AVX2 where the CPU has
//!   it, detected once when the predictor is built), the kernel finish of [`crate::kernel`],
//!   then the pooled score, in the buffers of a reusable [`Workspace`] (no allocation once the
//!   workspace has seen a bag of that size).
//! * Many bags ([`Predictor::decision_function`]): the instance scores in parallel over fixed
//!   chunks of rows (with the one-bag kernel for a small basis or a CSR basis, with one matrix
//!   product per chunk, [`crate::kernel::instance_scores`], for a larger dense basis), then the
//!   same pooling per bag. Every value is computed by the same operations whatever the number
//!   of threads, and the one-bag path gives exactly the batch path's values: for a larger dense
//!   basis it scores a dense bag with the bits of the batch path's matrix products
//!   (`kernel/gemm_bits.rs`), in its workspace.
//! * [`Pooling::XvMax`] (MILES): the max of each expansion vector's kernel values over the bag,
//!   then the linear combination; in a batch, bag by bag with the one-bag path for a small or
//!   CSR basis, else with matrix products over chunks of whole bags, whose bits the one-bag
//!   path reproduces (`kernel/gemm_bits.rs`) as for the other poolings. Prediction does not use
//!   [`crate::kernel::bag_max_kernel`], MILES's embedding of its training bags: that product
//!   rounds its own way.

use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

/// The largest dense basis scored bag by bag in the batch path; larger bases go through one
/// matrix product per chunk of bags.
pub const ROW_KERNEL_MAX_XV: usize = 32;

/// Below this many instance-basis pairs, the batch path runs on the calling thread.
const SEQUENTIAL_WORK: usize = 4096;

/// Rows per parallel task of the batch path's instance scores.
const ROW_CHUNK: usize = 128;

use super::bag_features::no_instance_scores;
use super::{min_max_into, min_max_rows, BagFeatures, Calibration, Model, Pooling, Scaler};
use crate::bags::{validate_bag_ptr, Bags, Csr, FeatureIndex, Instances, Rows};
use crate::error::{Error, Result};
use crate::kernel::{batch_sq_norm, instance_scores, Basis, GemmArith, Kernel};
use crate::linalg::{all_finite, Real, Simd};

/// One bag of instances, borrowed: dense row-major values (`f64` or `f32`) or CSR rows.
#[derive(Debug, Clone, Copy)]
pub enum BagView<'a> {
    /// `n_instances x n_features` values, row-major.
    Dense {
        /// The values.
        data: &'a [f64],
        /// Values per instance.
        n_features: usize,
    },
    /// `n_instances x n_features` single-precision values, row-major (read into `f64`
    /// arithmetic: the scores equal those of the same values given as `f64`, bit for bit).
    Dense32 {
        /// The values.
        data: &'a [f32],
        /// Values per instance.
        n_features: usize,
    },
    /// CSR rows (the layout of `scipy.sparse.csr_matrix`).
    Csr {
        /// Row offsets (`n_instances + 1` entries); `indices` / `data` start at offset
        /// `indptr[0]`.
        indptr: &'a [usize],
        /// Column of each stored value.
        indices: &'a [usize],
        /// Stored values.
        data: &'a [f64],
        /// Number of columns.
        n_features: usize,
    },
}

/// Checks that a dense bag of `len` values is a positive multiple of `n_features`.
fn dense_len(len: usize, n_features: usize) -> Result<()> {
    if n_features == 0 || len == 0 || !len.is_multiple_of(n_features) {
        return Err(Error::Mismatch(format!(
            "a bag must hold a positive multiple of {n_features} values, got {len}"
        )));
    }
    Ok(())
}

/// The values a dense bag can hold: `f64` ([`BagView::dense`]) and `f32`
/// ([`BagView::dense32`]), for callers generic over the input's precision.
pub trait BagValue: Real {
    /// A dense bag of these values: `data.len()` must be a positive multiple of `n_features`.
    fn dense_bag(data: &[Self], n_features: usize) -> Result<BagView<'_>>;
}

impl BagValue for f64 {
    fn dense_bag(data: &[f64], n_features: usize) -> Result<BagView<'_>> {
        BagView::dense(data, n_features)
    }
}

impl BagValue for f32 {
    fn dense_bag(data: &[f32], n_features: usize) -> Result<BagView<'_>> {
        BagView::dense32(data, n_features)
    }
}

impl<'a> BagView<'a> {
    /// A dense bag: `data.len()` must be a positive multiple of `n_features`.
    pub fn dense(data: &'a [f64], n_features: usize) -> Result<Self> {
        dense_len(data.len(), n_features)?;
        Ok(BagView::Dense { data, n_features })
    }

    /// A dense single-precision bag: `data.len()` must be a positive multiple of `n_features`.
    pub fn dense32(data: &'a [f32], n_features: usize) -> Result<Self> {
        dense_len(data.len(), n_features)?;
        Ok(BagView::Dense32 { data, n_features })
    }

    /// A CSR bag; checks the offsets and the column indices.
    pub fn csr(
        indptr: &'a [usize],
        indices: &'a [usize],
        data: &'a [f64],
        n_features: usize,
    ) -> Result<Self> {
        if indptr.len() < 2 {
            return Err(Error::InvalidData("the bag is empty".into()));
        }
        if indptr[0] != 0
            || indptr[indptr.len() - 1] != data.len()
            || indices.len() != data.len()
            || indptr.windows(2).any(|w| w[0] > w[1])
        {
            return Err(Error::InvalidData(
                "CSR bag: indptr must rise from 0 to the number of stored values, one index per \
                 value"
                    .into(),
            ));
        }
        if let Some(&j) = indices.iter().find(|&&j| j >= n_features) {
            return Err(Error::InvalidData(format!(
                "CSR bag: column index {j} is out of range for {n_features} columns"
            )));
        }
        Ok(BagView::Csr {
            indptr,
            indices,
            data,
            n_features,
        })
    }

    /// Number of instances.
    pub fn n_instances(&self) -> usize {
        match *self {
            BagView::Dense { data, n_features } => data.len() / n_features.max(1),
            BagView::Dense32 { data, n_features } => data.len() / n_features.max(1),
            BagView::Csr { indptr, .. } => indptr.len() - 1,
        }
    }

    /// Number of features.
    pub fn n_features(&self) -> usize {
        match *self {
            BagView::Dense { n_features, .. }
            | BagView::Dense32 { n_features, .. }
            | BagView::Csr { n_features, .. } => n_features,
        }
    }

    /// Instance `p`: its dense values, or its CSR indices and values.
    fn instance(&self, p: usize) -> Instance<'a> {
        match *self {
            BagView::Dense { data, n_features } => {
                Instance::Dense(&data[p * n_features..(p + 1) * n_features])
            }
            BagView::Dense32 { data, n_features } => {
                Instance::Dense32(&data[p * n_features..(p + 1) * n_features])
            }
            BagView::Csr {
                indptr,
                indices,
                data,
                ..
            } => {
                let (a, b) = (indptr[p] - indptr[0], indptr[p + 1] - indptr[0]);
                Instance::Sparse(&indices[a..b], &data[a..b])
            }
        }
    }

    /// Whether a stored value is NaN or infinite.
    fn has_non_finite(&self) -> bool {
        match *self {
            BagView::Dense { data, .. } | BagView::Csr { data, .. } => !all_finite(data),
            BagView::Dense32 { data, .. } => !all_finite(data),
        }
    }

    /// Rows `lo..hi` of `rows` (dense rows must be in standard layout).
    pub(super) fn of(rows: Rows<'a>, lo: usize, hi: usize) -> BagView<'a> {
        match rows {
            Rows::Dense(x) => {
                let (data, n_features) = dense_rows_slice(x, lo, hi);
                BagView::Dense { data, n_features }
            }
            Rows::Dense32(x) => {
                let (data, n_features) = dense_rows_slice(x, lo, hi);
                BagView::Dense32 { data, n_features }
            }
            Rows::Sparse(x) => {
                let (a, b) = (x.indptr()[lo], x.indptr()[hi]);
                BagView::Csr {
                    indptr: &x.indptr()[lo..=hi],
                    indices: &x.indices()[a..b],
                    data: &x.data()[a..b],
                    n_features: x.n_cols(),
                }
            }
        }
    }
}

/// Rows `lo..hi` of a standard-layout matrix as one slice, and the row length.
fn dense_rows_slice<'a, T>(x: ArrayView2<'a, T>, lo: usize, hi: usize) -> (&'a [T], usize) {
    let d = x.ncols();
    let all = x.to_slice().unwrap_or(&[]);
    (&all[lo * d..hi * d], d)
}

/// One instance of a [`BagView`].
enum Instance<'a> {
    Dense(&'a [f64]),
    Dense32(&'a [f32]),
    Sparse(&'a [usize], &'a [f64]),
}

/// Scratch buffers for [`Predictor::score_bag`]; reuse one per thread so that scoring allocates
/// nothing once it has seen a bag of the largest size.
#[derive(Debug, Clone, Default)]
pub struct Workspace {
    dots: Vec<f64>,
    /// The standardised bag of a model with a [`Scaler`] (dense values, or CSR values).
    scaled: Vec<f64>,
    norms: Vec<f64>,
    row_entries: Vec<(usize, f64)>,
    row_starts: Vec<usize>,
    /// The min/max statistics of a bag ([`BagFeatures::MinMax`]).
    stats: Vec<f64>,
    /// The sum of a bag's instances (the linear kernel's `k_set(X, X)`).
    sum: Vec<f64>,
    /// Per expansion vector, the max of its kernel values over the bag ([`Pooling::XvMax`]).
    maxes: Vec<f64>,
    /// Per expansion vector, the first instance attaining that max.
    argmax: Vec<usize>,
    /// Per instance, whether it attains a max of a vector with a nonzero coefficient.
    attains: Vec<bool>,
    /// A member's scores and probabilities ([`Predictor::predict_proba_bag`] of an ensemble).
    member_scores: Vec<f64>,
    member_proba: Vec<f64>,
    /// A single-precision bag read into `f64` (the matrix-product path of a large basis).
    wide: Vec<f64>,
    /// The instance scores of a bag before pooling (the matrix-product path of a large basis).
    inst: Vec<f64>,
}

/// The basis as prediction reads it.
#[derive(Debug, Clone)]
enum Layout {
    /// Dense basis rows (also the matrix-product operand of the batch path).
    Dense(Basis),
    /// A CSR basis, with its entries grouped by feature for sparse instances.
    Sparse(Csr, FeatureIndex),
}

/// A [`Model`] compiled for prediction: checked once, basis norms and layout precomputed.
/// `Send + Sync`: share one predictor between threads, each with its own [`Workspace`].
#[derive(Debug, Clone)]
pub struct Predictor {
    kernel: Kernel,
    pooling: Pooling,
    bag_features: BagFeatures,
    n_features: usize,
    layout: Layout,
    znorms: Vec<f64>,
    coef: Array2<f64>,
    intercept: Vec<f64>,
    scaler: Option<Scaler>,
    calibration: Option<Calibration>,
    /// The compiled members of [`Model::ensemble`] (each with its calibration).
    members: Vec<Predictor>,
    simd: Simd,
    /// For a dense basis of more than [`ROW_KERNEL_MAX_XV`] vectors: how one bag is scored with
    /// the bits of the batch path's matrix products.
    gemm: Option<GemmScoring>,
}

/// The one-bag twin of the batch path's matrix products ([`crate::kernel::instance_scores`]):
/// the basis transposed (`n_features x n_xv`, row-major) and the CPU's product arithmetic.
#[derive(Debug, Clone)]
struct GemmScoring {
    basis_t: Vec<f64>,
    arith: GemmArith,
}

impl Predictor {
    /// Compiles `model` (after [`Model::check`]).
    pub fn new(model: &Model) -> Result<Self> {
        model.check()?;
        Ok(Self::of_checked(model))
    }

    /// [`Predictor::new`] of a model [`Model::check`] accepted (its ensemble's members are
    /// checked with it, so they are compiled here without a second check).
    fn of_checked(model: &Model) -> Self {
        let (layout, znorms) = match &model.xv {
            Instances::Dense(_) | Instances::Dense32(_) => {
                let basis =
                    Basis::direct(model.xv.rows().to_f64().as_standard_layout().into_owned());
                let norms = basis.sq_norms.clone();
                (Layout::Dense(basis), norms)
            }
            Instances::Sparse(z) => {
                let norms = Rows::Sparse(z).sq_norms();
                (
                    Layout::Sparse(z.clone(), FeatureIndex::new(z, 0..z.n_rows())),
                    norms,
                )
            }
        };
        let gemm = match &layout {
            Layout::Dense(basis) if basis.len() > ROW_KERNEL_MAX_XV => Some(GemmScoring {
                basis_t: basis.v.t().iter().copied().collect(),
                arith: GemmArith::detect(),
            }),
            _ => None,
        };
        Self {
            gemm,
            kernel: model.kernel,
            pooling: model.pooling,
            bag_features: model.bag_features,
            n_features: model.n_features(),
            layout,
            znorms,
            coef: model.coef.as_standard_layout().into_owned(),
            intercept: model.intercept.to_vec(),
            scaler: model.scaler.clone(),
            calibration: model.calibration.clone(),
            members: model.ensemble.iter().map(Predictor::of_checked).collect(),
            simd: Simd::detect(),
        }
    }

    /// Number of features an instance must have.
    pub fn n_features(&self) -> usize {
        self.n_features
    }

    /// Number of outputs (scores per bag).
    pub fn n_outputs(&self) -> usize {
        self.coef.nrows()
    }

    /// Number of expansion vectors.
    pub fn n_xv(&self) -> usize {
        self.znorms.len()
    }

    /// Number of classes: 2 for one output, else one per output.
    pub fn n_classes(&self) -> usize {
        match self.n_outputs() {
            1 => 2,
            k => k,
        }
    }

    /// Whether the model gives class probabilities: it carries a [`Calibration`] (fitted with
    /// `probability=True`) or an ensemble of calibrated members (`probability="ensemble"`).
    pub fn has_probabilities(&self) -> bool {
        self.calibration.is_some() || !self.members.is_empty()
    }

    /// Class probabilities of one bag from its scores (`n_outputs` values, from
    /// [`Predictor::score_bag`]) into `out` (`n_classes` values): Platt's sigmoid per output and
    /// the coupling of [`Calibration::probabilities`]. Fails if the model has no calibration
    /// (an ensemble's probabilities come from its members' scores, not the model's: use
    /// [`Predictor::predict_proba_bag`]) or the lengths are wrong.
    pub fn probabilities(&self, scores: &[f64], out: &mut [f64]) -> Result<()> {
        let calibration = self.calibration()?;
        if scores.len() != self.n_outputs() || out.len() != self.n_classes() {
            return Err(Error::Mismatch(format!(
                "{} scores and {} probabilities for a model of {} outputs and {} classes",
                scores.len(),
                out.len(),
                self.n_outputs(),
                self.n_classes()
            )));
        }
        calibration.probabilities(scores, out);
        Ok(())
    }

    /// Class probabilities of one bag into `out` (`n_classes` values), allocation-free after
    /// warm-up: with a calibration, [`Predictor::score_bag`] then
    /// [`Predictor::probabilities`]; with an ensemble, the mean over the members of each
    /// member's calibrated probabilities of its own score of the bag. Fails as
    /// [`Predictor::score_bag`] does, or if the model has no probabilities.
    pub fn predict_proba_bag(
        &self,
        bag: BagView<'_>,
        ws: &mut Workspace,
        out: &mut [f64],
    ) -> Result<()> {
        output_buffer(out, Some(self.n_classes()), || {
            format!("the model has {} classes", self.n_classes())
        })?;
        let mut scores = std::mem::take(&mut ws.member_scores);
        scores.resize(self.n_outputs(), 0.0);
        let result = if self.members.is_empty() {
            self.calibration().and_then(|calibration| {
                self.score_bag(bag, ws, &mut scores)?;
                calibration.probabilities(&scores, out);
                Ok(())
            })
        } else {
            let mut proba = std::mem::take(&mut ws.member_proba);
            proba.resize(out.len(), 0.0);
            out.fill(0.0);
            // the members share the model's width, scaler and bag features (`Model::check`):
            // the bag is checked, standardised and summarised once for all of them
            let result = self.with_input_bag(bag, ws, |input, ws| {
                self.members.iter().try_for_each(|member| {
                    member.score_raw(input, ws, &mut scores)?;
                    member.calibration()?.probabilities(&scores, &mut proba);
                    out.iter_mut().zip(&proba).for_each(|(o, p)| *o += p);
                    Ok(())
                })
            });
            let k = self.members.len() as f64;
            out.iter_mut().for_each(|o| *o /= k);
            ws.member_proba = proba;
            result
        };
        ws.member_scores = scores;
        result
    }

    /// Class probabilities of many bags (`n_bags x n_classes`): [`Predictor::probabilities`]
    /// of [`Predictor::decision_function_rows`], or with an ensemble the mean of its members'
    /// (as [`Predictor::predict_proba_bag`]). Fails if the model has no probabilities.
    pub fn predict_proba_rows(&self, rows: Rows<'_>, bag_ptr: &[usize]) -> Result<Array2<f64>> {
        // the members share the model's width, scaler and bag features (`Model::check`): the
        // rows are checked, standardised and summarised once for all of them
        self.with_input_rows(rows, bag_ptr, |points, ptr| {
            self.proba_of_points(points, ptr)
        })
    }

    /// [`Predictor::predict_proba_rows`] of the points the expansion reads
    /// ([`Predictor::with_input_rows`]).
    fn proba_of_points(&self, points: Rows<'_>, ptr: &[usize]) -> Result<Array2<f64>> {
        if !self.members.is_empty() {
            let mut total: Option<Array2<f64>> = None;
            for member in &self.members {
                let p = member.proba_of_points(points, ptr)?;
                match &mut total {
                    Some(t) => *t += &p,
                    None => total = Some(p),
                }
            }
            let k = self.members.len() as f64;
            return Ok(total.map(|t| t / k).unwrap_or_default());
        }
        let calibration = self.calibration()?;
        let scores = self.pooled_rows(points, ptr)?;
        let mut out = Array2::zeros((scores.nrows(), self.n_classes()));
        for (s, mut o) in scores.rows().into_iter().zip(out.rows_mut()) {
            if let (Some(s), Some(o)) = (s.as_slice(), o.as_slice_mut()) {
                calibration.probabilities(s, o);
            }
        }
        Ok(out)
    }

    fn calibration(&self) -> Result<&Calibration> {
        self.calibration.as_ref().ok_or_else(|| {
            let msg = if self.members.is_empty() {
                "the model has no probabilities: fit it with probability=True"
            } else {
                "the model's probabilities come from its ensemble's members, which score the \
                 bag themselves: use predict_proba_bag or predict_proba_rows"
            };
            Error::InvalidParameter(msg.into())
        })
    }

    /// The score of one bag into `out` (`n_outputs` values), allocation-free after warm-up.
    /// Fails on a bag of the wrong width, an empty bag or a non-finite value (`out` is then
    /// unspecified).
    pub fn score_bag(&self, bag: BagView<'_>, ws: &mut Workspace, out: &mut [f64]) -> Result<()> {
        output_buffer(out, Some(self.n_outputs()), || {
            format!("the model has {} outputs", self.n_outputs())
        })?;
        self.with_input_bag(bag, ws, |input, ws| self.score_raw(input, ws, out))
    }

    /// The instance scores of one bag as its pooling counts them (those of
    /// [`Predictor::bag_instance_scores`] for this bag alone) into `out` (`n_instances x
    /// n_outputs`, row-major), allocation-free after warm-up: the serving path's twin of
    /// [`Predictor::score_bag`]. Fails as [`Predictor::score_bag`] does, on an output buffer of
    /// the wrong length, and for a [`BagFeatures::MinMax`] model, which has no instance scores.
    pub fn bag_instance_scores_into(
        &self,
        bag: BagView<'_>,
        ws: &mut Workspace,
        out: &mut [f64],
    ) -> Result<()> {
        if self.bag_features == BagFeatures::MinMax {
            return Err(no_instance_scores());
        }
        let need = bag.n_instances().checked_mul(self.n_outputs());
        output_buffer(out, need, || {
            let (n, n_out) = (bag.n_instances(), self.n_outputs());
            format!("the bag needs {n} instances x {n_out} outputs")
        })?;
        self.with_input_bag(bag, ws, |bag, ws| {
            let n = bag.n_instances();
            if self.pooling == Pooling::XvMax {
                self.xv_max_shares(bag, ws, out);
            } else {
                self.instance_scores_into(bag, ws, out);
            }
            // a non-finite value makes its instance's squared norm non-finite: scan only then
            if ws.norms.iter().any(|s| !s.is_finite()) && bag.has_non_finite() {
                return Err(Error::InvalidData("the bag has a non-finite value".into()));
            }
            match self.pooling {
                Pooling::Mean | Pooling::Max | Pooling::XvMax => {}
                Pooling::SmilMean => out.iter_mut().for_each(|v| *v += 1.0 - 1.0 / n as f64),
                Pooling::NormalizedMean => {
                    let kself = self.bag_self_kernel(bag, ws);
                    for row in out.chunks_exact_mut(self.n_outputs()) {
                        normalize(row, &self.intercept, kself);
                    }
                }
            }
            if out.iter().any(|v| !v.is_finite()) {
                return Err(overflow("an instance of the bag"));
            }
            Ok(())
        })
    }

    /// Runs `f` on what the expansion reads of one bag: the bag standardised by the model's
    /// [`Scaler`] if it has one, then its statistic vector for [`BagFeatures::MinMax`] (both
    /// held in the workspace, taken out while `f` reads them). Fails on a bag of the wrong
    /// width or an empty bag.
    fn with_input_bag<T>(
        &self,
        bag: BagView<'_>,
        ws: &mut Workspace,
        f: impl FnOnce(BagView<'_>, &mut Workspace) -> Result<T>,
    ) -> Result<T> {
        if bag.n_features() != self.n_features {
            return Err(Error::Mismatch(format!(
                "the bag has {} features, the model was fitted on {}",
                bag.n_features(),
                self.n_features
            )));
        }
        if bag.n_instances() == 0 {
            return Err(Error::InvalidData("the bag is empty".into()));
        }
        if let Some(scaler) = &self.scaler {
            let mut scaled = std::mem::take(&mut ws.scaled);
            let result = self.with_statistics(scaler.bag_into(bag, &mut scaled), ws, f);
            ws.scaled = scaled;
            return result;
        }
        self.with_statistics(bag, ws, f)
    }

    /// Runs `f` on a checked, standardised bag, or on its statistic vector for
    /// [`BagFeatures::MinMax`].
    fn with_statistics<T>(
        &self,
        bag: BagView<'_>,
        ws: &mut Workspace,
        f: impl FnOnce(BagView<'_>, &mut Workspace) -> Result<T>,
    ) -> Result<T> {
        if self.bag_features == BagFeatures::MinMax {
            let width = 2 * bag.n_features();
            let mut stats = std::mem::take(&mut ws.stats);
            stats.resize(width, 0.0);
            let result = min_max_into(bag, &mut stats).and_then(|()| {
                let view = BagView::Dense {
                    data: &stats,
                    n_features: width,
                };
                f(view, ws)
            });
            ws.stats = stats;
            return result;
        }
        f(bag, ws)
    }

    /// [`Predictor::score_bag`] on a checked bag, after any standardisation.
    fn score_raw(&self, bag: BagView<'_>, ws: &mut Workspace, out: &mut [f64]) -> Result<()> {
        self.pooled(bag, ws, out);
        // a non-finite value makes its instance's squared norm non-finite: scan only then
        if ws.norms.iter().any(|s| !s.is_finite()) && bag.has_non_finite() {
            return Err(Error::InvalidData("the bag has a non-finite value".into()));
        }
        if self.pooling == Pooling::NormalizedMean {
            let kself = self.bag_self_kernel(bag, ws);
            normalize(out, &self.intercept, kself);
        }
        if out.iter().any(|v| !v.is_finite()) {
            return Err(overflow("the bag"));
        }
        Ok(())
    }

    /// The mean (also for [`Pooling::NormalizedMean`]) or max of the instance scores of a valid
    /// bag; leaves the instance norms in `ws.norms`.
    fn pooled(&self, bag: BagView<'_>, ws: &mut Workspace, out: &mut [f64]) {
        let n = bag.n_instances();
        if self.pooling != Pooling::XvMax {
            if let Some(g) = self.gemm_for(bag) {
                let mut f = std::mem::take(&mut ws.inst);
                f.resize(n * self.n_outputs(), 0.0);
                self.gemm_instance_scores(g, bag, ws, &mut f);
                self.pool(&f, n, out);
                ws.inst = f;
                return;
            }
        }
        // instance_scores_into + pool fused (the same operations in the same order)
        let nb = self.n_xv();
        self.kernel_values(bag, ws);
        if self.pooling == Pooling::XvMax {
            // F(X) = sum_k beta_k max_p k(z_k, x_p) + b
            ws.maxes.clear();
            ws.maxes.resize(nb, f64::NEG_INFINITY);
            for krow in ws.dots.chunks_exact(nb) {
                for (mx, &v) in ws.maxes.iter_mut().zip(krow) {
                    *mx = mx.max(v);
                }
            }
            for ((o, c), &b) in out.iter_mut().zip(self.coef.rows()).zip(&self.intercept) {
                *o = self.dot(c.as_slice().unwrap_or(&[]), &ws.maxes) + b;
            }
            return;
        }
        out.fill(self.pool_start());
        for krow in ws.dots.chunks_exact(nb) {
            for ((acc, c), &b) in out.iter_mut().zip(self.coef.rows()).zip(&self.intercept) {
                let f = self.dot(c.as_slice().unwrap_or(&[]), krow) + b;
                self.pool_step(acc, f);
            }
        }
        self.finish_pool(n, out);
    }

    /// Instance scores `f(x_p)` of the rows of `bag` into `f` (`n x n_outputs`, row-major), and
    /// the rows' squared norms into `ws.norms`.
    fn instance_scores_into(&self, bag: BagView<'_>, ws: &mut Workspace, f: &mut [f64]) {
        if let Some(g) = self.gemm_for(bag) {
            self.gemm_instance_scores(g, bag, ws, f);
            return;
        }
        let n = bag.n_instances();
        let nb = self.n_xv();
        let n_out = self.n_outputs();
        ws.dots.resize(n * nb, 0.0);
        ws.norms.resize(n, 0.0);
        self.bag_dots(bag, ws);
        self.kernel
            .finish_rows(&mut ws.dots, &ws.norms, 0, &self.znorms);
        for (krow, frow) in ws.dots.chunks_exact(nb).zip(f.chunks_exact_mut(n_out)) {
            for ((o, c), &b) in frow.iter_mut().zip(self.coef.rows()).zip(&self.intercept) {
                *o = self.dot(c.as_slice().unwrap_or(&[]), krow) + b;
            }
        }
    }

    /// The kernel values of the bag's instances against the basis into `ws.dots` (`n x n_xv`)
    /// and the instances' squared norms into `ws.norms`: by the matrix-product arithmetic for a
    /// dense bag and a large dense basis ([`Predictor::gemm_kernel_values`]), else by the
    /// one-bag kernel.
    fn kernel_values(&self, bag: BagView<'_>, ws: &mut Workspace) {
        if let Some(g) = self.gemm_for(bag) {
            self.gemm_kernel_values(g, bag, ws);
            return;
        }
        let n = bag.n_instances();
        ws.dots.resize(n * self.n_xv(), 0.0);
        ws.norms.resize(n, 0.0);
        self.bag_dots(bag, ws);
        self.kernel
            .finish_rows(&mut ws.dots, &ws.norms, 0, &self.znorms);
    }

    /// The matrix-product scoring of a dense bag against a large dense basis, if the model has
    /// one (a CSR bag is scored by the one-bag kernel, as the batch path scores CSR rows).
    fn gemm_for(&self, bag: BagView<'_>) -> Option<&GemmScoring> {
        match bag {
            BagView::Dense { .. } | BagView::Dense32 { .. } => self.gemm.as_ref(),
            BagView::Csr { .. } => None,
        }
    }

    /// Instance scores `f(x_p)` of a dense bag into `f` (`n x n_outputs`, row-major) with the
    /// bits of the batch path for a large dense basis ([`crate::kernel::instance_scores`]: the
    /// rows' squared norms by `ndarray`'s dot, the inner products and the coefficient sums by
    /// matrix products), leaving the squared norms in `ws.norms`.
    fn gemm_instance_scores(
        &self,
        g: &GemmScoring,
        bag: BagView<'_>,
        ws: &mut Workspace,
        f: &mut [f64],
    ) {
        let (n, nb, n_out) = (bag.n_instances(), self.n_xv(), self.n_outputs());
        self.gemm_kernel_values(g, bag, ws);
        let coef = self.coef.as_slice().unwrap_or(&[]);
        g.arith.narrow(&ws.dots, coef, f, n, nb, n_out);
        for row in f.chunks_exact_mut(n_out.max(1)) {
            row.iter_mut()
                .zip(&self.intercept)
                .for_each(|(v, &b)| *v += b);
        }
    }

    /// The kernel values of a dense bag against a large dense basis into `ws.dots` (`n x
    /// n_xv`) with the bits of the batch path's matrix product ([`GemmArith::wide`]), and the
    /// rows' squared norms (by `ndarray`'s dot) into `ws.norms`.
    fn gemm_kernel_values(&self, g: &GemmScoring, bag: BagView<'_>, ws: &mut Workspace) {
        let (n, d, nb) = (bag.n_instances(), bag.n_features(), self.n_xv());
        let mut wide = std::mem::take(&mut ws.wide);
        let x: &[f64] = match bag {
            BagView::Dense { data, .. } => data,
            BagView::Dense32 { data, .. } => {
                wide.clear();
                wide.extend(data.iter().map(|&v| f64::from(v)));
                &wide
            }
            BagView::Csr { .. } => &[], // `gemm_for` passes dense bags only
        };
        ws.norms.clear();
        ws.norms.extend(x.chunks_exact(d.max(1)).map(batch_sq_norm));
        ws.dots.resize(n * nb, 0.0);
        g.arith.wide(x, &g.basis_t, &mut ws.dots, n, d, nb);
        self.kernel
            .finish_rows(&mut ws.dots, &ws.norms, 0, &self.znorms);
        ws.wide = wide;
    }

    /// Pools the instance scores `f` (`n x n_outputs`) of one bag into `out`, instance by
    /// instance in order (the same sums on every path).
    fn pool(&self, f: &[f64], n: usize, out: &mut [f64]) {
        out.fill(self.pool_start());
        for frow in f.chunks_exact(out.len().max(1)) {
            for (acc, &v) in out.iter_mut().zip(frow) {
                self.pool_step(acc, v);
            }
        }
        self.finish_pool(n, out);
    }

    /// The pooled value before any instance.
    fn pool_start(&self) -> f64 {
        match self.pooling {
            Pooling::Max => f64::NEG_INFINITY,
            // XvMax never pools instance scores (see `pooled`); a sum if it did
            Pooling::Mean | Pooling::NormalizedMean | Pooling::SmilMean | Pooling::XvMax => 0.0,
        }
    }

    /// Adds one instance score to a pooled value.
    #[inline]
    fn pool_step(&self, acc: &mut f64, f: f64) {
        *acc = match self.pooling {
            Pooling::Max => acc.max(f),
            Pooling::Mean | Pooling::NormalizedMean | Pooling::SmilMean | Pooling::XvMax => {
                *acc + f
            }
        };
    }

    /// The last step of pooling `n` instance scores: the mean's division, sMIL's shift.
    fn finish_pool(&self, n: usize, out: &mut [f64]) {
        if !matches!(self.pooling, Pooling::Max | Pooling::XvMax) {
            out.iter_mut().for_each(|v| *v /= n as f64);
        }
        if self.pooling == Pooling::SmilMean {
            out.iter_mut().for_each(|v| *v += 1.0 - 1.0 / n as f64);
        }
    }

    /// Inner products of the bag's instances with the basis into `ws.dots` (`n x n_xv`) and the
    /// instances' squared norms into `ws.norms`.
    fn bag_dots(&self, bag: BagView<'_>, ws: &mut Workspace) {
        let nb = self.n_xv();
        for (p, (drow, s)) in ws
            .dots
            .chunks_exact_mut(nb)
            .zip(ws.norms.iter_mut())
            .enumerate()
        {
            *s = match (bag.instance(p), &self.layout) {
                (Instance::Dense(x), Layout::Dense(basis)) => {
                    self.simd
                        .dots(x, basis.v.as_slice().unwrap_or(&[]), x.len(), drow)
                }
                (Instance::Dense32(x), Layout::Dense(basis)) => {
                    self.simd
                        .dots(x, basis.v.as_slice().unwrap_or(&[]), x.len(), drow)
                }
                (Instance::Dense(x), Layout::Sparse(z, _)) => {
                    sparse_basis_dots(z, x, drow);
                    self.simd.dot(x, x)
                }
                (Instance::Dense32(x), Layout::Sparse(z, _)) => {
                    sparse_basis_dots(z, x, drow);
                    self.simd.dot(x, x)
                }
                (Instance::Sparse(idx, val), Layout::Dense(basis)) => {
                    for (o, zk) in drow.iter_mut().zip(basis.v.rows()) {
                        *o = idx.iter().zip(val).map(|(&j, &a)| a * zk[j]).sum();
                    }
                    val.iter().map(|v| v * v).sum()
                }
                (Instance::Sparse(idx, val), Layout::Sparse(_, index)) => {
                    drow.fill(0.0);
                    for (&j, &a) in idx.iter().zip(val) {
                        let (ks, vs) = index.entries(j);
                        ks.iter().zip(vs).for_each(|(&k, &v)| drow[k] += a * v);
                    }
                    val.iter().map(|v| v * v).sum()
                }
            };
        }
    }

    /// `k_set(X, X) = (1/n^2) sum_p sum_q k(x_p, x_q)`, with the instance norms in `ws.norms`;
    /// for the linear kernel `|sum_p x_p|^2 / n^2`, in one pass over the bag.
    fn bag_self_kernel(&self, bag: BagView<'_>, ws: &mut Workspace) -> f64 {
        let n = bag.n_instances();
        if self.kernel == Kernel::Linear {
            let mut sum = std::mem::take(&mut ws.sum);
            sum.clear();
            sum.resize(bag.n_features(), 0.0);
            for p in 0..n {
                match bag.instance(p) {
                    Instance::Dense(x) => sum.iter_mut().zip(x).for_each(|(s, &v)| *s += v),
                    Instance::Dense32(x) => {
                        sum.iter_mut().zip(x).for_each(|(s, &v)| *s += f64::from(v))
                    }
                    Instance::Sparse(idx, val) => {
                        idx.iter().zip(val).for_each(|(&j, &v)| sum[j] += v)
                    }
                }
            }
            let total = self.simd.dot(&sum, &sum);
            ws.sum = sum;
            return total / (n * n) as f64;
        }
        let mut total = 0.0;
        let mut dense = |dot: &dyn Fn(usize, usize) -> f64| {
            for p in 0..n {
                for q in 0..n {
                    total += self.kernel.from_dot(dot(p, q), ws.norms[p], ws.norms[q]);
                }
            }
        };
        match bag {
            BagView::Dense { data, n_features } => dense(&|p, q| {
                let row = |i: usize| &data[i * n_features..(i + 1) * n_features];
                self.simd.dot(row(p), row(q))
            }),
            BagView::Dense32 { data, n_features } => dense(&|p, q| {
                let row = |i: usize| &data[i * n_features..(i + 1) * n_features];
                self.simd.dot(row(p), row(q))
            }),
            BagView::Csr {
                indptr,
                indices,
                data,
                ..
            } => {
                // each instance's entries sorted by feature, duplicates summed, then merged
                let base = indptr[0];
                ws.row_entries.clear();
                ws.row_starts.clear();
                for p in 0..n {
                    let (a, b) = (indptr[p] - base, indptr[p + 1] - base);
                    let start = ws.row_entries.len();
                    ws.row_starts.push(start);
                    ws.row_entries.extend(
                        indices[a..b]
                            .iter()
                            .copied()
                            .zip(data[a..b].iter().copied()),
                    );
                    let row = &mut ws.row_entries[start..];
                    row.sort_by_key(|e| e.0);
                }
                ws.row_starts.push(ws.row_entries.len());
                for p in 0..n {
                    let rp = &ws.row_entries[ws.row_starts[p]..ws.row_starts[p + 1]];
                    for q in 0..n {
                        let rq = &ws.row_entries[ws.row_starts[q]..ws.row_starts[q + 1]];
                        let dot = sorted_sparse_dot(rp, rq);
                        total += self.kernel.from_dot(dot, ws.norms[p], ws.norms[q]);
                    }
                }
            }
        }
        total / (n * n) as f64
    }

    /// [`Pooling::XvMax`] bag scores of checked rows: bag by bag with the one-bag path
    /// ([`Predictor::pooled`]) for a small or CSR basis or CSR rows; for dense rows and a large
    /// dense basis, the kernel values of chunks of whole bags by `ndarray` matrix products
    /// (`matrixmultiply`'s `dgemm`, whose bits the one-bag path reproduces with
    /// [`GemmArith::wide`]), then the same maxima and sums as [`Predictor::pooled`]. Either way
    /// [`Predictor::score_bag`] gives these bits. MILES's fit embeds its training bags by
    /// [`crate::kernel::bag_max_kernel`] instead, whose product rounds its own way.
    fn xv_max_rows(&self, rows: Rows<'_>, bag_ptr: &[usize]) -> Result<Array2<f64>> {
        let norms = checked_bag_norms(rows, bag_ptr)?;
        let m = bag_ptr.len() - 1;
        let n_out = self.n_outputs().max(1);
        let mut out = Array2::zeros((m, n_out));
        if let (Some(g), Layout::Dense(basis), true) = (&self.gemm, &self.layout, rows.is_dense()) {
            self.xv_max_gemm_rows(g, basis, rows, &norms, bag_ptr, &mut out);
            return finite(out, None);
        }
        let one = |ws: &mut Workspace, (i, dst): (usize, &mut [f64])| {
            self.pooled(BagView::of(rows, bag_ptr[i], bag_ptr[i + 1]), ws, dst);
        };
        for_each_row(
            &mut out,
            rows.n_rows() * self.n_xv() >= SEQUENTIAL_WORK,
            one,
        );
        finite(out, None)
    }

    /// [`Predictor::xv_max_rows`] of dense rows against a large dense basis: in parallel over
    /// chunks of whole bags (about [`ROW_CHUNK`] rows), the inner products by one matrix product
    /// per block of at most [`ROW_CHUNK`] rows, then per bag the kernel values' maxima and their sums with the
    /// coefficients, as [`Predictor::pooled`] does for one bag.
    fn xv_max_gemm_rows(
        &self,
        g: &GemmScoring,
        basis: &Basis,
        rows: Rows<'_>,
        norms: &[f64],
        bag_ptr: &[usize],
        out: &mut Array2<f64>,
    ) {
        let nb = basis.len();
        let n_out = self.n_outputs().max(1);
        let Ok(basis_t) = ndarray::ArrayView2::from_shape((rows.n_cols(), nb), &g.basis_t[..])
        else {
            return; // unreachable: the basis has the rows' width (`check_width`)
        };
        let mut chunks = Vec::new();
        let mut start = 0;
        for i in 0..bag_ptr.len() - 1 {
            if bag_ptr[i + 1] - bag_ptr[start] >= ROW_CHUNK || i + 2 == bag_ptr.len() {
                chunks.push((start, i + 1));
                start = i + 1;
            }
        }
        let Some(mut rest) = out.as_slice_mut() else {
            return; // unreachable: `out` is a fresh standard-layout array
        };
        let mut parts = Vec::with_capacity(chunks.len());
        for &(b0, b1) in &chunks {
            let (head, tail) = rest.split_at_mut((b1 - b0) * n_out);
            parts.push((b0, b1, head));
            rest = tail;
        }
        parts.into_par_iter().for_each(|(b0, b1, dst)| {
            // the rows in blocks of at most ROW_CHUNK (a large bag spans several), each bag's
            // maxima updated row by row in order, as the one-bag path does
            let (lo, hi) = (bag_ptr[b0], bag_ptr[b1]);
            let mut dots = Array2::zeros((ROW_CHUNK.min(hi - lo), nb));
            let mut maxes = vec![f64::NEG_INFINITY; nb];
            let mut bag = b0;
            let emit = |bag: usize, maxes: &mut [f64], dst: &mut [f64]| {
                let orow = &mut dst[(bag - b0) * n_out..(bag - b0 + 1) * n_out];
                for ((o, c), &b) in orow.iter_mut().zip(self.coef.rows()).zip(&self.intercept) {
                    *o = self.dot(c.as_slice().unwrap_or(&[]), maxes) + b;
                }
                maxes.fill(f64::NEG_INFINITY);
            };
            for r0 in (lo..hi).step_by(ROW_CHUNK) {
                let r1 = (r0 + ROW_CHUNK).min(hi);
                let mut block = dots.slice_mut(ndarray::s![..r1 - r0, ..]);
                ndarray::linalg::general_mat_mul(
                    1.0,
                    &rows.dense_block(r0, r1),
                    &basis_t,
                    0.0,
                    &mut block,
                );
                let Some(k) = dots.as_slice_mut() else {
                    return; // unreachable: `dots` is a fresh standard-layout array
                };
                let k = &mut k[..(r1 - r0) * nb];
                self.kernel.finish_rows(k, &norms[r0..r1], 0, &self.znorms);
                for (r, krow) in (r0..r1).zip(k.chunks_exact(nb)) {
                    while r >= bag_ptr[bag + 1] {
                        emit(bag, &mut maxes, dst);
                        bag += 1;
                    }
                    for (mx, &v) in maxes.iter_mut().zip(krow.iter()) {
                        *mx = mx.max(v);
                    }
                }
            }
            while bag < b1 {
                emit(bag, &mut maxes, dst);
                bag += 1;
            }
        });
    }

    /// [`Pooling::XvMax`] instance shares of checked rows ([`Predictor::xv_max_shares`] per
    /// bag, in parallel over bags).
    fn xv_max_shares_rows(&self, rows: Rows<'_>, bag_ptr: &[usize]) -> Result<Array2<f64>> {
        checked_bag_norms(rows, bag_ptr)?;
        let n_out = self.n_outputs().max(1);
        let mut out = Array2::zeros((rows.n_rows(), n_out));
        if let Some(mut rest) = out.as_slice_mut() {
            let mut parts = Vec::with_capacity(bag_ptr.len() - 1);
            for w in bag_ptr.windows(2) {
                let (head, tail) = rest.split_at_mut((w[1] - w[0]) * n_out);
                parts.push((BagView::of(rows, w[0], w[1]), head));
                rest = tail;
            }
            parts
                .into_par_iter()
                .for_each_init(Workspace::default, |ws, (bag, dst)| {
                    self.xv_max_shares(bag, ws, dst)
                });
        }
        finite(out, Some(bag_ptr))
    }

    /// The instance shares of one bag under [`Pooling::XvMax`] into `f` (`n x n_outputs`,
    /// row-major), MILES's instance contributions (Chen, Bi & Wang 2006, section on instance
    /// classification): for each output, expansion vector `z_k` with a nonzero coefficient
    /// `beta_k` credits `beta_k k(z_k, x_p)` to the instance `x_p` attaining
    /// `max_p k(z_k, x_p)` (the first one on a tie); `U` is the set of instances credited so, and
    /// each gets `b / |U|` besides (every instance gets `b / n` when `U` is empty). The shares
    /// sum to the bag score; an instance outside `U` has share 0. The paper's rule calls an
    /// instance of `U` positive when `g(x_p) > theta = -b / |U|` (`g` the credited sum), that is
    /// when its share is `> 0`.
    fn xv_max_shares(&self, bag: BagView<'_>, ws: &mut Workspace, f: &mut [f64]) {
        let n = bag.n_instances();
        let nb = self.n_xv();
        let n_out = self.n_outputs().max(1);
        self.kernel_values(bag, ws);
        ws.maxes.clear();
        ws.maxes.resize(nb, f64::NEG_INFINITY);
        ws.argmax.clear();
        ws.argmax.resize(nb, 0);
        for (p, krow) in ws.dots.chunks_exact(nb).enumerate() {
            for ((mx, a), &v) in ws.maxes.iter_mut().zip(ws.argmax.iter_mut()).zip(krow) {
                if v > *mx {
                    *mx = v;
                    *a = p;
                }
            }
        }
        f.fill(0.0);
        for (o, (c, &b)) in self
            .coef
            .rows()
            .into_iter()
            .zip(&self.intercept)
            .enumerate()
        {
            ws.attains.clear();
            ws.attains.resize(n, false);
            for ((&w, &p), &v) in c.iter().zip(&ws.argmax).zip(&ws.maxes) {
                if w != 0.0 {
                    f[p * n_out + o] += w * v;
                    ws.attains[p] = true;
                }
            }
            let n_u = ws.attains.iter().filter(|&&a| a).count();
            for (p, &a) in ws.attains.iter().enumerate() {
                if n_u == 0 {
                    f[p * n_out + o] = b / n as f64;
                } else if a {
                    f[p * n_out + o] += b / n_u as f64;
                }
            }
        }
    }

    /// Bag scores (`n_bags x n_outputs`), in parallel over bags.
    pub fn decision_function(&self, bags: &Bags) -> Result<Array2<f64>> {
        self.decision_function_rows(Rows::from(bags.instances()), bags.bag_ptr())
    }

    /// Bag scores from borrowed instance rows and bag offsets, checked here (width, offsets,
    /// finite values) without copying rows in standard layout.
    ///
    /// A small dense basis (at most [`ROW_KERNEL_MAX_XV`] vectors) and a CSR basis are scored
    /// bag by bag with the one-bag kernel (one read of every instance; the same values as
    /// [`Predictor::score_bag`]); a larger dense basis by one matrix product per chunk of bags.
    pub fn decision_function_rows(&self, rows: Rows<'_>, bag_ptr: &[usize]) -> Result<Array2<f64>> {
        self.with_input_rows(rows, bag_ptr, |points, ptr| self.pooled_rows(points, ptr))
    }

    /// Runs `f` on the points the expansion reads of checked rows (see
    /// [`Predictor::with_checked_rows`]) and their bag offsets: the rows and `bag_ptr`, or for
    /// [`BagFeatures::MinMax`] one statistic vector per bag.
    fn with_input_rows<T>(
        &self,
        rows: Rows<'_>,
        bag_ptr: &[usize],
        f: impl FnOnce(Rows<'_>, &[usize]) -> Result<T>,
    ) -> Result<T> {
        self.with_checked_rows(rows, bag_ptr, |rows| match self.bag_features {
            BagFeatures::Instances => f(rows, bag_ptr),
            BagFeatures::MinMax => {
                let stats = min_max_rows(rows, bag_ptr)?;
                let one_each: Vec<usize> = (0..=stats.nrows()).collect();
                f(Rows::Dense(stats.view()), &one_each)
            }
        })
    }

    /// Checks the width and the offsets, and runs `f` on rows in standard layout (a
    /// non-standard dense view is copied once), standardised by the model's [`Scaler`] if it
    /// has one (into a copy).
    fn with_checked_rows<T>(
        &self,
        rows: Rows<'_>,
        bag_ptr: &[usize],
        f: impl FnOnce(Rows<'_>) -> Result<T>,
    ) -> Result<T> {
        self.check_width(rows.n_cols())?;
        validate_bag_ptr(bag_ptr, rows.n_rows())?;
        if let Some(scaler) = &self.scaler {
            let scaled = scaler.apply(rows)?;
            return f(Rows::from(&scaled));
        }
        match rows {
            Rows::Dense(x) if !x.is_standard_layout() => {
                let owned = x.as_standard_layout().into_owned();
                f(Rows::Dense(owned.view()))
            }
            Rows::Dense32(x) if !x.is_standard_layout() => {
                let owned = x.as_standard_layout().into_owned();
                f(Rows::Dense32(owned.view()))
            }
            _ => f(rows),
        }
    }

    /// [`Predictor::decision_function_rows`] on checked rows.
    fn pooled_rows(&self, rows: Rows<'_>, bag_ptr: &[usize]) -> Result<Array2<f64>> {
        if self.pooling == Pooling::XvMax {
            return self.xv_max_rows(rows, bag_ptr);
        }
        let (f, norms) = self.scores_and_norms(rows, bag_ptr)?;
        let out = self.pool_bags(&f, &norms, rows, bag_ptr);
        finite(out, None)
    }

    /// The instance scores of every bag as its pooling counts them (`n_instances x
    /// n_outputs`), so that their mean (their max, for [`Pooling::Max`]; their sum, for
    /// [`Pooling::XvMax`]) over a bag is the bag score of
    /// [`Predictor::decision_function_rows`] up to rounding: `f(x)` for mean and max
    /// pooling; `(f(x_p) - b) / sqrt(k_set(X, X)) + b` for [`Pooling::NormalizedMean`] (the
    /// bias-free part divided by the bag's feature-space norm); `f(x_p) + 1 - 1/|X|` for
    /// [`Pooling::SmilMean`] (the score against the bag's threshold); for [`Pooling::XvMax`]
    /// MILES's instance contributions (Chen, Bi & Wang 2006, section on instance
    /// classification: each instance credited with the terms `beta_k k(z_k, x)` of the
    /// vectors whose max it attains, plus `b / |U|`, `U` the instances so credited; 0 for the
    /// others). Checked like
    /// [`Predictor::decision_function_rows`].
    /// A [`BagFeatures::MinMax`] model has no instance scores (an error).
    pub fn bag_instance_scores(&self, rows: Rows<'_>, bag_ptr: &[usize]) -> Result<Array2<f64>> {
        if self.bag_features == BagFeatures::MinMax {
            return Err(no_instance_scores());
        }
        self.with_checked_rows(rows, bag_ptr, |rows| self.instance_rows(rows, bag_ptr))
    }

    /// [`Predictor::bag_instance_scores`] on checked rows.
    fn instance_rows(&self, rows: Rows<'_>, bag_ptr: &[usize]) -> Result<Array2<f64>> {
        if self.pooling == Pooling::XvMax {
            return self.xv_max_shares_rows(rows, bag_ptr);
        }
        let (f, norms) = self.scores_and_norms(rows, bag_ptr)?;
        let n_out = self.n_outputs().max(1);
        let mut out = Array2::from_shape_vec((rows.n_rows(), n_out), f)
            .map_err(|e| Error::Mismatch(e.to_string()))?;
        let mut ws = Workspace::default();
        for i in 0..bag_ptr.len() - 1 {
            let (lo, hi) = (bag_ptr[i], bag_ptr[i + 1]);
            let mut block = out.slice_mut(ndarray::s![lo..hi, ..]);
            match self.pooling {
                Pooling::Mean | Pooling::Max | Pooling::XvMax => {}
                Pooling::SmilMean => block += 1.0 - 1.0 / (hi - lo) as f64,
                Pooling::NormalizedMean => {
                    ws.norms.clear();
                    ws.norms.extend_from_slice(&norms[lo..hi]);
                    let kself = self.bag_self_kernel(BagView::of(rows, lo, hi), &mut ws);
                    for mut row in block.rows_mut() {
                        if let Some(r) = row.as_slice_mut() {
                            normalize(r, &self.intercept, kself);
                        }
                    }
                }
            }
        }
        finite(out, Some(bag_ptr))
    }

    /// Instance scores `f(x)` (`n x n_outputs`, row-major) and squared norms of the rows: one
    /// matrix product per chunk for a large dense basis, else the one-bag kernel per row chunk.
    fn scores_and_norms(&self, rows: Rows<'_>, bag_ptr: &[usize]) -> Result<(Vec<f64>, Vec<f64>)> {
        Ok(match &self.layout {
            Layout::Dense(basis) if basis.len() > ROW_KERNEL_MAX_XV => {
                let norms = checked_norms(rows)?;
                let f = instance_scores(
                    self.kernel,
                    rows,
                    &norms,
                    basis,
                    self.coef.view(),
                    &self.intercept,
                );
                (f.into_raw_vec_and_offset().0, norms)
            }
            _ => self.row_kernel_scores(rows, bag_ptr)?,
        })
    }

    fn check_width(&self, d: usize) -> Result<()> {
        if d != self.n_features {
            return Err(Error::Mismatch(format!(
                "the bags have {d} features, the model was fitted on {}",
                self.n_features
            )));
        }
        Ok(())
    }

    /// Instance scores (`n x n_outputs`, row-major) and squared norms of the rows with the
    /// one-bag kernel, in fixed chunks of rows in parallel (balanced whatever the bag sizes); a
    /// non-finite value is an error naming the first bag that holds one.
    fn row_kernel_scores(&self, rows: Rows<'_>, bag_ptr: &[usize]) -> Result<(Vec<f64>, Vec<f64>)> {
        let n = rows.n_rows();
        let n_out = self.n_outputs().max(1);
        let mut f = vec![0.0; n * n_out];
        let mut norms = vec![0.0; n];
        let chunk = |ws: &mut Workspace, (c, (fc, nc)): (usize, (&mut [f64], &mut [f64]))| {
            let lo = c * ROW_CHUNK;
            let hi = lo + nc.len();
            self.instance_scores_into(BagView::of(rows, lo, hi), ws, fc);
            nc.copy_from_slice(&ws.norms[..hi - lo]);
        };
        if n * self.n_xv() < SEQUENTIAL_WORK {
            let mut ws = Workspace::default();
            f.chunks_mut(ROW_CHUNK * n_out)
                .zip(norms.chunks_mut(ROW_CHUNK))
                .enumerate()
                .for_each(|item| chunk(&mut ws, item));
        } else {
            f.par_chunks_mut(ROW_CHUNK * n_out)
                .zip(norms.par_chunks_mut(ROW_CHUNK))
                .enumerate()
                .for_each_init(Workspace::default, chunk);
        }
        // a non-finite value makes its row's squared norm non-finite: scan only then
        if let Some(p) = norms.iter().position(|s| !s.is_finite()) {
            let first_bad = (p..n)
                .find(|&r| !norms[r].is_finite() && BagView::of(rows, r, r + 1).has_non_finite());
            if let Some(r) = first_bad {
                let bag = bag_ptr.partition_point(|&q| q <= r) - 1;
                return Err(Error::InvalidData(format!(
                    "bag {bag} has a non-finite value"
                )));
            }
        }
        Ok((f, norms))
    }

    /// Bag scores (`n_bags x n_outputs`) from the instance scores `f` and norms of `rows`:
    /// [`Predictor::pool`] per bag, then the normalisation of [`Pooling::NormalizedMean`].
    fn pool_bags(
        &self,
        f: &[f64],
        norms: &[f64],
        rows: Rows<'_>,
        bag_ptr: &[usize],
    ) -> Array2<f64> {
        let m = bag_ptr.len() - 1;
        let n_out = self.n_outputs().max(1);
        let mut out = Array2::zeros((m, n_out));
        let pool = |ws: &mut Workspace, (i, dst): (usize, &mut [f64])| {
            let (lo, hi) = (bag_ptr[i], bag_ptr[i + 1]);
            self.pool(&f[lo * n_out..hi * n_out], hi - lo, dst);
            if self.pooling == Pooling::NormalizedMean {
                ws.norms.clear();
                ws.norms.extend_from_slice(&norms[lo..hi]);
                let kself = self.bag_self_kernel(BagView::of(rows, lo, hi), ws);
                normalize(dst, &self.intercept, kself);
            }
        };
        let parallel = self.pooling == Pooling::NormalizedMean && rows.n_rows() >= SEQUENTIAL_WORK;
        for_each_row(&mut out, parallel, pool);
        out
    }

    /// Instance scores `f(x)` (`n_instances x n_outputs`), after the model's [`Scaler`] if it
    /// has one. A [`BagFeatures::MinMax`] model has none (an error). For [`Pooling::XvMax`]
    /// this is the score of each instance as a bag of its own,
    /// `sum_k beta_k k(z_k, x) + b`; the shares of instances within their bags are
    /// [`Predictor::bag_instance_scores`].
    pub fn instance_decision_function(&self, x: &Instances) -> Result<Array2<f64>> {
        if self.bag_features == BagFeatures::MinMax {
            return Err(no_instance_scores());
        }
        self.check_width(x.n_features())?;
        if let Some(scaler) = &self.scaler {
            let scaled = scaler.apply(Rows::from(x))?;
            return self.raw_instance_scores(&scaled);
        }
        self.raw_instance_scores(x)
    }

    /// [`Predictor::instance_decision_function`] after any standardisation.
    fn raw_instance_scores(&self, x: &Instances) -> Result<Array2<f64>> {
        let rows = Rows::from(x); // dense rows are always in standard layout
        let norms = checked_norms(rows)?;
        Ok(match &self.layout {
            Layout::Dense(basis) => instance_scores(
                self.kernel,
                rows,
                &norms,
                basis,
                self.coef.view(),
                &self.intercept,
            ),
            Layout::Sparse(..) => {
                let n_out = self.n_outputs();
                let mut out = Array2::zeros((x.n_rows(), n_out));
                if let Some(buf) = out.as_slice_mut() {
                    buf.par_chunks_mut(n_out.max(1)).enumerate().for_each_init(
                        Workspace::default,
                        |ws, (i, dst)| {
                            self.pooled(BagView::of(rows, i, i + 1), ws, dst);
                        },
                    );
                }
                out
            }
        })
    }

    /// `sum_i a_i b_i` ([`Simd::dot`]).
    #[inline]
    fn dot(&self, a: &[f64], b: &[f64]) -> f64 {
        self.simd.dot(a, b)
    }
}

/// Runs `f` on each row of `out` with its index and a workspace: in order on this thread, or
/// in parallel (one workspace per worker) when `parallel`. Each row is computed alone, so the
/// values do not depend on the choice.
fn for_each_row<F>(out: &mut Array2<f64>, parallel: bool, f: F)
where
    F: Fn(&mut Workspace, (usize, &mut [f64])) + Send + Sync,
{
    let n_out = out.ncols();
    let Some(buf) = out.as_slice_mut() else {
        return;
    };
    if parallel {
        buf.par_chunks_mut(n_out)
            .enumerate()
            .for_each_init(Workspace::default, f);
    } else {
        let mut ws = Workspace::default();
        buf.chunks_mut(n_out)
            .enumerate()
            .for_each(|item| f(&mut ws, item));
    }
}

/// Checks that an output buffer holds `want` values (`None`: more than memory holds); `why`
/// says where `want` comes from, for the error.
fn output_buffer(out: &[f64], want: Option<usize>, why: impl FnOnce() -> String) -> Result<()> {
    if want == Some(out.len()) {
        return Ok(());
    }
    Err(Error::Mismatch(format!(
        "the output buffer has {} values, {}",
        out.len(),
        why()
    )))
}

/// The error for a score that overflowed (finite inputs, non-finite result).
fn overflow(what: &str) -> Error {
    Error::InvalidData(format!(
        "the score of {what} is not finite: the model's values or the bag's overflow f64"
    ))
}

/// `scores` (a row per bag, or a row per instance when `bag_ptr` is given), or the
/// [`overflow`] error that names the bag of the first row holding a non-finite value.
fn finite(scores: Array2<f64>, bag_ptr: Option<&[usize]>) -> Result<Array2<f64>> {
    let first = scores
        .rows()
        .into_iter()
        .position(|r| r.iter().any(|v| !v.is_finite()));
    match (first, bag_ptr) {
        (None, _) => Ok(scores),
        (Some(i), None) => Err(overflow(&format!("bag {i}"))),
        (Some(r), Some(ptr)) => Err(overflow(&format!(
            "an instance of bag {}",
            ptr.partition_point(|&q| q <= r) - 1
        ))),
    }
}

/// Divides the bias-free part of pooled scores by the bag's feature-space norm.
fn normalize(scores: &mut [f64], intercept: &[f64], kself: f64) {
    let scale = if kself > 0.0 { 1.0 / kself.sqrt() } else { 0.0 };
    for (v, &b) in scores.iter_mut().zip(intercept) {
        *v = (*v - b) * scale + b;
    }
}

/// `out[k] = z_k . x` for the rows of a CSR basis `z` and a dense instance `x`.
fn sparse_basis_dots<T: crate::linalg::Real>(z: &Csr, x: &[T], out: &mut [f64]) {
    for (k, o) in out.iter_mut().enumerate() {
        let (js, vs) = z.row(k);
        *o = js.iter().zip(vs).map(|(&j, &v)| v * x[j].to_f64()).sum();
    }
}

/// Squared norms of the rows, in parallel; a non-finite value is an error naming its row.
fn checked_norms(rows: Rows<'_>) -> Result<Vec<f64>> {
    let norms = rows.sq_norms();
    if let Some(i) = norms.iter().position(|s| !s.is_finite()) {
        if BagView::of(rows, i, i + 1).has_non_finite() {
            return Err(Error::InvalidData(format!(
                "instance {i} has a non-finite value"
            )));
        }
    }
    Ok(norms)
}

/// [`checked_norms`] with the error naming the first bag that holds a non-finite value.
fn checked_bag_norms(rows: Rows<'_>, bag_ptr: &[usize]) -> Result<Vec<f64>> {
    if let Ok(norms) = checked_norms(rows) {
        return Ok(norms);
    }
    let r = (0..rows.n_rows())
        .find(|&r| BagView::of(rows, r, r + 1).has_non_finite())
        .unwrap_or(0);
    let bag = bag_ptr.partition_point(|&q| q <= r).saturating_sub(1);
    Err(Error::InvalidData(format!(
        "bag {bag} has a non-finite value"
    )))
}

/// The inner product of two sparse vectors given as `(feature, value)` entries sorted by feature
/// (repeated features allowed: every pair of equal features is multiplied).
fn sorted_sparse_dot(a: &[(usize, f64)], b: &[(usize, f64)]) -> f64 {
    let (mut i, mut j, mut s) = (0, 0, 0.0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                let f = a[i].0;
                let (i0, j0) = (i, j);
                while i < a.len() && a[i].0 == f {
                    i += 1;
                }
                while j < b.len() && b[j].0 == f {
                    j += 1;
                }
                let sa: f64 = a[i0..i].iter().map(|e| e.1).sum();
                let sb: f64 = b[j0..j].iter().map(|e| e.1).sum();
                s += sa * sb;
            }
        }
    }
    s
}

// A predictor is shared between threads.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Predictor>();
    send_sync::<Model>();
};
