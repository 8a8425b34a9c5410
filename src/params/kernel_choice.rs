//! The kernel hyperparameters every kernel method shares: the family ([`KernelKind`]) and the
//! width rule ([`Gamma`]), resolved against the training instances at fit time.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::range::Range;
use super::value::{ParamType, Rejected, Value};
use crate::bags::Instances;
use crate::choice::choices;
use crate::error::{Error, Result};

choices! {
    /// Which kernel family to use (the width comes from [`Gamma`]).
    pub enum KernelKind {
        /// Gaussian kernel `exp(-gamma |x - z|^2)` (the papers' choice).
        Rbf = "rbf",
        /// Linear kernel `x . z`.
        Linear = "linear",
    }
}

impl KernelKind {
    /// The kernel of this family with width `gamma` (ignored by the linear kernel).
    pub fn with_gamma(self, gamma: f64) -> crate::kernel::Kernel {
        match self {
            KernelKind::Rbf => crate::kernel::Kernel::Rbf { gamma },
            KernelKind::Linear => crate::kernel::Kernel::Linear,
        }
    }

    /// The kernel for these training instances: `gamma` resolved by [`Gamma::resolve`]; returns
    /// the kernel and the width used.
    pub fn resolve(self, gamma: Gamma, x: &Instances) -> (crate::kernel::Kernel, f64) {
        let g = gamma.resolve(x);
        (self.with_gamma(g), g)
    }
}

choices! {
    /// How an SVM step is solved: over the kernel expansion, or for the linear kernel in the
    /// input space with `w` in `R^d` explicit (each pass `O(nnz)` of the instances). Per family:
    /// the annealing family's squared hinge by Newton-CG ([`crate::solver::linear`]); sMIL's and
    /// SVM-CC's hinge by dual coordinate descent with multipliers for the bias
    /// ([`crate::solver::linear_hinge`]).
    pub enum SvmRoute {
        /// `linear` for the linear kernel (without a reduced basis, in the annealing family),
        /// else `kernel`.
        Auto = "auto",
        /// Over the kernel expansion: the dual SMO (over every instance or unit), or exact
        /// Newton over a reduced basis.
        Kernel = "kernel",
        /// `w` in `R^d` directly (the linear kernel only).
        Linear = "linear",
    }
}

impl SvmRoute {
    /// The route for `kernel` when the family has no other reason to choose (`Auto`: linear
    /// for the linear kernel).
    pub fn for_kernel(self, kernel: KernelKind) -> SvmRoute {
        match self {
            SvmRoute::Auto if kernel == KernelKind::Linear => SvmRoute::Linear,
            SvmRoute::Auto => SvmRoute::Kernel,
            route => route,
        }
    }
}

/// `solver = "linear"` needs the linear kernel (it fits `w` in the input space).
pub(crate) fn check_route(route: SvmRoute, kernel: KernelKind) -> Result<()> {
    if route == SvmRoute::Linear && kernel != KernelKind::Linear {
        return Err(Error::InvalidParameter(
            "solver='linear' needs kernel='linear' (it fits w in the input space)".to_string(),
        ));
    }
    Ok(())
}

/// Kernel width: `Scale` is `1 / (n_features * variance of the training instances)`, as in
/// scikit-learn; `Median` is `1 / (2 sigma^2)` with `sigma` the median pairwise distance between
/// training instances (Gehler & Chapelle 2007, section 7: `sigma_emp`); `Value` is used as given.
/// As a [`Value`]: `"scale"`, `"median"` or a number.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Gamma {
    /// `1 / (n_features * Var[X])` (1 when the variance is 0).
    #[default]
    Scale,
    /// `1 / (2 sigma^2)`, `sigma` the median distance between pairs of distinct training
    /// instances (over at most [`MEDIAN_SAMPLE`] instances, evenly spaced; 1 when it is 0).
    Median,
    /// A fixed `gamma > 0`.
    Value(f64),
}

impl Gamma {
    /// The numeric width for these training instances.
    pub fn resolve(&self, x: &Instances) -> f64 {
        match *self {
            Gamma::Value(g) => g,
            Gamma::Scale => {
                let (_, var) = x.mean_var();
                if var > 0.0 {
                    1.0 / (x.n_features() as f64 * var)
                } else {
                    1.0
                }
            }
            Gamma::Median => {
                let sigma = median_pairwise_distance(x);
                if sigma > 0.0 {
                    1.0 / (2.0 * sigma * sigma)
                } else {
                    1.0
                }
            }
        }
    }
}

const GAMMA_NEED: &str = "must be 'scale', 'median' or a finite number > 0";

impl ParamType for Gamma {
    fn from_value(value: &Value) -> std::result::Result<Self, Rejected> {
        match value {
            Value::Str(s) if s == "scale" => Ok(Gamma::Scale),
            Value::Str(s) if s == "median" => Ok(Gamma::Median),
            Value::Str(_) => Err(Rejected::Value(GAMMA_NEED.into())),
            Value::Float(g) => Ok(Gamma::Value(*g)),
            Value::Int(g) => Ok(Gamma::Value(*g as f64)),
            _ => Err(Rejected::Type(GAMMA_NEED.into())),
        }
    }
    fn to_value(&self) -> Value {
        match *self {
            Gamma::Scale => Value::Str("scale".into()),
            Gamma::Median => Value::Str("median".into()),
            Gamma::Value(g) => Value::Float(g),
        }
    }
    /// A fixed width must lie in `range` (declared `Positive`); the rules always pass.
    fn check_range(&self, name: &str, range: &Range, _optional: bool) -> Result<()> {
        match *self {
            Gamma::Value(g) if !range.contains(g) => Err(Error::InvalidParameter(format!(
                "{name} {GAMMA_NEED}, got {g}"
            ))),
            _ => Ok(()),
        }
    }
}

/// Written as in Python: `"scale"`, `"median"` or the number.
impl Serialize for Gamma {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match *self {
            Gamma::Scale => s.serialize_str("scale"),
            Gamma::Median => s.serialize_str("median"),
            Gamma::Value(g) => s.serialize_f64(g),
        }
    }
}

impl<'de> Deserialize<'de> for Gamma {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) if s == "scale" => Ok(Gamma::Scale),
            serde_json::Value::String(s) if s == "median" => Ok(Gamma::Median),
            serde_json::Value::Number(n) => n
                .as_f64()
                .map(Gamma::Value)
                .ok_or_else(|| serde::de::Error::custom("gamma is not a finite number")),
            other => Err(serde::de::Error::custom(format!(
                "gamma must be \"scale\", \"median\" or a number, got {other}"
            ))),
        }
    }
}

/// Largest number of instances [`Gamma::Median`] looks at (evenly spaced rows beyond it).
pub const MEDIAN_SAMPLE: usize = 2000;

/// The median Euclidean distance over pairs of distinct rows (`i < j`) of at most
/// [`MEDIAN_SAMPLE`] evenly spaced rows of `x`; 0 for fewer than two rows.
pub fn median_pairwise_distance(x: &Instances) -> f64 {
    let n = x.n_rows();
    if n < 2 {
        return 0.0;
    }
    let m = n.min(MEDIAN_SAMPLE);
    let rows: Vec<usize> = (0..m).map(|i| i * n / m).collect();
    let sub = x.select_rows(&rows);
    let gram = sub.cross_gram(&sub);
    let mut d: Vec<f64> = Vec::with_capacity(m * (m - 1) / 2);
    for i in 0..m {
        for j in i + 1..m {
            d.push(
                (gram[[i, i]] + gram[[j, j]] - 2.0 * gram[[i, j]])
                    .max(0.0)
                    .sqrt(),
            );
        }
    }
    let mid = d.len() / 2;
    let (_, &mut hi, _) = d.select_nth_unstable_by(mid, f64::total_cmp);
    if d.len() % 2 == 1 {
        hi
    } else {
        let lo = d[..mid].iter().copied().fold(f64::NEG_INFINITY, f64::max);
        0.5 * (lo + hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gamma_values() {
        assert_eq!(
            Gamma::from_value(&Value::Str("median".into())),
            Ok(Gamma::Median)
        );
        assert_eq!(Gamma::from_value(&Value::Int(2)), Ok(Gamma::Value(2.0)));
        assert!(matches!(
            Gamma::from_value(&Value::Str("auto".into())),
            Err(Rejected::Value(_))
        ));
        assert!(matches!(
            Gamma::from_value(&Value::List(vec![1.0])),
            Err(Rejected::Type(_))
        ));
        assert_eq!(
            Gamma::Value(-0.5).check_range("gamma", &Range::Positive, false),
            Err(Error::InvalidParameter(
                "gamma must be 'scale', 'median' or a finite number > 0, got -0.5".into()
            ))
        );
        assert!(Gamma::Median
            .check_range("gamma", &Range::Positive, false)
            .is_ok());
        for g in [Gamma::Scale, Gamma::Median, Gamma::Value(0.25)] {
            let text = serde_json::to_string(&g).unwrap_or_default();
            assert_eq!(serde_json::from_str::<Gamma>(&text).ok(), Some(g));
        }
    }
}
