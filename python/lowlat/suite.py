"""The RMCAT test matrix of the SCReAM talk: cases x minimum RTT x jitter x queue x controllers.

Each run is independent; the sweep runner (:mod:`lowlat.sweep`) spreads them over all cores. A run that fails is recorded with its
error and the others go on. Results: ``summary.csv`` (one row per run, parameters as columns) and
``report.html`` (self-contained: a table and a plot per case).
"""

from __future__ import annotations

import base64
import io
import itertools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from .sweep import STANDARD_METRICS, Sweep, execute, standard_metrics

#: RMCAT cases in the catalog; "5.7bis" is 5.7 with a 50 s mean idle time (the SCReAM slides).
CASES = ["5.1", "5.2", "5.3", "5.4", "5.5", "5.6", "5.7", "5.7bis", "5.8"]
#: The SCReAM talk's minimum RTTs, jitters and queues.
RTTS_MS = [20, 100, 200]
JITTERS_MS = [5, 30]
QUEUES = ["droptail", "codel"]

#: Result columns, in the order summary.csv writes them after the parameters.
METRICS = STANDARD_METRICS


@dataclass(frozen=True)
class RunSpec:
    """One cell of the matrix."""

    case: str
    cc: str
    rtt_ms: float
    jitter_ms: float
    queue: str

    @property
    def scenario(self) -> str:
        return f"rmcat-{self.case}"


def matrix(
    ccs: Iterable[str],
    cases: Iterable[str] = CASES,
    rtts_ms: Iterable[float] = RTTS_MS,
    jitters_ms: Iterable[float] = JITTERS_MS,
    queues: Iterable[str] = QUEUES,
) -> list[RunSpec]:
    """Every combination, case-major."""
    return [
        RunSpec(case, cc, rtt, jitter, queue)
        for case, rtt, jitter, queue, cc in itertools.product(cases, rtts_ms, jitters_ms, queues, ccs)
    ]


#: One row's results from a run's summary (see :func:`lowlat.sweep.standard_metrics`).
metrics = standard_metrics


def points(specs: list[RunSpec]) -> list[dict[str, Any]]:
    """The cells as sweep points: the case's catalog scenario and the run options."""
    return [
        {"scenario": s.scenario, "cc": s.cc, "rtt_ms": s.rtt_ms, "jitter_ms": s.jitter_ms, "queue": s.queue}
        for s in specs
    ]


#: The suite as a sweep (its points come from :func:`matrix`).
SWEEP = Sweep(name="rmcat suite", base="", base_dir=".", axes=[], metrics=list(METRICS), label="rmcat suite")


def run_matrix(specs: list[RunSpec], jobs: int | None = None, progress: bool | None = None) -> pd.DataFrame:
    """Runs every spec with the sweep runner on ``jobs`` processes (default: all cores); rows in
    the specs' order; a failed run is a row with its ``error``."""
    df = execute(SWEEP, points(specs), jobs=jobs, progress=progress, desc="rmcat suite")
    df.insert(0, "case", [str(s).removeprefix("rmcat-") for s in df["scenario"]])
    columns = [*RunSpec.__dataclass_fields__, *METRICS, "error"]
    return df[columns]


#: The columns of the medians table (terminal and report).
MEDIAN_COLUMNS = ["throughput_kbps", "owd_p95_ms", "frame_delay_p99_ms", "jain_index"]
#: Their headers, units included.
MEDIAN_HEADERS = {
    "case": "case",
    "cc": "cc",
    "throughput_kbps": "thr kbit/s",
    "owd_p95_ms": "owd p95 ms",
    "frame_delay_p99_ms": "frame p99 ms",
    "jain_index": "jain index",
}
#: The per-case table of the report: one run per row, the main metrics (summary.csv has all).
REPORT_COLUMNS = {
    "cc": "cc",
    "queue": "queue",
    "rtt_ms": "rtt ms",
    "jitter_ms": "jitter ms",
    "throughput_kbps": "thr kbit/s",
    "utilization": "util ratio",
    "queue_delay_p95_ms": "queue p95 ms",
    "owd_p95_ms": "owd p95 ms",
    "frame_delay_p99_ms": "frame p99 ms",
    "loss_ratio": "loss ratio",
    "ratio_frame_delay_over_400ms": "frame>400ms ratio",
    "jain_index": "jain index",
    "cross_throughput_kbps": "cross kbit/s",
}


def readable(x: Any) -> str:
    """A number as a person reads it in a report: no exponent, thousands separated, 3
    significant digits for small values; ``-`` for a missing one."""
    if x is None or (isinstance(x, float) and x != x):
        return "-"
    if isinstance(x, str):
        return x
    v = float(x)
    if v == int(v) and abs(v) < 1e15:
        return f"{int(v):,}"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def _html_table(df: pd.DataFrame) -> str:
    html: str = df.to_html(index=False, formatters={c: readable for c in df.columns}, na_rep="-", escape=True)
    return html


def _plot_summary(df: pd.DataFrame) -> str:
    """A Pantheon-style summary (base64 PNG): per controller, one marker per case at the median
    over the case's runs of throughput against P95 one-way delay (delay axis reversed: better is up
    and to the right), and the median over every run as a large marker."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = df[df["error"] == ""]
    fig, ax = plt.subplots(figsize=(7, 5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, (cc, g) in enumerate(ok.groupby("cc", sort=False)):
        c = colors[k % len(colors)]
        per_case = g.groupby("case", sort=False)[["owd_p95_ms", "throughput_kbps"]].median()
        ax.scatter(per_case["owd_p95_ms"], per_case["throughput_kbps"], color=c, alpha=0.5, s=25)
        for case, row in per_case.iterrows():
            ax.annotate(str(case), (row["owd_p95_ms"], row["throughput_kbps"]), fontsize=6, color=c)
        ax.scatter(g["owd_p95_ms"].median(), g["throughput_kbps"].median(), color=c, s=120, marker="o",
                   edgecolors="black", label=f"{cc} (median of all runs)")
    ax.invert_xaxis()
    ax.set_xlabel("one-way delay P95 (ms, better to the right)")
    ax.set_ylabel("video throughput (kbit/s)")
    ax.set_title("Throughput vs delay per controller (small markers: median per case)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def medians(df: pd.DataFrame) -> pd.DataFrame:
    """Medians over RTT x jitter x queue, one row per (case, controller), of the runs that did not
    fail."""
    ok = df[df["error"] == ""]
    return ok.groupby(["case", "cc"], sort=False)[MEDIAN_COLUMNS].median().reset_index()


def _plot_case(df: pd.DataFrame, case: str) -> str:
    """A PNG (base64) of one case: frame-delay P99 against throughput, one marker per run,
    coloured by controller, filled for drop-tail and hollow for CoDel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    ok = df[df["error"] == ""]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, (cc, g) in enumerate(ok.groupby("cc", sort=False)):
        for queue, marker_fill in (("droptail", "full"), ("codel", "none")):
            q = g[g["queue"] == queue]
            if q.empty:
                continue
            c = colors[k % len(colors)]
            kw = {"color": c, "label": f"{cc} {queue}"}
            if marker_fill == "none":
                kw = {"facecolors": "none", "edgecolors": c, "label": f"{cc} {queue}"}
            axes[0].scatter(q["throughput_kbps"], q["frame_delay_p99_ms"], **kw)
            axes[1].scatter(q["rtt_ms"] + (q["jitter_ms"] - 15) / 5, q["queue_delay_p95_ms"], **kw)
    axes[0].set_xlabel("video throughput (kbit/s)")
    axes[0].set_ylabel("frame delay P99 (ms)")
    axes[1].set_xlabel("minimum RTT (ms; jitter 5 left, 30 right)")
    axes[1].set_ylabel("bottleneck queue P95 (ms)")
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize="x-small")
    fig.suptitle(f"RMCAT {case}")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def write(df: pd.DataFrame, out_dir: str | Path, *, plots: bool = True) -> list[Path]:
    """``summary.csv`` and ``report.html`` in ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    csv = out / "summary.csv"
    df.to_csv(csv, index=False)
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>lowlat RMCAT suite</title>",
        "<style>body{font-family:sans-serif;margin:2em;max-width:1100px}"
        "table{border-collapse:collapse;font-size:12px;display:block;overflow-x:auto}"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right;white-space:nowrap}"
        "h2{margin-top:2em}img{max-width:100%}</style></head><body>",
        f"<h1>RMCAT suite</h1><p>{len(df)} runs, {int((df['error'] != '').sum())} failed; generated "
        f"{time.strftime('%Y-%m-%d %H:%M')} by lowlat. Rows: one run each; metrics are over the "
        "video flows (throughput summed, delays averaged, frame-delay P99 the worst flow's); "
        "summary.csv holds every column.</p>",
    ]
    if (df["error"] == "").any():
        parts.append("<h2>Medians over RTT x jitter x queue</h2>")
        parts.append(_html_table(medians(df).rename(columns=MEDIAN_HEADERS)))
        if plots:
            parts.append(f"<img src='data:image/png;base64,{_plot_summary(df)}'>")
    shown = [c for c in REPORT_COLUMNS if c in df]
    for case, g in df.groupby("case", sort=False):
        parts.append(f"<h2>Case {case}</h2>")
        if plots and (g["error"] == "").any():
            parts.append(f"<img src='data:image/png;base64,{_plot_case(g, case)}'>")
        parts.append(_html_table(g[g["error"] == ""][shown].rename(columns=REPORT_COLUMNS)))
    failed = df[df["error"] != ""]
    if not failed.empty:
        parts.append("<h2>Failed runs</h2>")
        parts.append(failed[["case", "cc", "queue", "rtt_ms", "jitter_ms", "error"]].to_html(index=False))
    parts.append("</body></html>")
    html = out / "report.html"
    html.write_text("\n".join(parts))
    return [csv, html]
