"""The Zhuge evaluation (SIGCOMM 2022), reproduced: ``lowlat reproduce zhuge``.

Three parts, all on the simulator:

1. **Trace families** (W1 restaurant Wi-Fi, W2 office Wi-Fi, C1 indoor 4G/5G, C2 city 4G, C3 city
   5G): a 24 fps video (encoder 300 kbit/s - 2 Mbit/s, so about 2 Mbit/s on average) over each
   trace for 300 s with GCC+FIFO, GCC+CoDel, GCC+Zhuge, Copa, Copa+FastAck and Copa+Zhuge. The
   last hop is the access point: a Wi-Fi downlink (aggregates at random transmit opportunities)
   for the W families, a point-to-point link for the cellular ones, behind a 19 ms wired path
   (40 ms base RTT). Results: ``summary.csv`` (one row per run) and ``table_<family>.csv`` (means
   over the family's traces) of the ratio of RTT > 200 ms, of frames later than 400 ms, of 1 s
   bins under 10 fps, and the P99 RTT and frame delay.
2. **ABW drop**: 30 Mbit/s falling to 30/k Mbit/s at a random instant in 144-176 s of a 200 s run,
   for k from 2 to 50; how long, in the 20 s after the drop, RTT stays above 200 ms, frame delay
   above 400 ms and the frame rate under 10 fps (``abw_drop.csv``, ``abw_drop.png``). The encoder
   may reach 8 Mbit/s here, so that the drop congests the link for most k.
3. **Prediction accuracy**: the Fortune Teller's predictions against the delays the packets had,
   from the GCC+Zhuge runs (``accuracy.csv``, ``accuracy.png``).

RTT here is the network's: a packet's one-way delay plus the reverse path's propagation delay, the
same for every scheme (a sender's own RTT samples would shrink under Zhuge, whose feedback skips
the downlink queue).

Without ``--traces`` the families are the project's own generated traces (one per family, written
to ``DIR/traces``); with it, trace files (two-column ``<s> <Mbit/s>``) or folders of them, each
file's family told from its name (``rest-wifi*`` W1, ``office-wifi*`` W2, ``pitree4g*`` C1,
``xu4g*`` C2, ``xu5g*`` C3, otherwise the name before the last ``_``).
"""

from __future__ import annotations

import math
import multiprocessing
import os
import random
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import pandas as pd

#: The schemes of the paper: (label, controller, queue, assistance).
SCHEMES = [
    ("GCC+FIFO", "gcc", "droptail", "none"),
    ("GCC+CoDel", "gcc", "codel", "none"),
    ("GCC+Zhuge", "gcc", "droptail", "zhuge"),
    ("Copa", "copa", "droptail", "none"),
    ("Copa+FastAck", "copa", "droptail", "fastack"),
    ("Copa+Zhuge", "copa", "droptail", "zhuge"),
]
#: The ABW-drop experiment's schemes and factors (the paper's).
ABW_SCHEMES = ["GCC+FIFO", "GCC+Zhuge", "Copa", "Copa+Zhuge"]
ABW_KS = [2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 25, 30, 35, 40, 45, 50]
#: Trace families: label, file-name prefix, what it is, and how the generated stand-in looks
#: (mean Mbit/s, relative spread, deep fades per minute).
FAMILIES = {
    "W1": ("rest-wifi", "restaurant Wi-Fi", 22.0, 0.45, 3.0),
    "W2": ("office-wifi", "office Wi-Fi", 26.0, 0.35, 2.0),
    "C1": ("pitree4g", "indoor mixed 4G/5G", 79.0, 0.6, 2.0),
    "C2": ("xu4g", "city 4G", 65.0, 0.7, 3.0),
    "C3": ("xu5g", "city 5G", 341.0, 0.8, 3.0),
}
METRICS = [
    "ratio_rtt_over_200ms",
    "ratio_frame_delay_over_400ms",
    "ratio_fps_below_10",
    "rtt_p99_ms",
    "frame_delay_p99_ms",
    "throughput_kbps",
]
WIRED_ONE_WAY_MS = 19.0
HOP_MS = 1.0


def family_of(path: Path) -> str:
    """The family label of a trace file, from its name."""
    for label, (prefix, *_rest) in FAMILIES.items():
        if path.name.startswith(prefix + "_") or path.stem == prefix:
            return label
    stem = path.stem
    return stem.rsplit("_", 1)[0] if "_" in stem else stem


def generate_trace(family: str, seed: int, seconds: float = 300.0) -> str:
    """A two-column stand-in for a family's traces: log-normal fluctuation every 0.2 s around the
    family's mean, with deep fades (to 2-10 % of the mean for 0.4-3 s) at the family's rate."""
    _, _, mean, spread, fades_per_min = FAMILIES[family]
    rng = random.Random(f"{family}-{seed}")
    lines, level, fade_until, t = [], 0.0, -1.0, 0.0
    sigma = math.sqrt(math.log(1 + spread * spread))
    while t < seconds:
        level = 0.9 * level + rng.gauss(0.0, sigma * math.sqrt(1 - 0.81))
        rate = mean * math.exp(level - sigma * sigma / 2)
        if t >= fade_until and rng.random() < fades_per_min / 300.0:
            fade_until = t + rng.uniform(0.4, 3.0)
        if t < fade_until:
            rate = mean * rng.uniform(0.02, 0.1)
        lines.append(f"{t:.1f} {max(rate, 0.1):.3f}")
        t = round(t + 0.2, 1)
    return "\n".join(lines) + "\n"


def find_traces(paths: Iterable[str]) -> list[tuple[str, Path]]:
    """``(family, file)`` for every trace file given or inside the folders given, sorted."""
    found = []
    for p in map(Path, paths):
        if p.is_dir():
            files = sorted(f for f in p.iterdir() if f.is_file() and not f.name.startswith(".") and f.suffix != ".md")
            if not files:
                raise FileNotFoundError(f"{p}: no trace files in this folder")
            found += files
        elif p.is_file():
            found.append(p)
        else:
            raise FileNotFoundError(f"{p}: no such trace file or folder")
    return sorted(((family_of(f), f.resolve()) for f in found), key=lambda x: (x[0], str(x[1])))


def scenario(
    label: str,
    capacity: dict[str, Any],
    wifi: bool,
    seconds: float,
    rmax: str,
    seed: int,
) -> dict[str, Any]:
    """The scenario of one run of scheme ``label`` (see :data:`SCHEMES`)."""
    _, cc, queue, assist = next(s for s in SCHEMES if s[0] == label)
    bottleneck: dict[str, Any] = {
        **capacity,
        "delay": f"{HOP_MS} ms",
        "queue": {"kind": "codel" if queue == "codel" else "droptail", "limit": "1000 packets"},
        "assist": assist,
    }
    if wifi:
        bottleneck["wifi"] = {}
    return {
        "name": f"zhuge-{label}",
        "duration": f"{seconds} s",
        "seed": seed,
        "bottleneck": bottleneck,
        "reverse": {"rate": "30 Mbit/s", "delay": f"{HOP_MS} ms"},
        "flows": [
            {
                "id": "video",
                "kind": "rtp-video",
                "cc": cc,
                "fps": 24,
                "rmin": "300 kbit/s",
                "rmax": rmax,
                "access": {"delay": f"{WIRED_ONE_WAY_MS} ms"},
            }
        ],
    }


@dataclass(frozen=True)
class TraceRun:
    """One scheme over one trace."""

    family: str
    trace: str
    scheme: str
    seconds: float
    seed: int
    trace_format: str = "auto"


@dataclass(frozen=True)
class DropRun:
    """One scheme in the ABW-drop experiment."""

    k: int
    scheme: str
    drop_s: float
    seed: int


def _flow_metrics(summary: dict[str, Any]) -> dict[str, float]:
    f = summary["flows"][0]
    return {
        "ratio_rtt_over_200ms": f["ratio_net_rtt_over_200ms"],
        "ratio_frame_delay_over_400ms": f.get("ratio_frame_delay_over_400ms", float("nan")),
        "ratio_fps_below_10": f.get("ratio_fps_below_10", float("nan")),
        "rtt_p99_ms": f["net_rtt_ms"]["p99"],
        "frame_delay_p99_ms": (f.get("frame_delay_ms") or {}).get("p99"),
        "throughput_kbps": f["throughput_kbps"],
    }


def run_trace(spec: TraceRun) -> dict[str, Any]:
    """One trace run; never raises (a failure is the row's ``error``). Returns the row and, for
    Zhuge runs, the predictions (sampled to at most 20 000)."""
    from .api import run

    row: dict[str, Any] = asdict(spec)
    row["predictions"] = None
    try:
        cap = {"trace": spec.trace, "trace_format": spec.trace_format}
        sc = scenario(spec.scheme, cap, spec.family.startswith("W"), spec.seconds, "2 Mbit/s", spec.seed)
        r = run(sc, progress=False)
        row.update(_flow_metrics(r.summary))
        row["warnings"] = "; ".join(r.summary.get("warnings", []))
        if spec.scheme == "GCC+Zhuge" and len(r.predictions):
            p = r.predictions
            row["predictions"] = p.sample(n=min(len(p), 20_000), random_state=spec.seed)[["predicted_ms", "actual_ms"]]
        row["error"] = ""
    except BaseException as e:  # noqa: BLE001 - any failure is recorded, the sweep goes on
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        row.update({m: float("nan") for m in METRICS})
        row["error"] = f"{type(e).__name__}: {e}"
    return row


def durations_after(r: Any, drop_s: float, window_s: float = 20.0) -> dict[str, float]:
    """Seconds, in ``window_s`` after the drop, of RTT > 200 ms and frame delay > 400 ms (200 ms
    bins), and of fps < 10 (1 s bins)."""
    fs = r.flow_series
    fs = fs[(fs["flow"] == "video") & (fs["t_s"] >= drop_s - 1e-9) & (fs["t_s"] < drop_s + window_s - 1e-9)]
    reverse_ms = WIRED_ONE_WAY_MS + HOP_MS
    bin_s = float(fs["t_s"].diff().dropna().min()) if len(fs) > 1 else 0.2
    rtt = (fs["owd_ms"] + reverse_ms > 200).sum() * bin_s
    frame = (fs["frame_delay_ms"] > 400).sum() * bin_s
    per_s = fs.groupby(((fs["t_s"] - drop_s) // 1.0).astype(int))["frames"].sum()
    return {"rtt_over_200ms_s": rtt, "frame_delay_over_400ms_s": frame, "fps_below_10_s": float((per_s < 10).sum())}


def run_drop(spec: DropRun) -> dict[str, Any]:
    """One ABW-drop run; never raises."""
    from .api import run

    row: dict[str, Any] = asdict(spec)
    try:
        cap = {
            "schedule": [
                {"at": "0 s", "rate": "30 Mbit/s"},
                {"at": f"{spec.drop_s} s", "rate": f"{30.0 / spec.k:.6g} Mbit/s"},
            ]
        }
        r = run(scenario(spec.scheme, cap, True, 200.0, "8 Mbit/s", spec.seed), progress=False)
        row.update(durations_after(r, spec.drop_s))
        row["error"] = ""
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        row.update({"rtt_over_200ms_s": float("nan"), "frame_delay_over_400ms_s": float("nan"), "fps_below_10_s": float("nan")})
        row["error"] = f"{type(e).__name__}: {e}"
    return row


def _indexed(item: tuple[int, Callable[[Any], dict[str, Any]], Any]) -> tuple[int, dict[str, Any]]:
    return item[0], item[1](item[2])


def pool_map(fn: Callable[[Any], dict[str, Any]], specs: list[Any], jobs: int | None, progress: bool, desc: str) -> list[dict[str, Any]]:
    """``fn`` over ``specs`` on ``jobs`` processes, results in order, with a progress bar."""
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(specs) or 1))
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(specs), unit="run", desc=desc)
    out: dict[int, dict[str, Any]] = {}
    try:
        items = [(i, fn, s) for i, s in enumerate(specs)]
        if jobs == 1:
            for item in items:
                i, row = _indexed(item)
                out[i] = row
                if bar is not None:
                    bar.update(1)
        else:
            with multiprocessing.get_context("fork").Pool(jobs) as pool:
                for i, row in pool.imap_unordered(_indexed, items, chunksize=1):
                    out[i] = row
                    if bar is not None:
                        bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return [out[i] for i in range(len(specs))]


def family_tables(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per family: one row per scheme, the metrics' means over the family's traces."""
    ok = df[df["error"] == ""]
    order = [s[0] for s in SCHEMES]
    tables = {}
    for fam, g in ok.groupby("family", sort=True):
        t = g.groupby("scheme")[METRICS].mean().reindex([s for s in order if s in set(g["scheme"])])
        t.insert(0, "traces", g.groupby("scheme").size())
        tables[fam] = t.reset_index()
    return tables


def reductions(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per family: how much GCC+Zhuge cuts each tail ratio against the best of GCC+FIFO/CoDel,
    and Copa+Zhuge against the best of Copa/Copa+FastAck (positive: Zhuge lower)."""
    rows = []
    for fam, t in tables.items():
        t = t.set_index("scheme")
        for zhuge, bases in (("GCC+Zhuge", ["GCC+FIFO", "GCC+CoDel"]), ("Copa+Zhuge", ["Copa", "Copa+FastAck"])):
            if zhuge not in t.index or not any(b in t.index for b in bases):
                continue
            row: dict[str, Any] = {"family": fam, "scheme": zhuge}
            for m in ("ratio_rtt_over_200ms", "ratio_frame_delay_over_400ms", "ratio_fps_below_10", "rtt_p99_ms"):
                best = min(t.loc[b, m] for b in bases if b in t.index)
                row[f"{m}_reduction"] = (best - t.loc[zhuge, m]) / best if best > 0 else float("nan")
            rows.append(row)
    return pd.DataFrame(rows)


def plot_drop(df: pd.DataFrame, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    ok = df[df["error"] == ""]
    for scheme, g in ok.groupby("scheme", sort=False):
        g = g.sort_values("k")
        for ax, col in zip(axes, ["rtt_over_200ms_s", "frame_delay_over_400ms_s", "fps_below_10_s"]):
            ax.plot(g["k"], g[col], marker="o", ms=3, label=scheme)
    for ax, title in zip(axes, ["RTT > 200 ms", "frame delay > 400 ms", "fps < 10"]):
        ax.set_xlabel("k (capacity 30 -> 30/k Mbit/s)")
        ax.set_ylabel("seconds in the 20 s after the drop")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def accuracy_table(pred: pd.DataFrame) -> pd.DataFrame:
    """Absolute error percentiles per predicted-delay bucket (powers of two in ms)."""
    if pred.empty:
        return pd.DataFrame(columns=["predicted_ms_from", "predicted_ms_to", "packets", "error_p50_ms", "error_p90_ms", "error_p99_ms"])
    err = (pred["predicted_ms"] - pred["actual_ms"]).abs()
    edges = [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, float("inf")]
    bucket = pd.cut(pred["predicted_ms"], edges, right=False)
    rows = []
    for b, e in err.groupby(bucket, observed=True):
        rows.append(
            {
                "predicted_ms_from": b.left,
                "predicted_ms_to": b.right,
                "packets": len(e),
                "error_p50_ms": e.quantile(0.5),
                "error_p90_ms": e.quantile(0.9),
                "error_p99_ms": e.quantile(0.99),
            }
        )
    return pd.DataFrame(rows)


def plot_accuracy(pred: pd.DataFrame, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    if not pred.empty:
        sample = pred.sample(n=min(len(pred), 20_000), random_state=1)
        axes[0].scatter(sample["actual_ms"], sample["predicted_ms"], s=2, alpha=0.3)
        top = max(sample["actual_ms"].quantile(0.999), sample["predicted_ms"].quantile(0.999), 1.0)
        axes[0].plot([0, top], [0, top], color="k", lw=0.8)
        axes[0].set_xlim(0, top)
        axes[0].set_ylim(0, top)
        acc = accuracy_table(pred)
        mid = (acc["predicted_ms_from"].astype(float) + acc["predicted_ms_to"].replace(float("inf"), 1024).astype(float)) / 2
        for q in ("p50", "p90", "p99"):
            axes[1].plot(mid, acc[f"error_{q}_ms"], marker="o", label=q)
        axes[1].set_xscale("log", base=2)
        axes[1].axhline(50, color="grey", ls="--", lw=0.8, label="one RTT (50 ms)")
        axes[1].legend(fontsize="small")
    axes[0].set_xlabel("actual delay through the AP (ms)")
    axes[0].set_ylabel("predicted (ms)")
    axes[1].set_xlabel("predicted delay (ms)")
    axes[1].set_ylabel("|prediction error| (ms)")
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.suptitle("Fortune Teller accuracy (GCC+Zhuge runs)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def reproduce(
    out_dir: str | Path,
    traces: list[str] | None = None,
    *,
    seconds: float = 300.0,
    ks: list[int] | None = None,
    seed: int = 1,
    jobs: int | None = None,
    progress: bool | None = None,
    plots: bool = True,
    trace_format: str = "auto",
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Runs the whole evaluation, writes its files to ``out_dir`` and returns the tables."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    show = sys.stderr.isatty() if progress is None else progress
    if traces:
        found = find_traces(traces)
    else:
        tdir = out / "traces"
        tdir.mkdir(exist_ok=True)
        found = []
        for fam, (prefix, *_r) in FAMILIES.items():
            f = tdir / f"{prefix}_generated.rate"
            f.write_text(generate_trace(fam, seed, seconds))
            found.append((fam, f.resolve()))
    started = time.perf_counter()
    specs = [TraceRun(fam, str(f), s[0], seconds, seed, trace_format) for fam, f in found for s in SCHEMES]
    rows = pool_map(run_trace, specs, jobs, show, "zhuge traces")
    preds = [r.pop("predictions") for r in rows]
    df = pd.DataFrame(rows)
    df.to_csv(out / "summary.csv", index=False)
    written = [out / "summary.csv"]
    tables = family_tables(df)
    for fam, t in tables.items():
        p = out / f"table_{fam}.csv"
        t.to_csv(p, index=False)
        written.append(p)
    red = reductions(tables)
    red.to_csv(out / "reductions.csv", index=False)
    written.append(out / "reductions.csv")
    pred = pd.concat([p for p in preds if p is not None], ignore_index=True) if any(p is not None for p in preds) else pd.DataFrame(columns=["predicted_ms", "actual_ms"])
    acc = accuracy_table(pred)
    acc.to_csv(out / "accuracy.csv", index=False)
    written.append(out / "accuracy.csv")

    ks = ks or ABW_KS
    rng = random.Random(seed)
    drops = {k: round(rng.uniform(144.0, 176.0), 1) for k in ks}
    dspecs = [DropRun(k, s, drops[k], seed) for k in ks for s in ABW_SCHEMES]
    drows = pd.DataFrame(pool_map(run_drop, dspecs, jobs, show, "abw drop"))
    drows.to_csv(out / "abw_drop.csv", index=False)
    written.append(out / "abw_drop.csv")
    if plots:
        written.append(plot_drop(drows, out / "abw_drop.png"))
        written.append(plot_accuracy(pred, out / "accuracy.png"))
    wall = time.perf_counter() - started
    failed = int((df["error"] != "").sum() + (drows["error"] != "").sum())
    fmt = {"index": False, "float_format": lambda x: f"{x:.3f}" if abs(x) < 10 else f"{x:.1f}"}
    log(f"{len(df) + len(drows)} runs in {wall:.1f} s, {failed} failed")
    for fam, t in tables.items():
        what = FAMILIES[fam][1] if fam in FAMILIES else "traces"
        log(f"\n{fam} ({what}; mean over {int(t['traces'].max())} trace(s), {seconds:g} s each):")
        log(t.to_string(**fmt))
    if not red.empty:
        log("\nZhuge's reduction against the best baseline (positive: lower with Zhuge):")
        log(red.to_string(**fmt))
    ok = drows[drows["error"] == ""]
    if not ok.empty:
        log("\nABW drop, seconds in the 20 s after the drop with RTT > 200 ms:")
        log(ok.pivot(index="k", columns="scheme", values="rtt_over_200ms_s")[[s for s in ABW_SCHEMES if s in set(ok["scheme"])]].to_string(float_format=lambda x: f"{x:.1f}"))
    if not acc.empty:
        log("\nprediction error by predicted delay (GCC+Zhuge runs):")
        log(acc.to_string(**fmt))
    for r in df[df["error"] != ""].itertuples():
        log(f"failed: {r.family} {Path(r.trace).name} {r.scheme}: {r.error}")
    for r in drows[drows["error"] != ""].itertuples():
        log(f"failed: abw drop k={r.k} {r.scheme}: {r.error}")
    return {"summary": df, "tables": tables, "reductions": red, "abw_drop": drows, "accuracy": acc, "written": written, "failed": failed}
