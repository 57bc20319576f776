"""`lowlat reproduce scone`: the frame-latency table next to the seed's, the shoot-out of every
sender with every help, and a scheme that helps measurably doing so."""

import pandas as pd

from lowlat.reproduce import scone, zhuge


def test_reproduce_command_writes_the_tables_and_plots(lowlat_cli, tmp_path):
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "rest-wifi_1.rate").write_text(zhuge.generate_trace("W1", 1, 20))
    p = lowlat_cli("reproduce", "scone", "--out", tmp_path / "out", "--traces", traces, "--duration", "20", "--ks", "10", "--no-progress")
    assert p.returncode == 0, p.stderr
    assert "0 failed" in p.stdout and "RTC+SCONE-PRO against Copa" in p.stdout
    out = tmp_path / "out"
    df = pd.read_csv(out / "summary.csv", keep_default_na=False)
    pairs = len(scone.SENDERS) * len(scone.HELPS)
    assert len(df) == 2 * pairs and set(df["family"]) == {"W1", "ABW"}
    fl = pd.read_csv(out / "frame_latency.csv")
    allr = fl[fl["family"] == "all"].set_index("scheme")
    assert list(allr.index) == list(scone.SCHEMES)
    assert allr.loc["Copa", "seed_p99_ms"] == 815.0 and allr.loc["RTC+SCONE-PRO", "seed_mean_ms"] == 72.4
    assert (allr["p99_ms"] >= allr["p90_ms"]).all()
    so = pd.read_csv(out / "shootout.csv")
    assert len(so) == 2 * pairs and set(so["help"]) == set(scone.HELPS)
    # The L4S help marks (SCReAM v2's packets are ECT(1) and reported over RFC 8888).
    l4s = df[(df["help"] == "l4s") & (df["sender"] == "SCReAMv2")]
    assert (l4s["ce_reported"].astype(float) > 0).all(), l4s
    # ... and SCReAM v2 reacts to them (its L4S mode is on): the AP's queue stays shorter than
    # without marking. With ECT(1) alone it ignored CE and queued exactly as with no help.
    plain = df[(df["help"] == "none") & (df["sender"] == "SCReAMv2")].set_index("family")
    marked = l4s.set_index("family")
    for fam in ("W1", "ABW"):
        assert float(marked.loc[fam, "queue_delay_p99_ms"]) < 0.8 * float(plain.loc[fam, "queue_delay_p99_ms"]), (marked, plain)
    for png in ("frame_latency.png", "shootout.png"):
        assert (out / png).stat().st_size > 10_000


def test_scone_signals_cut_the_rtc_senders_delay_after_a_drop():
    # The ABW drop 30 -> 3 Mbit/s: with the AP's capacity signal the RTC sender's frames wait
    # far less than when it falls back to GCC (no signal), at a similar rate.
    row = lambda h: scone.run_one(scone.Run("ABW", "drop 30/10", "RTC", h, 30.0, 1, 10, 20.0))
    signalled, fallback = row("scone-rtc"), row("none")
    assert signalled["error"] == "" and fallback["error"] == ""
    assert signalled["frame_delay_p99_ms"] < 0.8 * fallback["frame_delay_p99_ms"], (signalled, fallback)
    assert signalled["queue_delay_p99_ms"] < fallback["queue_delay_p99_ms"]
