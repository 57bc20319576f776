"""`lowlat reproduce zhuge`: every table and plot written, a bad trace recorded without losing the
other runs, and the generated traces shaped like their families."""

import pandas as pd
import pytest

import lowlat
from lowlat import sweep
from lowlat.reproduce import zhuge


def test_reproduce_command_writes_every_table(lowlat_cli, tmp_path):
    p = lowlat_cli("reproduce", "zhuge", "--out", tmp_path, "--duration", "20", "--ks", "10", "--no-progress")
    assert p.returncode == 0, p.stderr
    assert "0 failed" in p.stdout and "W1 (restaurant Wi-Fi" in p.stdout
    df = pd.read_csv(tmp_path / "summary.csv", keep_default_na=False)
    assert len(df) == 5 * len(zhuge.SCHEMES)
    assert set(df["family"]) == {"W1", "W2", "C1", "C2", "C3"}
    for fam in ("W1", "W2", "C1", "C2", "C3"):
        t = pd.read_csv(tmp_path / f"table_{fam}.csv")
        assert list(t["scheme"]) == [s[0] for s in zhuge.SCHEMES]
        assert (t["throughput_kbps"] > 500).all(), t
    drop = pd.read_csv(tmp_path / "abw_drop.csv", keep_default_na=False)
    assert sorted(set(drop["scheme"])) == sorted(zhuge.ABW_SCHEMES) and set(drop["k"]) == {10}
    assert len(drop) == 2 * len(zhuge.ABW_SCHEMES) and set(drop["queue"]) == {"fifo", "codel"}
    art = pd.read_csv(tmp_path / "abw_drop_artifact.csv")
    assert list(art.columns) == ["k", "GCC", "GCC+Zhuge", "Copa", "Copa+Zhuge"] and art[["GCC", "Copa"]].ge(0).all().all()
    # The artifact's runs: GCC's drop at 144-176 s of 200 s, Copa's at 20-52 s of 72 s, alike placed.
    gcc = drop[drop["scheme"].str.startswith("GCC")].set_index(["seed", "queue", "scheme"])["drop_s"]
    copa = drop[drop["scheme"].str.startswith("Copa")].set_index(["seed", "queue", "scheme"])["drop_s"]
    assert gcc.between(144, 176).all() and copa.between(20, 52).all()
    assert set((gcc.round(1).to_numpy() - 124).round(1)) == set(copa.round(1))
    acc = pd.read_csv(tmp_path / "accuracy.csv").set_index("predicted_range")
    assert acc.loc["all", "packets"] > 1000
    assert acc.loc["all", "packets"] >= acc["packets"].drop("all").sum()
    assert acc["share_under_one_rtt"].between(0, 1).all()
    timeline = pd.read_csv(tmp_path / "abw_drop_timeline.csv")
    assert set(timeline["scheme"]) == set(zhuge.ABW_SCHEMES)
    for png in ("abw_drop.png", "accuracy.png", "abw_drop_timeline.png", "gcc_rate_timeline.png"):
        assert (tmp_path / png).stat().st_size > 10_000
    bad = lowlat_cli("reproduce", "zhuge", "--out", tmp_path / "again", "--traces", tmp_path / "nowhere")
    assert bad.returncode == 2 and "nowhere: no such trace file or folder" in bad.stderr


def test_a_corrupt_trace_fails_its_runs_only(tmp_path):
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "office-wifi_1.pitree-trace").write_text(zhuge.generate_trace("W2", 1, 30))
    (traces / "office-wifi_2.pitree-trace").write_text("0 20\n0.2 twenty\n")
    lines: list[str] = []
    # Asked for 60 s; the good trace's 150 lines run 30 s (the artifact stops at the trace's end).
    res = zhuge.reproduce(tmp_path / "out", [str(traces)], seconds=60, ks=[10], jobs=2, progress=False, plots=False, log=lines.append)
    df = res["summary"]
    assert len(df) == 2 * len(zhuge.SCHEMES)
    # The trace's error is told once, naming every run it failed.
    failed = [line for line in lines if line.startswith("failed:")]
    assert len(failed) == 1, failed
    assert failed[0].startswith("failed: W2 office-wifi_2.pitree-trace (") and 'office-wifi_2.pitree-trace:2: got "twenty"' in failed[0]
    assert all(scheme in failed[0] for scheme, *_ in zhuge.SCHEMES), failed[0]
    # The table's heading gives the length the runs had (30 s), not the 60 s asked for.
    assert any(line.startswith("\nW2 (") and line.endswith(", 30 s each):") for line in lines), lines
    bad = df[df["error"] != ""]
    assert len(bad) == len(zhuge.SCHEMES) and bad["trace"].str.endswith("office-wifi_2.pitree-trace").all()
    assert bad["error"].str.contains('office-wifi_2.pitree-trace:2: got "twenty"', regex=False).all(), bad["error"].iloc[0]
    assert res["tables"]["W2"]["traces"].eq(1).all()
    assert res["failed"] == len(zhuge.SCHEMES)


def test_generated_traces_follow_their_family():
    for fam, (_, _, mean, _, _) in zhuge.FAMILIES.items():
        rows = [tuple(map(float, line.split())) for line in zhuge.generate_trace(fam, 7).splitlines()]
        assert rows[0][0] == 0.0 and abs(rows[-1][0] - 299.8) < 1e-9
        avg = sum(r[1] for r in rows) / len(rows)
        assert 0.6 * mean < avg < 1.3 * mean, (fam, avg)
        assert min(r[1] for r in rows) < 0.15 * mean, fam  # deep fades happen
    assert zhuge.generate_trace("W1", 1) == zhuge.generate_trace("W1", 1)
    assert zhuge.family_of(__import__("pathlib").Path("x/rest-wifi_3.pitree-trace")) == "W1"
    assert zhuge.family_of(__import__("pathlib").Path("abc4g_0.pitree-trace")) == "abc4g"


def test_the_papers_conditions_replay_traces_as_the_artifact(tmp_path):
    # 336 lines at 200 ms: the run is cut to 67.2 s, as the artifact's duration rule does.
    f = tmp_path / "xu5g_9.pitree-trace"
    f.write_text("".join(f"{1200 + 0.2 * i:.1f} {1 + i % 7}\n" for i in range(336)))
    assert abs(zhuge.run_seconds(f, "auto", 300.0) - 67.2) < 1e-9
    cap = zhuge.trace_capacity(str(f), "auto")
    assert cap["trace_step"] == "200.0 ms" and abs(cap["trace_scale"] - 15 / 13) < 1e-12
    # A mahimahi trace keeps its own instants and loops.
    m = tmp_path / "cell.mahi"
    m.write_text("1\n2\n3\n")
    assert zhuge.sniff_format(m) == "mahimahi" and "trace_step" not in zhuge.trace_capacity(str(m), "auto")
    assert zhuge.run_seconds(m, "auto", 300.0) == 300.0
    sc = zhuge.scenario("GCC+Zhuge", cap, False, 10.0, 1, cellular=True)
    assert sc["bottleneck"]["queue"]["kind"] == "codel" and sc["bottleneck"]["assist"] == "zhuge"
    assert zhuge.scenario("Copa", cap, False, 10.0, 1, cellular=False)["bottleneck"]["queue"]["kind"] == "droptail"
    # The GCC flows repair as the artifact's sender by default; WebRTC's NACK on request; Copa's
    # transport repairs on its own.
    assert sc["flows"][0]["repair"] == "timeout"
    assert zhuge.scenario("GCC+FIFO", cap, False, 10.0, 1, repair="nack")["flows"][0]["repair"] == "nack"
    assert "repair" not in zhuge.scenario("Copa", cap, False, 10.0, 1)["flows"][0]


def test_the_bottleneck_is_the_artifacts_qdisc_in_front_of_its_device_fifo():
    # FqCoDel in front of ns-3's 100-packet device FIFO; Zhuge cuts the device FIFO to one
    # packet, FastAck makes it 1000; a FIFO qdisc in front of it is one FIFO of both limits.
    q = zhuge.bottleneck_queue
    assert q("codel", "none") == {"kind": "codel", "limit": "10240 packets", "device_limit": "100 packets"}
    assert q("codel", "zhuge")["device_limit"] == "1 packet"
    assert q("fifo", "none") == {"kind": "droptail", "limit": "350 packets"}
    assert q("fifo", "zhuge")["limit"] == "251 packets" and q("fifo", "fastack")["limit"] == "1250 packets"
    # Through the Wi-Fi AP model the device FIFO is the AP's MAC queue, which no middlebox resizes.
    assert q("codel", "zhuge", wifi=True)["device_limit"] == "100 packets"
    # The same overload (a 4 Mbit/s CBR into 3 Mbit/s for 4 s) behind each: CoDel controls only
    # the qdisc's stage, so behind the 100-packet device FIFO the queue delay stays higher by about
    # the 99 extra device slots (99 x 1200 B at 3 Mbit/s = 317 ms) and CoDel drops less.
    links = {}
    for assist in ("none", "zhuge"):
        sc = {
            "duration": "4 s",
            "bottleneck": {"rate": "3 Mbit/s", "delay": "10 ms", "queue": q("codel", assist)},
            "flows": [{"id": "f", "kind": "cbr", "rate": "4 Mbit/s", "packet_size": "1200 B"}],
        }
        links[assist] = lowlat.run(sc, progress=False).summary["links"][0]
    assert links["zhuge"]["drops"] > links["none"]["drops"] > 0, links
    extra_ms = links["none"]["queue_delay_ms"]["max"] - links["zhuge"]["queue_delay_ms"]["max"]
    assert abs(extra_ms - 99 * 3.2) < 2 * 3.2, extra_ms


def test_a_late_starting_trace_runs_as_the_same_trace_from_zero(tmp_path):
    from lowlat.api import run

    rates = [3.0, 12.0, 1.5, 8.0, 20.0, 0.8, 6.0, 10.0]
    lines = lambda t0: "".join(f"{t0 + 0.2 * i:.2f} {r}\n" for i, r in enumerate(rates * 10))
    (tmp_path / "late.rate").write_text(lines(4505.67))
    (tmp_path / "zero.rate").write_text(lines(0.0))
    out = {}
    for name in ("late", "zero"):
        sc = {
            "duration": "30 s",
            "bottleneck": {"trace": str(tmp_path / f"{name}.rate"), "delay": "10 ms"},
            "flows": [{"id": "f", "kind": "cbr", "rate": "5 Mbit/s"}],
        }
        out[name] = run(sc, progress=False).summary["flows"][0]
    # Replayed from their first sample (and looped after 16 s): the same run.
    assert out["late"]["throughput_kbps"] == out["zero"]["throughput_kbps"]
    assert out["late"]["owd_ms"] == out["zero"]["owd_ms"]
    # ... not 30 s at the first rate (3 Mbit/s), as an absolute-time replay would give.
    assert out["zero"]["throughput_kbps"] > 3500


def test_frames_decode_in_order_and_are_given_up_25_frames_later():
    # 30 frames, 40 ms apart, each complete 50 ms after capture and the newest 30 ms after it,
    # but frame 2 (never complete), frame 4 (complete at 0.9 s) and frame 29 (never complete);
    # frame 6's first packet arrived after frame 7's (not the newest then).
    n = 30
    cap = [i * 0.04 for i in range(n)]
    complete = [c + 0.05 for c in cap]
    complete[2] = complete[29] = float("nan")
    complete[4] = 0.9
    newest = [c + 0.03 for c in cap]
    newest[6] = float("nan")
    frames = pd.DataFrame({"frame": range(n), "capture_s": cap, "complete_s": complete, "newest_s": newest})
    out = zhuge.in_order_frame_delays(frames).set_index("frame")
    # Frame 29 never leaves the decoder: not counted; every other frame is.
    assert list(out.index) == list(range(29))
    assert out.loc[[0, 1], "delay_ms"].round(6).tolist() == [50.0, 50.0]
    # Frame 2 is given up when frame 27 (2 + 25) first arrives, not frame 26's.
    give_up = newest[27]
    assert not out.loc[2, "decoded"] and abs(out.loc[2, "delay_ms"] - (give_up - cap[2]) * 1000) < 1e-9
    # Frames 3-26 were complete by then and waited for it: decoded at that instant, in order.
    for f in (3, 4, 5, 26):
        assert out.loc[f, "decoded"] and abs(out.loc[f, "delay_ms"] - (give_up - cap[f]) * 1000) < 1e-9, f
    # Frames 27 and 28 complete after it: decoded on completion.
    assert abs(out.loc[28, "delay_ms"] - 50.0) < 1e-9
    # With no frame 25 newer than the gap, nothing after it leaves: none counted from frame 2 on.
    short = zhuge.in_order_frame_delays(frames[frames["frame"] < 27])
    assert list(short["frame"]) == [0, 1]


def test_a_drop_run_stopped_after_its_window_gives_the_figures_of_the_full_run(monkeypatch):
    spec = zhuge.DropRun(10, "Copa+Zhuge", zhuge.drop_instant("Copa+Zhuge", 150.0), 3, "codel")
    assert zhuge.drop_run_seconds(spec) == spec.drop_s + 21.0 < 72.0
    short = zhuge.run_drop(spec)
    monkeypatch.setattr(zhuge, "DROP_RUN_MARGIN_S", 100.0)
    assert zhuge.drop_run_seconds(spec) == 72.0
    full = zhuge.run_drop(spec)
    assert short["error"] == "" and short["rtt_over_200ms_s"] > 0
    assert short == full


def test_a_drop_group_gives_the_rows_of_its_runs_each_on_its_own():
    runs = [zhuge.DropRun(k, "Copa+Zhuge", zhuge.drop_instant("Copa+Zhuge", u), 2, "fifo") for k, u in ((20, 147.0), (4, 145.5))]
    group = zhuge.DropGroup("Copa+Zhuge", 2, "fifo", [(r.k, r.drop_s) for r in runs])
    rows = zhuge.run_drop_group(group)["rows"].to_dict("records")
    assert rows == [zhuge.run_drop(r) for r in runs]
    assert rows[0]["error"] == "" and rows[0]["rtt_over_200ms_s"] > rows[1]["rtt_over_200ms_s"] > 0


def test_the_drop_figures_read_from_columns_are_those_of_the_dataframes():
    spec = zhuge.DropRun(20, "GCC+Zhuge", 146.0, 1, "codel")
    sc = zhuge.drop_scenario(spec, spec.drop_s + 6.0)
    r = lowlat.run({**sc, "duration": f"{spec.drop_s + 6.0} s"}, progress=False, tables=["sender_rtt"])
    got = zhuge.drop_figures(spec, r)
    # The definitions, on the DataFrames.
    fs = r.flow_series
    fs = fs[(fs["flow"] == "video") & (fs["t_s"] >= spec.drop_s - 1e-9) & (fs["t_s"] < spec.drop_s + 20 - 1e-9)]
    bin_s = float(fs["t_s"].diff().dropna().min())
    per_s = fs.groupby(((fs["t_s"] - spec.drop_s) // 1.0).astype(int))["frames"].sum()
    srtt = zhuge.smoothed_rtt(r.sender_rtt[r.sender_rtt["flow"] == "video"], zhuge.SRTT_GAIN["gcc"])
    want = {
        "rtt_over_200ms_s": (fs["owd_ms"] + zhuge.WIRED_ONE_WAY_MS + zhuge.HOP_MS > 200).sum() * bin_s,
        "frame_delay_over_400ms_s": (fs["frame_delay_ms"] > 400).sum() * bin_s,
        "fps_below_10_s": float((per_s < 10).sum()),
        "srtt_episode_s": zhuge.srtt_episode_s(srtt, spec.drop_s),
    }
    assert got == want
    assert got["rtt_over_200ms_s"] > 0 and got["fps_below_10_s"] > 0


def test_the_abw_statistic_is_the_first_episode_of_the_senders_smoothed_rtt():
    t = [5.0, 10.5, 11.0, 11.5, 12.0, 12.0, 12.5, 13.0, 14.0, 31.0]
    r = [400, 100, 250, 300, 250, 150, 150, 260, 100, 100]
    # Before the drop (10 s) ignored; above from 11 s; the 150 at 12.0 s is a second sample at
    # one instant (skipped, as the artifact's log reader does); back below at 12.5 s.
    assert zhuge.first_episode_s(t, r, 10.0) == 1.5
    assert zhuge.first_episode_s([11.0, 12.0], [250, 260], 10.0) == 20.0  # never back below
    assert zhuge.first_episode_s([11.0, 12.0], [150, 160], 10.0) == 0.0
    s = zhuge.smoothed_rtt(pd.DataFrame({"t_s": [1.0, 2.0, 3.0], "rtt_ms": [100.0, 200.0, 200.0]}))
    assert s["srtt_ms"].tolist() == [100.0, 112.5, 112.5 + 87.5 / 8]


def test_the_srtt_statistic_from_the_columns_is_that_of_every_sample_in_any_order():
    import random

    from lowlat.results import Result

    rng = random.Random(7)
    for case in range(60):
        n = rng.randrange(0, 400)
        t = sorted(round(rng.uniform(0, 60), 2) for _ in range(n))
        r = [rng.choice([50.0, 150.0, 400.0, 900.0]) for _ in t]
        flows = [rng.choice(["video", "video", "audio"]) for _ in t] if case % 3 == 0 else ["video"] * n
        rows = list(zip(t, r, flows))
        if case % 2:
            rng.shuffle(rows)  # samples not in time order: sorted (stably) first
        table = {"flow": [x[2] for x in rows], "t_s": [x[0] for x in rows], "rtt_ms": [x[1] for x in rows]}
        res = Result({}, {}, {}, sender_rtt=table)
        df = pd.DataFrame(table)
        want = zhuge.srtt_episode_s(zhuge.smoothed_rtt(df[df["flow"] == "video"], 0.125), 20.0)
        assert zhuge.video_srtt_episode_s(res, 0.125, 20.0) == want, case


def test_the_statistic_over_the_window_alone_is_the_same_as_over_every_sample():
    import random

    rng = random.Random(18)
    for case in range(200):
        n = rng.randrange(0, 80)
        # Instants on a coarse grid (repeats at one instant), some right at the window's edges.
        t = sorted(rng.choice([9.0, 10.0, 30.0, 31.0]) if rng.random() < 0.2 else round(rng.uniform(5, 35), 1) for _ in range(n))
        r = [rng.choice([150.0, 199.0, 200.0, 201.0, 300.0]) for _ in t]
        srtt = pd.DataFrame({"t_s": t, "srtt_ms": r})
        assert zhuge.srtt_episode_s(srtt, 10.0) == zhuge.first_episode_s(srtt["t_s"], srtt["srtt_ms"], 10.0), case


def test_the_costliest_runs_start_first_and_the_rows_keep_their_order(tmp_path):
    trace = tmp_path / "xu5g_1.rate"
    trace.write_text("".join(f"{i * 0.2:.1f} {300.0 if i % 2 else 1.0}\n" for i in range(50)))
    slow = zhuge.TraceRun("C3", str(trace), "Copa", 10.0, 1)
    fast = zhuge.TraceRun("C3", str(tmp_path / "missing"), "GCC+FIFO", 3.0, 1)
    assert zhuge.trace_cost(slow) > zhuge.trace_cost(zhuge.TraceRun("C3", str(trace), "GCC+FIFO", 10.0, 1)) > zhuge.trace_cost(fast) > 0
    assert zhuge.drop_cost(zhuge.DropRun(2, "Copa", 30.0, 1)) > zhuge.drop_cost(zhuge.DropRun(20, "Copa", 30.0, 1))
    todo = [(0, {"c": 1.0}), (1, {"c": 5.0}), (2, {"c": float("nan")}), (3, {"c": 5.0}), (4, {"c": 2.0})]
    assert [i for i, _ in sweep.start_order(todo, lambda p: p["c"])] == [1, 3, 4, 0, 2]
    assert sweep.start_order(todo, None) == todo


def test_a_run_reports_its_frames_and_sender_rtt():
    r = lowlat.run(zhuge.scenario("GCC+FIFO", {"rate": "5 Mbit/s"}, False, 10.0, 1), progress=False)
    f = r.frames
    assert list(f.columns) == ["flow", "frame", "capture_s", "complete_s", "newest_s"]
    assert list(f["frame"]) == list(range(len(f))) and len(f) >= 240
    done = f["complete_s"].notna()
    assert (f.loc[done, "complete_s"] >= f.loc[done, "newest_s"].fillna(0)).all()
    counted = zhuge.in_order_frame_delays(f)
    assert counted["decoded"].all() and len(counted) == done.sum()
    assert len(r.sender_rtt) > 50 and r.sender_rtt["rtt_ms"].between(68, 1000).all()


def test_the_copa_schemes_run_the_artifacts_copa_with_its_run_lists_delta(tmp_path):
    cap = {"rate": "10 Mbit/s"}
    params = lambda label, copa: zhuge.scenario(label, cap, False, 10.0, 1, copa=copa)["flows"][0].get("cc_params")  # noqa: E731
    assert params("Copa", "artifact") == {"copa": {"variant": "artifact", "delta": 0.5}}
    assert params("Copa+Zhuge", "artifact") == {"copa": {"variant": "artifact", "delta": 0.5}}
    assert params("Copa+FastAck", "artifact") == {"copa": {"variant": "artifact", "delta": 0.02}}
    assert params("Copa+FastAck", "paper") == {"copa": {"variant": "paper"}}
    # The GCC schemes run the artifact's GCC unless told otherwise (--gcc libwebrtc).
    assert params("GCC+Zhuge", "artifact") == {"gcc": {"variant": "artifact"}}
    gcc = zhuge.scenario("GCC+FIFO", cap, False, 10.0, 1, gcc="libwebrtc", paced=False)["flows"][0]["cc_params"]
    assert gcc == {"gcc": {"variant": "libwebrtc", "pacing_factor": zhuge.CONDITIONS["unpaced_factor"]}}
    with pytest.raises(ValueError, match="gcc: got 'ns3'"):
        zhuge.reproduce(tmp_path / "out2", seconds=10, ks=[10], gcc="ns3", progress=False, plots=False, log=lambda _: None)
    # The ABW runs: GCC 200 s with the drop at 144-176 s, Copa 72 s at the same point of 20-52 s.
    assert zhuge.abw_run("GCC+Zhuge") == (200.0, 144.0, 176.0) and zhuge.abw_run("Copa+Zhuge") == (72.0, 20.0, 52.0)
    assert zhuge.drop_instant("GCC+FIFO", 150.04) == 150.0 and zhuge.drop_instant("Copa", 150.04) == 26.0
    with pytest.raises(ValueError, match="copa: got 'ns3'"):
        zhuge.reproduce(tmp_path / "out", seconds=10, ks=[10], copa="ns3", progress=False, plots=False, log=lambda _: None)


def test_a_run_can_leave_out_its_per_sample_tables():
    import lowlat

    sc = zhuge.scenario("GCC+Zhuge", {"rate": "5 Mbit/s"}, False, 5.0, 1)
    full = lowlat.run(sc, progress=False)
    assert len(full.predictions) > 100 and len(full.sender_rtt) > 10
    for keep in ([], ["predictions"], ["sender_rtt"]):
        r = lowlat.run(sc, progress=False, tables=keep)
        # The same summary (but its wall time) and series, whatever tables are built (without
        # "predictions" Zhuge keeps no log: its figures in the summary are running ones).
        assert {**r.summary, "wall_s": 0} == {**full.summary, "wall_s": 0}
        pd.testing.assert_frame_equal(r.flow_series, full.flow_series)
        pd.testing.assert_frame_equal(r.frames, full.frames)
        for name in ("predictions", "sender_rtt"):
            if name in keep:
                pd.testing.assert_frame_equal(getattr(r, name), getattr(full, name))
            else:
                with pytest.raises(ValueError, match=f"{name}: this run did not build it"):
                    getattr(r, name)
    with pytest.raises(lowlat.ScenarioError, match="tables: got 'frames', expected some of predictions, sender_rtt"):
        lowlat.run(sc, progress=False, tables=["frames"])


def test_a_prediction_sample_is_that_many_of_the_logged_rows_in_their_order():
    import lowlat

    sc = zhuge.scenario("GCC+Zhuge", {"rate": "5 Mbit/s"}, False, 5.0, 1)
    r = lowlat.run(sc, progress=False, tables=["predictions"])
    predicted, actual = r.columns("predictions", "predicted_ms", "actual_ms")
    assert len(predicted) > 200
    logged = set(zip(r.predictions["arrival_s"], r.predictions["seq"], predicted, actual))
    for n in (0, 10, 100, len(predicted) + 5):
        s = lowlat.run(sc, progress=False, tables=["predictions"], prediction_sample=n)
        assert s.summary["assist"] == r.summary["assist"], "the summary counts every prediction"
        rows = s.predictions
        assert len(rows) == min(n, len(predicted))
        assert set(zip(rows["arrival_s"], rows["seq"], rows["predicted_ms"], rows["actual_ms"])) <= logged
        assert rows["arrival_s"].is_monotonic_increasing
    for bad in (-1, 2.5, True):
        with pytest.raises(lowlat.ScenarioError, match="prediction_sample: got"):
            lowlat.run(sc, progress=False, tables=["predictions"], prediction_sample=bad)
    with pytest.raises(lowlat.ScenarioError, match="prediction_sample: this run builds no predictions table"):
        lowlat.run(sc, progress=False, tables=[], prediction_sample=10)
    # Columns read after the DataFrame was built are its columns.
    assert (r.columns("predictions", "actual_ms")[0] == r.predictions["actual_ms"].to_numpy()).all()
    with pytest.raises(ValueError, match="predictions: no column 'nope'"):
        r.columns("predictions", "nope")
    with pytest.raises(ValueError, match="sender_rtt: this run did not build it"):
        r.columns("sender_rtt", "rtt_ms")


def test_the_artifacts_copa_runs_over_its_tcp():
    cap = {"rate": "10 Mbit/s"}
    flow = lambda label, copa: zhuge.scenario(label, cap, False, 10.0, 1, copa=copa)["flows"][0]  # noqa: E731
    for label in ("Copa", "Copa+Zhuge", "Copa+FastAck"):
        f = flow(label, "artifact")
        assert (f["recovery"], f["min_rto"], f["rto_backoff"], f["packet_size"]) == ("tcp", "1 s", False, "1488 B")
        # The NSDI'18 rules keep lowlat's own transport.
        assert "recovery" not in flow(label, "paper") and flow(label, "paper")["packet_size"] == "1460 B"
    assert "recovery" not in flow("GCC+Zhuge", "artifact")


def test_the_artifacts_zhuge_holds_a_copy_of_each_ack_and_passes_the_original():
    cap = {"rate": "10 Mbit/s"}
    sc = zhuge.scenario("Copa+Zhuge", cap, False, 8.0, 1, copa="artifact")
    assert sc["bottleneck"]["zhuge"] == {"in_band": "sampled", "ack_copy": True}
    assert "zhuge" not in zhuge.scenario("Copa", cap, False, 8.0, 1)["bottleneck"]
    # Holding a copy leaves the ACK clock as no holding at all would, bit for bit.
    never = zhuge.scenario("Copa+Zhuge", cap, False, 8.0, 1, copa="artifact", zhuge_ack_copy=False)
    never["bottleneck"]["zhuge"] = {"max_hold": "0 s"}
    copied, unheld = ({k: v for k, v in lowlat.run(x, progress=False, tables=[]).summary.items() if k not in ("wall_s", "events")} for x in (sc, never))
    assert copied == unheld
    held = zhuge.scenario("Copa+Zhuge", cap, False, 8.0, 1, copa="artifact", zhuge_ack_copy=False)
    assert "ack_copy" not in held["bottleneck"]["zhuge"]


def test_the_reproduction_reports_in_band_as_the_artifacts_ap_one_sampled_packet_a_millisecond():
    cap = {"rate": "2 Mbit/s"}
    sampled = zhuge.scenario("GCC+Zhuge", cap, False, 30.0, 1)
    assert sampled["bottleneck"]["zhuge"]["in_band"] == "sampled"
    per_packet = zhuge.scenario("GCC+Zhuge", cap, False, 30.0, 1, zhuge_in_band="per-packet")
    with pytest.raises(ValueError, match="zhuge_in_band"):
        zhuge.scenario("GCC+Zhuge", cap, False, 6.0, 1, zhuge_in_band="every")
    # The artifact's GCC counts every packet sent between two reported ones, so one sampled
    # packet a millisecond carries the whole rate: it climbs as with every packet reported.
    a, b = (lowlat.run(x, progress=False, tables=[]).summary["flows"][0] for x in (sampled, per_packet))
    assert a["throughput_kbps"] > 0.9 * b["throughput_kbps"] > 0


def test_after_giving_up_several_frames_at_once_the_decoder_steps_back_as_the_artifacts():
    # 60 frames, each complete 50 ms after capture, its first packet 30 ms after it; frame 2 is
    # never complete and frame 27 never arrives at all, so the first packet of frame 28 gives up
    # frames 2 and 3 at once (VideoDecoder::DecodeDataPacket: idx from 2 to 28 - 25).
    n = 60
    cap = [i * 0.04 for i in range(n)]
    complete = [c + 0.05 for c in cap]
    newest = [c + 0.03 for c in cap]
    complete[2] = complete[27] = newest[27] = float("nan")
    out = zhuge.in_order_frame_delays(pd.DataFrame({"frame": range(n), "capture_s": cap, "complete_s": complete, "newest_s": newest})).set_index("frame")
    at = lambda f, t: abs(out.loc[f, "delay_ms"] - (t - cap[f]) * 1000) < 1e-9  # noqa: E731
    # Frame 2 given up; 3-26 decoded behind it; 3 given up again at once (the loop goes on to 3).
    assert not out.loc[2, "decoded"] and at(2, newest[28])
    assert not out.loc[3, "decoded"] and at(3, newest[28])
    # The last played id is now 3 though 4-26 were decoded: each is given up again when a frame
    # 25 newer first arrives, and that later instant is its delay (app_delay.awk keeps the last
    # line), about 1 s.
    for f in (4, 20, 26):
        assert not out.loc[f, "decoded"] and at(f, newest[f + 25]), f
        assert out.loc[f, "delay_ms"] > 1000
    # Frame 27 (no packet) is given up by frame 52; 28-51, complete long before, wait for it.
    assert not out.loc[27, "decoded"] and at(27, newest[52])
    for f in (28, 51):
        assert out.loc[f, "decoded"] and at(f, newest[52]), f
    # Then in order again: frame 52 on completion.
    assert out.loc[52, "decoded"] and abs(out.loc[52, "delay_ms"] - 50.0) < 1e-9


def test_the_gcc_encoder_runs_at_the_artifacts_share_of_the_estimate():
    gcc = zhuge.scenario("GCC+Zhuge", {"rate": "5 Mbit/s"}, False, 10.0, 1)["flows"][0]
    assert gcc["encoder_share"] == pytest.approx(0.85 * 1000 / 1024)
    assert zhuge.scenario("GCC+FIFO", {"rate": "5 Mbit/s"}, False, 10.0, 1, encoder_share=1.0)["flows"][0]["encoder_share"] == 1.0
    assert "encoder_share" not in zhuge.scenario("Copa", {"rate": "5 Mbit/s"}, False, 10.0, 1, copa="artifact")["flows"][0]
    # It is what the encoder sends: a fixed 2 Mbit/s link far from full, the share of the rate.
    runs = {s: lowlat.run(zhuge.scenario("GCC+FIFO", {"rate": "20 Mbit/s"}, False, 20.0, 1, encoder_share=s), progress=False) for s in (1.0, 0.5)}
    half, full = (runs[s].summary["flows"][0]["throughput_kbps"] for s in (0.5, 1.0))
    assert half < 0.75 * full


def test_late_frames_are_split_by_cause():
    # 60 frames 40 ms apart; first packet 40 ms after capture, complete at 50 ms, except: frame 3
    # lost a packet and is complete only after later frames' first packets (repaired at 600 ms),
    # frames behind it wait; from frame 10 a queue: complete 450 ms after capture, 20 ms less each
    # frame after (queued while 400 ms or more); frame 25 is never complete and given up when
    # frame 50 first arrives, frames behind it waiting.
    n = 60
    cap = [i * 0.04 for i in range(n)]
    delay = [0.05] * n
    for f in range(10, n):
        delay[f] = max(0.05, 0.45 - 0.02 * (f - 10))
    newest = [c + d - 0.01 for c, d in zip(cap, delay)]
    complete = [c + d for c, d in zip(cap, delay)]
    complete[3] = cap[3] + 0.6
    complete[25] = float("nan")
    frames = pd.DataFrame({"frame": range(n), "capture_s": cap, "complete_s": complete, "newest_s": newest})
    counted = zhuge.in_order_frame_delays(frames)
    causes = zhuge.late_frame_causes(frames, counted)
    assert sum(causes.values()) == int((counted["delay_ms"] >= 400).sum())
    waited = [f for f in range(4, 10) if complete[3] - cap[f] >= 0.4] + [f for f in range(26, 50) if newest[50] - cap[f] >= 0.4]
    assert len(waited) > 10
    assert causes == {"given_up": 1, "repaired": 1, "waited": len(waited), "queued": 3}
