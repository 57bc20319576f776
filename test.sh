#!/usr/bin/env bash
# Installs lowlat with its test dependencies and runs the whole test suite: the Rust workspace's
# tests (cargo test) and the Python package's (pytest). Used as is by CI (.ci/run).
set -euo pipefail
cd "$(dirname "$0")"

echo "==> installing lowlat (pip install '.[test]')"
python3 -m pip install --quiet --disable-pip-version-check ".[test]"

# Wireshark's dissector checks the wire codecs (crates/lowlat-wire/tests/wireshark.rs). Installed
# when we may (root with apt-get); without it that one test reports itself skipped.
if ! command -v tshark >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "==> installing tshark (apt-get)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tshark; } >/dev/null 2>&1 \
    || echo "tshark could not be installed: the Wireshark check will be skipped" >&2
fi

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
