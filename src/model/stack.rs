//! Scoring several models of one kernel at once ([`decision_functions`]): the models of a `C`
//! path (`fit::FitPath`) expand over subsets of the same training instances, so the
//! kernel values of a bag's instances with the union of their expansion vectors are computed
//! once and serve every model, instead of once per model.

use std::collections::HashMap;

use ndarray::{Array1, Array2};

use super::{Model, Predictor};
use crate::bags::{Instances, Rows};
use crate::error::{invalid_param, Result};

/// Bag scores of every model (each `n_bags x n_outputs` of its model) on the bags of `rows`
/// with offsets `bag_ptr`: as [`Predictor::decision_function_rows`] of each model (each
/// checked by [`Model::check`]), with the kernel values computed once over the union of the
/// models' expansion vectors (rows equal bit for bit are one vector). The models must share
/// the kernel, the pooling, the bag features (instances, or STK's min/max statistic vectors),
/// the number of features and the scaler; calibrations are ignored. The scores equal each
/// model's own up to rounding (the sums run over the union, with zero coefficients for another
/// model's vectors). Models with CSR expansion vectors are scored one by one.
pub fn decision_functions(
    models: &[&Model],
    rows: Rows<'_>,
    bag_ptr: &[usize],
) -> Result<Vec<Array2<f64>>> {
    for m in models {
        m.check()?;
    }
    decision_functions_of_checked(models, rows, bag_ptr)
}

/// [`decision_functions`] of models already checked by [`Model::check`] (the Python binding's
/// models are checked when wrapped and never change).
pub(crate) fn decision_functions_of_checked(
    models: &[&Model],
    rows: Rows<'_>,
    bag_ptr: &[usize],
) -> Result<Vec<Array2<f64>>> {
    let Some(first) = models.first() else {
        return Ok(Vec::new());
    };
    for m in models {
        if m.kernel != first.kernel
            || m.bag_features != first.bag_features
            || m.n_features() != first.n_features()
            || m.scaler != first.scaler
        {
            return Err(invalid_param(
                "models scored together must share the kernel, the bag features, the number \
                 of features and the scaler",
            ));
        }
    }
    let dense: Option<Vec<ndarray::ArrayView2<f64>>> = models
        .iter()
        .map(|m| match &m.xv {
            Instances::Dense(z) => Some(z.view()),
            Instances::Dense32(_) | Instances::Sparse(_) => None,
        })
        .collect();
    // the shared expansion pools every model alike; models that pool differently (sMIL's auto
    // bag score chooses per value of `C`) are scored one by one
    let one_pooling = models.iter().all(|m| m.pooling == first.pooling);
    let Some(dense) = dense.filter(|_| models.len() > 1 && one_pooling) else {
        return models
            .iter()
            .map(|m| Predictor::new(m)?.decision_function_rows(rows, bag_ptr))
            .collect();
    };
    // The union of the expansion vectors, in order of first appearance, and each model's
    // vectors' positions in it.
    // the width of an expansion vector (twice the input features for min/max statistics)
    let d = dense[0].ncols();
    // rows keyed by a fast hash of their bits; equal hashes are confirmed bit for bit
    let mut index: HashMap<u64, Vec<usize>> = HashMap::new();
    let mut union: Vec<f64> = Vec::new();
    let same = |a: &[f64], b: ndarray::ArrayView1<f64>| {
        a.iter().zip(b).all(|(u, v)| u.to_bits() == v.to_bits())
    };
    let positions: Vec<Vec<usize>> = dense
        .iter()
        .map(|z| {
            z.rows()
                .into_iter()
                .map(|row| {
                    let bucket = index.entry(row_hash(row)).or_default();
                    let found = bucket
                        .iter()
                        .copied()
                        .find(|&u| same(&union[u * d..(u + 1) * d], row));
                    found.unwrap_or_else(|| {
                        let u = union.len() / d;
                        union.extend(row.iter());
                        bucket.push(u);
                        u
                    })
                })
                .collect()
        })
        .collect();
    let n_union = union.len() / d;
    let union = Array2::from_shape_vec((n_union, d), union)
        .map_err(|e| invalid_param(format!("stacking expansion vectors: {e}")))?;
    let n_out: usize = models.iter().map(|m| m.n_outputs()).sum();
    // A model needs one output (binary) or at least three: two are padded with a zero output.
    let rows_out = if n_out == 2 { 3 } else { n_out };
    let mut coef = Array2::zeros((rows_out, n_union));
    let mut intercept = Array1::zeros(rows_out);
    let mut at = 0;
    for (m, pos) in models.iter().zip(&positions) {
        for (c, src) in m.coef.rows().into_iter().enumerate() {
            for (&p, &v) in pos.iter().zip(src) {
                coef[[at + c, p]] += v;
            }
            intercept[at + c] = m.intercept[c];
        }
        at += m.n_outputs();
    }
    let mut stacked = Model::new(
        first.kernel,
        union,
        coef,
        intercept,
        if rows_out == 1 { 2 } else { rows_out },
        first.pooling,
    );
    stacked.bag_features = first.bag_features;
    stacked.scaler = first.scaler.clone();
    let scores = Predictor::new(&stacked)?.decision_function_rows(rows, bag_ptr)?;
    let mut at = 0;
    Ok(models
        .iter()
        .map(|m| {
            let k = m.n_outputs();
            let part = scores.slice(ndarray::s![.., at..at + k]).to_owned();
            at += k;
            part
        })
        .collect())
}

/// A fast hash of a row's bits (multiply-rotate over the 64-bit words, as FxHash mixes), to
/// find equal rows without hashing each one as an allocated key.
fn row_hash(row: ndarray::ArrayView1<f64>) -> u64 {
    row.iter().fold(row.len() as u64, |h, v| {
        (h.rotate_left(5) ^ v.to_bits()).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Kernel;
    use crate::model::Pooling;
    use ndarray::array;

    #[test]
    fn stacked_scores_equal_each_models_own() -> Result<()> {
        let x = array![[0.0, 1.0], [1.0, 0.5], [2.0, -1.0], [0.5, 0.5], [-1.0, 2.0]];
        let bag_ptr = [0, 2, 3, 5];
        let k = Kernel::Rbf { gamma: 0.7 };
        for pooling in [Pooling::Mean, Pooling::Max, Pooling::SmilMean] {
            let a = Model::new(
                k,
                array![[0.0, 1.0], [2.0, -1.0]],
                array![[1.0, -2.0]],
                array![0.3],
                2,
                pooling,
            );
            let b = Model::new(
                k,
                array![[2.0, -1.0], [1.0, 0.5], [3.0, 3.0]],
                array![[0.5, 1.5, -1.0], [1.0, 1.0, 1.0], [0.0, 2.0, -3.0]],
                array![0.0, -1.0, 0.5],
                3,
                pooling,
            );
            for set in [vec![&a, &b], vec![&a, &a], vec![&b]] {
                let together = decision_functions(&set, Rows::Dense(x.view()), &bag_ptr)?;
                for (m, s) in set.iter().zip(&together) {
                    let own = Predictor::new(m)?
                        .decision_function_rows(Rows::Dense(x.view()), &bag_ptr)?;
                    assert_eq!(s.dim(), own.dim());
                    for (u, v) in s.iter().zip(&own) {
                        assert!((u - v).abs() <= 1e-12, "{pooling:?}: {u} vs {v}");
                    }
                }
            }
        }
        let c = Model::new(
            Kernel::Linear,
            array![[0.0, 1.0]],
            array![[1.0]],
            array![0.0],
            2,
            Pooling::Mean,
        );
        let a = Model::new(
            k,
            array![[0.0, 1.0]],
            array![[1.0]],
            array![0.0],
            2,
            Pooling::Mean,
        );
        assert!(decision_functions(&[&a, &c], Rows::Dense(x.view()), &bag_ptr).is_err());
        // models over the bags' min/max statistic vectors (STK): 2 x 2 columns
        let stk = |coef: ndarray::Array2<f64>| {
            let mut m = Model::new(
                k,
                array![[0.0, 1.0, 1.0, 2.0], [-1.0, 0.5, 2.0, 0.5]],
                coef,
                array![0.1],
                2,
                Pooling::Mean,
            );
            m.bag_features = crate::model::BagFeatures::MinMax;
            m
        };
        let (s1, s2) = (stk(array![[1.0, -0.5]]), stk(array![[0.0, 2.0]]));
        let together = decision_functions(&[&s1, &s2], Rows::Dense(x.view()), &bag_ptr)?;
        for (m, s) in [&s1, &s2].iter().zip(&together) {
            let own = Predictor::new(m)?.decision_function_rows(Rows::Dense(x.view()), &bag_ptr)?;
            for (u, v) in s.iter().zip(&own) {
                assert!((u - v).abs() <= 1e-12, "min/max: {u} vs {v}");
            }
        }
        assert!(decision_functions(&[&s1, &a], Rows::Dense(x.view()), &bag_ptr).is_err());
        Ok(())
    }
}
