"""SCONE-PRO for RTC, reproduced, and one shoot-out of every kind of network help:
``lowlat reproduce scone``.

The seed talk ("A possible attempt to use sconepro for RTC scenario", IETF 120 hackathon) compared
Copa with an RTC sender driven by the access point's capacity and queue signals (frame latency
mean/P90/P99: Copa 131.6/402/815 ms, RTC with SCONE-PRO 72.4/120.5/248 ms). Its capacity pattern
is not public, so the same comparison runs over the Zhuge evaluation's variable-capacity access
point (:mod:`lowlat.reproduce.common`'s trace families W1, W2, C1-C3, generated stand-ins or given trace
files) and its ABW-drop pattern (30 Mbit/s falling to 30/k Mbit/s), with a 24 fps video behind a
19 ms wired path. Two parts:

1. **Frame latency** (``frame_latency.csv``, ``frame_latency.png``): Copa, RTC with SCONE-PRO,
   GCC, GCC+Zhuge and SCReAM v2 with L4S marking at the AP: frame delay mean, P90 and P99 per
   scheme, per trace family and over all runs (the mean of the runs' figures), next to the seed's.
2. **Shoot-out** (``shootout.csv``, ``shootout.png``): every sender (Copa, GCC, SCReAM v2,
   SCONE-PRO's RTC sender) with every kind of help at the same AP (none, Zhuge, SCONE-PRO
   capacity signals with the trace's capacity or the one the AP measures, the standard SCONE
   advice, L4S marking) on every family: throughput, frame
   delay mean/P90/P99 and the share of packets whose network RTT exceeds 200 ms.

Every run's row is in ``summary.csv``. A sender without a reaction to a help is still run with it
(the help then only costs its bytes): GCC and Copa ignore SCONE signals, Copa and GCC do not react
to CE marks (GCC's draft defines no ECN reaction), and SCONE-PRO's sender falls back to GCC
without capacity signals.
"""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from .common import Runner, check_seconds, digest, failure_lines, family_traces, find_traces, results_folder, run_grid, write_csv
from .zhuge import HOP_MS, WIRED_ONE_WAY_MS

#: The seed talk's table (ms): scheme -> (mean, P90, P99).
SEED = {"Copa": (131.6, 402.0, 815.0), "RTC+SCONE-PRO": (72.4, 120.5, 248.0)}
#: The senders: label -> controller.
SENDERS = {"Copa": "copa", "GCC": "gcc", "SCReAMv2": "scream2", "RTC": "scone-pro"}
#: The kinds of help at the AP.
HELPS = ["none", "zhuge", "scone-rtc", "scone-rtc-measured", "scone", "l4s"]
#: The frame-latency comparison: label -> (sender, help).
SCHEMES = {
    "Copa": ("Copa", "none"),
    "RTC+SCONE-PRO": ("RTC", "scone-rtc"),
    "GCC": ("GCC", "none"),
    "GCC+Zhuge": ("GCC", "zhuge"),
    "SCReAMv2+L4S": ("SCReAMv2", "l4s"),
}
#: ABW-drop factors run by default (a subset of the Zhuge paper's 2-50).
ABW_KS = [2, 5, 10, 20]
STATS = ["frame_delay_mean_ms", "frame_delay_p90_ms", "frame_delay_p99_ms"]
METRICS = ["throughput_kbps", *STATS, "ratio_rtt_over_200ms", "queue_delay_p99_ms"]


def scenario(sender: str, help_: str, capacity: dict[str, Any], wifi: bool, seconds: float, rmax: str, seed: int) -> dict[str, Any]:
    """One run: ``sender`` (a key of :data:`SENDERS`) with ``help_`` (one of :data:`HELPS`) at a
    1 ms AP hop of capacity ``capacity`` behind a 19 ms wired path."""
    cc = SENDERS[sender]
    queue: dict[str, Any] = {"kind": "droptail", "limit": "1000 packets"}
    flow: dict[str, Any] = {
        "id": "video",
        "kind": "rtp-video",
        "cc": cc,
        "fps": 24,
        "rmin": "300 kbit/s",
        "rmax": rmax,
        "access": {"delay": f"{WIRED_ONE_WAY_MS} ms"},
    }
    assist = help_
    extra: dict[str, Any] = {}
    if help_ == "scone-rtc-measured":
        # The AP signals the capacity it measures (dequeue rate over busy time), not the trace's.
        assist, extra = "scone-rtc", {"scone": {"capacity": "measured"}}
    if help_ == "l4s":
        # The L4S AP: ECT(1) packets marked above a 1 ms sojourn; RTP senders report CE with
        # RFC 8888 (transport-cc cannot carry it).
        queue = {"kind": "l4s", "limit": "1000 packets"}
        assist = "none"
        flow["ecn"] = "ect1"
        if cc != "copa":
            flow["feedback_format"] = "rfc8888"
        if cc == "scream2":
            # SCReAM v2 ignores CE unless in L4S mode.
            flow["cc_params"] = {"scream2": {"l4s": True}}
    bottleneck: dict[str, Any] = {**capacity, "delay": f"{HOP_MS} ms", "queue": queue, "assist": assist, **extra}
    if wifi:
        bottleneck["wifi"] = {}
    return {
        "name": f"scone-{sender}-{help_}",
        "duration": f"{seconds} s",
        "seed": seed,
        "bottleneck": bottleneck,
        "reverse": {"rate": "30 Mbit/s", "delay": f"{HOP_MS} ms"},
        "flows": [flow],
    }


@dataclass(frozen=True)
class Run:
    """One sender with one help over one capacity pattern (a trace file, or an ABW drop)."""

    family: str
    trace: str
    sender: str
    help: str
    seconds: float
    seed: int
    k: int = 0
    drop_s: float = 0.0


def run_one(spec: Run) -> dict[str, Any]:
    """One run; never raises (a failure is the row's ``error``)."""
    from ..api import run

    row: dict[str, Any] = asdict(spec)
    try:
        cap: dict[str, Any]
        if spec.k:
            cap = {"schedule": [{"at": "0 s", "rate": "30 Mbit/s"}, {"at": f"{spec.drop_s} s", "rate": f"{30.0 / spec.k:.6g} Mbit/s"}]}
            sc = scenario(spec.sender, spec.help, cap, True, spec.seconds, "8 Mbit/s", spec.seed)
        else:
            cap = {"trace": spec.trace, "trace_format": "rate"}
            sc = scenario(spec.sender, spec.help, cap, spec.family.startswith("W"), spec.seconds, "2 Mbit/s", spec.seed)
        r = run(sc, progress=False)
        f = r.summary["flows"][0]
        fd = f.get("frame_delay_ms") or {}
        link = next(l for l in r.summary["links"] if l["id"] == "bottleneck")
        row.update(
            {
                "throughput_kbps": f["throughput_kbps"],
                "frame_delay_mean_ms": fd.get("mean"),
                "frame_delay_p90_ms": fd.get("p90"),
                "frame_delay_p99_ms": fd.get("p99"),
                "ratio_rtt_over_200ms": f["ratio_net_rtt_over_200ms"],
                "queue_delay_p99_ms": link["queue_delay_ms"]["p99"],
                "ecn_marks": link.get("ecn_marks", 0),
                "ce_reported": f.get("ce_reported"),
                "error": "",
            }
        )
    except BaseException as e:  # noqa: BLE001 - any failure is recorded, the sweep goes on
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        row.update({m: float("nan") for m in METRICS})
        row["error"] = f"{type(e).__name__}: {e}"
    return row


def scheme_of(sender: str, help_: str) -> str | None:
    """The frame-latency scheme a (sender, help) pair is, if any."""
    return next((s for s, v in SCHEMES.items() if v == (sender, help_)), None)


def frame_latency(df: pd.DataFrame) -> pd.DataFrame:
    """Per scheme of :data:`SCHEMES`, per family and over all runs: the mean of the runs' frame
    delay mean/P90/P99, with the seed's figures where it has them."""
    ok = df[df["error"] == ""].copy()
    ok["scheme"] = [scheme_of(s, h) for s, h in zip(ok["sender"], ok["help"])]
    ok = ok[ok["scheme"].notna()]
    rows = []
    for scope, g in [("all", ok), *sorted(ok.groupby("family"), key=lambda x: str(x[0]))]:
        for scheme in SCHEMES:
            s = g[g["scheme"] == scheme]
            if s.empty:
                continue
            seed = SEED.get(scheme, (float("nan"),) * 3)
            rows.append(
                {
                    "family": scope,
                    "scheme": scheme,
                    "runs": len(s),
                    "mean_ms": s["frame_delay_mean_ms"].mean(),
                    "p90_ms": s["frame_delay_p90_ms"].mean(),
                    "p99_ms": s["frame_delay_p99_ms"].mean(),
                    "throughput_kbps": s["throughput_kbps"].mean(),
                    "seed_mean_ms": seed[0],
                    "seed_p90_ms": seed[1],
                    "seed_p99_ms": seed[2],
                }
            )
    return pd.DataFrame(rows)


def shootout(df: pd.DataFrame) -> pd.DataFrame:
    """Per sender x help x family: the metrics' means over the family's runs."""
    ok = df[df["error"] == ""]
    t = ok.groupby(["sender", "help", "family"], sort=False)[METRICS].mean().reset_index()
    t.insert(3, "runs", ok.groupby(["sender", "help", "family"], sort=False).size().values)
    order = {s: i for i, s in enumerate(SENDERS)}
    horder = {h: i for i, h in enumerate(HELPS)}
    return t.sort_values(["sender", "help", "family"], key=lambda c: c.map(order) if c.name == "sender" else (c.map(horder) if c.name == "help" else c)).reset_index(drop=True)


def plot_frame_latency(fl: pd.DataFrame, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = fl[fl["family"] == "all"]
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.25
    xs = range(len(t))
    for j, (col, label) in enumerate([("mean_ms", "mean"), ("p90_ms", "P90"), ("p99_ms", "P99")]):
        ax.bar([x + (j - 1) * width for x in xs], t[col], width, label=label)
    for x, (_, r) in zip(xs, t.iterrows()):
        if r["scheme"] in SEED:
            for j, v in enumerate(SEED[r["scheme"]]):
                ax.plot(x + (j - 1) * width, v, marker="_", ms=14, mew=2, color="k")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(t["scheme"], fontsize="small")
    ax.set_ylabel("frame delay (ms)")
    ax.set_title("Frame latency over the AP traces (black ticks: the seed talk's figures)")
    ax.legend(fontsize="small")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_shootout(df: pd.DataFrame, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = df[df["error"] == ""]
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
    for ax, col, title in [
        (axes[0], "frame_delay_p90_ms", "frame delay P90 (ms), mean over all runs"),
        (axes[1], "throughput_kbps", "throughput (kbit/s), mean over all runs"),
    ]:
        grid = ok.groupby(["sender", "help"])[col].mean().unstack("help").reindex(index=list(SENDERS), columns=HELPS)
        im = ax.imshow(grid.values, cmap="viridis_r" if "delay" in col else "viridis", aspect="auto")
        ax.set_xticks(range(len(HELPS)))
        ax.set_xticklabels(HELPS)
        ax.set_yticks(range(len(SENDERS)))
        ax.set_yticklabels(list(SENDERS))
        for i in range(grid.shape[0]):
            for j in range(grid.shape[1]):
                v = grid.values[i, j]
                if v == v:
                    ax.text(j, i, f"{v:.0f}", ha="center", va="center", color="w", fontsize="small")
        ax.set_title(title, fontsize="medium")
        fig.colorbar(im, ax=ax)
    fig.suptitle("Shoot-out: sender x help at the same access point")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def reproduce(
    out_dir: str | Path,
    traces: list[str] | None = None,
    *,
    seconds: float = 120.0,
    ks: list[int] | None = None,
    seed: int = 1,
    jobs: int | None = None,
    progress: bool | None = None,
    plots: bool = True,
    log: Callable[[str], None] = print,
    backend: str = "local",
    address: str | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Runs the comparison and the shoot-out, writes their files to ``out_dir``, returns the tables.
    The runs go through the sweep runner (``backend`` local or ray) and are kept in
    ``out_dir/sweeps/``: the same call on the same folder resumes (``force``: start again)."""
    check_seconds(seconds)
    ks = ABW_KS if ks is None else ks
    given = digest(f for _, f in find_traces(traces)) if traces else None
    out = results_folder(out_dir, "scone", force, dict(seconds=seconds, ks=ks, seed=seed, traces=traces, traces_digest=given))
    found = family_traces(out, traces, seed, seconds)
    rng = random.Random(seed)
    # The drop at a random instant in the second half of the run (the Zhuge paper: 144-176 s of 200 s).
    drops = {k: round(rng.uniform(0.72 * seconds, 0.88 * seconds), 1) for k in ks}
    pairs = [(s, h) for s in SENDERS for h in HELPS]
    specs = [Run(fam, str(f), s, h, seconds, seed) for fam, f in found for s, h in pairs]
    specs += [Run("ABW", f"drop 30/{k}", s, h, seconds, seed, k, drops[k]) for k in ks for s, h in pairs]
    started = time.perf_counter()
    df, _ = run_grid(out, "runs", run_one, specs, Runner(jobs, backend, address, progress), "scone")
    wall = time.perf_counter() - started
    fl = frame_latency(df)
    so = shootout(df)
    written = [write_csv(df, out / "summary.csv"), write_csv(fl, out / "frame_latency.csv"), write_csv(so, out / "shootout.csv")]
    if plots:
        written.append(plot_frame_latency(fl, out / "frame_latency.png"))
        written.append(plot_shootout(df, out / "shootout.png"))
    failed = int((df["error"] != "").sum())
    fmt = {"index": False, "float_format": lambda x: f"{x:.3f}" if abs(x) < 10 else f"{x:.1f}"}
    log(f"{len(df)} runs in {wall:.1f} s, {failed} failed")
    log("\nframe latency (ms; mean of the runs' figures), next to the seed talk's:")
    log(fl.to_string(**fmt))
    allr = fl[fl["family"] == "all"].set_index("scheme")
    if {"Copa", "RTC+SCONE-PRO"} <= set(allr.index):
        c, r = allr.loc["Copa"], allr.loc["RTC+SCONE-PRO"]
        red = [(c[m] - r[m]) / c[m] if c[m] > 0 else float("nan") for m in ("mean_ms", "p90_ms", "p99_ms")]
        log(
            "\nRTC+SCONE-PRO against Copa: mean {:+.0%}, P90 {:+.0%}, P99 {:+.0%} lower (seed: mean 45 %, P90 70 %, P99 70 % lower)".format(*red)
        )
    log("\nshoot-out, all families (mean over runs):")
    log(df[df["error"] == ""].groupby(["sender", "help"], sort=False)[METRICS].mean().to_string(float_format=lambda x: f"{x:.3f}" if abs(x) < 10 else f"{x:.1f}"))
    for line in failure_lines((f"{r.family} {Path(r.trace).name}", f"{r.sender}+{r.help}", r.error) for r in df[df["error"] != ""].itertuples()):
        log(line)
    return {"summary": df, "frame_latency": fl, "shootout": so, "written": written, "failed": failed}
