import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def lowlat_cli():
    """Runs the installed `lowlat` command (falls back to `python -m lowlat.cli`)."""
    exe = shutil.which("lowlat")
    base = [exe] if exe else [sys.executable, "-m", "lowlat.cli"]

    def run(*args, check=False):
        return subprocess.run([*base, *map(str, args)], capture_output=True, text=True, check=check, timeout=600)

    return run
