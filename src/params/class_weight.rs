//! [`ClassWeight`] read from a loose value.

use super::value::{ParamType, Rejected, Value};
use crate::class_weight::ClassWeight;

const NEED: &str = "must be None, 'balanced' or a list of weights by class index";

impl ParamType for ClassWeight {
    fn from_value(value: &Value) -> std::result::Result<Self, Rejected> {
        match value {
            Value::None => Ok(ClassWeight::Uniform),
            Value::Str(s) if s == "balanced" => Ok(ClassWeight::Balanced),
            Value::Str(_) => Err(Rejected::Value(NEED.into())),
            // refused here already (not only against the classes in `validate`), so that a
            // check without data finds it
            Value::List(w) if w.iter().any(|v| !(v.is_finite() && *v > 0.0)) => {
                Err(Rejected::Value("must hold finite class weights > 0".into()))
            }
            Value::List(w) => Ok(ClassWeight::Given(w.clone())),
            _ => Err(Rejected::Type(NEED.into())),
        }
    }
    fn to_value(&self) -> Value {
        match self {
            ClassWeight::Uniform => Value::None,
            ClassWeight::Balanced => Value::Str("balanced".into()),
            ClassWeight::Given(w) => Value::List(w.clone()),
        }
    }
}
