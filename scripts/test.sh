#!/usr/bin/env bash
# The whole test suite: Rust formatting and lints (with and without the `python` feature, and of
# the C library `capi/`), the Rust tests (no Python), the C library's build, then the
# wheel built into a fresh virtual environment and pytest run against the installed package
# (whose C API tests compile C programs with `cc`). Needs: a Rust toolchain with rustfmt +
# clippy, Python 3.9+, a C compiler.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy (core)"
cargo clippy --all-targets --locked -- -D warnings
echo "== cargo clippy (python feature)"
cargo clippy --all-targets --locked --features python -- -D warnings
echo "== cargo clippy (C library)"
cargo clippy -p milsvm-capi --all-targets --locked -- -D warnings
echo "== cargo test"
cargo test --locked
echo "== cargo test (C library: the checked-in header is current)"
cargo test --locked -p milsvm-capi
echo "== cargo build (C library: tests/test_capi.py links its C programs against it)"
cargo build --locked -p milsvm-capi
export MILSVM_C_LIB="$PWD/target/debug/libmilsvm_c.so"

echo "== pip install . into a fresh virtual environment"
venv="${MILSVM_VENV:-$(mktemp -d)/venv}"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet ".[test]"

echo "== pytest (against the installed wheel)"
# Run from the repository root with the venv's pytest: the installed milsvm is imported, not
# python/milsvm (which has no compiled _core). Exit code 5 (no tests collected) is a failure.
set +e
"$venv/bin/pytest" -q tests
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 1
fi
exit "$rc"
