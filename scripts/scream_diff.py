#!/usr/bin/env python3
"""Differential harness: lowlat's SCReAM v2 against Ericsson's C++ reference on the same paths.

The reference's own classes (ScreamV2Tx, ScreamRx, RtpQueue, VideoEnc from a checkout of
github.com/EricssonResearch/scream that YOU provide; nothing of it is stored in lowlat) are built
with `scripts/scream_diff/ref_driver.cpp`, a driver that models lowlat's path (bottleneck, drop-tail
300 ms, one-way delay RTT/2 both ways, Gaussian jitter without reordering, `feedback = "scream"`
schedule, encoder replaying the reference's frame-size trace with a 0.2 s reaction delay, 2 s RTP
queue flush). lowlat runs the same scenario with `cc = "scream2"` and `codec = "trace"` on the same
trace. Both print the received rate and the bottleneck's queueing delay over [--from, --duration].

    python scripts/scream_diff.py --ref /path/to/scream            # or SCREAM_REF=/path/to/scream
    python scripts/scream_diff.py --ref ... --capacities 1 --rtts 100 --jitters 0
    python scripts/scream_diff.py --ref ... --l4s 1      # L4S: ECT(1), CE at >= 1 ms sojourn
    python scripts/scream_diff.py --ref ... --l4s 1 --no-adaptive-pacing

Needs g++ (or $CXX). Prints a Markdown table (docs/scream-differential.md holds its last output)
and exits 1 if a grid point misses the acceptance bounds (rate within 10 %, mean queueing delay
within 2x, or both below 2 ms).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REF_SOURCES = ["ScreamTx.cpp", "ScreamV2Tx.cpp", "ScreamV2TxStream.cpp", "ScreamRx.cpp", "RtpQueue.cpp", "VideoEnc.cpp"]
RMIN_BPS = 150e3
RMAX_BPS = 20e6
FPS = 30
#: Environment of the reference runs (--no-adaptive-pacing adds SCREAM_DIFF_NO_ADAPTIVE_PACING).
REF_ENV: dict[str, str] = dict(os.environ)


def build_driver(ref: Path, build_dir: Path) -> Path:
    """Compiles the driver against the reference checkout `ref`; returns the binary."""
    code = ref / "code"
    missing = [s for s in REF_SOURCES + ["ScreamTx.h", "VideoEnc.h"] if not (code / s).is_file()]
    if missing:
        raise SystemExit(f"error: {code} is not a SCReAM checkout (missing {', '.join(missing)})")
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if not cxx:
        raise SystemExit("error: no C++ compiler (install g++ or set CXX)")
    build_dir.mkdir(parents=True, exist_ok=True)
    binary = build_dir / "scream_ref_driver"
    cmd = [cxx, "-O2", "-w", "-std=c++14", "-o", str(binary), f"-I{code}", str(HERE / "scream_diff" / "ref_driver.cpp")]
    cmd += [str(code / s) for s in REF_SOURCES] + ["-lpthread"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"error: building the reference driver failed:\n{done.stderr[-2000:]}")
    return binary


def run_reference(binary: Path, trace: Path, cap: float, rtt: float, jitter: float, duration: float, start: float, seed: int, step: tuple[float, float] | None = None, l4s: float = 0.0) -> dict[str, float]:
    args = [str(binary), str(cap), str(rtt), str(jitter), str(duration), str(FPS), str(trace), str(seed)]
    args += [str(RMIN_BPS), str(RMAX_BPS), str(start)]
    if step or l4s > 0:
        args += [str(step[0]), str(step[1])] if step else ["1e18", "0"]
    if l4s > 0:
        args.append(str(l4s))
    out = subprocess.run(args, capture_output=True, text=True, check=True, env=REF_ENV).stdout.strip().splitlines()[-1]
    return {k: float(v) for k, v in (kv.split("=") for kv in out.split())}


def scenario(trace: Path, cap: float, rtt: float, jitter: float, duration: float, seed: int, step: tuple[float, float] | None = None, l4s: float = 0.0) -> dict:
    """lowlat's side of a grid point; `l4s` > 0: SCReAM v2 in L4S mode through an L4S queue that
    marks ECT(1) CE from `l4s` seconds of sojourn, RFC 8888 feedback."""
    rate: dict = {"rate": f"{cap} bit/s"}
    queue: dict[str, object] = {"kind": "droptail", "limit": "300 ms"}
    ecn: dict[str, object] = {}
    if l4s > 0:
        queue = {"kind": "l4s", "threshold": f"{l4s * 1000} ms", "limit": "300 ms"}
        ecn = {"ecn": "ect1", "feedback_format": "rfc8888", "cc_params": {"scream2": {"l4s": True}}}
    if step:
        rate = {"schedule": [{"at": "0 s", "rate": f"{cap} bit/s"}, {"at": f"{step[0]} s", "rate": f"{step[1]} bit/s"}]}
    return {
        "name": "scream-diff",
        "duration": f"{duration} s",
        "seed": seed,
        "bottleneck": {
            **rate,
            "delay": f"{rtt / 2 * 1000} ms",
            "jitter": f"{jitter * 1000} ms",
            "queue": queue,
        },
        "reverse": {"rate": "100 Mbit/s", "delay": f"{rtt / 2 * 1000} ms"},
        "flows": [
            {
                "id": "video",
                "kind": "rtp-video",
                "cc": "scream2",
                "rmin": f"{RMIN_BPS} bit/s",
                "rmax": f"{RMAX_BPS} bit/s",
                "fps": FPS,
                "codec": "trace",
                "codec_trace": str(trace),
                **ecn,
            }
        ],
    }


def run_lowlat(trace: Path, cap: float, rtt: float, jitter: float, duration: float, start: float, seed: int, step: tuple[float, float] | None = None, l4s: float = 0.0) -> dict[str, float]:
    import lowlat

    r = lowlat.run(scenario(trace, cap, rtt, jitter, duration, seed, step, l4s), progress=False)
    f, links = r.flow_series, r.link_series
    v = f[(f["flow"] == "video") & (f["t_s"] >= start)]
    b = links[(links["link"] == "bottleneck") & (links["t_s"] >= start)]
    return {
        "rate_kbps": float(v["recv_kbps"].mean()),
        "qdelay_mean_ms": float(b["queue_delay_ms"].mean()),
        "rtt_ms": float(r.summary["flows"][0]["rtt_ms"]["mean"]),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ref", default=os.environ.get("SCREAM_REF"), help="checkout of EricssonResearch/scream (or $SCREAM_REF)")
    p.add_argument("--build", help="where to build the driver (default: a temporary directory)")
    p.add_argument("--capacities", default="1,3,10", help="Mbit/s, comma-separated (default 1,3,10)")
    p.add_argument("--rtts", default="25,100", help="ms (default 25,100)")
    p.add_argument("--jitters", default="0,5", help="standard deviation, ms (default 0,5)")
    p.add_argument("--duration", type=float, default=60.0, help="simulated seconds (default 60)")
    p.add_argument("--from", dest="start", type=float, default=20.0, help="steady state from (default 20 s)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--step", help="AT_S,MBPS: the capacity changes to MBPS at AT_S (default: constant)")
    p.add_argument("--l4s", type=float, default=0.0, metavar="MS", help="L4S mode: CE marks at this sojourn, ms (default 0: off, drop-tail)")
    p.add_argument(
        "--no-adaptive-pacing",
        action="store_true",
        help="run the reference with maxAdaptivePacingRateScale 1.0 (pacing not scaled by frame size, as lowlat)",
    )
    a = p.parse_args(argv)
    if a.no_adaptive_pacing:
        REF_ENV["SCREAM_DIFF_NO_ADAPTIVE_PACING"] = "1"

    if not a.ref:
        print("error: give the reference checkout with --ref PATH or SCREAM_REF=PATH", file=sys.stderr)
        return 2
    step = None
    if a.step:
        at, mbps = (float(x) for x in a.step.split(","))
        step = (at, mbps * 1e6)
    ref = Path(a.ref).expanduser().resolve()
    trace = ref / "traces" / "trace_no_key.txt"
    if not trace.is_file():
        print(f"error: {trace} not found (expected a checkout of EricssonResearch/scream)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        binary = build_driver(ref, Path(a.build) if a.build else Path(tmp))
        # lowlat's trace codec reads whole bytes; the reference's trace is written as floats.
        int_trace = Path(tmp) / "trace_no_key_bytes.txt"
        sizes = [round(float(x)) for x in trace.read_text().split()]
        int_trace.write_text("\n".join(str(x) for x in sizes) + "\n")
        print("| capacity | RTT | jitter | ref rate kbit/s | lowlat rate | rate diff | ref queue ms (mean) | lowlat queue | ratio | ok |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        failed = 0
        for cap in (float(x) * 1e6 for x in a.capacities.split(",")):
            for rtt in (float(x) / 1000 for x in a.rtts.split(",")):
                for jit in (float(x) / 1000 for x in a.jitters.split(",")):
                    ref_r = run_reference(binary, trace, cap, rtt, jit, a.duration, a.start, a.seed, step, a.l4s / 1000)
                    low = run_lowlat(int_trace, cap, rtt, jit, a.duration, a.start, a.seed, step, a.l4s / 1000)
                    dr = low["rate_kbps"] / ref_r["rate_kbps"] - 1.0
                    qa, qb = ref_r["qdelay_mean_ms"], low["qdelay_mean_ms"]
                    ratio = qb / qa if qa > 0 else float("inf")
                    ok = abs(dr) <= 0.10 and ((0.5 <= ratio <= 2.0) or max(qa, qb) < 2.0)
                    failed += not ok
                    print(
                        f"| {cap / 1e6:g} Mbit/s | {rtt * 1000:g} ms | {jit * 1000:g} ms | {ref_r['rate_kbps']:.0f} | "
                        f"{low['rate_kbps']:.0f} | {dr * 100:+.1f} % | {qa:.1f} | {qb:.1f} | {ratio:.2f} | {'yes' if ok else 'NO'} |",
                        flush=True,
                    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
