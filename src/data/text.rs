//! What the text readers share (the twin of `python/milsvm/datasets/_text.py`): the data lines
//! of a file, Python's white space and number grammar, Python's `repr` for messages, and the
//! parse of dense feature rows.
//!
//! Every rule here is the Python reader's, so that both accept and refuse the same files with
//! the same message: lines end at LF, CRLF or a lone CR (Python's universal newlines); lines,
//! names and fields are stripped of Python's white space (`str.strip()`, which also removes the
//! separators `\x1c`..`\x1f`); a number is what `float()` reads from ASCII text without `_`.

use std::fmt::Write as _;

use crate::error::{invalid_data, Error, Result};

/// Python's `str.isspace()`: Unicode white space plus the ASCII separators `\x1c`..`\x1f`.
pub(super) fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// Python's `str.strip()`.
pub(super) fn py_strip(s: &str) -> &str {
    s.trim_matches(is_py_space)
}

/// The white space Python's `float()` and `int()` skip around ASCII text.
const NUMBER_SPACE: &[char] = &[' ', '\t', '\n', '\x0b', '\x0c', '\r'];

/// Python's limit on the digits `int()` converts (`sys.get_int_max_str_digits()`).
const INT_MAX_STR_DIGITS: usize = 4300;

/// The error of line `lineno` (1-based) of `name`: `"{name}, line {lineno}: {message}"`.
pub(super) fn line_error(name: &str, lineno: usize, message: impl std::fmt::Display) -> Error {
    invalid_data(format!("{name}, line {lineno}: {message}"))
}

/// The whole input as text, decoded as Python's `open(path, encoding="utf-8-sig",
/// errors="replace")` does: a leading byte-order mark is dropped and every invalid UTF-8
/// sequence becomes U+FFFD.
pub(super) fn decode(bytes: Vec<u8>) -> String {
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_string(),
        None => text,
    }
}

/// Reads everything from `reader` and decodes it (see [`decode`]); an I/O error names `name`.
pub(super) fn read_all(mut reader: impl std::io::BufRead, name: &str) -> Result<String> {
    let mut bytes = Vec::new();
    reader
        .read_to_end(&mut bytes)
        .map_err(|e| invalid_data(format!("{name}: cannot read the file: {e}")))?;
    Ok(decode(bytes))
}

/// Reads the file at `path` and decodes it; the name for messages is the path as given.
pub(super) fn read_path(path: &std::path::Path) -> Result<(String, String)> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path)
        .map_err(|e| invalid_data(format!("{name}: cannot read the file: {e}")))?;
    Ok((name, decode(bytes)))
}

/// The non-blank lines of `text`, stripped, with their 1-based line numbers (blank lines are
/// skipped but counted, so the numbers are an editor's). Fails on a file without data lines.
pub(super) fn data_lines<'a>(name: &str, text: &'a str) -> Result<Vec<(usize, &'a str)>> {
    let mut lines = Vec::new();
    let mut lineno = 0;
    let mut rest = text;
    loop {
        lineno += 1;
        let (line, next) = match rest.find(['\n', '\r']) {
            Some(end) => {
                let after = if rest[end..].starts_with("\r\n") {
                    end + 2
                } else {
                    end + 1
                };
                (&rest[..end], Some(&rest[after..]))
            }
            None => (rest, None),
        };
        let line = py_strip(line);
        if !line.is_empty() {
            lines.push((lineno, line));
        }
        match next {
            Some(next) => rest = next,
            None => break,
        }
    }
    if lines.is_empty() {
        return Err(invalid_data(format!(
            "{name}: the file is empty (it contains no data lines)"
        )));
    }
    Ok(lines)
}

/// Python's `float(token)` on ASCII text without `_` (the readers' strict number): surrounding
/// ASCII white space, an optional sign, then decimal digits with an optional point and
/// exponent, or `inf`, `infinity`, `nan` in any case. `None` for anything else.
pub(super) fn strict_float(token: &str) -> Option<f64> {
    if !token.is_ascii() || token.contains('_') {
        return None;
    }
    // Rust's grammar for f64 is Python's (without `_`): the same strings, the same rounding.
    token.trim_matches(NUMBER_SPACE).parse().ok()
}

/// An integer as Python's `int()` reads it.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum PyInt {
    /// It fits in 64 bits.
    Small(i64),
    /// It does not; its decimal form (no `+`, no leading zeros).
    Big(String),
}

/// Python's `int(token)` on ASCII text without `_`: surrounding ASCII white space, an optional
/// sign and at most 4300 decimal digits. `None` for anything else.
pub(super) fn strict_int(token: &str) -> Option<PyInt> {
    if !token.is_ascii() || token.contains('_') {
        return None;
    }
    let t = token.trim_matches(NUMBER_SPACE);
    let (negative, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty()
        || digits.len() > INT_MAX_STR_DIGITS
        || !digits.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    if let Ok(v) = t.trim_start_matches('+').parse::<i64>() {
        return Some(PyInt::Small(v));
    }
    let digits = digits.trim_start_matches('0');
    Some(PyInt::Big(format!(
        "{}{digits}",
        if negative { "-" } else { "" }
    )))
}

/// A label field read as Python's `_parse_int_label` and `_check_label_range` read it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Label {
    /// An integer in the 64-bit range (written `1`, `+1`, `-1`, `1.0`, `1e3`, ...).
    Int(i64),
    /// An integer beyond the 64-bit range.
    OutOfRange,
    /// Not an integer.
    NotInteger,
}

/// Reads a label: an integer, or a finite number with an integer value.
pub(super) fn parse_label(text: &str) -> Label {
    let t = py_strip(text);
    if !t.is_ascii() || t.contains('_') {
        return Label::NotInteger;
    }
    match strict_int(t) {
        Some(PyInt::Small(v)) => return Label::Int(v),
        Some(PyInt::Big(_)) => return Label::OutOfRange,
        None => {}
    }
    match strict_float(t) {
        Some(v) if v.is_finite() && v.fract() == 0.0 => {
            // 2^63 is exact in f64: [-2^63, 2^63) is the 64-bit range
            const LIMIT: f64 = 9_223_372_036_854_775_808.0;
            if (-LIMIT..LIMIT).contains(&v) {
                Label::Int(v as i64)
            } else {
                Label::OutOfRange
            }
        }
        _ => Label::NotInteger,
    }
}

/// The messages of a label that is not an integer or is out of range, as the Python readers
/// write them (`field` is 1-based).
pub(super) fn label_error(
    name: &str,
    lineno: usize,
    label: Label,
    text: &str,
    field: usize,
) -> Error {
    let text = py_repr(py_strip(text));
    match label {
        Label::OutOfRange => line_error(
            name,
            lineno,
            format!(
                "the label {text} (field {field}) is out of range (labels are 0/1 or class \
                 numbers 0..K-1)"
            ),
        ),
        _ => line_error(
            name,
            lineno,
            format!("the label {text} (field {field}) is not an integer"),
        ),
    }
}

/// Python's `repr()` of a string: single quotes (double quotes if the text holds `'` and no
/// `"`), `\\`, `\t`, `\n`, `\r` escaped, other unprintable characters as `\xhh`, `\uhhhh` or
/// `\Uhhhhhhhh`.
pub(super) fn py_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if py_printable(c) => out.push(c),
            c => {
                let code = u32::from(c);
                let _ = match code {
                    0..=0xff => write!(out, "\\x{code:02x}"),
                    0x100..=0xffff => write!(out, "\\u{code:04x}"),
                    _ => write!(out, "\\U{code:08x}"),
                };
            }
        }
    }
    out.push(quote);
    out
}

/// Python's `str.isprintable()` for one character: not a control, format, private-use,
/// unassigned or separator character (the space excepted). Rust's `escape_debug` escapes the
/// same set (and grapheme extenders at the start of a string, which follow a letter here).
fn py_printable(c: char) -> bool {
    if c.is_ascii() {
        return (' '..='~').contains(&c);
    }
    let mut probe = [0u8; 8];
    probe[0] = b'a';
    let len = 1 + c.encode_utf8(&mut probe[1..]).len();
    std::str::from_utf8(&probe[..len])
        .map(|s| s.escape_debug().eq(s.chars()))
        .unwrap_or(false)
}

/// Python's `repr()` of a float that is not finite (the messages' only floats).
pub(super) fn float_repr(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v == f64::INFINITY {
        "inf".into()
    } else if v == f64::NEG_INFINITY {
        "-inf".into()
    } else {
        format!("{v:?}")
    }
}

/// The error for feature `j` (0-based) of a line, in field `field` (1-based), that is no
/// number.
pub(super) fn not_a_number(
    name: &str,
    lineno: usize,
    j: usize,
    field: usize,
    token: &str,
) -> Error {
    line_error(
        name,
        lineno,
        format!(
            "feature {} (field {field}): {} is not a number",
            j + 1,
            py_repr(token)
        ),
    )
}

/// Parses dense rows of `n_values` feature tokens each (the counts already checked) into one
/// row-major matrix, as `_parse_dense` does: the first token that is not a number (in file
/// order) is the error; else the first value that is not finite. `first_field` is the 1-based
/// field of the first feature on a line (for the messages).
pub(super) fn parse_dense<'s, I>(
    name: &str,
    linenos: &[usize],
    n_values: usize,
    rows: impl Fn(usize) -> I,
    first_field: usize,
) -> Result<Vec<f64>>
where
    I: Iterator<Item = &'s str>,
{
    let mut values = Vec::with_capacity(linenos.len().saturating_mul(n_values));
    let mut first_bad: Option<(usize, usize, f64)> = None;
    for (k, &lineno) in linenos.iter().enumerate() {
        for (j, token) in rows(k).enumerate() {
            let Some(v) = strict_float(token) else {
                return Err(not_a_number(
                    name,
                    lineno,
                    j,
                    j + first_field,
                    token.trim_matches(' '),
                ));
            };
            if !v.is_finite() && first_bad.is_none() {
                first_bad = Some((lineno, j, v));
            }
            values.push(v);
        }
    }
    if let Some((lineno, j, v)) = first_bad {
        return Err(line_error(
            name,
            lineno,
            format!(
                "feature {} (field {}) is not finite ({}); NaN and infinite values are not \
                 allowed",
                j + 1,
                j + first_field,
                float_repr(v)
            ),
        ));
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repr_is_pythons() {
        assert_eq!(py_repr("abc"), "'abc'");
        assert_eq!(py_repr("it's"), "\"it's\"");
        assert_eq!(py_repr("'\""), "'\\'\"'");
        assert_eq!(py_repr("a\\b\tc\u{1c}\u{7f}"), "'a\\\\b\\tc\\x1c\\x7f'");
        assert_eq!(py_repr("é１\u{fffd}"), "'é１\u{fffd}'");
        assert_eq!(py_repr("\u{a0}\u{2003}\u{200b}"), "'\\xa0\\u2003\\u200b'");
        assert_eq!(py_repr("\u{e000}\u{10ffff}"), "'\\ue000\\U0010ffff'");
        assert_eq!(py_repr("e\u{301}"), "'e\u{301}'");
    }

    #[test]
    fn numbers_are_pythons() {
        for (text, want) in [
            (" 1.5e3\t", Some(1500.0)),
            ("+.5", Some(0.5)),
            ("1.", Some(1.0)),
            ("-INFINITY", Some(f64::NEG_INFINITY)),
            ("1e", None),
            (".", None),
            ("1_0", None),
            ("１", None),
            ("\u{1c}1", None),
            ("", None),
        ] {
            assert_eq!(strict_float(text), want, "{text:?}");
        }
        assert_eq!(strict_int(" +007 "), Some(PyInt::Small(7)));
        assert_eq!(
            strict_int("-0009223372036854775809"),
            Some(PyInt::Big("-9223372036854775809".into()))
        );
        assert_eq!(strict_int(&"1".repeat(4301)), None);
        assert_eq!(parse_label(" 1.0 "), Label::Int(1));
        assert_eq!(parse_label("-9223372036854775808"), Label::Int(i64::MIN));
        assert_eq!(parse_label("9223372036854775808"), Label::OutOfRange);
        assert_eq!(parse_label("1e19"), Label::OutOfRange);
        assert_eq!(parse_label("1.5"), Label::NotInteger);
        assert_eq!(parse_label("nan"), Label::NotInteger);
        assert_eq!(parse_label(&"0".repeat(5000)), Label::Int(0));
        assert_eq!(parse_label(&"1".repeat(5000)), Label::NotInteger);
    }

    #[test]
    fn lines_end_at_lf_crlf_and_cr() -> Result<()> {
        let lines = data_lines("f", "a\r\nb\rc\n\n \u{1c}\nd")?;
        assert_eq!(lines, vec![(1, "a"), (2, "b"), (3, "c"), (6, "d")]);
        assert!(data_lines("f", " \n\r\n").is_err());
        assert_eq!(decode(b"\xef\xbb\xbfx\xff".to_vec()), "x\u{fffd}");
        Ok(())
    }
}
