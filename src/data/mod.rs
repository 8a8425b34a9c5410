//! Reading data sets from text files, without Python: the MILL format and the CSV layout of
//! the `mil` package.
//!
//! * [`read_mill`] / [`read_mill_from`]: MILL, one instance a line,
//!   `instance_name,bag_name,label,features...`, the features dense (`v1,...,vd`) or sparse
//!   (`index:value,...`, 1-based indices); the lines of a bag are contiguous.
//! * [`read_mil_csv`] / [`read_mil_csv_from`]: `label,bag_id,features...` (the layout of the
//!   `mil` package's data sets), an optional header, the lines of a bag anywhere in the file.
//!
//! Each returns a [`Dataset`]: the bags (dense, or CSR for a sparse MILL file), the label of
//! every bag as the file writes it, and the bag names. The readers accept exactly what the
//! Python readers (`milsvm.datasets.load_mill`, `load_mil_csv`) accept and refuse the rest with
//! one [`Error::InvalidData`](crate::Error::InvalidData) whose message is theirs: it names the
//! file and the 1-based line (`"musk1.data, line 7: the label 'x' (field 3) is not an
//! integer"`). A file that cannot be read is an `InvalidData` naming the file too. Nothing here
//! panics on any input.
//!
//! ```
//! use milsvm::data::read_mill_from;
//!
//! let text = "i1,bag1,1,0.5,1.5\ni2,bag1,1,2.0,0.0\ni3,bag2,0,1.0,1.0\n";
//! let data = read_mill_from(text.as_bytes(), "toy.data", None)?;
//! assert_eq!(data.bags.n_bags(), 2);
//! assert_eq!(data.labels, [1, 0]);
//! assert_eq!(data.bag_names, ["bag1", "bag2"]);
//! let (classes, y) = data.class_indices();      // for a fit: classes [0, 1], y [1, 0]
//! assert_eq!((classes, y), (vec![0, 1], vec![1, 0]));
//! # Ok::<(), milsvm::Error>(())
//! ```

mod csv;
mod mill;
mod text;

pub use csv::{read_mil_csv, read_mil_csv_from};
pub use mill::{read_mill, read_mill_from};

use crate::bags::Bags;

/// A data set read from a file: bags, labels and bag names, one each per bag, in the same
/// order (file order for MILL, order of first appearance for CSV).
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// The bags: dense instances for a dense file, CSR (sorted column indices, no explicit
    /// zeros) for a sparse MILL file.
    pub bags: Bags,
    /// The label of every bag as the file writes it (`0`/`1`, `-1`/`1`, class numbers, ...).
    pub labels: Vec<i64>,
    /// The name of every bag (MILL: field 2; CSV: the bag id, unquoted).
    pub bag_names: Vec<String>,
}

impl Dataset {
    /// The distinct labels in increasing order (the classes) and, for every bag, the index of
    /// its label among them: the class indices a fit takes.
    pub fn class_indices(&self) -> (Vec<i64>, Vec<usize>) {
        let mut classes = self.labels.clone();
        classes.sort_unstable();
        classes.dedup();
        let y = self
            .labels
            .iter()
            .map(|l| classes.partition_point(|c| c < l))
            .collect();
        (classes, y)
    }
}
