//! Bindings of SVM-CC (`src/convex_combination.rs`).

use crate::convex_combination::{lp_step, LpRule, SvmCcFit, SvmCcParams};

use super::*;

fit_record! {
    /// A fitted SVM-CC (the Rust [`SvmCcFit`]; per binary problem where a list).
    "SvmCcFit" PySvmCcFit(py, fit: SvmCcFit) {
        /// The compiled model (max pooling).
        model: Py<model::PyModel> = fit.model,
        /// The kernel width used.
        gamma: f64 = fit.gamma,
        /// Per problem: the positive bags `v` refers to.
        positive_bags: Vec<Vec<usize>> = fit.positive_bags,
        /// Per problem: the final `v` of every positive bag.
        v: Vec<Vec<Vec<f64>>> = fit.v,
        /// Per problem: the LP's bias of the last round.
        lp_intercept: Vec<f64> = fit.lp_intercept,
        /// Per problem: the QP's bias of the last round.
        qp_intercept: Vec<f64> = fit.qp_intercept,
        /// Per problem: `1/2 ||w||^2 + sum c xi` after each round's LP.
        objective_history: Vec<Vec<f64>> = fit.objective_history,
        /// Per problem: `||v_new - v||_2` of each round.
        dv_history: Vec<Vec<f64>> = fit.dv_history,
        /// Per problem: rounds run.
        n_iter: Vec<usize> = fit.n_iter,
        /// Per problem: whether the change of `v` fell below `tol`.
        converged: Vec<bool> = fit.stop_reason,
        /// Whether every SMO solve met its tolerance.
        inner_converged: bool = fit.smo_converged,
    }
}

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
