"""The Python front: running, results as DataFrames, determinism, scenarios as dicts."""

import json

import pandas as pd
import pytest

import lowlat

SMALL = {
    "duration": "5 s",
    "seed": 3,
    "bottleneck": {"rate": "2 Mbit/s", "delay": "10 ms", "loss": {"kind": "bernoulli", "p": 0.05}},
    "flows": [{"id": "p", "kind": "poisson", "rate": "1 Mbit/s", "packet_size": "1000 B"}],
}


def test_run_catalog_scenario_returns_summary_and_dataframes():
    r = lowlat.run("dumbbell-cbr")
    assert r.summary["scenario"] == "dumbbell-cbr"
    bott = next(link for link in r.summary["links"] if link["id"] == "bottleneck")
    assert abs(bott["utilization"] - 0.95) < 0.005
    assert isinstance(r.flow_series, pd.DataFrame) and isinstance(r.link_series, pd.DataFrame)
    # 60 s in 200 ms bins.
    assert len(r.flow_series) == 300
    assert {"flow", "t_s", "send_kbps", "recv_kbps", "owd_ms"} <= set(r.flow_series.columns)
    steady = r.flow_series[r.flow_series.t_s > 1.0]
    assert steady.recv_kbps.between(9000, 10000).all()


def test_summary_follows_the_results_contract():
    s = lowlat.run(SMALL).summary
    for key in ["lowlat_version", "scenario", "seed", "sim_duration_s", "wall_s", "events", "flows", "links"]:
        assert key in s
    f = s["flows"][0]
    for key in ["id", "kind", "cc", "start_s", "end_s", "throughput_kbps", "goodput_kbps", "loss_ratio", "owd_ms", "rtt_ms"]:
        assert key in f
    assert set(f["owd_ms"]) == {"mean", "p50", "p90", "p95", "p99", "max"}
    assert f["rtt_ms"]["mean"] is None  # an open-loop source has no RTT samples
    link = s["links"][0]
    for key in ["id", "capacity_mean_kbps", "utilization", "queue_delay_ms", "drops"]:
        assert key in link


def test_same_seed_same_bytes_other_seed_other_draws(tmp_path):
    a = lowlat.run(SMALL)
    b = lowlat.run(SMALL)
    a.write(tmp_path / "a", plots=False)
    b.write(tmp_path / "b", plots=False)
    strip = lambda p: [line for line in p.read_text().splitlines() if '"wall_s"' not in line]  # noqa: E731
    assert strip(tmp_path / "a" / "summary.json") == strip(tmp_path / "b" / "summary.json")
    c = lowlat.run(SMALL, seed=4)
    assert c.summary["seed"] == 4
    assert c.summary["flows"][0]["packets_sent"] != a.summary["flows"][0]["packets_sent"]


def test_bad_dict_scenario_raises_scenario_error_naming_the_key():
    bad = json.loads(json.dumps(SMALL))
    bad["flows"][0]["rate"] = "1 ms"
    with pytest.raises(lowlat.ScenarioError, match=r"flows\[0\]\.rate"):
        lowlat.run(bad)


def test_validate_reports_name_and_catalog_is_valid():
    names = [e["name"] for e in lowlat.scenarios()]
    assert "dumbbell-cbr" in names
    for entry in lowlat.scenarios():
        assert lowlat.validate(entry["path"])["name"] == entry["name"]
        assert entry["description"], f"{entry['name']} has no description"


def test_flat_tables():
    r = lowlat.run(SMALL)
    assert "owd_ms_p95" in r.flows.columns
    assert "queue_delay_ms_mean" in r.links.columns
    assert "bottleneck" in r.table()


@pytest.mark.parametrize("entry", lowlat.scenarios(), ids=lambda e: e["name"])
def test_every_catalog_scenario_runs(entry):
    r = lowlat.run(entry["path"])
    assert not r.summary["warnings"], r.summary["warnings"]
    bott = next(link for link in r.summary["links"] if link["id"] == "bottleneck")
    assert 0.0 < bott["utilization"] <= 1.0 + 1e-9
    assert all(f["packets_received"] > 0 for f in r.summary["flows"])


def test_progress_bar_on_request(capsys):
    r = lowlat.run(SMALL, progress=True)
    assert r.summary["sim_duration_s"] == 5.0
    assert "sim s" in capsys.readouterr().err


def test_label_columns_cross_as_codes_and_read_back_as_the_labels():
    import numpy as np

    from lowlat import _native
    from lowlat.results import _column

    codes = np.array([0, 1, 1, 0, 2], dtype="<u4").tobytes()
    assert _column(("labels", ["a", "b", "c"], codes)) == ["a", "b", "b", "a", "c"]
    # A run's tables: label columns of several values, the same frame as from plain lists.
    src = lowlat.catalog.resolve("dumbbell-cbr")
    sim = _native.Simulation(src.text, src.format, src.label, src.base_dir, None, None, None, None, None, None)
    sim.advance(sim.end_s())
    links = sim.finish()[2]
    kind, labels, raw = links["link"]
    assert kind == "labels" and len(labels) > 1 and len(set(labels)) == len(labels)
    names = _column(links["link"])
    assert names == [labels[i] for i in np.frombuffer(raw, dtype="<u4")] and len(names) == len(links["t_s"][1]) // 8
    r = lowlat.run("dumbbell-cbr", progress=False)
    pd.testing.assert_frame_equal(r.link_series, pd.DataFrame({k: _column(v) for k, v in links.items()}))
    assert r.link_series["link"].tolist() == names and r.link_series["link"].dtype == pd.DataFrame({"x": ["a"]})["x"].dtype


def test_summary_only_builds_no_table_and_the_same_summary():
    # A video flow with its audio (frames, series, RTT samples): the summary is the same without
    # the tables, and reading any of them says it was not built.
    sc = {
        "duration": "8 s",
        "bottleneck": {"rate": "2 Mbit/s", "delay": "20 ms"},
        "flows": [
            {"id": "v", "kind": "rtp-video", "cc": "nada", "rmin": "150 kbit/s", "rmax": "1.5 Mbit/s"},
            {"id": "a", "kind": "cbr", "rate": "20 kbit/s", "packet_size": "100 B"},
        ],
    }
    full = lowlat.run(sc, progress=False)
    assert len(full.flow_series) > 0 and len(full.frames) > 0 and len(full.sender_rtt) > 0
    r = lowlat.run(sc, progress=False, summary_only=True)
    assert {**r.summary, "wall_s": 0, "events": 0} == {**full.summary, "wall_s": 0, "events": 0}
    assert r.summary["flows"][0]["frame_delay_ms"]["p99"] is not None
    for name in ("flow_series", "link_series", "frames", "predictions", "sender_rtt"):
        with pytest.raises(ValueError, match=f"{name}: this run did not build it"):
            getattr(r, name)


def test_without_link_stats_the_flows_are_the_same_and_reading_links_says_why():
    sc = {
        "duration": "8 s",
        "bottleneck": {"rate": "2 Mbit/s", "delay": "20 ms", "queue": {"kind": "codel"}},
        "flows": [{"id": "v", "kind": "rtp-video", "cc": "gcc", "rmin": "150 kbit/s", "rmax": "3 Mbit/s"}],
    }
    full = lowlat.run(sc, progress=False)
    assert full.summary["links"][0]["utilization"] > 0.5
    r = lowlat.run(sc, progress=False, link_stats=False)
    assert r.summary["link_stats"] is False and r.summary["links"] == [] and "link_stats" not in full.summary
    same = lambda s: {k: v for k, v in s.items() if k not in ("wall_s", "links", "link_stats")}  # noqa: E731
    assert same(r.summary) == same(full.summary)
    pd.testing.assert_frame_equal(r.flow_series, full.flow_series)
    pd.testing.assert_frame_equal(r.frames, full.frames)
    for read in (lambda: r.links, lambda: r.link_series, lambda: r.table(), lambda: lowlat.results.comparison({"gcc": r})):
        with pytest.raises(ValueError, match=r"kept no link statistics \(lowlat.run\(..., link_stats=False\)\)"):
            read()


def test_in_background_answers_meanwhile_and_changes_nothing_here(tmp_path, monkeypatch):
    from lowlat import api

    for forks in (True, False):
        with monkeypatch.context() as m:
            m.setattr(api, "_can_fork", lambda: forks)
            seen: list[int] = []
            first = api.in_background(lambda: (seen.append(1), (tmp_path / "a").write_text("x"), 42)[-1])
            second = api.in_background(lambda: 1 / 0)
            assert first() == 42 and (tmp_path / "a").read_text() == "x"
            assert seen == ([] if forks else [1]), "a forked child changes nothing here; inline, it runs here"
            assert isinstance(second(), ZeroDivisionError)


def _branch_scenario(drop_at: str | None, flows: int = 1) -> dict:
    steps = [{"at": "0 s", "rate": "6 Mbit/s"}] + ([{"at": drop_at, "rate": "1 Mbit/s"}] if drop_at else [])
    return {
        "duration": "8 s",
        "seed": 5,
        "bottleneck": {"schedule": steps, "delay": "20 ms", "queue": {"kind": "codel"}},
        "reverse": {"rate": "50 Mbit/s", "delay": "20 ms"},
        "flows": [{"id": "v", "kind": "rtp-video", "cc": "gcc", "rmin": "150 kbit/s", "rmax": "5 Mbit/s"}]
        + [{"id": "c", "kind": "cbr", "rate": "500 kbit/s"}] * (flows - 1),
    }


def _outcome(i: int, r: lowlat.Result) -> tuple:
    return i, {**r.summary, "wall_s": 0}, r.flow_series.to_json(), r.sender_rtt.to_json()


def test_branches_give_the_results_of_their_own_runs(monkeypatch):
    from lowlat import api

    base = _branch_scenario(None)
    branches = [
        (_branch_scenario("5.5 s"), None),
        (_branch_scenario("3 s"), None),
        (_branch_scenario("4 s"), 6.0),  # stopped at 6 s
        (_branch_scenario("7 s"), 2.5),  # stopped at 2.5 s, before it departs
        (_branch_scenario("5 s", flows=2), None),  # another flow: cannot share, runs alone
        ({**_branch_scenario("5 s"), "duration": "eight"}, None),  # a bad scenario: its error
    ]
    got = lowlat.run_branches(base, branches, _outcome)
    assert isinstance(got[5], lowlat.ScenarioError) and "duration" in str(got[5])
    for i in (0, 1, 4):
        assert got[i] == _outcome(i, lowlat.run(branches[i][0], progress=False)), i
    whole = [_outcome(i, lowlat.run(branches[i][0], progress=False)) for i in (2, 3)]
    assert got[2][1]["flows"][0]["packets_sent"] < whole[0][1]["flows"][0]["packets_sent"]
    assert 0 < got[3][1]["flows"][0]["packets_sent"] < got[2][1]["flows"][0]["packets_sent"]
    # Each on its own from the start (no fork): the same answers, the stopped ones included.
    monkeypatch.delattr(api.os, "fork")
    alone = lowlat.run_branches(base, branches, _outcome)
    assert alone[:5] == got[:5] and str(alone[5]) == str(got[5])


def test_branches_do_not_fork_beside_other_threads_or_in_ray(monkeypatch):
    import threading
    import types

    from lowlat import api

    waiting = threading.Event()
    other = threading.Thread(target=waiting.wait)
    other.start()
    try:
        assert not api._can_fork()
    finally:
        waiting.set()
        other.join()
    monkeypatch.setitem(__import__("sys").modules, "ray", types.SimpleNamespace(is_initialized=lambda: True))
    assert not api._can_fork()
    monkeypatch.setattr(api.os, "fork", lambda: pytest.fail("forked in a Ray worker"))
    got = lowlat.run_branches(_branch_scenario(None), [(_branch_scenario("3 s"), None)], lambda i, r: r.summary["flows"][0]["packets_received"])
    assert got == [lowlat.run(_branch_scenario("3 s"), progress=False).summary["flows"][0]["packets_received"]]


def test_a_failing_branch_keeps_the_others():
    def each(i: int, r: lowlat.Result) -> int:
        if i == 1:
            raise ValueError("no figure for this one")
        return r.summary["flows"][0]["packets_received"]

    base = _branch_scenario(None)
    got = lowlat.run_branches(base, [(_branch_scenario("3 s"), None), (_branch_scenario("4 s"), None), (_branch_scenario("5 s"), None)], each)
    assert isinstance(got[1], ValueError) and "no figure" in str(got[1])
    assert got[0] == lowlat.run(_branch_scenario("3 s"), progress=False).summary["flows"][0]["packets_received"]
    assert got[2] > got[0] > 1000


def test_label_is_reads_the_rows_of_one_label():
    r = lowlat.run("dumbbell-cbr", progress=False)
    names = sorted(set(r.link_series["link"]))
    fresh = lowlat.run("dumbbell-cbr", progress=False)
    for name in names + ["no such link"]:
        mask = fresh.label_is("link_series", "link", name)
        assert mask.tolist() == (r.link_series["link"] == name).tolist()
    assert fresh.label_is("link_series", "link", names[0]).sum() > 10
