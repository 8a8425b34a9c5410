//! The preprocessing a model file can carry: feature standardisation `x'_j = (x_j - mean_j) /
//! scale_j`, fitted on the training instances (the Python `BagStandardScaler`). A model with a
//! scaler scores raw bags: the [`Predictor`](super::Predictor) standardises every instance
//! before the kernel. CSR instances stay CSR when no feature is centred (`mean = 0`, what the
//! scaler fits on sparse data), and are densified otherwise. `f32` instances are standardised in
//! `f32` arithmetic with the mean and scale rounded to `f32`, as NumPy and scikit-learn do.

use ndarray::Array2;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::bags::{Csr, DenseF32, Instances, Rows};
use crate::error::{Error, Result};

use super::BagView;

/// Feature standardisation: `x'_j = (x_j - mean_j) / scale_j`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scaler {
    /// The mean subtracted from each feature (0 leaves it uncentred).
    pub mean: Vec<f64>,
    /// The positive scale each feature is divided by.
    pub scale: Vec<f64>,
}

impl Scaler {
    /// Checks the scaler against `n_features` (messages name the field).
    pub fn check(&self, n_features: usize) -> Result<()> {
        if self.mean.len() != n_features || self.scale.len() != n_features {
            return Err(Error::ModelFile(format!(
                "scaler: {} means and {} scales for {n_features} features",
                self.mean.len(),
                self.scale.len()
            )));
        }
        if self.mean.iter().any(|v| !v.is_finite()) {
            return Err(Error::ModelFile("scaler: a mean is not finite".into()));
        }
        if self.scale.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
            return Err(Error::ModelFile(
                "scaler: every scale must be a finite number > 0".into(),
            ));
        }
        Ok(())
    }

    /// Whether every mean is 0 (sparse rows then stay sparse).
    pub fn is_uncentred(&self) -> bool {
        self.mean.iter().all(|&m| m == 0.0)
    }

    /// Standardises one dense row into `out` (same length).
    #[inline]
    pub fn dense_row_into(&self, x: &[f64], out: &mut [f64]) {
        for (((o, &v), &m), &s) in out.iter_mut().zip(x).zip(&self.mean).zip(&self.scale) {
            *o = (v - m) / s;
        }
    }

    /// Standardises one single-precision row as NumPy and scikit-learn do for `float32` data:
    /// `(v - m) / s` in `f32` arithmetic with the mean and scale rounded to `f32`.
    #[inline]
    pub fn dense_row_into_f32(&self, x: &[f32], out: &mut [f32]) {
        for (((o, &v), &m), &s) in out.iter_mut().zip(x).zip(&self.mean).zip(&self.scale) {
            *o = (v - m as f32) / s as f32;
        }
    }

    /// The standardised copy of one bag, its values in `buf` (resized): a dense bag or a
    /// centred CSR bag becomes dense, an uncentred CSR bag keeps its structure. A `f32` bag is
    /// standardised in `f32` ([`Scaler::dense_row_into_f32`]), the result widened into `buf`.
    pub fn bag_into<'a>(&self, bag: BagView<'a>, buf: &'a mut Vec<f64>) -> BagView<'a> {
        let d = bag.n_features();
        match bag {
            BagView::Dense { data, .. } => {
                buf.resize(data.len(), 0.0);
                for (x, o) in data.chunks_exact(d).zip(buf.chunks_exact_mut(d)) {
                    self.dense_row_into(x, o);
                }
            }
            BagView::Dense32 { data, .. } => {
                buf.resize(data.len(), 0.0);
                for (x, o) in data.chunks_exact(d).zip(buf.chunks_exact_mut(d)) {
                    for (((o, &v), &m), &s) in o.iter_mut().zip(x).zip(&self.mean).zip(&self.scale)
                    {
                        *o = f64::from((v - m as f32) / s as f32);
                    }
                }
            }
            BagView::Csr {
                indptr,
                indices,
                data,
                ..
            } if self.is_uncentred() => {
                buf.clear();
                buf.extend(indices.iter().zip(data).map(|(&j, &v)| v / self.scale[j]));
                return BagView::Csr {
                    indptr,
                    indices,
                    data: buf,
                    n_features: d,
                };
            }
            BagView::Csr {
                indptr,
                indices,
                data,
                ..
            } => {
                let n = indptr.len() - 1;
                buf.clear();
                buf.resize(n * d, 0.0);
                for (p, row) in buf.chunks_exact_mut(d).enumerate() {
                    let (a, b) = (indptr[p] - indptr[0], indptr[p + 1] - indptr[0]);
                    for (&j, &v) in indices[a..b].iter().zip(&data[a..b]) {
                        row[j] += v;
                    }
                    for (j, o) in row.iter_mut().enumerate() {
                        *o = (*o - self.mean[j]) / self.scale[j];
                    }
                }
            }
        }
        BagView::Dense {
            data: buf,
            n_features: d,
        }
    }

    /// The standardised copy of `rows` (dense, or CSR when uncentred; `f32` rows stay `f32`,
    /// standardised by [`Scaler::dense_row_into_f32`]).
    pub fn apply(&self, rows: Rows<'_>) -> Result<Instances> {
        let d = rows.n_cols();
        Ok(match rows {
            Rows::Dense32(x) => {
                let mut out = vec![0.0f32; x.len()];
                out.par_chunks_mut(d.max(1))
                    .zip(x.outer_iter().into_par_iter())
                    .for_each(|(o, xr)| match xr.as_slice() {
                        Some(xr) => self.dense_row_into_f32(xr, o),
                        None => self.dense_row_into_f32(&xr.to_vec(), o),
                    });
                Instances::Dense32(DenseF32::from_vec(x.nrows(), d, out)?)
            }
            Rows::Dense(x) => {
                let mut out = Array2::zeros(x.dim());
                for (xr, mut or) in x.rows().into_iter().zip(out.rows_mut()) {
                    for (j, (o, &v)) in or.iter_mut().zip(xr).enumerate() {
                        *o = (v - self.mean[j]) / self.scale[j];
                    }
                }
                Instances::from(out)
            }
            Rows::Sparse(c) if self.is_uncentred() => {
                let data = c
                    .indices()
                    .iter()
                    .zip(c.data())
                    .map(|(&j, &v)| v / self.scale[j])
                    .collect();
                Instances::Sparse(Csr::new(
                    c.n_rows(),
                    d,
                    c.indptr().to_vec(),
                    c.indices().to_vec(),
                    data,
                )?)
            }
            Rows::Sparse(c) => {
                let mut out = Array2::zeros((c.n_rows(), d));
                for (i, mut or) in out.rows_mut().into_iter().enumerate() {
                    let (idx, val) = c.row(i);
                    for (&j, &v) in idx.iter().zip(val) {
                        or[j] += v;
                    }
                    for (j, o) in or.iter_mut().enumerate() {
                        *o = (*o - self.mean[j]) / self.scale[j];
                    }
                }
                Instances::from(out)
            }
        })
    }
}
