"""Fast start-up over a GEO satellite path, reproduced: ``lowlat reproduce satellite``.

The seed talk ("QUIC and Satellite Open Stakeholder Meeting: Accelerating Start-up"), the
regression cases of draft-kuhn-quic-4-sat and Careful Resume (draft-ietf-tsvwg-careful-resume-24)
on the simulator. Every download is the *second* connection of a pair: a first download of the
same size over a fresh connection (which saves what it learnt about the path), a 10 s pause, then
the measured one with a start-up rule:

- ``none``: no 0-RTT (a handshake round trip first), slow start from the initial window;
- ``0-RTT``: the request in the first flight, slow start from the initial window;
- ``0-RTT-BDP``: 0-RTT and the seed's jump straight to the saved BDP (no check, no retreat);
- ``careful-resume``: 0-RTT and Careful Resume (half the saved window, paced, Safe Retreat);
- ``picoquic``: 0-RTT and picoquic's rule (the saved window as window and threshold if the RTT
  is within a quarter of the saved one).

Parts:

a. **Targets** (``targets.csv``): the six GEO cases (RTT 650 ms, buffer = BDP) and two
   Gilbert-Elliott variants of the medium case x 2/10/100 MB x start-up x CUBIC/BBR; median
   completion time over seeds next to the target, and whether it is met.
b. **Seed comparison** (``seed_comparison.csv``): 50/10 and 250/3 Mbit/s, 2 and 10 MB, none vs
   0-RTT vs 0-RTT-BDP with CUBIC; the medians next to the seed's 4.3 / 3.4 / 2.9 s (2 MB, 50/10)
   and the 10 MB improvements next to its ~25 % (vs none) and ~10 % (vs 0-RTT).
c. **1 GB over a lossy path** (``lossy_1gb.csv``): 10 Mbit/s, 600 ms RTT, uniform loss 0 / 1e-4
   / 5e-4 / 1e-3 / 5e-3, CUBIC and NewReno: completion time and goodput next to the seed's
   797 / 935 / 1528 / 1863 / 7140 s and the Mathis bound.
d. **The cost of being wrong** (``wrong_saved_set.csv``): a saved set from a 50 Mbit/s, 650 ms
   path used on a 10 Mbit/s path, or on a path whose RTT halved: queue peak, drops, losses and
   completion time per start-up.

Each part writes one figure (window and delivered bytes over time of its start-ups). Cases
without random loss are deterministic, so one run stands for every seed there.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from .common import Runner, results_folder, run_grid, write_csv

RTT_S = 0.65
PAUSE_S = 10.0
#: Start-up label -> (zero_rtt, start_up rule).
START_UPS: dict[str, tuple[bool, str]] = {
    "none": (False, "none"),
    "0-RTT": (True, "none"),
    "0-RTT-BDP": (True, "0rtt-bdp"),
    "careful-resume": (True, "careful-resume"),
    "picoquic": (True, "picoquic"),
}
SIZES_MB = (2, 10, 100)
#: Gilbert-Elliott satellite losses of the seed (careful-resume-satellite.md): P(b|g), P(g|b).
GE = {"ge-wifi": (0.018, 0.645), "ge-wired": (0.017, 0.935)}


@dataclass(frozen=True)
class Case:
    """A GEO regression case (draft-kuhn-quic-4-sat)."""

    down_mbps: float
    up_mbps: float
    targets_s: tuple[float | None, float | None, float | None]
    loss: float = 0.0
    #: Gilbert-Elliott (P(b|g), P(g|b)) instead of uniform loss.
    ge: tuple[float, float] | None = None
    #: Capacity after 5 s of the measured download (the "variable" case).
    then_mbps: float | None = None

    @property
    def random(self) -> bool:
        return self.loss > 0 or self.ge is not None

    def mean_loss(self) -> float:
        if self.ge:
            bg, gb = self.ge
            return bg / (bg + gb)
        return self.loss


CASES: dict[str, Case] = {
    "small": Case(10, 2, (3, 10, 85)),
    "medium": Case(50, 10, (3, 5, 20)),
    "congested": Case(50, 0.5, (3, 5, 20)),
    "variable": Case(50, 10, (None, None, None), then_mbps=10),
    "large": Case(250, 3, (3, 5, 8)),
    "lossy-large": Case(250, 3, (3, 6, 10), loss=0.01),
    "medium+ge-wifi": Case(50, 10, (3, 5, 20), ge=GE["ge-wifi"]),
    "medium+ge-wired": Case(50, 10, (3, 5, 20), ge=GE["ge-wired"]),
}
#: The seed's published figures.
SEED_2MB_50_10 = {"none": 4.3, "0-RTT": 3.4, "0-RTT-BDP": 2.9}
SEED_10MB_IMPROVEMENT = {"vs none": 0.25, "vs 0-RTT": 0.10}
SEED_LOSSY = {0.0: (797, 10.0), 1e-4: (935, 8.5), 5e-4: (1528, 5.2), 1e-3: (1863, 4.2), 5e-3: (7140, 1.1)}
PAYLOAD_B = 1145  # 1200-byte packets less 55 bytes of headers


def mathis_bps(rtt_s: float, p: float, mss: float = PAYLOAD_B) -> float:
    """The Mathis et al. bound MSS / RTT x 1.22 / sqrt(p), bit/s (infinite without loss)."""
    return math.inf if p <= 0 else mss * 8 / rtt_s * 1.22 / math.sqrt(p)


def cubic_bps(rtt_s: float, p: float, mss: float = PAYLOAD_B, c: float = 0.4, beta: float = 0.7) -> float:
    """CUBIC's response function (RFC 9438 §5.1 / RFC 8312 §5.1: average window
    (C (3 + beta) / (4 (1 - beta)))^(1/4) x RTT^(3/4) / p^(3/4) segments), but never below the
    Reno-friendly (Mathis) rate, bit/s. CUBIC is not Reno: on long paths it beats the Mathis bound
    by design, so the lossy table shows both."""
    if p <= 0:
        return math.inf
    w = (c * (3 + beta) / (4 * (1 - beta))) ** 0.25 * rtt_s**0.75 / p**0.75
    return float(max(w * mss * 8 / rtt_s, mathis_bps(rtt_s, p, mss)))


def _link(rate_mbps: float, one_way_s: float, buffer_s: float) -> dict[str, Any]:
    return {
        "rate": f"{rate_mbps:g} Mbit/s",
        "delay": f"{one_way_s * 1e3:g} ms",
        "queue": {"kind": "droptail", "limit": f"{buffer_s * 1e3:g} ms"},
    }


def _duration(size_b: float, rate_mbps: float, loss: float, rtt_s: float, connections: int) -> float:
    """Simulated seconds that comfortably hold ``connections`` downloads (slow start, losses)."""
    rate = min(rate_mbps * 1e6, mathis_bps(rtt_s, loss) if loss > 0 else math.inf)
    per = 12 * rtt_s + size_b * 8 / rate * (3.0 if loss > 0 else 1.5)
    return math.ceil(connections * per + PAUSE_S + 30)


def geo_scenario(
    case: str, size_mb: float, start_up: str, cc: str, seed: int, switch_s: float | None = None, scale: float = 1.0
) -> dict[str, Any]:
    """Two downloads of ``size_mb`` over GEO case ``case``; the second uses ``start_up``.

    ``switch_s``: when the variable case's capacity falls (5 s into the second download)."""
    c = CASES[case]
    zero_rtt, rule = START_UPS[start_up]
    down = _link(c.down_mbps, RTT_S / 2, RTT_S)
    if c.loss > 0:
        down["loss"] = {"kind": "bernoulli", "p": c.loss}
    if c.ge:
        down["loss"] = {"kind": "gilbert-elliott", "p_good_to_bad": c.ge[0], "p_bad_to_good": c.ge[1]}
    if c.then_mbps is not None and switch_s is not None:
        del down["rate"]
        down["schedule"] = [
            {"at": "0 s", "rate": f"{c.down_mbps:g} Mbit/s"},
            {"at": f"{switch_s:.6f} s", "rate": f"{c.then_mbps:g} Mbit/s"},
        ]
    size = f"{size_mb:g} MB"
    second: dict[str, Any] = {"id": "second", "size": size, "pause": f"{PAUSE_S:g} s", "zero_rtt": zero_rtt}
    if rule != "none":
        second["start_up"] = rule
    slowest = min(c.down_mbps, c.then_mbps or c.down_mbps)
    return {
        "name": f"geo-{case}-{size_mb:g}MB-{start_up}-{cc}",
        "description": f"GEO {case}: {size} twice over a 650 ms path, the second with {start_up}",
        "duration": f"{_duration(size_mb * 1e6, slowest, c.mean_loss(), RTT_S, 2) * scale:g} s",
        "seed": seed,
        "bin": "100 ms",
        "bottleneck": down,
        "reverse": _link(c.up_mbps, RTT_S / 2, RTT_S),
        "flows": [
            {"id": "dl", "kind": "downloads", "cc": cc, "connections": [{"id": "first", "size": size}, second]}
        ],
    }


@dataclass(frozen=True)
class GeoRun:
    """One run of parts a and b."""

    case: str
    size_mb: float
    start_up: str
    cc: str
    seed: int


def _series(conn: dict[str, Any]) -> dict[str, list[Any]]:
    s = conn["series"]
    t0 = conn["open_s"]
    return {
        "t_s": [t - t0 for t in s["t_s"]],
        "cwnd_bytes": s["cwnd_bytes"],
        "delivered_bytes": s["delivered_bytes"],
        "phase": s["phase"],
    }


def _run_until_done(build: Callable[[float], Any], tries: int = 3) -> dict[str, Any]:
    """Runs ``build(scale)``; if a download did not finish, runs again with 4x the duration."""
    from ..api import run

    scale = 1.0
    for _ in range(tries):
        r = run(build(scale), progress=False)
        conns = r.summary["flows"][0]["connections"]
        if all(c["completion_s"] is not None for c in conns):
            return r.summary
        scale *= 4
    return r.summary


def run_geo(spec: GeoRun) -> dict[str, Any]:
    """One pair of downloads; the row of the measured (second) one. Never raises."""
    row: dict[str, Any] = asdict(spec)
    try:
        switch = None
        if CASES[spec.case].then_mbps is not None:
            # Where the second download opens (the same before the switch): first pass at 50.
            first = _run_until_done(lambda k: geo_scenario(spec.case, spec.size_mb, spec.start_up, spec.cc, spec.seed, None, k))
            switch = first["flows"][0]["connections"][1]["open_s"] + 5.0
        summary = _run_until_done(
            lambda k: geo_scenario(spec.case, spec.size_mb, spec.start_up, spec.cc, spec.seed, switch, k)
        )
        first, second = summary["flows"][0]["connections"]
        link = summary["links"][0]
        row.update(
            completion_s=second["completion_s"],
            first_completion_s=first["completion_s"],
            packets_lost=second["packets_lost"],
            saved_cwnd_bytes=(second["saved_used"] or {}).get("cwnd_bytes"),
            jump_cwnd_bytes=second["jump_cwnd_bytes"],
            max_cwnd_bytes=second["max_cwnd_bytes"],
            phases=" > ".join(p[1] for p in second["phases"]),
            max_queue_bytes=link["max_queue_bytes"],
            series=_series(second),
            error="",
        )
    except BaseException as e:  # noqa: BLE001 - a failed run is recorded, the sweep goes on
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        row.update(completion_s=float("nan"), series=None, error=f"{type(e).__name__}: {e}")
    return row


def geo_specs(cases: list[str], sizes: list[float], start_ups: list[str], ccs: list[str], seeds: list[int]) -> list[GeoRun]:
    """The runs of part a: seeds only where the case has random loss."""
    return [
        GeoRun(case, size, su, cc, seed)
        for case in cases
        for size in sizes
        for su in start_ups
        for cc in ccs
        for seed in (seeds if CASES[case].random else seeds[:1])
    ]


def targets_table(df: pd.DataFrame) -> pd.DataFrame:
    """Median completion per case, size, controller and start-up, next to the target."""
    ok = df[df["error"] == ""]
    t = ok.groupby(["case", "size_mb", "cc", "start_up"], sort=False).agg(
        completion_s=("completion_s", "median"), runs=("seed", "size"), packets_lost=("packets_lost", "median")
    )
    t = t.reset_index()
    sizes = {s: i for i, s in enumerate(SIZES_MB)}
    t["target_s"] = [
        CASES[c].targets_s[sizes[s]] if s in sizes else None for c, s in zip(t["case"], t["size_mb"])
    ]
    t["meets"] = [
        "" if tgt is None or (isinstance(tgt, float) and math.isnan(tgt)) else ("yes" if v <= tgt else "no")
        for v, tgt in zip(t["completion_s"], t["target_s"])
    ]
    return t


def seed_table(df: pd.DataFrame) -> pd.DataFrame:
    """Part b: medians of none / 0-RTT / 0-RTT-BDP and the improvements, next to the seed's."""
    ok = df[(df["error"] == "") & (df["cc"] == "cubic")]
    rows = []
    for case, label in [("medium", "50/10"), ("large", "250/3")]:
        for size in (2, 10):
            g = ok[(ok["case"] == case) & (ok["size_mb"] == size)]
            med = {su: g[g["start_up"] == su]["completion_s"].median() for su in ("none", "0-RTT", "0-RTT-BDP")}
            row: dict[str, Any] = {"path_mbps": label, "size_mb": size}
            for su, v in med.items():
                row[f"{su}_s"] = v
                row[f"seed_{su}_s"] = SEED_2MB_50_10.get(su) if (case, size) == ("medium", 2) else None
            row["improvement_vs_none"] = 1 - med["0-RTT-BDP"] / med["none"]
            row["improvement_vs_0rtt"] = 1 - med["0-RTT-BDP"] / med["0-RTT"]
            row["seed_improvement_vs_none"] = SEED_10MB_IMPROVEMENT["vs none"] if size == 10 else None
            row["seed_improvement_vs_0rtt"] = SEED_10MB_IMPROVEMENT["vs 0-RTT"] if size == 10 else None
            row["ordering_holds"] = bool(med["0-RTT-BDP"] < med["0-RTT"] < med["none"])
            rows.append(row)
    return pd.DataFrame(rows)


# ---- part c: 1 GB over a lossy 10 Mbit/s path ----

LOSSY_RATE_MBPS = 10.0
LOSSY_RTT_S = 0.6
LOSSES = (0.0, 1e-4, 5e-4, 1e-3, 5e-3)


def lossy_scenario(p: float, cc: str, seed: int, size_b: float = 1e9, scale: float = 1.0) -> dict[str, Any]:
    """One download of ``size_b`` over 10 Mbit/s, 600 ms RTT, buffer = BDP, uniform loss ``p``."""
    down = _link(LOSSY_RATE_MBPS, LOSSY_RTT_S / 2, LOSSY_RTT_S)
    if p > 0:
        down["loss"] = {"kind": "bernoulli", "p": p}
    return {
        "name": f"satellite-{size_b / 1e9:g}GB-loss{p:g}-{cc}",
        "description": "One download over a lossy 10 Mbit/s, 600 ms satellite path",
        "duration": f"{_duration(size_b, LOSSY_RATE_MBPS, p, LOSSY_RTT_S, 1) * scale:g} s",
        "seed": seed,
        "bin": "1 s",
        "bottleneck": down,
        "reverse": _link(2.0, LOSSY_RTT_S / 2, LOSSY_RTT_S),
        "flows": [
            {"id": "dl", "kind": "downloads", "cc": cc, "connections": [{"id": "get", "size": f"{size_b:g} B"}]}
        ],
    }


@dataclass(frozen=True)
class LossyRun:
    """One row of part c."""

    loss: float
    cc: str
    seed: int
    size_b: float = 1e9


def run_lossy(spec: LossyRun) -> dict[str, Any]:
    """One lossy download; never raises."""
    row: dict[str, Any] = asdict(spec)
    try:
        s = _run_until_done(lambda k: lossy_scenario(spec.loss, spec.cc, spec.seed, spec.size_b, k))
        conn = s["flows"][0]["connections"][0]
        done = conn["completion_s"]
        link = LOSSY_RATE_MBPS * 1e6 * PAYLOAD_B / 1200
        bound = min(link, mathis_bps(LOSSY_RTT_S, spec.loss))
        row.update(
            cubic_model_goodput_mbps=min(link, cubic_bps(LOSSY_RTT_S, spec.loss)) / 1e6,
            completion_s=done,
            goodput_mbps=spec.size_b * 8 / done / 1e6 if done else float("nan"),
            mathis_goodput_mbps=bound / 1e6,
            mathis_completion_s=spec.size_b * 8 / bound,
            packets_lost=conn["packets_lost"],
            wall_s=s["wall_s"],
            series=_series(conn),
            error="",
        )
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        row.update(completion_s=float("nan"), series=None, error=f"{type(e).__name__}: {e}")
    return row


def lossy_table(df: pd.DataFrame) -> pd.DataFrame:
    ok = df[df["error"] == ""]
    t = ok.groupby(["cc", "loss"], sort=False).agg(
        completion_s=("completion_s", "median"),
        goodput_mbps=("goodput_mbps", "median"),
        mathis_goodput_mbps=("mathis_goodput_mbps", "first"),
        mathis_completion_s=("mathis_completion_s", "first"),
        cubic_model_goodput_mbps=("cubic_model_goodput_mbps", "first"),
        packets_lost=("packets_lost", "median"),
        runs=("seed", "size"),
    ).reset_index()
    t["seed_completion_s"] = [SEED_LOSSY.get(p, (None, None))[0] for p in t["loss"]]
    t["seed_goodput_mbps"] = [SEED_LOSSY.get(p, (None, None))[1] for p in t["loss"]]
    t["goodput_over_mathis"] = t["goodput_mbps"] / t["mathis_goodput_mbps"]
    t["goodput_over_cubic_model"] = t["goodput_mbps"] / t["cubic_model_goodput_mbps"]
    # As text, so that 1e-4 does not print as 0.000.
    t["loss"] = [f"{p:g}" for p in t["loss"]]
    return t


# ---- part d: the cost of being wrong ----

WRONG_SAVED = {"cwnd": f"{int(50e6 * RTT_S / 8)} B", "rtt": f"{RTT_S * 1e3:g} ms"}
#: Situation -> (down, up Mbit/s, RTT s): where the 50 Mbit/s, 650 ms saved set is used.
SITUATIONS = {"right (50 Mbit/s, 650 ms)": (50, 10, RTT_S), "capacity now 10 Mbit/s": (10, 2, RTT_S), "RTT halved": (50, 10, RTT_S / 2)}


def wrong_scenario(situation: str, start_up: str, cc: str, seed: int, size_mb: float = 10, scale: float = 1.0) -> dict[str, Any]:
    down_mbps, up_mbps, rtt = SITUATIONS[situation]
    zero_rtt, rule = START_UPS[start_up]
    conn: dict[str, Any] = {"id": "resumed", "size": f"{size_mb:g} MB", "zero_rtt": zero_rtt}
    if rule != "none":
        conn["start_up"] = rule
        conn["saved"] = dict(WRONG_SAVED)
    return {
        "name": f"wrong-{situation.split()[0]}-{start_up}-{cc}",
        "duration": f"{_duration(size_mb * 1e6, down_mbps, 0, rtt, 1) * 2 * scale:g} s",
        "seed": seed,
        "bin": "50 ms",
        "bottleneck": _link(down_mbps, rtt / 2, rtt),
        "reverse": _link(up_mbps, rtt / 2, rtt),
        "flows": [{"id": "dl", "kind": "downloads", "cc": cc, "connections": [conn]}],
    }


@dataclass(frozen=True)
class WrongRun:
    """One row of part d."""

    situation: str
    start_up: str
    cc: str
    seed: int


def run_wrong(spec: WrongRun) -> dict[str, Any]:
    row: dict[str, Any] = asdict(spec)
    try:
        s = _run_until_done(lambda k: wrong_scenario(spec.situation, spec.start_up, spec.cc, spec.seed, scale=k))
        conn = s["flows"][0]["connections"][0]
        link = s["links"][0]
        row.update(
            completion_s=conn["completion_s"],
            packets_lost=conn["packets_lost"],
            bottleneck_drops=link["drops"],
            max_queue_bytes=link["max_queue_bytes"],
            max_queue_delay_ms=link["queue_delay_ms"]["max"],
            jump_cwnd_bytes=conn["jump_cwnd_bytes"],
            max_cwnd_bytes=conn["max_cwnd_bytes"],
            phases=" > ".join(p[1] for p in conn["phases"]),
            series=_series(conn),
            error="",
        )
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        row.update(completion_s=float("nan"), series=None, error=f"{type(e).__name__}: {e}")
    return row


# ---- figures ----


def plot_series(runs: dict[str, dict[str, list[Any]]], title: str, path: Path) -> Path:
    """Window and delivered bytes over time, one line per labelled run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    for label, s in runs.items():
        if not s:
            continue
        a1.plot(s["t_s"], [c / 1e6 for c in s["cwnd_bytes"]], label=label, drawstyle="steps-post")
        a2.plot(s["t_s"], [d / 1e6 for d in s["delivered_bytes"]], label=label)
    a1.set_ylabel("congestion window (MB)")
    a2.set_ylabel("delivered (MB)")
    a2.set_xlabel("time since the connection opened (s)")
    a1.set_title(title)
    a1.legend(fontsize=8)
    a1.grid(alpha=0.3)
    a2.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _pick(rows: list[dict[str, Any]], **match: Any) -> dict[str, dict[str, list[Any]]]:
    """Series of the first-seed rows matching ``match``, keyed by start-up."""
    out = {}
    for r in rows:
        if r.get("series") and all(r.get(k) == v for k, v in match.items()) and r["start_up"] not in out:
            out[r["start_up"]] = r["series"]
    return out


def _csv(df: pd.DataFrame, path: Path) -> Path:
    return write_csv(df.drop(columns=[c for c in ("series",) if c in df.columns]), path)


def _with_series(df: pd.DataFrame, series: list[pd.DataFrame | None]) -> list[dict[str, Any]]:
    """The rows of a grid with each run's series (kept beside the run) back as lists."""
    return [
        {**r, "series": None if s is None else {c: s[c].tolist() for c in s.columns}}
        for r, s in zip(df.to_dict("records"), series)
    ]


def reproduce(
    out: str | Path,
    *,
    parts: str = "abcd",
    seeds: list[int] | None = None,
    ccs: list[str] | None = None,
    sizes: list[float] | None = None,
    lossy_size_b: float = 1e9,
    jobs: int | None = None,
    progress: bool | None = None,
    plots: bool = True,
    backend: str = "local",
    address: str | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Runs the parts and writes their CSVs and figures to ``out``; returns the tables. The runs
    go through the sweep runner (``backend`` local or ray) and are kept in ``out/sweeps/``: the
    same call on the same folder resumes (``force``: start again)."""
    seeds = seeds or [1, 2, 3]
    ccs = ccs or ["cubic", "bbr"]
    sizes = sizes or list(SIZES_MB)
    # The parts are separate grids: another --parts on the same folder adds or reuses them.
    out = results_folder(out, "satellite", force, dict(seeds=seeds, ccs=ccs, sizes=sizes, lossy_size_b=lossy_size_b))
    runner = Runner(jobs, backend, address, progress)
    written: list[Path] = []
    tables: dict[str, pd.DataFrame] = {}
    failed = 0

    if "a" in parts or "b" in parts:
        specs: list[GeoRun] = []
        if "a" in parts:
            specs += geo_specs(list(CASES), sizes, list(START_UPS), ccs, seeds)
        if "b" in parts:
            specs += geo_specs(["medium", "large"], [2, 10], ["none", "0-RTT", "0-RTT-BDP"], ["cubic"], seeds)
        specs = list(dict.fromkeys(specs))
        df, data = run_grid(out, "geo", run_geo, specs, runner, "GEO downloads", data=["series"])
        rows = _with_series(df, data["series"])
        failed += int((df["error"] != "").sum())
        written.append(_csv(df, out / "geo_runs.csv"))
        if "a" in parts:
            tables["targets"] = targets_table(df)
            written.append(_csv(tables["targets"], out / "targets.csv"))
            if plots:
                case, size = ("medium", 10) if 10 in sizes else ("medium", sizes[0])
                written.append(
                    plot_series(
                        _pick(rows, case=case, size_mb=size, cc="cubic", seed=seeds[0]),
                        f"GEO {case} (50/10 Mbit/s, 650 ms): {size:g} MB, CUBIC, second connection",
                        out / "targets.png",
                    )
                )
        if "b" in parts:
            tables["seed_comparison"] = seed_table(df)
            written.append(_csv(tables["seed_comparison"], out / "seed_comparison.csv"))
            if plots:
                written.append(
                    plot_series(
                        _pick(rows, case="medium", size_mb=2, cc="cubic", seed=seeds[0]),
                        "Seed comparison: 2 MB at 50/10 Mbit/s, 650 ms, CUBIC",
                        out / "seed_comparison.png",
                    )
                )

    if "c" in parts:
        specs_c = [LossyRun(p, cc, s, lossy_size_b) for p in LOSSES for cc in ("cubic", "newreno") for s in (seeds if p > 0 else seeds[:1])]
        df, data = run_grid(out, "lossy", run_lossy, specs_c, runner, f"{lossy_size_b / 1e9:g} GB lossy downloads", data=["series"])
        rows = _with_series(df, data["series"])
        failed += int((df["error"] != "").sum())
        tables["lossy"] = lossy_table(df)
        written.append(_csv(df, out / "lossy_runs.csv"))
        written.append(_csv(tables["lossy"], out / "lossy_1gb.csv"))
        if plots:
            series = {}
            for r in rows:
                label = f"loss {r['loss']:g}"
                if r["cc"] == "cubic" and r.get("series") and label not in series:
                    series[label] = r["series"]
            written.append(plot_series(series, f"{lossy_size_b / 1e9:g} GB over 10 Mbit/s, 600 ms, uniform loss (CUBIC)", out / "lossy_1gb.png"))

    if "d" in parts:
        specs_d = [WrongRun(sit, su, cc, seeds[0]) for sit in SITUATIONS for su in START_UPS if su != "none" for cc in ccs]
        df, data = run_grid(out, "wrong-saved-set", run_wrong, specs_d, runner, "wrong saved set", data=["series"])
        rows = _with_series(df, data["series"])
        failed += int((df["error"] != "").sum())
        tables["wrong"] = df
        written.append(_csv(df, out / "wrong_saved_set.csv"))
        if plots:
            written.append(
                plot_series(
                    _pick(rows, situation="capacity now 10 Mbit/s", cc="cubic"),
                    "Saved at 50 Mbit/s, used at 10 Mbit/s (650 ms, 10 MB, CUBIC)",
                    out / "wrong_saved_set.png",
                )
            )
    return {"tables": tables, "written": written, "failed": failed}
