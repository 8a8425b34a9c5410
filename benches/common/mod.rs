//! What the hand-timed cargo benches (`linear_solvers`, `score_bandwidth`) share: their command
//! line. A folder module, so that cargo does not take it for a bench target of its own.

/// The value after `name` on the command line (`cargo bench --bench X -- --name 10`), or
/// `default` when it is absent or not a number.
pub fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
