#!/usr/bin/env bash
# Python style: `ruff format --check` and `ruff check` (configured in pyproject.toml) over every
# Python file of the repository. ruff lives in a virtual environment of its own
# ($MILSVM_RUFF_VENV, default target/ruff-venv), installed from PyPI at the version below: the
# formatter's output may change between versions, so the version is pinned.
set -euo pipefail
cd "$(dirname "$0")/.."

RUFF_VERSION="0.17.6"
venv="${MILSVM_RUFF_VENV:-target/ruff-venv}"
if [ "$("$venv/bin/ruff" --version 2>/dev/null)" != "ruff $RUFF_VERSION" ]; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet "ruff==$RUFF_VERSION"
fi

paths=(python tests benches scripts docs/conf.py docs/_ext docs/examples)
echo "== ruff format --check"
"$venv/bin/ruff" format --check "${paths[@]}"
echo "== ruff check"
"$venv/bin/ruff" check "${paths[@]}"
