//! The MILL text format (the twin of `python/milsvm/datasets/mill.py`).

use std::collections::HashMap;
use std::path::Path;

use ndarray::Array2;

use super::text::{
    data_lines, label_error, line_error, parse_dense, parse_label, py_repr, py_strip, read_all,
    read_path, strict_float, strict_int, Label, PyInt,
};
use super::Dataset;
use crate::bags::{Bags, Csr, Instances};
use crate::error::{invalid_data, invalid_param, Error, Result};

/// The fields of a MILL line after the instance name.
struct InstanceLine<'a> {
    lineno: usize,
    bag: &'a str,
    label: i64,
    /// The features (stripped; empty if the line has none).
    rest: &'a str,
}

/// Reads a MILL file.
///
/// Every non-blank line describes one instance: `instance_name,bag_name,label,features...`.
/// The features are dense (`v1,v2,...,vd`) or sparse (`index:value,...`, 1-based indices,
/// absent features 0); the first line with features decides, and the whole file must be of
/// that kind. The lines of a bag are contiguous and repeat its integer label (written `1`,
/// `-1`, `1.0`, ...). UTF-8 or ASCII text, LF, CRLF or CR line ends, blank lines ignored; names
/// and fields are stripped of white space.
///
/// `n_features`: for a sparse file, the number of features (default: the largest index seen;
/// a larger index is an error); for a dense file, the number every line must have. With it, a
/// sparse file may hold only all-zero instances (`name,bag,label` lines). `Some(0)` is an
/// [`Error::InvalidParameter`].
///
/// Errors: [`Error::InvalidData`] naming the file (as `path` displays) and the line: too few
/// fields, an empty bag name, a label that is not an integer or is beyond 64 bits, a value that
/// is not a number or not finite, a bad `index:value` entry, an index below 1, above
/// `n_features` or repeated on a line, lines with different numbers of dense features, a bag
/// whose lines are not contiguous, an instance whose label differs from its bag's, an empty or
/// unreadable file.
pub fn read_mill(path: impl AsRef<Path>, n_features: Option<usize>) -> Result<Dataset> {
    check_n_features(n_features)?;
    let (name, text) = read_path(path.as_ref())?;
    parse(&name, &text, n_features)
}

/// Reads MILL text from `reader` (see [`read_mill`]); `name` stands for the file in messages.
pub fn read_mill_from(
    reader: impl std::io::BufRead,
    name: &str,
    n_features: Option<usize>,
) -> Result<Dataset> {
    check_n_features(n_features)?;
    let text = read_all(reader, name)?;
    parse(name, &text, n_features)
}

fn check_n_features(n_features: Option<usize>) -> Result<()> {
    if n_features == Some(0) {
        return Err(invalid_param(
            "n_features must be None or a positive integer, got 0",
        ));
    }
    Ok(())
}

/// `instance_name,bag_name,label[,features]` of one line, checked.
fn split_line<'a>(name: &str, lineno: usize, line: &'a str) -> Result<InstanceLine<'a>> {
    let parts: Vec<&str> = line.splitn(4, ',').collect();
    if parts.len() < 3 {
        return Err(line_error(
            name,
            lineno,
            format!(
                "too few fields ({}); expected instance_name,bag_name,label,features...",
                parts.len()
            ),
        ));
    }
    let bag = py_strip(parts[1]);
    if bag.is_empty() {
        return Err(line_error(name, lineno, "the bag name (field 2) is empty"));
    }
    let label = match parse_label(parts[2]) {
        Label::Int(v) => v,
        other => return Err(label_error(name, lineno, other, parts[2], 3)),
    };
    let rest = parts.get(3).map_or("", |r| py_strip(r));
    Ok(InstanceLine {
        lineno,
        bag,
        label,
        rest,
    })
}

fn parse(name: &str, text: &str, n_features: Option<usize>) -> Result<Dataset> {
    let mut lines = Vec::new();
    for (lineno, line) in data_lines(name, text)? {
        lines.push(split_line(name, lineno, line)?);
    }

    // Bags: runs of lines with one bag name, each name in one run, one label per bag.
    let mut bag_ptr = Vec::new();
    let mut labels = Vec::new();
    let mut bag_names = Vec::new();
    let mut first_line: HashMap<&str, usize> = HashMap::new();
    for (k, line) in lines.iter().enumerate() {
        if bag_names.last() != Some(&line.bag) {
            if let Some(first) = first_line.get(line.bag) {
                return Err(line_error(
                    name,
                    line.lineno,
                    format!(
                        "bag {} reappears after other bags (it was first seen on line {first}); \
                         the lines of a bag must be contiguous",
                        py_repr(line.bag)
                    ),
                ));
            }
            first_line.insert(line.bag, line.lineno);
            bag_ptr.push(k);
            labels.push(line.label);
            bag_names.push(line.bag);
        } else if let Some(&label) = labels.last() {
            if line.label != label {
                return Err(line_error(
                    name,
                    line.lineno,
                    format!(
                        "label {} differs from the label {label} of bag {} (line {}); every \
                         instance line repeats its bag's label",
                        line.label,
                        py_repr(line.bag),
                        first_line.get(line.bag).copied().unwrap_or(0)
                    ),
                ));
            }
        }
    }
    bag_ptr.push(lines.len());

    let sparse = match lines.iter().find(|l| !l.rest.is_empty()) {
        Some(first) => first.rest.contains(':'),
        None if n_features.is_none() => {
            return Err(invalid_data(format!(
                "{name}: no line has feature values, so the feature format cannot be determined \
                 (expected instance_name,bag_name,label,features...)"
            )))
        }
        None => true,
    };
    let instances = if sparse {
        Instances::Sparse(parse_sparse(name, &lines, n_features)?)
    } else {
        parse_dense_lines(name, &lines, n_features)?
    };
    Ok(Dataset {
        bags: Bags::new(instances, bag_ptr)?,
        labels,
        bag_names: bag_names.into_iter().map(str::to_string).collect(),
    })
}

fn parse_dense_lines(
    name: &str,
    lines: &[InstanceLine<'_>],
    n_features: Option<usize>,
) -> Result<Instances> {
    if let Some(line) = lines.iter().find(|l| l.rest.is_empty()) {
        return Err(line_error(
            name,
            line.lineno,
            "too few fields: no feature values (expected instance_name,bag_name,label,\
             features...)",
        ));
    }
    let count = |rest: &str| rest.matches(',').count() + 1;
    let Some(first) = lines.first() else {
        return Err(invalid_data(format!(
            "{name}: the file has no instance lines"
        )));
    };
    let n_values = count(first.rest);
    if let Some(d) = n_features.filter(|&d| d != n_values) {
        return Err(line_error(
            name,
            first.lineno,
            format!("{n_values} feature values, but n_features={d} was requested"),
        ));
    }
    for line in lines {
        let c = count(line.rest);
        if c != n_values {
            return Err(line_error(
                name,
                line.lineno,
                format!(
                    "{c} feature values, but line {} has {n_values} (all instances of a dense \
                     file must have the same number of features)",
                    first.lineno
                ),
            ));
        }
    }
    let linenos: Vec<usize> = lines.iter().map(|l| l.lineno).collect();
    let values = parse_dense(name, &linenos, n_values, |k| lines[k].rest.split(','), 4)?;
    let x = Array2::from_shape_vec((lines.len(), n_values), values)
        .map_err(|e| invalid_data(format!("{name}: {e}")))?;
    Ok(Instances::from(x))
}

/// The first bad `index:value` entry of a line, described as the Python reader does.
fn token_error(name: &str, lineno: usize, rest: &str) -> Error {
    for (j, token) in rest.split(',').enumerate() {
        let j = j + 1;
        let parts: Vec<&str> = token.split(':').collect();
        let what = py_repr(py_strip(token));
        if parts.len() != 2 {
            return line_error(
                name,
                lineno,
                format!(
                    "feature entry {j}: {what} is not of the form index:value (sparse files \
                     need index:value on every entry)"
                ),
            );
        }
        if strict_int(parts[0]).is_none() {
            return line_error(
                name,
                lineno,
                format!(
                    "feature entry {j}: {what}: the index {} is not an integer",
                    py_repr(py_strip(parts[0]))
                ),
            );
        }
        if strict_float(parts[1]).is_none() {
            return line_error(
                name,
                lineno,
                format!(
                    "feature entry {j}: {what}: the value {} is not a number",
                    py_repr(py_strip(parts[1]))
                ),
            );
        }
    }
    line_error(name, lineno, "malformed index:value entries")
}

/// Parses the `index:value` lines into one CSR matrix (an empty line is an all-zero instance),
/// reporting defects in the Python reader's order: a malformed entry (first line), an index
/// beyond 64 bits, an index below 1, a value that is not finite, an index above `n_features`,
/// an index repeated on a line.
fn parse_sparse(name: &str, lines: &[InstanceLine<'_>], n_features: Option<usize>) -> Result<Csr> {
    let mut indptr = Vec::with_capacity(lines.len() + 1);
    indptr.push(0);
    let mut idx: Vec<i64> = Vec::new();
    let mut val: Vec<f64> = Vec::new();
    let mut overflow = false;
    // the first index whose magnitude exceeds i64::MAX (i64::MIN included), as written
    let mut first_huge: Option<(usize, String)> = None;
    for (k, line) in lines.iter().enumerate() {
        if !line.rest.is_empty() {
            if !line.rest.is_ascii() || line.rest.contains('_') {
                return Err(token_error(name, line.lineno, line.rest));
            }
            for token in line.rest.split(',') {
                let mut parts = token.split(':');
                let (Some(a), Some(b), None) = (parts.next(), parts.next(), parts.next()) else {
                    return Err(token_error(name, line.lineno, line.rest));
                };
                let (Some(i), Some(v)) = (strict_int(a), strict_float(b)) else {
                    return Err(token_error(name, line.lineno, line.rest));
                };
                let i = match i {
                    PyInt::Small(i) => {
                        if i == i64::MIN && first_huge.is_none() {
                            first_huge = Some((k, i.to_string()));
                        }
                        i
                    }
                    PyInt::Big(text) => {
                        overflow = true;
                        if first_huge.is_none() {
                            first_huge = Some((k, text));
                        }
                        i64::MAX
                    }
                };
                idx.push(i);
                val.push(v);
            }
        }
        indptr.push(idx.len());
    }

    let line_of = |p: usize| {
        let row = indptr.partition_point(|&q| q <= p).saturating_sub(1);
        lines.get(row).map_or(0, |l| l.lineno)
    };
    if overflow {
        if let Some((k, text)) = first_huge {
            return Err(line_error(
                name,
                lines.get(k).map_or(0, |l| l.lineno),
                format!("feature index {text} is too large"),
            ));
        }
    }
    if let Some(p) = idx.iter().position(|&i| i < 1) {
        return Err(line_error(
            name,
            line_of(p),
            format!("feature index {} is < 1 (indices are 1-based)", idx[p]),
        ));
    }
    if let Some(p) = val.iter().position(|v| !v.is_finite()) {
        return Err(line_error(
            name,
            line_of(p),
            format!(
                "the value of feature {} is not finite ({}); NaN and infinite values are not \
                 allowed",
                idx[p],
                super::text::float_repr(val[p])
            ),
        ));
    }
    let n_cols = match n_features {
        Some(d) => {
            if let Some(p) = idx
                .iter()
                .position(|&i| usize::try_from(i).map_or(true, |i| i > d))
            {
                return Err(line_error(
                    name,
                    line_of(p),
                    format!("feature index {} exceeds n_features={d}", idx[p]),
                ));
            }
            d
        }
        None => {
            let Some(&max) = idx.iter().max() else {
                return Err(invalid_data(format!(
                    "{name}: no instance has a feature value; give n_features to load an \
                     all-zero sparse file"
                )));
            };
            usize::try_from(max)
                .map_err(|_| invalid_data(format!("{name}: feature index {max} is too large")))?
        }
    };

    // Rows sorted by column, a repeated index refused, explicit zeros dropped.
    let mut out_ptr = Vec::with_capacity(lines.len() + 1);
    out_ptr.push(0);
    let mut out_idx = Vec::with_capacity(idx.len());
    let mut out_val = Vec::with_capacity(val.len());
    let mut row: Vec<(usize, f64)> = Vec::new();
    for (k, w) in indptr.windows(2).enumerate() {
        row.clear();
        for p in w[0]..w[1] {
            // every index is in 1..=n_cols here
            row.push((usize::try_from(idx[p]).unwrap_or(1) - 1, val[p]));
        }
        row.sort_unstable_by_key(|&(j, _)| j);
        if let Some(pair) = row.windows(2).find(|p| p[0].0 == p[1].0) {
            return Err(line_error(
                name,
                lines.get(k).map_or(0, |l| l.lineno),
                format!("feature index {} appears more than once", pair[0].0 + 1),
            ));
        }
        for &(j, v) in row.iter().filter(|(_, v)| *v != 0.0) {
            out_idx.push(j);
            out_val.push(v);
        }
        out_ptr.push(out_idx.len());
    }
    Csr::new(lines.len(), n_cols, out_ptr, out_idx, out_val)
}
