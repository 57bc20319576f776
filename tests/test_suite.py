"""The RMCAT suite: one row per run, no missing cells, failures recorded without stopping others."""

import pandas as pd

from lowlat import suite


def test_matrix_rows_cover_every_cell_and_a_failure_is_recorded(tmp_path):
    specs = suite.matrix(["gcc", "nada"], cases=["5.1", "5.4"], rtts_ms=[20, 200], jitters_ms=[5], queues=["droptail", "codel"])
    assert len(specs) == 2 * 2 * 1 * 2 * 2
    bad = suite.RunSpec("9.9", "gcc", 100, 5, "droptail")  # no such case
    df = suite.run_matrix(specs + [bad], jobs=2, progress=False)
    assert len(df) == len(specs) + 1
    ok = df[df["error"] == ""]
    assert len(ok) == len(specs)
    assert not ok[suite.METRICS].isna().any().any(), ok[ok[suite.METRICS].isna().any(axis=1)]
    failed = df[df["error"] != ""]
    assert list(failed["case"]) == ["9.9"] and "rmcat-9.9" in failed["error"].iloc[0]
    # The RTT parameter reaches the path: 200 ms runs see higher one-way delays than 20 ms runs.
    by_rtt = ok.groupby("rtt_ms")["owd_p50_ms"].median()
    assert by_rtt[200] > by_rtt[20] + 80
    written = suite.write(df, tmp_path)
    back = pd.read_csv(tmp_path / "summary.csv", keep_default_na=False)
    assert len(back) == len(df) and list(back.columns[:5]) == ["case", "cc", "rtt_ms", "jitter_ms", "queue"]
    html = (tmp_path / "report.html").read_text()
    assert "Case 5.4" in html and "Failed runs" in html and "data:image/png;base64" in html
    assert [p.name for p in written] == ["summary.csv", "report.html"]


def test_suite_command(lowlat_cli, tmp_path):
    p = lowlat_cli("suite", "rmcat", "--cc", "nada", "--cases", "5.1", "--rtts", "100", "--jitters", "5", "--out", tmp_path, "--no-plots")
    assert p.returncode == 0, p.stderr
    assert "2 runs" in p.stdout and "0 failed" in p.stdout
    assert (tmp_path / "summary.csv").exists()
    bad = lowlat_cli("suite", "rmcat", "--cc", "nada", "--cases", "5.9")
    assert bad.returncode == 2 and "--cases: got '5.9'" in bad.stderr
