//! Hyperparameter values from outside Rust (the Python bindings, a configuration file): the one
//! place where a loosely typed value becomes a typed hyperparameter, and back.
//!
//! Every hyperparameter type implements [`ParamType`]: how it is read from a [`Value`] (wrong
//! kinds of value are refused as [`Error::ParameterType`], wrong values of the right kind as
//! [`Error::InvalidParameter`]), how it is written back (for defaults and specs), and how its
//! [`Range`] is checked. The enums of the crate's parameters are declared with `choices!`,
//! which gives each variant its one spelling.

use ndarray::Array2;

use super::range::Range;
use crate::bags::Instances;
use crate::choice::Choice;
use crate::error::{Error, Result};

/// A loosely typed hyperparameter value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// No value (`None`).
    None,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A real number.
    Float(f64),
    /// A string (an enum variant, `"scale"`, ...).
    Str(String),
    /// A list of real numbers (class weights by class index).
    List(Vec<f64>),
    /// A dense matrix (given expansion vectors).
    Matrix(Array2<f64>),
    /// Instances, dense or CSR (given basis vectors).
    Instances(Instances),
    /// A value of a kind no parameter takes, named by its type (for the message).
    Other(String),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::None => f.write_str("None"),
            Value::Bool(b) => f.write_str(if *b { "True" } else { "False" }),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Str(s) => write!(f, "'{s}'"),
            Value::List(v) => write!(f, "{v:?}"),
            Value::Matrix(m) => write!(f, "an array of shape {:?}", m.dim()),
            Value::Instances(x) => {
                write!(f, "instances of shape ({}, {})", x.n_rows(), x.n_features())
            }
            Value::Other(t) => write!(f, "a value of type {t}"),
        }
    }
}

/// Why a [`Value`] was refused: the wrong kind of value, or a value of the right kind that is
/// not allowed. Both carry the requirement, worded after the parameter's name (`"must be a
/// real number"`).
#[derive(Debug, Clone, PartialEq)]
pub enum Rejected {
    /// The value has the wrong kind (a string for a number, ...).
    Type(String),
    /// The value has the right kind but is not allowed (an unknown variant name, ...).
    Value(String),
}

impl Rejected {
    /// The error for parameter `name`, which was given `got`.
    pub fn into_error(self, name: &str, got: &Value) -> Error {
        match self {
            Rejected::Type(need) => Error::ParameterType(format!("{name} {need}, got {got}")),
            Rejected::Value(need) => Error::InvalidParameter(format!("{name} {need}, got {got}")),
        }
    }
}

/// A hyperparameter type: read from and written to a [`Value`], with an optional [`Range`].
pub trait ParamType: Sized {
    /// Reads the value, or says why not.
    fn from_value(value: &Value) -> std::result::Result<Self, Rejected>;
    /// The parameter as a value (its default in a spec).
    fn to_value(&self) -> Value;
    /// Checks the parameter against `range` (types without a range accept everything);
    /// `optional`: the refusal says that `None` is allowed too.
    fn check_range(&self, _name: &str, _range: &Range, _optional: bool) -> Result<()> {
        Ok(())
    }
}

fn type_error<T>(need: &str) -> std::result::Result<T, Rejected> {
    Err(Rejected::Type(need.to_string()))
}

impl ParamType for f64 {
    fn from_value(value: &Value) -> std::result::Result<Self, Rejected> {
        match *value {
            Value::Float(x) => Ok(x),
            Value::Int(i) => Ok(i as f64),
            _ => type_error("must be a real number"),
        }
    }
    fn to_value(&self) -> Value {
        Value::Float(*self)
    }
    fn check_range(&self, name: &str, range: &Range, optional: bool) -> Result<()> {
        if range.contains(*self) {
            Ok(())
        } else {
            Err(Error::InvalidParameter(range.message(name, optional, self)))
        }
    }
}

impl ParamType for usize {
    fn from_value(value: &Value) -> std::result::Result<Self, Rejected> {
        match *value {
            Value::Int(i) => usize::try_from(i)
                .map_err(|_| Rejected::Value("must be a non-negative integer".into())),
            _ => type_error("must be an integer"),
        }
    }
    fn to_value(&self) -> Value {
        Value::Int(i64::try_from(*self).unwrap_or(i64::MAX))
    }
    fn check_range(&self, name: &str, range: &Range, optional: bool) -> Result<()> {
        if range.contains_count(*self) {
            Ok(())
        } else {
            Err(Error::InvalidParameter(range.message(name, optional, self)))
        }
    }
}

impl ParamType for u64 {
    fn from_value(value: &Value) -> std::result::Result<Self, Rejected> {
        match *value {
            Value::Int(i) => u64::try_from(i)
                .map_err(|_| Rejected::Value("must be a non-negative integer".into())),
            _ => type_error("must be an integer"),
        }
    }
    fn to_value(&self) -> Value {
        Value::Int(i64::try_from(*self).unwrap_or(i64::MAX))
    }
}

impl ParamType for bool {
    fn from_value(value: &Value) -> std::result::Result<Self, Rejected> {
        match *value {
            Value::Bool(b) => Ok(b),
            _ => type_error("must be a bool"),
        }
    }
    fn to_value(&self) -> Value {
        Value::Bool(*self)
    }
}

impl<T: ParamType> ParamType for Option<T> {
    fn from_value(value: &Value) -> std::result::Result<Self, Rejected> {
        match value {
            Value::None => Ok(None),
            v => T::from_value(v).map(Some).map_err(|r| match r {
                Rejected::Type(need) => Rejected::Type(format!(
                    "must be None or {}",
                    need.trim_start_matches("must be ")
                )),
                other => other,
            }),
        }
    }
    fn to_value(&self) -> Value {
        self.as_ref().map_or(Value::None, T::to_value)
    }
    fn check_range(&self, name: &str, range: &Range, _optional: bool) -> Result<()> {
        match self {
            None => Ok(()),
            Some(v) => v.check_range(name, range, true),
        }
    }
}

impl ParamType for Array2<f64> {
    fn from_value(value: &Value) -> std::result::Result<Self, Rejected> {
        match value {
            Value::Matrix(m) => Ok(m.clone()),
            Value::Instances(x) => Ok(x.to_dense()),
            _ => type_error("must be a 2-D array"),
        }
    }
    fn to_value(&self) -> Value {
        Value::Matrix(self.clone())
    }
}

impl ParamType for Instances {
    fn from_value(value: &Value) -> std::result::Result<Self, Rejected> {
        match value {
            Value::Matrix(m) => Ok(Instances::from(m.clone())),
            Value::Instances(x) => Ok(x.clone()),
            _ => type_error("must be a 2-D array or a sparse matrix"),
        }
    }
    fn to_value(&self) -> Value {
        Value::Instances(self.clone())
    }
}

/// A [`Choice`] enum is read from the string naming a variant: another string is refused with
/// the list of names.
impl<T: Choice> ParamType for T {
    fn from_value(value: &Value) -> std::result::Result<Self, Rejected> {
        choice(value, T::NAMES, T::from_name)
    }
    fn to_value(&self) -> Value {
        Value::Str(self.as_str().to_string())
    }
}

/// Reads a variant name for `choices!`: `"must be one of 'a', 'b'"` for another string, a
/// type error for a non-string.
pub fn choice<T>(
    value: &Value,
    names: &[&str],
    from_name: impl Fn(&str) -> Option<T>,
) -> std::result::Result<T, Rejected> {
    let list = || {
        let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
        format!("must be one of {}", quoted.join(", "))
    };
    match value {
        Value::Str(s) => from_name(s).ok_or_else(|| Rejected::Value(list())),
        _ => Err(Rejected::Type(list())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::choice::choices;

    choices! {
        /// A test enum.
        enum Colour {
            /// Red.
            Red = "red",
            /// Blue.
            Blue = "blue",
        }
    }

    fn err<T: ParamType + std::fmt::Debug>(v: Value) -> Error {
        T::from_value(&v)
            .map(|_| ())
            .map_err(|r| r.into_error("p", &v))
            .unwrap_err()
    }

    #[test]
    fn numbers_and_their_refusals() {
        assert_eq!(f64::from_value(&Value::Int(3)), Ok(3.0));
        assert_eq!(
            err::<f64>(Value::Str("big".into())),
            Error::ParameterType("p must be a real number, got 'big'".into())
        );
        assert_eq!(
            err::<usize>(Value::Int(-3)),
            Error::InvalidParameter("p must be a non-negative integer, got -3".into())
        );
        assert!(matches!(
            err::<usize>(Value::Float(2.5)),
            Error::ParameterType(_)
        ));
        assert!(matches!(
            err::<usize>(Value::Bool(true)),
            Error::ParameterType(_)
        ));
        assert_eq!(Option::<f64>::from_value(&Value::None), Ok(None));
        assert_eq!(
            err::<Option<f64>>(Value::Str("x".into())),
            Error::ParameterType("p must be None or a real number, got 'x'".into())
        );
        assert_eq!(
            Some(0.0).check_range("T0", &Range::Positive, false),
            Err(Error::InvalidParameter(
                "T0 must be None or a finite number > 0, got 0".into()
            ))
        );
    }

    #[test]
    fn choices_spell_and_refuse() {
        assert_eq!(
            Colour::from_value(&Value::Str("blue".into())),
            Ok(Colour::Blue)
        );
        assert_eq!(Colour::Red.to_value(), Value::Str("red".into()));
        assert_eq!(
            err::<Colour>(Value::Str("green".into())),
            Error::InvalidParameter("p must be one of 'red', 'blue', got 'green'".into())
        );
        assert!(matches!(
            err::<Colour>(Value::Int(1)),
            Error::ParameterType(_)
        ));
        assert_eq!(
            serde_json::to_string(&Colour::Blue).ok().as_deref(),
            Some("\"blue\"")
        );
    }
}
