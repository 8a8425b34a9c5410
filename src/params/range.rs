//! The allowed range of a numeric hyperparameter, and the one message style in which every
//! out-of-range value is refused: `"{name} must be a finite number > 0, got {value}"`,
//! `"{name} must lie in (0, 1), got {value}"`, `"{name} must be an integer >= 1, got {value}"`.

/// Where a numeric hyperparameter may lie. Optional parameters (`Option<T>`) accept `None`
/// besides the range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Range {
    /// A finite number `> 0`.
    Positive,
    /// A finite number `>= 0`.
    NonNegative,
    /// A finite number `> bound`.
    GreaterThan(f64),
    /// `(0, 1)`, open.
    Open01,
    /// `[0, 1]`, closed.
    Closed01,
    /// `(0, 1]`.
    OpenClosed01,
    /// An integer `>= bound`.
    AtLeast(usize),
}

impl Range {
    /// Whether a real value lies in the range (integer ranges compare the value as a number).
    pub fn contains(&self, v: f64) -> bool {
        match *self {
            Range::Positive => v.is_finite() && v > 0.0,
            Range::NonNegative => v.is_finite() && v >= 0.0,
            Range::GreaterThan(b) => v.is_finite() && v > b,
            Range::Open01 => v > 0.0 && v < 1.0,
            Range::Closed01 => (0.0..=1.0).contains(&v),
            Range::OpenClosed01 => v > 0.0 && v <= 1.0,
            Range::AtLeast(b) => v >= b as f64,
        }
    }

    /// Whether an integer value lies in the range.
    pub fn contains_count(&self, v: usize) -> bool {
        match *self {
            Range::AtLeast(b) => v >= b,
            _ => self.contains(v as f64),
        }
    }

    /// The range in words, after "must": `"be a finite number > 0"`, `"lie in (0, 1)"`.
    pub fn describe(&self) -> String {
        match *self {
            Range::Positive => "be a finite number > 0".into(),
            Range::NonNegative => "be a finite number >= 0".into(),
            Range::GreaterThan(b) => format!("be a finite number > {b}"),
            Range::Open01 => "lie in (0, 1)".into(),
            Range::Closed01 => "lie in [0, 1]".into(),
            Range::OpenClosed01 => "lie in (0, 1]".into(),
            Range::AtLeast(b) => format!("be an integer >= {b}"),
        }
    }

    /// The refusal of `got` for parameter `name` (`optional`: `None` is also allowed).
    pub fn message(&self, name: &str, optional: bool, got: impl std::fmt::Display) -> String {
        let what = self.describe();
        if optional {
            format!(
                "{name} must be None or {}, got {got}",
                what.trim_start_matches("be ")
            )
        } else {
            format!("{name} must {what}, got {got}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_messages() {
        assert!(Range::Positive.contains(1e-300) && !Range::Positive.contains(0.0));
        assert!(!Range::Positive.contains(f64::INFINITY) && !Range::Positive.contains(f64::NAN));
        assert!(Range::Closed01.contains(0.0) && Range::Closed01.contains(1.0));
        assert!(!Range::Open01.contains(1.0) && Range::OpenClosed01.contains(1.0));
        assert!(Range::AtLeast(1).contains_count(1) && !Range::AtLeast(1).contains_count(0));
        assert_eq!(
            Range::Positive.message("C", false, 0.0),
            "C must be a finite number > 0, got 0"
        );
        assert_eq!(
            Range::Open01.message("inner_tol", true, 2.0),
            "inner_tol must be None or lie in (0, 1), got 2"
        );
        assert_eq!(
            Range::AtLeast(1).message("n_xv", false, 0),
            "n_xv must be an integer >= 1, got 0"
        );
    }
}
