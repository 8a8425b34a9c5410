#!/usr/bin/env bash
# The whole test suite: the no-diary check (scripts/check_no_diary.sh), Python formatting and
# lints (scripts/lint_python.sh, ruff), Rust formatting and
# lints (with and without the `python` feature, and of the C library `capi/`), the Rust tests
# (no Python), the C library's build, then the wheel built once (scripts/build_wheel.sh) and
# installed into a fresh virtual environment with no Rust on PATH, the type stubs checked against
# the installed package (scripts/gen_stub.py --check), the demo and pytest run against the installed
# package (whose C API tests compile C programs with `cc`), and the
# documentation site built from the same wheel (scripts/docs.sh). Needs: a Rust toolchain with
# rustfmt + clippy, Python 3.9+, a C compiler.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== no measurement diary in the code and docs"
bash scripts/check_no_diary.sh
echo "== Python style (scripts/lint_python.sh: ruff format --check, ruff check)"
bash scripts/lint_python.sh
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

echo "== the wheel (scripts/build_wheel.sh: manylinux, abi3, checked by auditwheel)"
wheel="$(bash scripts/build_wheel.sh | tail -n 1)"

# PATH without the directories that hold a Rust toolchain: the wheel must install and run
# without one
no_rust_path=""
IFS=: read -ra path_dirs <<< "$PATH"
for d in "${path_dirs[@]}"; do
  if [ -e "$d/cargo" ] || [ -e "$d/rustc" ]; then continue; fi
  no_rust_path="${no_rust_path:+$no_rust_path:}$d"
done
if PATH="$no_rust_path" command -v cargo >/dev/null || PATH="$no_rust_path" command -v rustc >/dev/null; then
  echo "could not take the Rust toolchain off PATH" >&2
  exit 1
fi

echo "== the wheel into a fresh virtual environment, no Rust on PATH"
venv="${MILSVM_VENV:-$(mktemp -d)/venv}"
python3 -m venv "$venv"
PATH="$no_rust_path" "$venv/bin/python" -m pip install --quiet --upgrade pip
PATH="$no_rust_path" "$venv/bin/python" -m pip install --quiet "$wheel[test]"
# a reused venv may hold a milsvm of the same version: reinstall milsvm itself from this wheel
PATH="$no_rust_path" "$venv/bin/python" -m pip install --quiet --force-reinstall --no-deps "$wheel"

echo "== the type stubs python/milsvm/*.pyi are the ones scripts/gen_stub.py generates from the wheel"
PATH="$no_rust_path" "$venv/bin/python" scripts/gen_stub.py --check

echo "== milsvm demo (from the wheel, no Rust on PATH)"
(cd "$(mktemp -d)" && PATH="$no_rust_path" "$venv/bin/milsvm" demo)

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
if [ "$rc" -ne 0 ]; then
  exit "$rc"
fi

echo "== documentation site (scripts/docs.sh, from the same wheel)"
MILSVM_WHEEL="$wheel" bash scripts/docs.sh
