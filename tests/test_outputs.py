"""Outputs a user can read: exact bin times, integer counts, compact tables with units and no
NaN, plots that clip nothing, a report with readable numbers, medians and a summary scatter."""

import re
import sys

import numpy as np
import pandas as pd
import pytest

import lowlat
from lowlat import suite
from lowlat.plots import cdf_steps, comparison_figure


@pytest.fixture(scope="module")
def results():
    return {cc: lowlat.run("rmcat-5.1", cc=cc, progress=False) for cc in ["nada", "scream"]}


def test_series_merge_on_exact_bin_times_and_counts_are_integers(results):
    r = results["nada"]
    flows, links = r.flow_series, r.link_series
    video = flows[flows["flow"] == "video"]
    bott = links[links["link"] == "bottleneck"]
    merged = video.merge(bott, on="t_s")
    assert len(merged) == len(video) == len(bott) == 500
    assert np.array_equal(video["t_s"].to_numpy(), np.arange(500) * 200_000_000 / 1e9)
    assert pd.api.types.is_integer_dtype(flows["frames"]) and pd.api.types.is_integer_dtype(links["drops"])


def test_default_table_is_compact_with_units_and_no_nan(results):
    from lowlat import results as res

    labels = {"flow", "kind", "cc", "link"}
    unit = re.compile(r"(kbit/s|ms|ratio|1/s|pkts|B|index)$")
    for table in (res.FLOW_COLUMNS, res.FLOW_COLUMNS_WIDE, res.LINK_COLUMNS, res.LINK_COLUMNS_WIDE,
                  res.COMPARISON_COLUMNS, res.COMPARISON_COLUMNS_WIDE):
        assert all(h in labels or unit.search(h) for h in table.values()), table
    r = results["nada"]
    text = r.table()
    assert "nan" not in text.lower()
    assert "frame p99 ms" in text and "fps 1/s" in text
    # The audio flow is not video: its frame columns show "-", not NaN.
    audio = next(line for line in text.splitlines() if line.lstrip().startswith("audio"))
    assert audio.rstrip().endswith("-"), audio
    assert max(len(line) for line in text.splitlines()[2:]) <= 100, text
    wide = r.table(wide=True)
    assert "owd p99 ms" in wide and "owd p99 ms" not in text and "nan" not in wide.lower()


def test_comparison_plot_fits_every_panel(results):
    fig = comparison_figure(results)
    axes = np.array(fig.axes).reshape(3, 2)
    for row in axes:
        for ax in row:
            for line in ax.get_lines():
                y = np.asarray(line.get_ydata(), dtype=float)
                y = y[np.isfinite(y)]
                if y.size:
                    assert y.max() <= ax.get_ylim()[1], (ax.get_ylabel(), y.max(), ax.get_ylim())
    # SCReAM's frame-delay peaks (P99 about 1 s) are inside its panel, and NADA's panel shares the range.
    assert axes[2][0].get_ylim() == axes[2][1].get_ylim()
    assert axes[2][1].get_ylim()[1] > 1000


def test_report_has_readable_numbers_medians_and_a_summary_scatter(tmp_path):
    specs = suite.matrix(["gcc", "nada"], cases=["5.1", "5.2"], rtts_ms=[20], jitters_ms=[5], queues=["droptail"])
    df = suite.run_matrix(specs, jobs=1, progress=False)
    suite.write(df, tmp_path, plots=True)
    html = (tmp_path / "report.html").read_text()
    cells = re.findall(r"<td>([^<]*)</td>", html)
    assert cells and not [c for c in cells if re.search(r"\de[+-]\d", c)], "no scientific notation"
    assert "Medians over RTT x jitter x queue" in html
    assert html.count("data:image/png;base64") == 3, "the summary scatter and one plot per case"
    assert "nan" not in " ".join(cells).lower()


def test_run_writes_a_pcap_wireshark_reads(lowlat_cli, tmp_path):
    import shutil
    import subprocess

    f = tmp_path / "run.pcap"
    p = lowlat_cli("run", "rmcat-5.1", "--cc", "gcc,nada", "--pcap", f, "--no-progress")
    assert p.returncode == 0, p.stderr
    for cc in ["gcc", "nada"]:
        data = (tmp_path / f"run.{cc}.pcap").read_bytes()
        assert data[:4] == bytes.fromhex("d4c3b2a1") and len(data) > 1_000_000
    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed")
    out = subprocess.run(
        ["tshark", "-r", tmp_path / "run.gcc.pcap", "-d", "udp.port==5004,rtp", "-d", "udp.port==5005,rtcp",
         "-d", "udp.port==5006,rtp", "-d", "udp.port==5007,rtcp", "-z", "expert,warn", "-q"],
        capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "Malformed" not in out.stdout and "Error" not in out.stdout, out.stdout


@pytest.mark.parametrize("n", [1, 5, 2000, 2001, 123_457])
def test_cdf_steps_keep_the_ends_and_stay_within_their_bound_of_the_exact_cdf(n):
    v = np.sort(np.random.default_rng(n).lognormal(size=n))
    x, f = cdf_steps(v, max_points=2000)
    assert len(x) == len(f) <= 2000
    assert x[0] == v[0] and x[-1] == v[-1] and f[-1] == 1.0
    assert np.all(np.diff(x) >= 0) and np.all(np.diff(f) > 0)
    # The drawn post-step curve at each sample against the exact CDF there (rank / n).
    drawn = f[np.searchsorted(x, v, side="right") - 1]
    exact = np.searchsorted(v, v, side="right") / n
    assert np.max(np.abs(drawn - exact)) <= 1 / 1999 + 1e-12


def test_series_files_are_parquet_with_pyarrow_and_csv_without_with_the_same_values(results, tmp_path, monkeypatch):
    """Both ways a run's series are written (``write_frame``): Parquet when pyarrow imports, CSV
    when it does not; each reads back as the run's table."""
    pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'lowlat[parquet]')")
    r = results["nada"]
    written = r.write(tmp_path / "parquet", plots=False)
    assert {p.name for p in written} == {"summary.json", "flows.parquet", "links.parquet"}
    back = pd.read_parquet(tmp_path / "parquet" / "flows.parquet")
    pd.testing.assert_frame_equal(back, r.flow_series.reset_index(drop=True), check_dtype=False)
    # An import of pyarrow that fails (it is not installed) gives CSV.
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    written = r.write(tmp_path / "csv", plots=False)
    assert {p.name for p in written} == {"summary.json", "flows.csv", "links.csv"}
    monkeypatch.undo()  # pandas' own readers look for pyarrow too
    back = pd.read_csv(tmp_path / "csv" / "links.csv")
    assert list(back.columns) == list(r.link_series.columns) and len(back) == len(r.link_series)
    assert np.allclose(back["throughput_kbps"].to_numpy(), r.link_series["throughput_kbps"].to_numpy(), equal_nan=True)
