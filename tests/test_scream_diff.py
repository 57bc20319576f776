"""The differential harness against Ericsson's C++ SCReAM v2 (optional).

Runs only when a checkout of github.com/EricssonResearch/scream is named by $SCREAM_REF and a C++
compiler is present (the reference's sources are never part of lowlat); skips otherwise.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REF = os.environ.get("SCREAM_REF")

pytestmark = pytest.mark.skipif(
    not REF or not (Path(REF) / "code" / "ScreamV2Tx.cpp").is_file() or not (shutil.which("g++") or os.environ.get("CXX")),
    reason="set SCREAM_REF to a checkout of EricssonResearch/scream (and have g++) to run the differential harness",
)


def test_scream2_matches_the_reference_on_a_1_mbps_100_ms_path(tmp_path, capsys):
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import scream_diff
    finally:
        sys.path.pop(0)
    rc = scream_diff.main(
        ["--ref", REF, "--build", str(tmp_path), "--capacities", "1", "--rtts", "100", "--jitters", "0", "--duration", "30", "--from", "10"]
    )
    out = capsys.readouterr().out
    row = [line for line in out.splitlines() if line.startswith("| 1 Mbit/s")]
    assert len(row) == 1, out
    assert rc == 0, f"outside the bounds (rate within 10 %, queueing delay within 2x):\n{out}"
