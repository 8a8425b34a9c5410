//! milsvm: multiple-instance support vector machines.
//!
//! A bag of instances carries one label; the classifiers here learn from such bags. Every
//! kernel method shares one model form (`f(x) = sum_k beta_k k(z_k, x) + b` with a pooled bag
//! score; [`model`]), one kernel implementation ([`kernel`]) and the solvers ([`solver`],
//! [`smo`]).
//!
//! * [`bags`]: dense or CSR instances plus bag offsets, validated once.
//! * [`data`]: the MILL and `mil`-package CSV readers (bags, labels and bag names from a file
//!   or any `BufRead`; the Python readers' rules and messages).
//! * [`model`]: the fitted model every estimator produces (basis dense or CSR, coefficients,
//!   biases, bag pooling), its versioned JSON file, and the compiled [`model::Predictor`] for
//!   serving (allocation-free one-bag scoring, parallel batches).
//! * [`sparse_mi`]: SparseMI and RSVM (Fu et al. 2013), binary and multi-class, direct or
//!   basis-vector mode.
//! * [`set_kernel`]: the MI-Kernel and reduced-set baselines.
//! * [`annealing`]: AL-SVM, AW-SVM, ALP-SVM (Gehler & Chapelle 2007) and the mi-SVM / MI-SVM
//!   heuristics (Andrews et al. 2002): instance-level classifiers with max pooling.
//! * [`set_kernel_svm`]: NSK (Gaertner et al. 2002) and sMIL (Bunescu & Mooney 2007), hinge-loss
//!   SVMs on set kernels solved by the SMO.
//! * [`convex_combination`]: SVM-CC (Yang & Deng), positive bags as convex combinations of their
//!   instances, alternating an SMO QP with an exact LP step.
//! * [`semi_supervised`]: stMIL (Bunescu & Mooney 2007) and MissSVM (Zhou & Xu 2007), MIL as
//!   transductive / semi-supervised SVMs solved by the CCCP, one warm-started SMO QP per step.
//! * [`one_class`]: the one-class MI-SVM (Vijayanarasimhan), a one-class SVM with per-bag max
//!   constraints.
//! * [`baselines`]: SIL (Ray & Craven 2005) and STK (Gaertner et al. 2002's statistic kernel),
//!   one plain SVM over the instances (bag score: max) or over per-bag min/max statistics.
//! * [`miles`]: MILES (Chen, Bi & Wang 2006): bags embedded by their similarity to concepts
//!   (training instances), a 1-norm SVM (an LP, by the revised simplex method) selecting the
//!   concepts; the bag score is a linear function of the per-concept maxima.
//! * [`two_stage`]: sbMIL (Bunescu & Mooney 2007) and sAwMIL (Savcisens & Eliassi-Rad 2025):
//!   sMIL ranks the instances of the positive bags, a share `eta` of them is labelled
//!   positive, and an instance SVM (bag score: max) is trained on the relabelled instances.
//! * [`multiclass`]: one-vs-rest from binary fits.
//! * [`basis`]: reduced bases (random instances, k-means centroids).
//! * [`smo`]: a LIBSVM-style dual SMO solver (second-order working sets, shrinking, a kernel-row
//!   cache kept across warm-started solves) for hinge, squared-hinge and one-class duals.
//! * [`params`]: each family's hyperparameters declared once (`hyperparams!`: default, range,
//!   doc per field; a builder and the checked type a fit runs on, [`ParamGuard`]), and the
//!   parameter types the families share ([`Gamma`], [`KernelKind`], [`ClassWeight`]).
//! * [`fit`]: the one fit path: [`Fit`] on checked parameters ([`FitPath`]: a grid over `C` as
//!   one warm-started path), the shared prologue (labels,
//!   class weights, threads, observer, cancellation), the one [`StopReason`].
//! * [`progress`]: progress reports ([`Observer`]) and cancellation ([`Cancel`]).
//! * [`threads`]: the thread pools fits and predictions run on, kept and lent out again.
//!
//! `ARCHITECTURE.md` in the repository describes the layout and what an added estimator
//! touches.
//!
//! ```
//! use milsvm::{Bags, SparseMiParams};
//! use ndarray::array;
//!
//! // four bags; bags 1 and 3 hold an instance near (3, 3)
//! let bags = Bags::from_dense_bags(&[
//!     array![[-1.0, -1.2], [-0.8, -1.0]],
//!     array![[3.0, 3.1], [-1.0, -0.9]],
//!     array![[-1.1, -0.7]],
//!     array![[2.9, 3.0], [-0.9, -1.1], [-1.2, -1.0]],
//! ])?;
//! let labels = [0, 1, 0, 1];
//! let fit = SparseMiParams::new().n_xv(2).c(10.0).fit(&bags, &labels)?;
//! let scores = fit.model.decision_function(&bags)?;
//! assert!(scores[[1, 0]] > 0.0 && scores[[0, 0]] < 0.0);
//! # Ok::<(), milsvm::Error>(())
//! ```
pub mod annealing;
pub mod bags;
pub mod baselines;
pub mod basis;
pub mod choice;
pub mod class_weight;
pub mod convex_combination;
pub mod data;
pub mod error;
pub mod fit;
pub mod kernel;
pub mod linalg;
pub mod miles;
pub mod model;
pub mod multiclass;
pub mod one_class;
pub mod params;
pub mod progress;
mod record;
pub mod semi_supervised;
pub mod set_kernel;
pub mod set_kernel_svm;
mod simd;
pub mod smo;
pub mod solver;
pub mod sparse_mi;
pub mod threads;
pub mod tree_sum;
pub mod two_stage;

#[cfg(feature = "python")]
mod python;

pub use annealing::{
    AnnealingFit, AnnealingMethod, AnnealingParams, AnnealingValidParams, BasisSize,
};
pub use bags::{Bags, Csr, Instances};
pub use baselines::{PlainSvmFit, SilParams, SilValidParams, StkParams, StkValidParams};
pub use class_weight::ClassWeight;
pub use convex_combination::{CcBounds, LpRule, SvmCcFit, SvmCcParams, SvmCcValidParams};
pub use error::{Error, Result};
pub use fit::{Fit, FitPath, ParamGuard};
pub use kernel::Kernel;
pub use miles::{MilesFit, MilesParams, MilesValidParams};
pub use model::{BagView, Model, Pooling, Predictor, Workspace};
pub use one_class::{OneClassFit, OneClassParams, OneClassValidParams};
pub use params::{Gamma, Hyperparams, KernelKind, SvmRoute};
pub use progress::{Cancel, Observer, Progress, StopReason};
pub use semi_supervised::{CccpFit, CccpMethod, CccpParams, CccpValidParams};
pub use set_kernel::{
    MiKernelFit, MiKernelParams, MiKernelValidParams, ReducedSetFit, ReducedSetParams,
    ReducedSetValidParams,
};
pub use set_kernel_svm::{
    NskFit, NskParams, NskValidParams, SetNorm, SmilBagScore, SmilParams, SmilValidParams,
};
pub use solver::InnerSolver;
pub use sparse_mi::{SparseMiFit, SparseMiParams, SparseMiValidParams};
pub use two_stage::{FirstStageProblem, Relabel, TwoStageFit, TwoStageParams, TwoStageValidParams};
