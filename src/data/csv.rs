//! The CSV layout of the `mil` package (the twin of `python/milsvm/datasets/csv.py`).

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use ndarray::Array2;

use super::text::{
    data_lines, label_error, line_error, not_a_number, parse_dense, parse_label, py_repr, py_strip,
    read_all, read_path, strict_float, Label,
};
use super::Dataset;
use crate::bags::{Bags, Instances};
use crate::error::{invalid_data, Result};

/// Names of the bag-id column a header may use (compared in lower case).
const BAG_COLUMNS: &[&str] = &[
    "bag", "bags", "bag_id", "bagid", "bag id", "bag-id", "bag_name", "bag name",
];
/// Names of the label column a header may use (compared in lower case).
const LABEL_COLUMNS: &[&str] = &[
    "label",
    "labels",
    "bag_label",
    "bag label",
    "y",
    "class",
    "target",
];

/// Python's `csv` module's limit on the characters of one field (`csv.field_size_limit()`).
const FIELD_LIMIT: usize = 131_072;

/// Reads a CSV file in the layout of the `mil` package.
///
/// Every non-blank line describes one instance: `label,bag_id,feature_1,...,feature_d`.
///
/// * **Header.** Optional. The first line is a header when its first field is not an integer
///   and none of its fields from the third on is a number. A header may name the first two
///   columns `bag_id,label` (bag id first) instead of `label,bag_id`; the names recognised (any
///   case) are `label`, `labels`, `bag_label`, `bag label`, `y`, `class`, `target` and `bag`,
///   `bags`, `bag_id`, `bagid`, `bag id`, `bag-id`, `bag_name`, `bag name`; other names for
///   these two columns are an error.
/// * **Bags.** Bag ids are compared as text (`1` and `1.0` are different bags). The lines of a
///   bag need not be contiguous: bags come in order of first appearance, their instances in
///   file order. Every line of a bag carries the bag's label.
/// * **Values.** Labels are integers (`1`, `-1`, `1.0`); features are dense finite numbers,
///   the same number of them on every line. Fields are comma-separated and may be quoted with
///   `"` (`""` inside quotes is one `"`); a quoted field cannot span lines. Spaces around fields
///   are ignored.
///
/// Errors: [`crate::Error::InvalidData`] naming the file (as `path` displays) and the line: too
/// few fields, an unrecognised header, a label that is not an integer or is beyond 64 bits, an
/// empty bag id, a feature that is not a number or not finite (or empty), a line with a
/// different number of features than the first, an instance whose label differs from its
/// bag's, a field of more than 131072 characters, an empty or unreadable file, a header
/// without data lines.
pub fn read_mil_csv(path: impl AsRef<Path>) -> Result<Dataset> {
    let (name, text) = read_path(path.as_ref())?;
    parse(&name, &text)
}

/// Reads CSV text from `reader` (see [`read_mil_csv`]); `name` stands for the file in messages.
pub fn read_mil_csv_from(reader: impl std::io::BufRead, name: &str) -> Result<Dataset> {
    let text = read_all(reader, name)?;
    parse(name, &text)
}

/// The fields of one line as Python's `csv.reader(..., skipinitialspace=True)` splits it
/// (comma-delimited, `"`-quoted, `""` an escaped quote, non-strict), each stripped. The error
/// is the `csv` module's (a field beyond the size limit).
fn fields(line: &str) -> std::result::Result<Vec<Cow<'_, str>>, String> {
    let too_long = || Err(format!("field larger than field limit ({FIELD_LIMIT})"));
    if !line.contains('"') {
        let mut out = Vec::new();
        for part in line.split(',') {
            let kept = part.trim_start_matches(' ');
            if kept.len() > FIELD_LIMIT && kept.chars().count() > FIELD_LIMIT {
                return too_long();
            }
            out.push(Cow::Borrowed(py_strip(part)));
        }
        return Ok(out);
    }
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        StartField,
        InField,
        InQuoted,
        QuoteInQuoted,
    }
    let mut out: Vec<Cow<'_, str>> = Vec::new();
    let mut field = String::new();
    let mut len = 0usize;
    let mut state = State::StartField;
    let mut save = |field: &mut String, len: &mut usize| {
        out.push(Cow::Owned(py_strip(field).to_string()));
        field.clear();
        *len = 0;
    };
    for c in line.chars() {
        let add = match state {
            State::StartField => match c {
                '"' => {
                    state = State::InQuoted;
                    false
                }
                ' ' => false,
                ',' => {
                    save(&mut field, &mut len);
                    false
                }
                _ => {
                    state = State::InField;
                    true
                }
            },
            State::InField => {
                if c == ',' {
                    save(&mut field, &mut len);
                    state = State::StartField;
                    false
                } else {
                    true
                }
            }
            State::InQuoted => {
                if c == '"' {
                    state = State::QuoteInQuoted;
                    false
                } else {
                    true
                }
            }
            State::QuoteInQuoted => match c {
                '"' => {
                    state = State::InQuoted;
                    true
                }
                ',' => {
                    save(&mut field, &mut len);
                    state = State::StartField;
                    false
                }
                _ => {
                    state = State::InField;
                    true
                }
            },
        };
        if add {
            if len >= FIELD_LIMIT {
                return too_long();
            }
            field.push(c);
            len += 1;
        }
    }
    // The end of the line ends the last field (an open quote is closed by the end of data).
    save(&mut field, &mut len);
    Ok(out)
}

fn is_number(text: &str) -> bool {
    strict_float(text).is_some()
}

/// `None` if the first line is data, else `Some(true)` for a header that puts the bag id
/// first, `Some(false)` for one that puts the label first; the error for other names.
fn header(fields: &[Cow<'_, str>]) -> std::result::Result<Option<bool>, String> {
    if fields.len() < 3
        || fields[2..].iter().any(|f| is_number(f))
        || parse_label(&fields[0]) != Label::NotInteger
    {
        return Ok(None);
    }
    let (first, second) = (fields[0].to_lowercase(), fields[1].to_lowercase());
    let (first, second) = (first.as_str(), second.as_str());
    if BAG_COLUMNS.contains(&first) && LABEL_COLUMNS.contains(&second) {
        return Ok(Some(true));
    }
    if LABEL_COLUMNS.contains(&first) && BAG_COLUMNS.contains(&second) {
        return Ok(Some(false));
    }
    Err(format!(
        "the header names its first two columns {} and {}; they must be the label and the bag \
         id, named label and bag_id (in either order)",
        py_repr(&fields[0]),
        py_repr(&fields[1])
    ))
}

fn parse(name: &str, text: &str) -> Result<Dataset> {
    let lines = data_lines(name, text)?;
    let mut linenos = Vec::with_capacity(lines.len());
    let mut rows = Vec::with_capacity(lines.len());
    for &(lineno, line) in &lines {
        let row =
            fields(line).map_err(|e| line_error(name, lineno, format!("not a CSV line ({e})")))?;
        linenos.push(lineno);
        rows.push(row);
    }
    let bag_first = match rows.first().map(|r| header(r)) {
        Some(Err(message)) => return Err(line_error(name, linenos[0], message)),
        Some(Ok(h)) => h,
        None => None,
    };
    let skip = usize::from(bag_first.is_some());
    let (linenos, rows) = (&linenos[skip..], &rows[skip..]);
    if rows.is_empty() {
        return Err(invalid_data(format!(
            "{name}: the file has a header but no data lines"
        )));
    }
    let bag_first = bag_first.unwrap_or(false);
    let (bag_col, label_col) = if bag_first { (0, 1) } else { (1, 0) };
    let layout = if bag_first {
        "bag_id,label,features..."
    } else {
        "label,bag_id,features..."
    };

    let mut bag_index: HashMap<&str, usize> = HashMap::new();
    let mut bag_names: Vec<&str> = Vec::new();
    let mut labels: Vec<i64> = Vec::new();
    let mut first_line: Vec<usize> = Vec::new();
    let mut bag_of: Vec<usize> = Vec::with_capacity(rows.len());
    let n_values = rows[0].len().saturating_sub(2);
    for (&lineno, row) in linenos.iter().zip(rows) {
        if row.len() < 3 {
            return Err(line_error(
                name,
                lineno,
                format!("too few fields ({}); expected {layout}", row.len()),
            ));
        }
        let label = match parse_label(&row[label_col]) {
            Label::Int(v) => v,
            other => {
                return Err(label_error(
                    name,
                    lineno,
                    other,
                    &row[label_col],
                    label_col + 1,
                ))
            }
        };
        let bag: &str = &row[bag_col];
        if bag.is_empty() {
            return Err(line_error(
                name,
                lineno,
                format!("the bag id (field {}) is empty", bag_col + 1),
            ));
        }
        let b = *bag_index.entry(bag).or_insert(bag_names.len());
        if b == bag_names.len() {
            bag_names.push(bag);
            labels.push(label);
            first_line.push(lineno);
        } else if label != labels[b] {
            return Err(line_error(
                name,
                lineno,
                format!(
                    "label {label} differs from the label {} of bag {} (line {}); every line of \
                     a bag carries the bag's label",
                    labels[b],
                    py_repr(bag),
                    first_line[b]
                ),
            ));
        }
        bag_of.push(b);
        let features = &row[2..];
        if features.len() != n_values {
            return Err(line_error(
                name,
                lineno,
                format!(
                    "{} feature values, but line {} has {n_values} (every line must have the \
                     same number of features)",
                    features.len(),
                    linenos[0]
                ),
            ));
        }
        if let Some((j, value)) = features
            .iter()
            .enumerate()
            .find(|(_, v)| v.is_empty() || v.contains(','))
        {
            return Err(not_a_number(name, lineno, j, j + 3, value));
        }
    }

    let values = parse_dense(
        name,
        linenos,
        n_values,
        |k| rows[k][2..].iter().map(|f| f.as_ref()),
        3,
    )?;

    // Instances grouped by bag (order of first appearance), in file order within a bag.
    let n_bags = bag_names.len();
    let mut bag_ptr = vec![0usize; n_bags + 1];
    for &b in &bag_of {
        bag_ptr[b + 1] += 1;
    }
    for b in 0..n_bags {
        bag_ptr[b + 1] += bag_ptr[b];
    }
    let mut next = bag_ptr.clone();
    let mut grouped = vec![0.0; values.len()];
    for (k, &b) in bag_of.iter().enumerate() {
        let to = next[b] * n_values;
        grouped[to..to + n_values].copy_from_slice(&values[k * n_values..(k + 1) * n_values]);
        next[b] += 1;
    }
    let x = Array2::from_shape_vec((rows.len(), n_values), grouped)
        .map_err(|e| invalid_data(format!("{name}: {e}")))?;
    Ok(Dataset {
        bags: Bags::new(Instances::from(x), bag_ptr)?,
        labels,
        bag_names: bag_names.into_iter().map(str::to_string).collect(),
    })
}
