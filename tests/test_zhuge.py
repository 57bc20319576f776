"""`lowlat reproduce zhuge`: every table and plot written, a bad trace recorded without losing the
other runs, and the generated traces shaped like their families."""

import pandas as pd

from lowlat import zhuge


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
    assert sorted(drop["scheme"]) == sorted(zhuge.ABW_SCHEMES) and set(drop["k"]) == {10}
    assert (drop["drop_s"].between(144, 176)).all()
    acc = pd.read_csv(tmp_path / "accuracy.csv")
    assert acc["packets"].sum() > 1000
    for png in ("abw_drop.png", "accuracy.png"):
        assert (tmp_path / png).stat().st_size > 10_000
    bad = lowlat_cli("reproduce", "zhuge", "--out", tmp_path, "--traces", tmp_path / "nowhere")
    assert bad.returncode == 2 and "nowhere: no such trace file or folder" in bad.stderr


def test_a_corrupt_trace_fails_its_runs_only(tmp_path):
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "office-wifi_1.pitree-trace").write_text(zhuge.generate_trace("W2", 1, 30))
    (traces / "office-wifi_2.pitree-trace").write_text("0 20\n0.2 twenty\n")
    res = zhuge.reproduce(tmp_path / "out", [str(traces)], seconds=30, ks=[10], jobs=2, progress=False, plots=False, log=lambda _: None)
    df = res["summary"]
    assert len(df) == 2 * len(zhuge.SCHEMES)
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
