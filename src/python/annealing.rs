//! Bindings of the annealing family (`src/annealing/`).

use crate::annealing::{annealing_fit_fields, AnnealingFit, AnnealingParams};

use super::*;
use crate::params::SvmRoute;
use crate::progress::StopReason;

annealing_fit_fields!(fit_record! {
    /// A fitted annealing-family model (the Rust [`AnnealingFit`]; per binary problem where a
    /// list).
    "AnnealingFit" PyAnnealingFit
});

fit_bindings!(
    /// Fits a method of the annealing family with the parameters of `params` (names as in
    /// `milsvm.ALSVM` and its siblings, plus `method`: `"al"`, `"aw"`, `"alp"`, `"mi"` or
    /// `"MI"`, `seed` and `init_xv`).
    fit_annealing,
    check_annealing,
    fit_annealing_hyperparameters,
    AnnealingParams,
    PyAnnealingFit,
    register_fit
);

/// Adds the annealing fit and the probability updates to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_fit(m)?;
    m.add("AUTO_FULL_BASIS_MAX", crate::annealing::AUTO_FULL_BASIS_MAX)?;
    m.add("AUTO_N_XV", crate::annealing::AUTO_N_XV)?;
    m.add_function(wrap_pyfunction!(probability_update, m)?)
}

/// One bag's probability update of the annealing family (for tests against a general
/// optimiser): `kind` is `"al"` (eq. 8), `"aw"` (eq. 11) or `"alp"` (section 6); `t` holds
/// `C d_j` (AL, ALP) or `C l_j` (AW); `temp >= 0`.
#[pyfunction]
#[pyo3(signature = (kind, t, temp, c2=0.0, p_star=0.0))]
pub(crate) fn probability_update<'py>(
    py: Python<'py>,
    kind: &str,
    t: PyReadonlyArray1<f64>,
    temp: f64,
    c2: f64,
    p_star: f64,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let t = t.as_slice()?;
    if t.is_empty() || temp.is_nan() || temp < 0.0 || t.iter().any(|v| v.is_nan()) {
        return Err(PyValueError::new_err(
            "t must be a non-empty array without NaN and temp a number >= 0",
        ));
    }
    let mut out = vec![0.0; t.len()];
    match kind {
        "al" => crate::annealing::al_update(t, temp, &mut out),
        "aw" => crate::annealing::aw_update(t, temp, &mut out),
        "alp" => crate::annealing::alp_update(t, temp, c2, p_star, &mut out),
        _ => {
            return Err(PyValueError::new_err(format!(
                "kind must be 'al', 'aw' or 'alp', got {kind:?}"
            )))
        }
    }
    Ok(out.into_pyarray(py))
}
