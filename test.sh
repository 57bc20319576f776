#!/usr/bin/env bash
# Installs lowlat with its test dependencies and runs the whole test suite: the Rust workspace's
# tests (cargo test) and the Python package's (pytest). Used as is by CI (.ci/run).
set -euo pipefail
cd "$(dirname "$0")"

echo "==> installing lowlat (pip install '.[test]')"
python3 -m pip install --quiet --disable-pip-version-check ".[test]"

echo "==> cargo test"
cargo test --quiet

echo "==> pytest"
set +e
python3 -m pytest -q "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: the Python suite is missing" >&2
  exit 1
fi
exit "$status"
