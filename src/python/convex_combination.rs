//! Bindings of SVM-CC (`src/convex_combination.rs`).

use crate::convex_combination::{lp_step, svm_cc_fit_fields, LpRule, SvmCcFit, SvmCcParams};

use super::*;
use crate::progress::StopReason;

svm_cc_fit_fields!(fit_record! {
    /// A fitted SVM-CC (the Rust [`SvmCcFit`]; per binary problem where a list).
    "SvmCcFit" PySvmCcFit
});

fit_bindings!(
    /// Fits SVM-CC with the parameters of `params` (names as in `milsvm.SVMCC`).
    fit_svmcc,
    check_svmcc,
    fit_svmcc_hyperparameters,
    SvmCcParams,
    PySvmCcFit,
    register_fit
);

/// Adds the SVM-CC fit and its LP step to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_fit(m)?;
    m.add_function(wrap_pyfunction!(svmcc_lp_step, m)?)
}

/// SVM-CC's LP step with `w` fixed (for tests against a general LP solver): `pos_scores` holds
/// the instance scores of each positive bag, `pos_weights` / `neg_weights` the slack weights, `v`
/// the current weights of each positive bag (`None`: uniform), `lp_rule` which optimal `v` to
/// return (`"project"` or `"max"`); returns `(v, b)`.
#[pyfunction]
#[pyo3(signature = (pos_scores, pos_weights, neg_scores, neg_weights, v=None, lp_rule="project"))]
pub(crate) fn svmcc_lp_step(
    pos_scores: Vec<Vec<f64>>,
    pos_weights: Vec<f64>,
    neg_scores: Vec<f64>,
    neg_weights: Vec<f64>,
    v: Option<Vec<Vec<f64>>>,
    lp_rule: &str,
) -> PyResult<(Vec<Vec<f64>>, f64)> {
    let rule = LpRule::from_name(lp_rule).ok_or_else(|| {
        PyValueError::new_err(format!(
            "lp_rule must be 'project' or 'max', got {lp_rule:?}"
        ))
    })?;
    if pos_scores.len() != pos_weights.len() || neg_scores.len() != neg_weights.len() {
        return Err(PyValueError::new_err(
            "one weight per bag / instance is needed",
        ));
    }
    if pos_scores.iter().any(|s| s.is_empty()) {
        return Err(PyValueError::new_err("a positive bag has no score"));
    }
    let v = v.unwrap_or_else(|| {
        pos_scores
            .iter()
            .map(|s| vec![1.0 / s.len() as f64; s.len()])
            .collect()
    });
    if v.len() != pos_scores.len() || v.iter().zip(&pos_scores).any(|(a, s)| a.len() != s.len()) {
        return Err(PyValueError::new_err(
            "v needs one weight per instance of each positive bag",
        ));
    }
    let all_finite = pos_scores
        .iter()
        .flatten()
        .chain(v.iter().flatten())
        .chain(&pos_weights)
        .chain(&neg_scores)
        .chain(&neg_weights)
        .all(|x| x.is_finite());
    if !all_finite {
        return Err(PyValueError::new_err("scores and weights must be finite"));
    }
    let scores: Vec<&[f64]> = pos_scores.iter().map(Vec::as_slice).collect();
    Ok(lp_step(
        rule,
        &scores,
        &v,
        &pos_weights,
        &neg_scores,
        &neg_weights,
    ))
}
