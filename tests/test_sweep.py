"""Sweeps as data: every combination once, resumable after SIGKILL, bad specs refused in one line,
a failed run recorded with the rest completing; Ray gives the same rows as local processes."""

import json
import os
import random
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from lowlat import sweep
from lowlat.userinput import UserError

SPEC = """
name = "cbr-grid"
base = "dumbbell-cbr"
metrics = ["utilization", "flows.0.throughput_kbps", "links.bottleneck.queue_delay_ms.p95", "owd_p95_ms"]
[set]
duration = "{duration}"
[axes]
"bottleneck.rate" = ["4 Mbit/s", "6 Mbit/s", "8 Mbit/s", "10 Mbit/s", "12 Mbit/s"]
"bottleneck.delay" = ["5 ms", "20 ms"]
seed = [1, 2, 3, 4, 5, 6]
"""


def write_spec(tmp_path, duration="2 s", text=SPEC):
    p = tmp_path / "spec.toml"
    p.write_text(text.format(duration=duration))
    return p


def test_kill_and_resume_gives_the_same_rows(tmp_path):
    spec = write_spec(tmp_path, duration="6 s")
    s = sweep.load(spec)
    assert len(s.points()) == 60
    whole = sweep.execute(s, out=tmp_path / "whole", jobs=2, progress=False)
    assert len(whole) == 60 and (whole["error"] == "").all(), whole["error"].unique()
    # The axes reach the runs: a 4 Mbit/s bottleneck carries less than a 12 Mbit/s one.
    by_rate = whole.groupby("bottleneck.rate")["flows.0.throughput_kbps"].median()
    assert by_rate["4 Mbit/s"] < 4000 < by_rate["12 Mbit/s"]

    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "lowlat.cli", "sweep", str(spec), "--out", str(out), "--jobs", "2", "--no-progress"]
    rng = random.Random(17)
    counts = []
    # Killed when a random number of runs have finished (polled: the machine's speed does not
    # decide whether the kill lands mid-sweep).
    for target in sorted(rng.sample(range(5, 55), 3)):
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while p.poll() is None and time.monotonic() < deadline:
            if (out / "runs").is_dir() and len(os.listdir(out / "runs")) >= target:
                break
            time.sleep(0.002)
        p.send_signal(signal.SIGKILL)
        p.wait()
        time.sleep(0.2)  # the workers die with the parent (PR_SET_PDEATHSIG)
        counts.append(len(list((out / "runs").glob("*.json"))))
    assert counts == sorted(counts), counts
    assert all(0 < c < 60 for c in counts), f"a kill did not land mid-sweep: {counts}"
    final = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert final.returncode == 0, final.stderr
    assert len(list((out / "runs").glob("*.json"))) == 60
    assert (out / "summary.csv").read_text() == (tmp_path / "whole" / "summary.csv").read_text()
    back = pd.read_csv(out / "summary.csv")
    assert sorted(back["run"]) == list(range(60))
    print("runs finished when killed:", counts)


def test_resume_skips_finished_runs(tmp_path, monkeypatch):
    spec = write_spec(tmp_path, duration="200 ms")
    s = sweep.load(spec)
    first = sweep.execute(s, s.points()[:10], out=tmp_path / "o", jobs=1, progress=False)
    assert len(first) == 10
    calls = []
    real = sweep.run_point
    monkeypatch.setattr(sweep, "run_point", lambda *a: calls.append(a[1]) or real(*a))
    df = sweep.execute(s, out=tmp_path / "o", jobs=1, progress=False)
    assert sorted(calls) == list(range(10, 60)), "only the runs not yet finished"
    assert df.iloc[:10].equals(first)
    # Another spec in the same folder is refused; --restart (force) starts again.
    other = sweep.from_dict({"base": "dumbbell-cbr", "axes": {"seed": [9]}, "set": {"duration": "200 ms"}})
    with pytest.raises(UserError, match="holds the runs of another sweep"):
        sweep.execute(other, out=tmp_path / "o", progress=False)
    assert len(sweep.execute(other, out=tmp_path / "o", progress=False, force=True)) == 1


def test_costliest_runs_start_first_the_table_keeps_the_points_order(tmp_path, monkeypatch):
    spec = write_spec(tmp_path, duration="200 ms")
    s = sweep.load(spec)
    points = s.points()[:6]
    plain = sweep.execute(s, points, jobs=1, progress=False)
    calls = []
    real = sweep.run_point
    monkeypatch.setattr(sweep, "run_point", lambda *a: calls.append(a[1]) or real(*a))
    # Cost: the point's index from the end, except one run made the costliest.
    cost = {sweep.run_id(p): (100.0 if i == 4 else -i) for i, p in enumerate(points)}
    ordered = sweep.execute(s, points, out=tmp_path / "o", jobs=1, progress=False, cost=lambda p: cost[sweep.run_id(p)])
    assert calls == [4, 0, 1, 2, 3, 5]
    pd.testing.assert_frame_equal(ordered, plain)
    # Resumed: the runs left start in the same order.
    for f in sorted((tmp_path / "o" / "runs").glob("*.json"))[:3]:
        f.unlink()
    calls.clear()
    again = sweep.execute(s, points, out=tmp_path / "o", jobs=1, progress=False, cost=lambda p: cost[sweep.run_id(p)])
    assert len(calls) == 3 and calls == sorted(calls, key=lambda i: -cost[sweep.run_id(points[i])])
    pd.testing.assert_frame_equal(again, plain)


@pytest.mark.parametrize(
    "axes, expected",
    [
        ('"bottleneck.rat" = ["5 Mbit/s"]', "axes.bottleneck.rat: .*unknown field `rat`"),
        ('"flows.nosuch.rate" = ["5 Mbit/s"]', "axes.flows.nosuch.rate: no key"),
        ("seed = []", "axes.seed: empty, expected at least one value"),
        ('seed = ["x"]', "axes.seed: got"),
        ('cc = ["gcc", "nosuch"]', None),  # a bad value after the first: that run fails alone
        ('cc = ["nosuch"]', "axes.cc: got 'nosuch'"),
        ('cc = ["nomodule_xyz:C"]', "axes.cc: .*cannot import 'nomodule_xyz'"),
        ('"bottleneck.rate" = "5 Mbit/s"', "expected a list of values"),
    ],
)
def test_bad_axes_are_refused_in_one_line(tmp_path, axes, expected):
    text = f'base = "rmcat-5.1"\n[set]\nduration = "1 s"\n"flows.video.stop" = "1 s"\n"flows.audio.stop" = "1 s"\n[axes]\n{axes}\n'
    p = tmp_path / "s.toml"
    p.write_text(text)
    if expected is None:
        df = sweep.execute(sweep.load(p), progress=False, jobs=1)
        assert list(df["error"] == "") == [True, False]
        assert df["error"].iloc[1].startswith("run 1 (cc=nosuch):"), df["error"].iloc[1]
        return
    with pytest.raises(UserError, match=expected) as e:
        sweep.load(p)
    assert "\n" not in str(e.value) and str(p) in str(e.value)


def test_sweep_command_errors_and_failed_runs(lowlat_cli, tmp_path):
    p = tmp_path / "s.toml"
    p.write_text('base = "dumbbell-cbr"\n[axes]\nseed = []\n')
    r = lowlat_cli("sweep", p, "--out", tmp_path / "o")
    assert r.returncode == 2 and r.stderr.startswith("lowlat: error: ") and "axes.seed: empty" in r.stderr
    assert "Traceback" not in r.stderr
    r = lowlat_cli("sweep", tmp_path / "nope.toml", "--out", tmp_path / "o")
    assert r.returncode == 2 and "no such sweep spec" in r.stderr


def test_ray_gives_the_same_rows_as_local_processes(tmp_path):
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'lowlat[ray]'); test.sh leaves it out: it is heavy")
    spec = write_spec(tmp_path, duration="300 ms")
    s = sweep.load(spec)
    points = s.points()[:12]
    local = sweep.execute(s, points, out=tmp_path / "local", jobs=2, progress=False)
    on_ray = sweep.execute(s, points, out=tmp_path / "ray", jobs=2, backend="ray", progress=False)
    assert not ray.is_initialized(), "the local instance this sweep started is shut down"
    assert (on_ray["error"] == "").all()
    pd.testing.assert_frame_equal(local, on_ray)
    assert (tmp_path / "local" / "summary.csv").read_text() == (tmp_path / "ray" / "summary.csv").read_text()


def test_the_documented_example_spec_is_valid():
    from pathlib import Path

    s = sweep.load(Path(__file__).parent.parent / "docs" / "examples" / "sweep-rmcat-5.1.toml")
    assert len(s.points()) == 36 and s.points()[0] == {"cc": "gcc", "bottleneck.delay": "25 ms", "queue": "droptail", "seed": 1}


def test_parquet_summary_matches_the_csv(tmp_path):
    pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'lowlat[parquet]')")
    s = sweep.from_dict({"base": "dumbbell-cbr", "set": {"duration": "200 ms"}, "axes": {"seed": [1, 2], "flows.0.rate": ["1 Mbit/s", "2 Mbit/s"]}})
    df = sweep.execute(s, out=tmp_path / "o", jobs=1, progress=False)
    back = pd.read_parquet(tmp_path / "o" / "summary.parquet")
    assert list(back.columns) == list(df.columns) and len(back) == 4
    assert back["utilization"].tolist() == df["utilization"].tolist()


def test_data_tables_round_trip_exactly(tmp_path):
    import math

    floats = [0.1, 1e-310, -0.0, math.inf, float("nan"), 2.0**0.5 / 3]
    table = pd.DataFrame(
        {
            "predicted_ms": floats,
            "n": [1, 2, 3, 4, 5, 6],
            "ok": [True, False, True, True, False, False],
            "scheme": ["GCC+Zhuge", None, "Copa", "", "a,b", "é"],
        }
    )
    sweep.write_table(tmp_path / "t.npz", table)
    back = sweep.read_table(tmp_path / "t.npz")
    assert list(back.columns) == list(table.columns)
    # Bit for bit: the floats (NaN and the sign of zero included), the ints and the bools.
    assert back["predicted_ms"].to_numpy().tobytes() == table["predicted_ms"].to_numpy().tobytes()
    assert back["n"].tolist() == table["n"].tolist() and back["ok"].tolist() == table["ok"].tolist()
    # Text as CSV reads it: a missing value (and "") comes back missing.
    assert back["scheme"].isna().tolist() == [False, True, False, True, False, False]
    assert back["scheme"].dropna().tolist() == ["GCC+Zhuge", "Copa", "a,b", "é"]


def test_data_tables_of_earlier_versions_still_read(tmp_path):
    points = [{"k": 1}, {"k": 2}]
    (tmp_path / "runs").mkdir()
    old = sweep.data_path(tmp_path, points[0], "series")
    pd.DataFrame({"t_s": [0.2, 0.4]}).to_csv(old.with_name(old.name.removesuffix(".npz") + ".csv.gz"), index=False)
    got = sweep.read_data(tmp_path, points, "series")
    assert got[0]["t_s"].tolist() == [0.2, 0.4] and got[1] is None
