"""A sample of the scenario fuzz (crates/lowlat-sim/tests/scenario_fuzz.rs holds the full one)
through the Python API and the command: every key of a base scenario, fed extreme values as a
dict (``lowlat.run``/``lowlat.validate``), and a sample as a TOML file through ``lowlat.run(path)``
and ``lowlat validate``/``lowlat run``. Each is refused with one line naming the key, or runs;
never a traceback, a panic or a hang. Seeded, so a failure replays."""

from __future__ import annotations

import copy
import math
import random
import signal
from typing import Any

import pytest

import lowlat
from lowlat import cli

#: Seconds a case may take before it counts as a hang.
HANG_S = 20

BASE: dict[str, Any] = {
    "duration": "1 s",
    "seed": 3,
    "bin": "100 ms",
    "bottleneck": {
        "rate": "2 Mbit/s",
        "delay": "10 ms",
        "jitter": "1 ms",
        "loss": {"kind": "gilbert-elliott", "p_good_to_bad": 0.01, "p_bad_to_good": 0.5},
        "queue": {"kind": "codel", "limit": "100 ms", "target": "5 ms", "interval": "100 ms"},
        "wifi": {"access_min": "1 ms", "access_max": "4 ms", "outage_probability": 0.002},
    },
    "reverse": {"schedule": [{"at": "0 s", "rate": "1 Mbit/s"}, {"at": "0.5 s", "rate": "2 Mbit/s"}]},
    "flows": [
        {
            "id": "c",
            "kind": "cbr",
            "rate": "200 kbit/s",
            "packet_size": "1000 B",
            "start": "0.1 s",
            "stop": "0.9 s",
            "access": {"rate": "100 Mbit/s", "delay": "1 ms"},
        },
        {
            "id": "v",
            "kind": "rtp-video",
            "cc": "gcc",
            "fps": 30.0,
            "rmin": "150 kbit/s",
            "rmax": "1.5 Mbit/s",
            "feedback": "50 ms",
            "pause": {"from": "0.3 s", "to": "0.4 s"},
        },
        {"id": "w", "kind": "web", "sources": 3, "sources_on": 1, "idle_mean": "200 ms", "size_max": "60 kB"},
    ],
}

#: Python values a key is fed (NaN and inf included: the dict path must refuse them by key).
EXTREMES: list[Any] = [
    0,
    -1,
    math.nan,
    math.inf,
    1e308,
    5e-324,
    2**70,
    True,
    "",
    "0 s",
    "1 ns",
    "-1 ms",
    "1e9 s",
    "inf s",
    "0 bit/s",
    "1e15 Gbit/s",
    "0 B",
    "1e18 B",
    "a\nb",
    [],
    {},
    # Ordinary values too, so that both answers are exercised.
    "0.5 s",
    "500 kbit/s",
    "1200 B",
    0.5,
    10,
]


def leaves(doc: Any, path: tuple = ()) -> list[tuple]:
    """Every key path of ``doc`` that holds a value (not a table or a list)."""
    if isinstance(doc, dict):
        return [p for k, v in doc.items() for p in leaves(v, (*path, k))]
    if isinstance(doc, list):
        return [p for i, v in enumerate(doc) for p in leaves(v, (*path, i))]
    return [path]


def with_value(path: tuple, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(BASE)
    slot = doc
    for step in path[:-1]:
        slot = slot[step]
    slot[path[-1]] = value
    return doc


def leaf_name(path: tuple) -> str:
    return next(str(s) for s in reversed(path) if isinstance(s, str))


class Hang(Exception):
    pass


def judged(call, key: str) -> str:
    """``"refused"`` or ``"ran"``; fails on a panic, a traceback-worthy error, an unclear message or
    a hang."""

    def alarm(signum, frame):
        raise Hang(f"no answer in {HANG_S} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(HANG_S)
    try:
        call()
    except lowlat.ScenarioError as e:
        msg = str(e)
        assert "\n" not in msg.strip(), msg
        assert key in msg, f"{key!r} not named in: {msg}"
        return "refused"
    except BaseException as e:  # a panic arrives as pyo3's PanicException (a BaseException)
        if isinstance(e, KeyboardInterrupt):
            raise
        pytest.fail(f"{key}: {type(e).__name__} instead of a clear error: {e}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return "ran"


def test_every_key_of_a_dict_scenario_refuses_or_runs_extreme_values(capsys):
    rng = random.Random(15)
    counts = {"refused": 0, "ran": 0}
    for path in leaves(BASE):
        # Four values per key (the Rust test feeds all of them to every key): seconds, not minutes.
        for value in rng.sample(EXTREMES, 4):
            doc = with_value(path, value)
            key = leaf_name(path)
            checked = judged(lambda: lowlat.validate(doc, memory_budget="256 MB"), key)
            ran = judged(lambda: lowlat.run(doc, progress=False, memory_budget="256 MB"), key)
            # validate answers what run does, before running.
            assert checked == ran, (path, value, checked, ran)
            counts[ran] += 1
    with capsys.disabled():
        print(f"\ndict scenarios: {counts['refused']} refused, {counts['ran']} ran")
    assert counts["refused"] > 50 and counts["ran"] > 5, counts


def toml_text(doc: Any) -> str:
    """``doc`` as TOML with inline tables (enough for these scenarios)."""

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float) and math.isnan(v):
            return "nan"
        if isinstance(v, float) and math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if isinstance(v, (int, float)):
            return repr(v)
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"

    lines = [f"{k} = {value(v)}" for k, v in doc.items() if k != "flows"]
    lines += ["flows = " + value(doc["flows"])]
    return "\n".join(lines) + "\n"


#: A sample for the file path and the command (each command starts Python: kept short).
SAMPLE = [
    (("bottleneck", "rate"), "0 bit/s"),
    (("bottleneck", "delay"), "1e9 s"),
    (("bottleneck", "loss", "p_good_to_bad"), "0.1"),
    (("bottleneck", "wifi", "access_min"), "1 ns"),
    (("flows", 1, "fps"), 5e-324),
    (("flows", 0, "id"), "a\nb"),
    (("bin",), "1 ns"),
    (("bottleneck", "queue", "limit"), "1e7 s"),
]


@pytest.mark.parametrize("path, value", SAMPLE, ids=[".".join(map(str, p)) for p, _ in SAMPLE])
def test_a_sample_as_a_file_through_run_and_the_command(tmp_path, capsys, path, value):
    f = tmp_path / "s.toml"
    f.write_text(toml_text(with_value(path, value)))
    key = leaf_name(path)
    assert judged(lambda: lowlat.run(str(f), progress=False), key) == "refused"
    for args in (["validate", str(f)], ["run", str(f), "--out", str(tmp_path / "out"), "--no-plots"]):
        code = cli.main(args)
        err = capsys.readouterr().err.strip()
        assert "Traceback" not in err, err
        assert code == 2 and len(err.splitlines()) == 1 and key in err, (code, err)


def test_the_base_runs():
    assert judged(lambda: lowlat.run(BASE, progress=False), "") == "ran"
