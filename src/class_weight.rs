//! Per-class loss weights (scikit-learn's `class_weight`), shared by every two-class estimator:
//! the value, its check against the classes and the bag weights of each binary problem. Read
//! from a loose value by the hyperparameter layer (`params/class_weight.rs`).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{invalid_param, Result};

/// Per-class weights of the loss (scikit-learn's `class_weight`): bag `i` costs
/// `C * weight(label_i)`. As a hyperparameter value: `None`, `"balanced"` or a list of weights by class
/// index.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum ClassWeight {
    /// Every class weighs 1.
    #[default]
    Uniform,
    /// `n_bags / (2 * n_bags_of_the_side)` for the positive and the negative side of each
    /// binary (or one-vs-rest) problem, as scikit-learn's `"balanced"` on that problem's labels.
    Balanced,
    /// One weight per class index (`> 0`); in a one-vs-rest problem a bag keeps the weight of
    /// its own class.
    Given(Vec<f64>),
}

impl ClassWeight {
    /// Checks the weights against the number of classes.
    pub fn validate(&self, n_classes: usize) -> Result<()> {
        if let ClassWeight::Given(w) = self {
            if w.len() != n_classes {
                return Err(invalid_param(format!(
                    "class_weight has {} weights for {n_classes} classes",
                    w.len()
                )));
            }
            if let Some(v) = w.iter().find(|v| !(v.is_finite() && **v > 0.0)) {
                return Err(invalid_param(format!(
                    "class weights must be finite numbers > 0, got {v}"
                )));
            }
        }
        Ok(())
    }

    /// The weight of each bag in the binary problem with `targets` (+1 / -1 per bag) of a fit
    /// whose bags have class indices `labels`.
    pub fn bag_weights(&self, targets: &[f64], labels: &[usize]) -> Vec<f64> {
        match self {
            ClassWeight::Uniform => vec![1.0; targets.len()],
            ClassWeight::Given(w) => labels.iter().map(|&l| w[l]).collect(),
            ClassWeight::Balanced => {
                let n = targets.len() as f64;
                let n_pos = targets.iter().filter(|&&t| t > 0.0).count() as f64;
                let (wp, wn) = (n / (2.0 * n_pos.max(1.0)), n / (2.0 * (n - n_pos).max(1.0)));
                targets
                    .iter()
                    .map(|&t| if t > 0.0 { wp } else { wn })
                    .collect()
            }
        }
    }
}

/// Written as in Python: `null`, `"balanced"` or the list of weights.
impl Serialize for ClassWeight {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            ClassWeight::Uniform => s.serialize_none(),
            ClassWeight::Balanced => s.serialize_str("balanced"),
            ClassWeight::Given(w) => w.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ClassWeight {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::Null => Ok(ClassWeight::Uniform),
            serde_json::Value::String(s) if s == "balanced" => Ok(ClassWeight::Balanced),
            v @ serde_json::Value::Array(_) => serde_json::from_value(v)
                .map(ClassWeight::Given)
                .map_err(serde::de::Error::custom),
            other => Err(serde::de::Error::custom(format!(
                "class_weight must be null, \"balanced\" or a list of weights, got {other}"
            ))),
        }
    }
}
