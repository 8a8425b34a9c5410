#!/usr/bin/env bash
# Builds the documentation site into site/: the Sphinx pages from docs/ (MyST Markdown, the API
# reference from the docstrings, the gallery run), and the Rust API (cargo doc) into site/rust/.
# Warnings are errors, and a link to a missing page, file or anchor fails the build (Sphinx's
# own cross-references, then scripts/check_links.py over the written HTML).
#
# Its tools live in a virtual environment of its own ($MILSVM_DOCS_VENV, default
# target/docs-venv). milsvm is installed there from the wheel $MILSVM_WHEEL when given (the
# test suite passes the one it built), else from a wheel built now by scripts/build_wheel.sh.
# Needs a Rust toolchain (1.89+) and Python 3.9+.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${MILSVM_DOCS_VENV:-target/docs-venv}"
if [ ! -x "$venv/bin/sphinx-build" ]; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
fi
venv="$(cd "$venv" && pwd)"
"$venv/bin/python" -m pip install --quiet "sphinx>=8" "pydata-sphinx-theme>=0.16" "sphinx-gallery>=0.19" \
  "numpydoc>=1.8" "myst-parser>=4" "sphinx-design>=0.6" "matplotlib>=3.9"

wheel="${MILSVM_WHEEL:-}"
if [ -z "$wheel" ]; then
  wheel="$(bash scripts/build_wheel.sh | tail -n 1)"
fi
# the wheel's version may equal an installed one: reinstall milsvm itself, its dependencies once
"$venv/bin/python" -m pip install --quiet "$wheel"
"$venv/bin/python" -m pip install --quiet --force-reinstall --no-deps "$wheel"

echo "== sphinx-build (warnings are errors)"
rm -rf site
# run from outside the repository so that the installed milsvm is imported, not python/milsvm
(cd docs && "$venv/bin/sphinx-build" -b html -W --keep-going -q -j 1 -d ../target/docs-doctrees . ../site)

echo "== cargo doc (the Rust API, into site/rust)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --lib --locked --quiet
mkdir -p site/rust
cp -r "${CARGO_TARGET_DIR:-target}/doc/." site/rust/

echo "== internal links of the written site"
"$venv/bin/python" scripts/check_links.py site --skip rust --skip _static
echo "site/index.html"
