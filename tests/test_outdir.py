"""Results folders are never stale: written aside and renamed into place, replaced whole, and an
interrupted or killed run leaves the old results or nothing (never a mix of two runs)."""

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from lowlat.outdir import check_target, results_dir
from lowlat.userinput import UserError


def test_results_replace_the_folder_whole(tmp_path):
    target = tmp_path / "out"
    with results_dir(target) as tmp:
        (tmp / "a.txt").write_text("first")
        (tmp / "sub").mkdir()
        (tmp / "sub" / "old.png").write_text("x")
        assert not target.exists(), "nothing appears before the block ends"
    assert (target / "a.txt").read_text() == "first"
    with pytest.raises(UserError, match="not empty.*--force"):
        with results_dir(target):
            pass
    with results_dir(target, force=True) as tmp:
        (tmp / "b.txt").write_text("second")
    assert sorted(p.name for p in target.iterdir()) == ["b.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"], "no hidden folder left behind"


def test_a_failure_leaves_the_old_results_intact(tmp_path):
    target = tmp_path / "out"
    with results_dir(target) as tmp:
        (tmp / "a.txt").write_text("first")
    for exc in (RuntimeError("boom"), KeyboardInterrupt()):
        with pytest.raises(type(exc)):
            with results_dir(target, force=True) as tmp:
                (tmp / "a.txt").write_text("half")
                raise exc
        assert (target / "a.txt").read_text() == "first"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_bad_targets_are_one_line_errors(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    for bad, msg in [("", "expected a folder name"), (f, "not a folder")]:
        with pytest.raises(UserError, match=msg):
            check_target(bad)
    empty = tmp_path / "empty"
    empty.mkdir()
    with results_dir(empty) as tmp:  # an empty folder may be used without --force
        (tmp / "x").write_text("1")
    assert (empty / "x").exists()


def test_leftovers_of_killed_runs_are_removed(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".out.lowlat-partial-{dead.pid}"
    stale.mkdir()
    (stale / "junk").write_text("x")
    with results_dir(tmp_path / "out") as tmp:
        (tmp / "a").write_text("1")
    assert not stale.exists()


@pytest.mark.parametrize("command", ["run", "suite"])
def test_killing_a_run_at_random_points_never_leaves_a_mix(tmp_path, command):
    """The first results (with a MARK file only they have) must survive any kill of the second
    run, unless the second completed, in which case its folder holds only its own files."""
    out = tmp_path / "out"
    args = {
        "run": ["run", "rmcat-5.1", "--cc", "gcc,nada", "--no-plots", "--no-progress"],
        "suite": [
            "suite", "rmcat", "--cc", "gcc", "--cases", "5.1,5.2", "--rtts", "20", "--jitters", "5",
            "--queues", "droptail", "--jobs", "1", "--no-plots", "--no-progress",
        ],
    }[command]
    base = [sys.executable, "-m", "lowlat.cli", *args, "--out", str(out), "--force"]
    subprocess.run(base, check=True, capture_output=True, timeout=300)
    (out / "MARK").write_text("old")
    first = sorted(p.name for p in out.iterdir())
    t0 = time.perf_counter()
    subprocess.run(base, check=True, capture_output=True, timeout=300)
    full = time.perf_counter() - t0
    new = sorted(p.name for p in out.iterdir())
    assert "MARK" not in new and sorted(set(first) - {"MARK"}) == new, "replaced whole"
    rng = random.Random(15)
    outcomes = set()
    for i in range(4):
        restore_first(out, first)
        p = subprocess.Popen(base, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.1, full * 1.1))
        p.send_signal(signal.SIGKILL if i % 2 == 0 else signal.SIGINT)
        p.wait(timeout=60)
        listing = sorted(x.name for x in out.iterdir()) if out.exists() else None
        if listing is None:
            outcomes.add("none")
        elif "MARK" in listing:
            outcomes.add("old")
            assert listing == first, "the old results, intact"
        else:
            outcomes.add("new")
            assert listing == new, "a completed run's folder, whole"
    assert outcomes, "each kill left one of: the old folder, the new one, nothing"
    # A later run cleans up what the killed ones left beside the folder.
    subprocess.run(base, check=True, capture_output=True, timeout=300)
    assert [x.name for x in tmp_path.iterdir()] == ["out"]


def restore_first(out, first):
    """Puts the first run's folder (with its MARK) back if a completed run replaced it."""
    if out.exists() and (out / "MARK").exists():
        return
    import shutil

    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    (out / "MARK").write_text("old")
    for name in first:
        if name != "MARK":
            (out / name).mkdir() if "." not in name else (out / name).write_text("old")
