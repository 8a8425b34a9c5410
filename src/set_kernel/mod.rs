//! MI-Kernel and RS, the two non-sparse-learning baselines of Fu, Lu, Ting and Zhang
//! (ECML PKDD 2011, sections 2-3; IEEE TNNLS 2013, Tables I-II; ALGORITHMS.md section 2).
//!
//! **MI-Kernel** is the SVM on the normalised set kernel (Gaertner et al. 2002)
//!
//! `k_set(X_i, X_j) = (1 / (n_i n_j)) sum_p sum_q k(x_ip, x_jq)`
//!
//! with the squared hinge. Lemma 1 of Fu et al. (2011) shows that it is the label-mean SVM
//! (eq. 5) with every training instance in the basis: writing the weight vector as
//! `w = sum_i alpha_i (1/n_i) sum_p phi(x_ip)` (eq. 10), `||w||^2 = alpha^T K_set alpha` and the
//! label-mean bag score is `F_i = (K_set alpha)_i + b` (eq. 12), so the problem over `alpha` is
//!
//! `min_{alpha,b} 1/2 alpha^T K_set alpha + C sum_i max(0, 1 - y_i ((K_set alpha)_i + b))^2`,
//!
//! one [`SquaredHinge`] problem with regulariser `K_set + ridge I` and design rows `K_set`. Its
//! stationarity condition `K_set (alpha + C l') = 0` fixes `w` (not `alpha`, when `K_set` is
//! singular); the fitted coefficients are the dual weights `alpha_i = -C l'(y_i, F_i)
//! = 2 C y_i max(0, 1 - y_i F_i)` (the Lagrange multipliers of eq. 8 times `y_i`), which give the
//! same `w` and are exactly zero for bags outside the margin. The model's expansion vectors are
//! the instances of the bags with a nonzero weight (eq. 13: the paper's XV count of MI-Kernel).
//!
//! **RS** (reduced set; Fu et al. 2011 eq. 14-15, Schoelkopf and Smola, *Learning with Kernels*,
//! section 18.4) fits MI-Kernel, writes `w = sum_t a_t phi(x_t)` with `a_t = alpha_i / n_i` for
//! instance `t` of bag `i`, and approximates it greedily by `sum_k gamma_k phi(z_k)` with the
//! Gaussian kernel: each new `z` maximises the squared projection of the current residual,
//! found by the fixed-point iteration `z <- sum_t c_t k(x_t, z) x_t / sum_t c_t k(x_t, z)` over
//! the residual expansion from several random training instances; after each new `z` all
//! coefficients are re-projected, `K_zz gamma = K_zx a`; finally the bias is refitted with the
//! coefficients fixed. The result has the model form of SparseMI ([`Model`]).
//!
//! Nothing here holds the `N x N` instance kernel: the set kernel is accumulated over blocks of
//! instances used as a basis of [`kernel_bag_means`], and every loop over blocks is sequential
//! with a fixed block size, so results are bitwise identical for any number of threads.
//!
//! The files: `gram` computes the set kernel and its Gram matrix, `mi_kernel` fits MI-Kernel,
//! `reduced_set` fits RS on top of it.
//!
//! [`SquaredHinge`]: crate::solver::SquaredHinge
//! [`Model`]: crate::model::Model
//! [`kernel_bag_means`]: crate::kernel::kernel_bag_means

mod gram;
mod mi_kernel;
mod reduced_set;

pub use gram::{set_kernel, set_kernel_gram, set_kernel_gram_cancellable};
pub use mi_kernel::{
    MiKernelFit, MiKernelParams, MiKernelValidParams, SetKernelModel, SUPPORT_THRESHOLD,
};
pub use reduced_set::{
    optimal_intercept, reduced_set, weighted_optimal_intercept, ReducedSetExpansion, ReducedSetFit,
    ReducedSetOptions, ReducedSetParams, ReducedSetValidParams,
};
