#!/usr/bin/env bash
# Installs lowlat with its test dependencies and runs the whole test suite: the Rust workspace's
# tests (cargo test) and the Python package's (pytest). Used as is by CI (.ci/run).
set -euo pipefail
cd "$(dirname "$0")"

echo "==> installing lowlat (pip install '.[test]')"
python3 -m pip install --quiet --disable-pip-version-check ".[test]"
# The emulator's optional interop part (aiortc, tests/test_aiortc.py); without it that test skips.
echo "==> installing the emu extra (pip install '.[emu]': aiortc)"
python3 -m pip install --quiet --disable-pip-version-check ".[emu]" \
  || echo "aiortc could not be installed: tests/test_aiortc.py will be skipped" >&2

# pyarrow: the results and sweep summaries are then written as Parquet (the CSV fallback is what
# runs without it): tests/test_sweep.py checks the Parquet summary against the CSV one, and
# tests/test_outputs.py writes a run's series both ways. An optional extra (lowlat[parquet]); without it that test reports itself skipped.
echo "==> installing the Parquet extra (pip install 'pyarrow>=12', as lowlat[parquet])"
python3 -m pip install --quiet --disable-pip-version-check "pyarrow>=12" \
  || echo "pyarrow could not be installed: the Parquet test will be skipped" >&2

# Ray runs the sweep backend test (local and Ray backends give identical rows). It is an optional
# extra (lowlat[ray]); where it cannot be installed that test reports itself skipped.
echo "==> installing the Ray backend (pip install 'ray>=2.9')"
python3 -m pip install --quiet --disable-pip-version-check "ray>=2.9" \
  || echo "Ray could not be installed: the Ray backend test will be skipped" >&2

# Wireshark's dissector checks the wire codecs and `lowlat run --pcap` (crates/lowlat-wire/tests/
# wireshark.rs). Installed when we may (root with apt-get; the README says so); without it those
# checks report themselves skipped.
if ! command -v tshark >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "==> installing tshark: apt-get update && apt-get install -y tshark"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tshark; } \
    || echo "tshark could not be installed: the Wireshark checks will be skipped" >&2
elif ! command -v tshark >/dev/null 2>&1; then
  echo "==> tshark not found and not installable here (needs root and apt-get): the Wireshark checks will be skipped"
fi

echo "==> cargo test"
cargo test --quiet

echo "==> mypy --strict (the Python package)"
python3 -m mypy --strict python/lowlat

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
