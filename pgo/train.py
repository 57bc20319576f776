"""Makes the profile ``pip install .`` builds lowlat's Rust core with (see lowlat_build.py).

Builds the extension instrumented (``-Cprofile-generate``, in ``target/pgo-generate``), runs the
training workload on it (every catalog scenario, the RMCAT cases with GCC, NADA and SCReAM, and
``reproduce zhuge`` on its generated stand-in traces, one process so every run's counts are
written), merges the counts with the toolchain's ``llvm-profdata`` (``rustup component add
llvm-tools``) and writes ``lowlat.profdata.gz`` and ``profile.json`` here. The workload is
lowlat's own: no trace or result from outside the repository shapes the profile.

Run it from the repository after changing the simulator's hot paths (a profile older than the
code only loses the gain of the functions changed since):

    python3 pgo/train.py
"""

from __future__ import annotations

import gzip
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from lowlat_build import META, PROFILE, llvm_major  # noqa: E402

#: What the instrumented extension runs (in one process: a pool worker's counts would be lost at
#: its exit). The simulated seconds of the Zhuge part keep the whole under a minute.
WORKLOAD = """
import sys, tempfile, time
from pathlib import Path
from lowlat.api import run
from lowlat.catalog import scenarios
from lowlat.reproduce.zhuge import reproduce

t0 = time.perf_counter()
paths = [s["path"] for s in scenarios()]
for path in paths:
    run(path, progress=False, summary_only=True)
for case in [p for p in paths if Path(p).stem.startswith("rmcat-")]:
    for cc in ("gcc", "nada", "scream"):
        run(case, cc=cc, progress=False, summary_only=True)
print(f"catalog and RMCAT: {time.perf_counter() - t0:.1f} s", flush=True)
with tempfile.TemporaryDirectory() as out:
    reproduce(out, None, seconds=100.0, ks=[5, 10, 20], jobs=1, plots=False, progress=False, log=lambda s: None)
print(f"with reproduce zhuge: {time.perf_counter() - t0:.1f} s", flush=True)
"""


def rustc_info() -> tuple[str, str]:
    """``rustc -vV`` and the host triple."""
    out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    host = next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("host: "))
    return out, host


def find_profdata(host: str) -> Path:
    """The toolchain's llvm-profdata (its LLVM reads what rustc's instrumentation writes)."""
    sysroot = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True, text=True, check=True).stdout.strip()
    tool = Path(sysroot) / "lib" / "rustlib" / host / "bin" / ("llvm-profdata.exe" if os.name == "nt" else "llvm-profdata")
    if not tool.is_file():
        sys.exit(f"train.py: {tool} is missing; install it with `rustup component add llvm-tools`")
    return tool


def extension_file(target: Path) -> Path:
    """The cdylib cargo built for lowlat-py."""
    name = {"Darwin": "lib_native.dylib", "Windows": "_native.dll"}.get(platform.system(), "lib_native.so")
    return target / "release" / name


def main() -> None:
    version, host = rustc_info()
    major = llvm_major(version)
    if major is None:
        sys.exit("train.py: rustc -vV names no LLVM version")
    profdata = find_profdata(host)
    # Which code the profile is of (before this script rewrites its own two files).
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    changed = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!pgo/lowlat.profdata.gz", ":!pgo/profile.json"],
        cwd=ROOT, capture_output=True, text=True,
    ).stdout.strip()
    target = ROOT / "target" / "pgo-generate"
    with tempfile.TemporaryDirectory(prefix="lowlat-pgo-train-") as tmp:
        # A fixed counts folder: the instrumented build (which names it) is reused next time.
        raw, stage = target / "profraw", Path(tmp) / "stage"
        shutil.rmtree(raw, ignore_errors=True)
        env = dict(os.environ, CARGO_TARGET_DIR=str(target), CARGO_ENCODED_RUSTFLAGS=f"-Cprofile-generate={raw}")
        env.pop("RUSTFLAGS", None)
        print("==> building the instrumented extension (cargo build --release -p lowlat-py)", flush=True)
        subprocess.run(
            ["cargo", "build", "--release", "-p", "lowlat-py", "--features", "extension-module"], cwd=ROOT, env=env, check=True
        )
        shutil.copytree(ROOT / "python" / "lowlat", stage / "lowlat", ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
        shutil.copy2(extension_file(target), stage / "lowlat" / ("_native.pyd" if os.name == "nt" else "_native.abi3.so"))
        print("==> running the training workload", flush=True)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", WORKLOAD], cwd=tmp, env=dict(os.environ, PYTHONPATH=str(stage)), check=True)
        runs = sorted(raw.glob("*.profraw"))
        if not runs:
            sys.exit(f"train.py: the workload wrote no counts in {raw}")
        merged = Path(tmp) / "lowlat.profdata"
        subprocess.run([str(profdata), "merge", "--sparse", "-o", str(merged), *map(str, runs)], check=True)
        # mtime 0: the same counts give the same file.
        PROFILE.write_bytes(gzip.compress(merged.read_bytes(), compresslevel=9, mtime=0))
    meta = {
        "llvm_major": major,
        "rustc": version.splitlines()[0],
        "made_from": commit + ("+changes" if changed else ""),
        "workload": "pgo/train.py: the catalog, RMCAT with gcc/nada/scream, reproduce zhuge on generated traces (100 s)",
        "training_s": round(time.perf_counter() - started, 1),
    }
    META.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {PROFILE.relative_to(ROOT)} ({PROFILE.stat().st_size // 1024} KiB) and {META.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
