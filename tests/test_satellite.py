"""`lowlat reproduce satellite` and the GEO catalog: the seed's ordering, the lossy table's fall,
the cost of a wrong saved set, files written, clean errors."""

import json

import pandas as pd

from lowlat import run, validate
from lowlat.reproduce import satellite


def test_parts_b_and_d_hold_the_seed_ordering_and_the_cost_of_being_wrong(tmp_path):
    res = satellite.reproduce(tmp_path, parts="bd", ccs=["cubic"], jobs=1, progress=False)
    assert res["failed"] == 0
    b = res["tables"]["seed_comparison"]
    assert len(b) == 4 and b["ordering_holds"].all(), b
    row = b[(b["path_mbps"] == "50/10") & (b["size_mb"] == 2)].iloc[0]
    assert row["seed_none_s"] == 4.3 and row["seed_0-RTT-BDP_s"] == 2.9
    # 0-RTT saves the handshake's round trip (650 ms) and nothing else.
    assert abs(row["none_s"] - row["0-RTT_s"] - 0.65) < 0.1
    d = res["tables"]["wrong"]
    wrong = d[d["situation"] == "capacity now 10 Mbit/s"].set_index("start_up")
    assert wrong.loc["careful-resume", "phases"].count("safe-retreat") == 1
    assert wrong.loc["0-RTT-BDP", "packets_lost"] > 2 * wrong.loc["careful-resume", "packets_lost"]
    assert wrong.loc["careful-resume", "jump_cwnd_bytes"] == 50e6 * 0.65 / 8 / 2
    for name in ["seed_comparison.csv", "seed_comparison.png", "wrong_saved_set.csv", "wrong_saved_set.png"]:
        assert (tmp_path / name).stat().st_size > 500, name
    assert "completion_s" in pd.read_csv(tmp_path / "wrong_saved_set.csv").columns


def test_lossy_downloads_slow_down_with_loss_and_stay_near_the_mathis_bound(tmp_path):
    # 20 MB instead of 1 GB: the same path, a short run.
    rows = [satellite.run_lossy(satellite.LossyRun(p, "newreno", 1, 20e6)) for p in (0.0, 1e-3, 5e-3)]
    assert all(r["error"] == "" for r in rows), rows
    times = [r["completion_s"] for r in rows]
    assert times[0] < times[1] < times[2], times
    # Within a factor of two of the Mathis bound (a 20 MB transfer starts with a loss-free slow
    # start, which can put it above the long-run bound), and falling at least as 1/sqrt(p) does.
    for r in rows[1:]:
        assert 0.5 < r["goodput_mbps"] / r["mathis_goodput_mbps"] < 2.0, r
    assert rows[2]["goodput_mbps"] / rows[1]["goodput_mbps"] < (1e-3 / 5e-3) ** 0.5


def test_geo_catalog_cases_validate_and_resume(tmp_path):
    for case in ["small", "medium", "congested", "variable", "large", "lossy-large", "medium-ge-wifi", "medium-ge-wired"]:
        assert validate(f"geo-{case}")["name"] == f"geo-{case}"
    r = run("geo-large", progress=False)
    conns = {c["id"]: c for c in r.summary["flows"][0]["connections"]}
    assert conns["2MB-resumed"]["saved_used"] == conns["2MB"]["saved_after"]
    assert conns["10MB-resumed"]["completion_s"] < conns["10MB"]["completion_s"]
    assert "unvalidated" in [p[1] for p in conns["10MB-resumed"]["phases"]]
    json.dumps(r.summary)  # the per-connection series serialise


def test_bad_parts_and_bad_keys_are_clean_errors(lowlat_cli, tmp_path):
    p = lowlat_cli("reproduce", "satellite", "--out", tmp_path, "--parts", "xz")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip().startswith("lowlat: error: --parts") and len(p.stderr.strip().splitlines()) == 1
    f = tmp_path / "bad.toml"
    f.write_text(
        'duration = "10 s"\n[bottleneck]\nrate = "10 Mbit/s"\n[[flows]]\nid = "d"\nkind = "downloads"\n'
        'connections = [{ id = "a", size = "1 MB", start_up = "careful-resume", resume_from = "b" }]\n'
    )
    p = lowlat_cli("validate", f)
    err = p.stderr.strip()
    assert p.returncode != 0 and len(err.splitlines()) == 1
    assert "flows[0].connections[0].resume_from" in err and "earlier connection" in err, err
