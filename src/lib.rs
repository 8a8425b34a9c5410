//! milsvm: multiple-instance support vector machines.
pub mod bags;
pub mod error;
pub mod kernel;
pub mod model;
pub mod params;
pub mod set_kernel;
pub mod solver;
pub mod sparse_mi;

#[cfg(feature = "python")]
mod python;

pub use bags::{Bags, Csr, Instances};
pub use error::{Error, Result};
pub use kernel::Kernel;
pub use model::Model;
pub use set_kernel::{MiKernelFit, MiKernelParams, ReducedSetFit, ReducedSetParams};
pub use solver::InnerSolver;
pub use sparse_mi::{Gamma, KernelKind, SparseMiFit, SparseMiParams};
