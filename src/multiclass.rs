//! Multi-class fits from binary ones: the binary problems of one-vs-rest (run by every fit
//! through the fit's `Setup::one_vs_rest`).
//!
//! Two classes give one binary problem (class 1 positive); `K > 2` classes give `K` problems,
//! class `c` against the rest, solved in parallel and returned in class order (the prediction is
//! the class of the largest score).

/// Targets in {-1, +1} of the binary problems: one problem (class 1 positive) for two
/// classes, one per class otherwise.
pub fn binary_targets(labels: &[usize], n_classes: usize) -> Vec<Vec<f64>> {
    let problems: Vec<usize> = if n_classes == 2 {
        vec![1]
    } else {
        (0..n_classes).collect()
    };
    problems
        .iter()
        .map(|&c| {
            labels
                .iter()
                .map(|&l| if l == c { 1.0 } else { -1.0 })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_and_one_vs_rest_targets() {
        assert_eq!(binary_targets(&[0, 1, 1], 2), vec![vec![-1.0, 1.0, 1.0]]);
        let t = binary_targets(&[0, 2, 1], 3);
        assert_eq!(t.len(), 3);
        assert_eq!(t[2], vec![-1.0, 1.0, -1.0]);
    }
}
