#!/usr/bin/env bash
# Builds the Linux x86_64 abi3 wheel (one wheel for CPython 3.9 and later) into dist/, as
# manylinux2014 (glibc 2.17 or newer), and checks it with auditwheel. The wheel links against
# glibc 2.17 through zig (maturin --zig, zig from the `ziglang` package on PyPI), so it installs on
# any Linux of the last decade whatever glibc this machine has. Its tools live in a virtual
# environment of its own ($MILSVM_WHEEL_VENV, default target/wheel-venv). Prints the wheel's path
# last. Needs a Rust toolchain (1.89+) and Python 3.9+.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${MILSVM_WHEEL_VENV:-target/wheel-venv}"
if [ ! -x "$venv/bin/maturin" ] || [ ! -x "$venv/bin/auditwheel" ] || ! "$venv/bin/python" -c "import ziglang" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  # zig below 0.16: the versions this script was checked with (each zig release changes its
  # command line, which maturin's wrapper has to follow)
  "$venv/bin/python" -m pip install --quiet "maturin>=1.9,<2" "ziglang<0.16" "auditwheel>=6"
fi

rm -f dist/milsvm-*.whl
# maturin finds zig through the ziglang package of the Python it runs under
PATH="$(cd "$venv/bin" && pwd):$PATH" "$venv/bin/maturin" build --release --zig \
  --compatibility manylinux2014 --out dist >&2
wheel="$(ls dist/milsvm-*-abi3-*.whl)"

# auditwheel names the oldest manylinux tag the wheel's symbol versions allow: the check fails
# on a wheel that needs a glibc newer than 2.28 or carries a library outside the manylinux set
"$venv/bin/auditwheel" show "$wheel" | tee /dev/stderr | tr '\n' ' ' |
  grep -Eq 'platform tag:? +"manylinux_2_(1[0-9]|2[0-8])_x86_64"' || {
    echo "build_wheel.sh: $wheel is not manylinux with glibc <= 2.28" >&2
    exit 1
  }
echo "$wheel"
