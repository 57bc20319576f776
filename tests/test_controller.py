"""Python controllers: called per feedback report with what the Rust controllers get, their rate
is what the sender sends, and a controller that raises or answers NaN is a clear error naming the
run (in a sweep, that run alone fails)."""

import os
from pathlib import Path

import pytest

import lowlat
from lowlat import sweep
from lowlat.controller import ControllerError

import pycc_examples

HERE = Path(__file__).parent

SCENARIO = {
    "duration": "10 s",
    "bottleneck": {"rate": "2 Mbit/s", "delay": "25 ms"},
    "flows": [{"id": "v", "kind": "rtp-video", "cc": "python:pycc_examples:Records", "rmax": "1.5 Mbit/s"}],
}


def test_the_controller_sees_every_report_and_sets_the_rate():
    pycc_examples.Records.seen.clear()
    r = lowlat.run(SCENARIO)
    seen = pycc_examples.Records.seen
    assert 90 <= len(seen) <= 101, len(seen)  # 100 ms feedback over 10 s
    rtts = [x[2] for x in seen if x[2] is not None]
    assert min(rtts) >= 0.050 and max(rtts) < 0.2  # 2 x 25 ms propagation plus queueing
    thr = r.summary["flows"][0]["throughput_kbps"]
    assert 600 < thr < 800, thr  # 700 kbit/s asked


def test_the_worked_example_adapts_on_rmcat_5_1():
    r = lowlat.run("rmcat-5.1", cc="lowlat.examples.delay_gradient:DelayGradient")
    f = next(f for f in r.summary["flows"] if f["id"] == "video")
    # It follows the capacity (1 / 2.5 / 0.6 / 1 Mbit/s) without filling the 300 ms queue.
    assert 400 < f["throughput_kbps"] < 1300 and f["owd_ms"]["p95"] < 250, f


@pytest.mark.parametrize(
    "cls, expected",
    [("Raises", r"flow v \(python:pycc_examples:Raises\): ZeroDivisionError: the user's bug \(at pycc_examples.py:\d+ in on_feedback\)"),
     ("Nan", r"flow v \(python:pycc_examples:Nan\): target_bitrate: got NaN, expected a finite")],
)
def test_a_failing_controller_is_a_clear_error(cls, expected):
    with pytest.raises(ControllerError, match=expected) as e:
        lowlat.run({**SCENARIO, "flows": [{**SCENARIO["flows"][0], "cc": f"python:pycc_examples:{cls}"}]})
    assert "\n" not in str(e.value) and str(e.value).startswith("<dict>")


def test_in_a_sweep_the_failing_controller_fails_alone(tmp_path):
    s = sweep.from_dict(
        {
            "base": {k: v for k, v in SCENARIO.items()},
            "set": {"duration": "3 s"},
            "axes": {"cc": ["pycc_examples:Raises", "gcc", "pycc_examples:Nan", "lowlat.examples.delay_gradient:DelayGradient"]},
            "metrics": ["throughput_kbps"],
        }
    )
    df = sweep.execute(s, jobs=2, progress=False)
    assert list(df["error"] == "") == [False, True, False, True]
    assert df["error"][0].startswith("run 0 (cc=pycc_examples:Raises): ControllerError:") and "ZeroDivisionError" in df["error"][0]
    assert df["error"][2].startswith("run 2 (cc=pycc_examples:Nan)") and "NaN" in df["error"][2]
    assert (df["throughput_kbps"][[1, 3]] > 100).all()


def test_cli_names_a_python_controller(lowlat_cli, tmp_path):
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = f"{HERE}{os.pathsep}{env_path}"
    try:
        r = lowlat_cli("run", "rmcat-5.1", "--cc", "pycc_examples:Nan")
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert r.stderr.startswith("lowlat: error: ") and "flow video (python:pycc_examples:Nan)" in r.stderr
        r = lowlat_cli("run", "rmcat-5.1", "--cc", "nosuchmod:X")
        assert r.returncode == 2 and "cannot import 'nosuchmod'" in r.stderr
    finally:
        os.environ["PYTHONPATH"] = env_path
