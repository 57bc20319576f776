"""The reproductions run their grids on the sweep runner: a reproduction killed (SIGKILL) and run
again resumes and ends with the same tables; per-run data (Zhuge's predictions) comes back exactly;
a run that fails is recorded while the others complete; Ray gives the same tables as local
processes."""

import os
import random
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from lowlat import sweep
from lowlat.reproduce import common, scone, zhuge
from lowlat.userinput import UserError

TABLES = ["summary.csv", "frame_latency.csv", "shootout.csv"]


def scone_cmd(out, traces):
    return [
        sys.executable, "-m", "lowlat.cli", "reproduce", "scone", "--out", str(out), "--traces", str(traces),
        "--duration", "3", "--ks", "5", "--jobs", "2", "--no-plots", "--no-progress",
    ]  # fmt: skip


def one_trace(tmp_path):
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "rest-wifi_1.rate").write_text(zhuge.generate_trace("W1", 1, 3))
    return traces


def test_a_killed_reproduction_resumes_with_the_same_tables(tmp_path):
    traces = one_trace(tmp_path)
    whole = subprocess.run(scone_cmd(tmp_path / "whole", traces), capture_output=True, text=True, timeout=300)
    assert whole.returncode == 0, whole.stderr
    n = 2 * len(scone.SENDERS) * len(scone.HELPS)
    out = tmp_path / "killed"
    runs = out / "sweeps" / "runs" / "runs"
    rng = random.Random(11)
    counts = []
    # Killed when a random number of runs have finished (polled, so the machine's speed does not
    # decide whether the kill lands mid-way).
    for target in sorted(rng.sample(range(3, n - 3), 2)):
        p = subprocess.Popen(scone_cmd(out, traces), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while p.poll() is None and time.monotonic() < deadline:
            if runs.is_dir() and len(os.listdir(runs)) >= target:
                break
            time.sleep(0.002)
        assert p.poll() is None, p.communicate()[1].decode()
        p.send_signal(signal.SIGKILL)
        p.wait()
        time.sleep(0.2)  # the pool's workers die with the parent
        counts.append(len(list(runs.glob("*.json"))))
    assert counts == sorted(counts) and all(0 < c < n for c in counts), f"a kill did not land mid-way: {counts}"
    assert not (out / "frame_latency.csv").exists()
    again = subprocess.run(scone_cmd(out, traces), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert len(list(runs.glob("*.json"))) == n
    for name in TABLES:
        assert (out / name).read_text() == (tmp_path / "whole" / name).read_text(), name
    # Once more: nothing left to run, the same tables.
    t0 = time.monotonic()
    third = subprocess.run(scone_cmd(out, traces), capture_output=True, text=True, timeout=300)
    assert third.returncode == 0 and (out / "shootout.csv").read_text() == (tmp_path / "whole" / "shootout.csv").read_text()
    print("runs finished when killed:", counts, f"; the finished rerun took {time.monotonic() - t0:.1f} s")


def test_per_run_data_comes_back_exactly_and_a_failed_run_is_recorded(tmp_path):
    trace = tmp_path / "rest-wifi_1.rate"
    trace.write_text(zhuge.generate_trace("W1", 1, 4))
    specs = [zhuge.TraceRun("W1", str(trace), "GCC+Zhuge", 4.0, 1), zhuge.TraceRun("W1", str(tmp_path / "missing"), "GCC+FIFO", 4.0, 1)]
    out = common.results_folder(tmp_path / "out", "zhuge")
    df, data = common.run_grid(out, "traces", zhuge.run_trace, specs, common.Runner(jobs=1, progress=False), "t", data=["predictions"])
    assert df.loc[0, "error"] == "" and "missing" in df.loc[1, "error"]
    assert list(df.columns[:5]) == ["family", "trace", "scheme", "seconds", "seed"] and df.columns[-1] == "error"
    direct = zhuge.run_trace(specs[0])["predictions"].reset_index(drop=True)
    assert len(direct) > 100
    pd.testing.assert_frame_equal(data["predictions"][0], direct)
    assert data["predictions"][1] is None
    # The same grid again: nothing runs again (no run file is rewritten), the same rows and data.
    files = sorted((out / "sweeps" / "traces" / "runs").iterdir())
    assert len(files) == 3  # two rows and one run's predictions
    stamps = [f.stat().st_mtime_ns for f in files]
    df2, data2 = common.run_grid(out, "traces", zhuge.run_trace, specs, common.Runner(jobs=1, progress=False), "t", data=["predictions"])
    pd.testing.assert_frame_equal(df, df2)
    pd.testing.assert_frame_equal(data2["predictions"][0], direct)
    assert [f.stat().st_mtime_ns for f in files] == stamps


def test_a_results_folder_of_something_else_is_refused(tmp_path):
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="not empty"):
        common.results_folder(tmp_path / "other", "scone")
    common.results_folder(tmp_path / "z", "zhuge")
    with pytest.raises(UserError, match="reproduce zhuge"):
        common.results_folder(tmp_path / "z", "scone")
    assert common.results_folder(tmp_path / "z", "scone", force=True).is_dir()
    common.results_folder(tmp_path / "o", "scone", options={"seconds": 3.0, "ks": [5]})
    common.results_folder(tmp_path / "o", "scone", options={"seconds": 3.0, "ks": [5]})  # the same: resumes
    with pytest.raises(UserError, match=r"other options \(seconds 3.0 there, 4.0 now\)"):
        common.results_folder(tmp_path / "o", "scone", options={"seconds": 4.0, "ks": [5]})


def test_ray_gives_the_same_tables_as_local_processes(tmp_path):
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'lowlat[ray]')")
    traces = one_trace(tmp_path)
    kw = dict(seconds=3.0, ks=[5], jobs=2, progress=False, plots=False, log=lambda _: None)
    local = scone.reproduce(tmp_path / "local", [str(traces)], **kw)
    trace = str(next(traces.iterdir()))
    specs = [zhuge.TraceRun("W1", trace, scheme, 3.0, 1) for scheme in ("GCC+Zhuge", "GCC+FIFO")]
    out = common.results_folder(tmp_path / "zhuge-local", "zhuge")
    grid = {"local": common.run_grid(out, "traces", zhuge.run_trace, specs, common.Runner(2, "local", None, False), "t", data=["predictions"])}
    # One local Ray instance for both (the runner leaves an instance it did not start running).
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        on_ray = scone.reproduce(tmp_path / "ray", [str(traces)], backend="ray", **kw)
        out = common.results_folder(tmp_path / "zhuge-ray", "zhuge")
        grid["ray"] = common.run_grid(out, "traces", zhuge.run_trace, specs, common.Runner(2, "ray", None, False), "t", data=["predictions"])
    finally:
        ray.shutdown()
    assert on_ray["failed"] == 0
    for name in TABLES:
        assert (tmp_path / "local" / name).read_text() == (tmp_path / "ray" / name).read_text(), name
    pd.testing.assert_frame_equal(local["shootout"], on_ray["shootout"])
    # Per-run data crosses Ray too.
    (rows_l, data_l), (rows_r, data_r) = grid["local"], grid["ray"]
    pd.testing.assert_frame_equal(rows_l.drop(columns=["wall_s"]), rows_r.drop(columns=["wall_s"]))
    assert data_l["predictions"][0] is not None and data_r["predictions"][1] is None
    pd.testing.assert_frame_equal(data_l["predictions"][0], data_r["predictions"][0])


def test_a_run_function_spec_from_toml(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(
        'name = "fn"\nrun = "lowlat.reproduce.common:run_spec"\n'
        '[set]\ncall = "lowlat.reproduce.zhuge:run_drop"\nspec = "lowlat.reproduce.zhuge:DropRun"\ndata = []\n'
        'drop_s = 1.0\nseed = 1\n[axes]\nk = [2]\nscheme = ["nonexistent"]\n'
    )
    s = sweep.load(spec)
    df = sweep.execute(s, out=tmp_path / "out", jobs=1, progress=False)
    # The scheme does not exist: the run function's own error, and the row is kept.
    assert len(df) == 1 and df.loc[0, "error"].startswith("StopIteration"), df.loc[0, "error"]
    assert list(df.columns[:3]) == ["run", "k", "scheme"] and "rtt_over_200ms_s" in df.columns
    bad = tmp_path / "bad.toml"
    bad.write_text('run = "lowlat.nowhere:f"\n')
    with pytest.raises(UserError, match="run: lowlat.nowhere:f: cannot import"):
        sweep.load(bad)


def test_runs_of_another_version_of_the_experiment_are_not_reused(tmp_path, monkeypatch):
    specs = [zhuge.TraceRun("W1", str(tmp_path / "missing"), "GCC+FIFO", 4.0, 1)]
    out = common.results_folder(tmp_path / "out", "zhuge")
    runner = common.Runner(jobs=1, progress=False)
    df, _ = common.run_grid(out, "traces", zhuge.run_trace, specs, runner, "t")
    assert "missing" in df.loc[0, "error"]
    common.run_grid(out, "traces", zhuge.run_trace, specs, runner, "t")  # the same code: resumes
    monkeypatch.setattr(common, "code_version", lambda fn: "edited")
    with pytest.raises(UserError, match="holds the runs of another sweep.*--force"):
        common.run_grid(out, "traces", zhuge.run_trace, specs, runner, "t")
