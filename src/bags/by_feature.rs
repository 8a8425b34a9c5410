//! CSR rows read by feature ([`FeatureIndex`]): the transpose of a block of sparse rows, for
//! products of a sparse instance with many sparse vectors (prediction's basis, MILES's
//! embedding), which then touch only the features the instance holds.

use std::ops::Range;

use super::Csr;

/// The entries of the CSR rows `rows` grouped by feature, only the features they use (memory
/// `O(nnz)` whatever the number of features): the rows and values of one feature by binary
/// search.
#[derive(Debug, Clone)]
pub(crate) struct FeatureIndex {
    /// The features present, increasing.
    features: Vec<usize>,
    /// Entries of `features[i]` are `starts[i]..starts[i + 1]`.
    starts: Vec<usize>,
    /// The row of each entry, relative to the first row indexed.
    rows: Vec<usize>,
    /// The value of each entry.
    values: Vec<f64>,
}

impl FeatureIndex {
    /// The index of the rows `rows` of `z`; row `rows.start` is row 0 of the index.
    pub(crate) fn new(z: &Csr, rows: Range<usize>) -> Self {
        let k0 = rows.start;
        let mut entries: Vec<(usize, usize, f64)> = Vec::new();
        for k in rows {
            let (js, vs) = z.row(k);
            entries.extend(js.iter().zip(vs).map(|(&j, &v)| (j, k - k0, v)));
        }
        entries.sort_by_key(|&(j, k, _)| (j, k));
        let mut features = Vec::new();
        let mut starts = Vec::new();
        for (e, &(j, _, _)) in entries.iter().enumerate() {
            if features.last() != Some(&j) {
                features.push(j);
                starts.push(e);
            }
        }
        starts.push(entries.len());
        Self {
            features,
            starts,
            rows: entries.iter().map(|e| e.1).collect(),
            values: entries.iter().map(|e| e.2).collect(),
        }
    }

    /// The rows (relative to the first row indexed) and values of feature `j`, by increasing
    /// row.
    pub(crate) fn entries(&self, j: usize) -> (&[usize], &[f64]) {
        match self.features.binary_search(&j) {
            Ok(i) => {
                let r = self.starts[i]..self.starts[i + 1];
                (&self.rows[r.clone()], &self.values[r])
            }
            Err(_) => (&[], &[]),
        }
    }
}
