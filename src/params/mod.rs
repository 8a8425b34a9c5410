//! Hyperparameters, declared once.
//!
//! Every algorithm's hyperparameters are one declaration (`hyperparams!`): each field with its
//! doc line, its default and its allowed [`Range`]. The declaration generates two types, after
//! linfa's `ParamGuard`:
//!
//! * the **builder** (`NskParams`): `Default`, `new()`, a setter for every field, `validate()`,
//!   `fit()`, and [`Hyperparams`] (set a field by name from a loosely typed [`Value`], list the
//!   [`ParamSpec`]s) for the bindings;
//! * the **checked** type (`NskValidParams`): the same fields, readable through getters, that
//!   only [`ParamGuard::check_ref`] / [`ParamGuard::check`] produce. Algorithms implement
//!   [`crate::fit::Fit`] on the checked type alone, so they never see unchecked values.
//!
//! Checking runs every field's range check (one message style: [`Range::message`]) and then the
//! declaration's one hand-written hook for checks that involve several fields. Checks that need
//! the data (`n_xv` against the number of instances) stay in the fit.
//!
//! The value types shared by the families live here too: [`Gamma`] and [`KernelKind`]
//! (the kernel), and the conversion machinery ([`Value`], [`ParamType`]; every `choices!` enum
//! and [`ClassWeight`](crate::class_weight::ClassWeight) read from a value).

mod class_weight;
mod kernel_choice;
mod range;
pub mod value;

pub(crate) use kernel_choice::check_route;
pub use kernel_choice::{median_pairwise_distance, Gamma, KernelKind, SvmRoute, MEDIAN_SAMPLE};
pub use range::Range;

pub use value::{ParamType, Rejected, Value};

use crate::bags::Instances;
use crate::error::{invalid_param, Result};
use crate::fit::ParamGuard;
use crate::progress::Observer;

/// One hyperparameter as declared: its name (as the Python estimator spells it), doc line,
/// default and allowed range.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamSpec {
    /// The name (`"C"`, `"gamma"`, ...).
    pub name: &'static str,
    /// The doc comment.
    pub doc: &'static str,
    /// The default value.
    pub default: Value,
    /// The allowed range of a numeric parameter.
    pub range: Option<Range>,
}

/// What the bindings need of every builder: its parameters by name.
pub trait Hyperparams: ParamGuard + Default {
    /// Sets the parameter called `name` (its [`ParamSpec::name`]) from `value`; a value of the
    /// wrong kind is [`crate::Error::ParameterType`], a wrong value of the right kind and an
    /// unknown name [`crate::Error::InvalidParameter`]. Ranges are checked later, by
    /// [`ParamGuard::check_ref`].
    fn set(&mut self, name: &str, value: &Value) -> Result<()>;
    /// Sets the progress observer and cancellation flag.
    fn set_observer(&mut self, observer: Observer);
    /// The threads the fit asks for (`None`: all cores), as set; its range is checked later.
    fn requested_n_jobs(&self) -> Option<usize>;
    /// Every parameter, in declaration order.
    fn specs() -> Vec<ParamSpec>;
}

/// Declares a hyperparameter struct once: `shared(kernel = default);` first brings the fields every
/// two-class kernel method shares, declared here once (`C`, `kernel` with that default, `gamma`,
/// `class_weight`, `n_jobs`); then each field with its doc comment, its name outside
/// Rust when it differs (`c as "C"`), its type, its default, optionally its [`Range`]
/// (`check Range::Positive`) and a custom reader from [`Value`] (`via path`), then optionally
/// one hook for checks across fields (`cross_check path;`, a `fn(&Checked) -> Result<()>`) and
/// the fit (`fit -> Output;`: [`crate::fit::Fit`] on the checked type through the shared
/// prologue, for a struct with `n_jobs` and `class_weight` fields and a
/// `fn fit_impl(&self, &Setup) -> Result<Output>`; `fit -> Output, path name;` adds
/// [`crate::fit::FitPath`] through the same prologue, calling
/// `fn name(&self, &Setup, cs: &[f64]) -> Result<Vec<Output>>` with the distinct values of `C`
/// in ascending order).
/// Every struct also gets an `observer` ([`Observer`]: progress and cancellation). See the
/// module docs for what it generates.
macro_rules! hyperparams {
    (
        $(#[$meta:meta])*
        pub struct $name:ident => $checked:ident {
            shared(kernel = $kernel:expr);
            $($fields:tt)*
        }
        $($tail:tt)*
    ) => {
        $crate::params::hyperparams! {
            $(#[$meta])*
            pub struct $name => $checked {
                /// Loss weight `C` (bag `i` of a binary problem costs `C w_i`, `w_i` its class
                /// weight).
                c as "C": f64 = 1.0, check $crate::params::Range::Positive;
                /// Instance kernel family.
                kernel: $crate::params::KernelKind = $kernel;
                /// Kernel width (Gaussian kernel only): `"scale"`, `"median"` or a number.
                gamma: $crate::params::Gamma = $crate::params::Gamma::Scale,
                    check $crate::params::Range::Positive;
                /// Per-class loss weights (`None`, `"balanced"` or one weight per class).
                class_weight: $crate::class_weight::ClassWeight = $crate::class_weight::ClassWeight::Uniform;
                /// Threads (`None`: all cores). Results do not depend on it.
                n_jobs: Option<usize> = None, check $crate::params::Range::AtLeast(1),
                    via $crate::params::n_jobs_from_value;
                $($fields)*
            }
            $($tail)*
        }

        impl $checked {
            /// The same hyperparameters with `C = c`: one point of a `C` path
            /// ([`crate::fit::FitPath`]; the path checks `c`).
            #[allow(dead_code)]
            pub(crate) fn with_c(&self, c: f64) -> Self {
                let mut p = self.clone();
                p.c = c;
                p
            }
        }
    };
    (
        $(#[$meta:meta])*
        pub struct $name:ident => $checked:ident {
            $(
                $(#[doc = $doc:literal])*
                $field:ident $(as $display:literal)? : $ty:ty = $default:expr
                    $(, check $range:expr)? $(, via $conv:path)? ;
            )*
        }
        $(cross_check $cross:path;)?
        $(fit -> $out:ty $(, path $path:ident)?;)?
    ) => {
        #[doc = concat!("The checked form of [`", stringify!($name), "`], which only ")]
        #[doc = "[`ParamGuard::check_ref`](crate::fit::ParamGuard::check_ref) makes: the"]
        #[doc = "type the algorithm runs on. Its fields are read through getters."]
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(default)]
        pub struct $checked {
            $( $(#[doc = $doc])* $field: $ty, )*
            #[serde(skip)]
            observer: $crate::progress::Observer,
        }

        impl Default for $checked {
            fn default() -> Self {
                Self {
                    $( $field: $default, )*
                    observer: $crate::progress::Observer::default(),
                }
            }
        }

        #[allow(dead_code)]
        impl $checked {
            $(
                $(#[doc = $doc])*
                pub fn $field(&self) -> &$ty {
                    &self.$field
                }
            )*
            /// The progress observer and cancellation flag.
            pub fn observer(&self) -> &$crate::progress::Observer {
                &self.observer
            }
        }

        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name($checked);

        impl $name {
            /// The default hyperparameters.
            pub fn new() -> Self {
                Self::default()
            }
            $(
                #[doc = concat!("Sets `", $crate::params::param_name!($field $(as $display)?), "`:")]
                $(#[doc = $doc])*
                #[doc = ""]
                #[doc = concat!("Default: `", stringify!($default), "`.")]
                $(#[doc = concat!(" Range: `", stringify!($range), "`.")])?
                pub fn $field(mut self, value: $ty) -> Self {
                    self.0.$field = value;
                    self
                }
            )*
            /// Sets the progress observer and cancellation flag.
            pub fn observer(mut self, observer: $crate::progress::Observer) -> Self {
                self.0.observer = observer;
                self
            }
            /// Checks every hyperparameter; the error names the parameter and its allowed
            /// range.
            pub fn validate(&self) -> $crate::error::Result<()> {
                $crate::fit::ParamGuard::check_ref(self).map(|_| ())
            }
            /// Checks the hyperparameters, then fits on bags with class indices
            /// `0..n_classes` (see [`crate::fit::Fit`] on the checked type).
            pub fn fit(
                &self,
                bags: &$crate::bags::Bags,
                labels: &[usize],
            ) -> $crate::error::Result<<$checked as $crate::fit::Fit>::Output> {
                $crate::fit::Fit::fit($crate::fit::ParamGuard::check_ref(self)?, bags, labels)
            }
        }

        impl $crate::fit::ParamGuard for $name {
            type Checked = $checked;
            fn check_ref(&self) -> $crate::error::Result<&$checked> {
                let p = &self.0;
                $(
                    $crate::params::param_check!(
                        &p.$field,
                        $crate::params::param_name!($field $(as $display)?)
                        $(, $range)?
                    )?;
                )*
                $( $cross(p)?; )?
                Ok(p)
            }
            fn check(self) -> $crate::error::Result<$checked> {
                $crate::fit::ParamGuard::check_ref(&self)?;
                Ok(self.0)
            }
        }

        impl $crate::params::Hyperparams for $name {
            fn set(
                &mut self,
                name: &str,
                value: &$crate::params::Value,
            ) -> $crate::error::Result<()> {
                $(
                    if name == $crate::params::param_name!($field $(as $display)?) {
                        self.0.$field = $crate::params::param_read!(value $(, $conv)?)
                            .map_err(|r| r.into_error(name, value))?;
                        return Ok(());
                    }
                )*
                let known: &[&str] = &[$( $crate::params::param_name!($field $(as $display)?) ),*];
                Err($crate::error::Error::InvalidParameter(format!(
                    "{} has no parameter {name:?} (parameters: {})",
                    stringify!($name),
                    known.join(", ")
                )))
            }
            fn requested_n_jobs(&self) -> Option<usize> {
                self.0.n_jobs
            }
            fn set_observer(&mut self, observer: $crate::progress::Observer) {
                self.0.observer = observer;
            }
            fn specs() -> Vec<$crate::params::ParamSpec> {
                let d = $checked::default();
                vec![$(
                    $crate::params::ParamSpec {
                        name: $crate::params::param_name!($field $(as $display)?),
                        doc: concat!($($doc, "\n",)* ""),
                        default: $crate::params::ParamType::to_value(&d.$field),
                        range: $crate::params::param_range!($($range)?),
                    }
                ),*]
            }
        }

        $(
            /// Fits through the shared prologue of [`crate::fit`] (labels, class
            /// weights, thread pool, observer, cancellation), then the family's `fit_impl`.
            impl $crate::fit::Fit for $checked {
                type Output = $out;
                fn fit(
                    &self,
                    bags: &$crate::bags::Bags,
                    labels: &[usize],
                ) -> $crate::error::Result<$out> {
                    $crate::fit::Prologue {
                        n_jobs: self.n_jobs,
                        class_weight: Some(&self.class_weight),
                        observer: &self.observer,
                    }
                    .run(bags, labels, |setup| self.fit_impl(setup))
                }
            }

            $(
                /// A `C` path through the same prologue: the family's `path` method gets the
                /// distinct values of `C` in ascending order.
                impl $crate::fit::FitPath for $checked {
                    fn fit_path(
                        &self,
                        bags: &$crate::bags::Bags,
                        labels: &[usize],
                        cs: &[f64],
                    ) -> $crate::error::Result<Vec<$out>> {
                        let path = $crate::fit::CPath::new(cs)?;
                        let fits = $crate::fit::Prologue {
                            n_jobs: self.n_jobs,
                            class_weight: Some(&self.class_weight),
                            observer: &self.observer,
                        }
                        .run(bags, labels, |setup| self.$path(setup, &path.values))?;
                        Ok(path.in_given_order(fits))
                    }
                }
            )?
        )?
    };
}
pub(crate) use hyperparams;

/// The outside name of a field: its own, or the one given with `as`.
macro_rules! param_name {
    ($field:ident) => {
        stringify!($field)
    };
    ($field:ident as $display:literal) => {
        $display
    };
}
pub(crate) use param_name;

/// The range check of a field, if it declares a range.
macro_rules! param_check {
    ($value:expr, $name:expr) => {
        $crate::error::Result::<()>::Ok(())
    };
    ($value:expr, $name:expr, $range:expr) => {
        $crate::params::ParamType::check_range($value, $name, &$range, false)
    };
}
pub(crate) use param_check;

/// The reader of a field from a [`Value`]: its type's, or the declared one.
macro_rules! param_read {
    ($value:expr) => {
        $crate::params::ParamType::from_value($value)
    };
    ($value:expr, $conv:path) => {
        $conv($value)
    };
}
pub(crate) use param_read;

/// The declared range of a field as an `Option`.
macro_rules! param_range {
    () => {
        None
    };
    ($range:expr) => {
        Some($range)
    };
}
pub(crate) use param_range;

/// Reads `n_jobs` as scikit-learn spells it: `None` or `-1` for every core, else a count
/// `>= 1`.
pub fn n_jobs_from_value(value: &Value) -> std::result::Result<Option<usize>, Rejected> {
    const NEED: &str = "must be None, -1 or an integer >= 1";
    match *value {
        Value::None | Value::Int(-1) => Ok(None),
        Value::Int(n) if n >= 1 => Ok(Some(n as usize)),
        Value::Int(_) => Err(Rejected::Value(NEED.into())),
        _ => Err(Rejected::Type(NEED.into())),
    }
}

/// Given starting vectors (`init_xv`), if any, must be finite and have `n_xv` rows.
pub(crate) fn check_init_xv(
    init_xv: Option<&ndarray::Array2<f64>>,
    n_xv: Option<usize>,
) -> Result<()> {
    let Some(z) = init_xv else { return Ok(()) };
    if Some(z.nrows()) != n_xv {
        let n_xv = n_xv.map_or("None".to_string(), |n| n.to_string());
        return Err(invalid_param(format!(
            "init_xv has {} rows, n_xv is {n_xv}",
            z.nrows()
        )));
    }
    if z.iter().any(|v| !v.is_finite()) {
        return Err(invalid_param("init_xv has a non-finite value"));
    }
    Ok(())
}

/// Given starting vectors (`init_xv`), if any, must have one column per feature of the bags.
pub(crate) fn check_init_xv_columns(
    init_xv: Option<&ndarray::Array2<f64>>,
    n_features: usize,
) -> Result<()> {
    match init_xv {
        Some(z) if z.ncols() != n_features => Err(invalid_param(format!(
            "init_xv has {} columns, the bags have {} features",
            z.ncols(),
            n_features
        ))),
        _ => Ok(()),
    }
}

/// Checks that an optional instance set has `n_features` columns.
pub(crate) fn check_columns(what: &str, x: Option<&Instances>, n_features: usize) -> Result<()> {
    match x {
        Some(x) if x.n_features() != n_features => Err(invalid_param(format!(
            "{what} has {} features, the bags have {n_features}",
            x.n_features()
        ))),
        _ => Ok(()),
    }
}
