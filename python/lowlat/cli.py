"""The ``lowlat`` command."""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

from . import _native
from .api import run, validate
from .catalog import scenarios
from .results import comparison, number
from .suite import CASES, JITTERS_MS, QUEUES, RTTS_MS

EPILOG = """examples:
  lowlat scenarios                          list the shipped scenarios
  lowlat run dumbbell-cbr --out out/cbr     run one, print the table, write results and plots
  lowlat run rmcat-5.1 --cc gcc,nada,scream --out out/5.1
                                            compare controllers on RMCAT case 5.1
  lowlat run rmcat-5.4 --cc gcc --queue codel
                                            the same case behind CoDel instead of drop-tail
  lowlat suite rmcat --cc gcc,nada,scream --out out/suite
                                            the RMCAT matrix (cases x RTT x jitter x queue) on all cores
  lowlat reproduce scone --out out/scone   Copa vs RTC with SCONE-PRO, and the help shoot-out
  lowlat validate my-scenario.toml          check a scenario file without running it
  lowlat bench                              the simulator's standard benchmark
  lowlat emulate dumbbell-cbr --listen 127.0.0.1:5000 --forward 127.0.0.1:6000 --out out/emu
                                            relay real UDP datagrams through the scenario's links

The scenario format is described in docs/scenario-format.md."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="lowlat",
        description="Deterministic simulation of low-latency congestion control for real-time media.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"lowlat {_native.version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("run", help="run a scenario, print its table and write its results")
    p.add_argument("scenario", help="a scenario file or a catalog name (see `lowlat scenarios`)")
    p.add_argument("--out", metavar="DIR", help="write summary.json, series and plots to DIR")
    p.add_argument("--seed", type=int, help="override the scenario's seed")
    p.add_argument(
        "--cc",
        metavar="CC[,CC...]",
        help="run once per controller, each controlling every rtp-video flow, and compare "
        f"(available: {', '.join(_native.controllers())}); with --out, results go to DIR/CC/",
    )
    p.add_argument(
        "--queue",
        choices=_native.queue_variants(),
        help="replace the bottleneck queues: droptail (300 ms, RFC 8867) or codel (RFC 8289 defaults)",
    )
    p.add_argument("--no-plots", action="store_true", help="with --out: skip the PNG plots")
    p.add_argument("--json", action="store_true", help="print summary.json instead of the table")
    p.add_argument("--no-progress", action="store_true", help="never show a progress bar")

    p = sub.add_parser(
        "suite",
        help="run a test matrix on all cores and write summary.csv and report.html",
        description="The RMCAT matrix of the SCReAM talk: cases x minimum RTT x jitter x queue x "
        "controllers, one independent run per cell. A failed run is recorded with its error; the "
        "others go on.",
    )
    p.add_argument("suite", choices=["rmcat"], help="the matrix to run")
    p.add_argument("--cc", required=True, metavar="CC[,CC...]", help="controllers, e.g. gcc,nada,scream")
    p.add_argument("--out", metavar="DIR", help="write summary.csv and report.html to DIR")
    p.add_argument("--cases", default=",".join(CASES), metavar="C,...", help=f"RMCAT cases (default {','.join(CASES)})")
    p.add_argument("--rtts", default=",".join(map(str, RTTS_MS)), metavar="MS,...", help="minimum RTTs in ms (default 20,100,200)")
    p.add_argument("--jitters", default=",".join(map(str, JITTERS_MS)), metavar="MS,...", help="jitter std in ms (default 5,30)")
    p.add_argument("--queues", default=",".join(QUEUES), metavar="Q,...", help="droptail and/or codel (default both)")
    p.add_argument("--jobs", type=int, metavar="N", help="parallel runs (default: all cores)")
    p.add_argument("--no-plots", action="store_true", help="leave the plots out of report.html")
    p.add_argument("--no-progress", action="store_true", help="never show a progress bar")

    sub.add_parser("scenarios", help="list the shipped scenario catalog")

    p = sub.add_parser("validate", help="check scenario files without running them")
    p.add_argument("files", nargs="+", metavar="FILE", help="scenario files or catalog names")

    p = sub.add_parser("bench", help="run the standard benchmark and print its figures")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.add_argument(
        "--rates",
        default="10,100",
        metavar="MBPS,...",
        help="bottleneck rates in Mbit/s (default: 10,100)",
    )
    p.add_argument("--duration", type=float, default=120.0, metavar="S", help="simulated seconds (default 120)")
    p.add_argument(
        "--ecn",
        action="store_true",
        help="also run the CBR dumbbell with ECT(1) packets through an L4S marker that marks every packet (the cost of ECN)",
    )
    p.add_argument(
        "--tcp",
        default="cubic",
        metavar="CC,...",
        help="window controllers for the TCP variant of the dumbbell (one bulk flow; default cubic, as the reference ns-3 run; empty to skip)",
    )
    p.add_argument(
        "--rmcat-cc",
        default="gcc,nada,scream,scream2",
        metavar="CC,...",
        help="controllers to time on RMCAT 5.1 (default: gcc,nada,scream,scream2; empty to skip)",
    )
    p.add_argument("--repeat", type=int, default=3, metavar="N", help="RMCAT runs per controller, best counts (default 3)")

    p = sub.add_parser(
        "reproduce",
        help="reproduce a talk's evaluation (zhuge: trace families, ABW drop, prediction accuracy; "
        "scone: Copa vs RTC with SCONE-PRO, and the shoot-out of every kind of network help)",
        description="zhuge: GCC+FIFO/CoDel/Zhuge and Copa(+FastAck/Zhuge) over "
        "the W1, W2, C1-C3 trace families (300 s of 24 fps, ~2 Mbit/s video), the ABW-drop experiment "
        "(30 -> 30/k Mbit/s) and the Fortune Teller's accuracy; writes summary.csv, table_<family>.csv, "
        "reductions.csv, abw_drop.csv/.png and accuracy.csv/.png to DIR. "
        "scone: Copa, RTC with SCONE-PRO, GCC, GCC+Zhuge and SCReAM v2+L4S over the same trace families "
        "and ABW drops (120 s runs), frame latency mean/P90/P99 next to the seed talk's "
        "(frame_latency.csv/.png), and every sender (Copa, GCC, SCReAM v2, SCONE-PRO's RTC sender) with "
        "every help (none, zhuge, scone-rtc, scone-rtc-measured, scone, l4s) per family (shootout.csv/.png, summary.csv).",
    )
    p.add_argument("talk", choices=["zhuge", "scone"], help="the evaluation to reproduce")
    p.add_argument("--out", required=True, metavar="DIR", help="where to write the tables and plots")
    p.add_argument(
        "--traces",
        nargs="+",
        metavar="PATH",
        help="two-column <s> <Mbit/s> trace files or folders (e.g. ../shared/traces/zhuge); "
        "default: one generated trace per family",
    )
    p.add_argument("--duration", type=float, metavar="S", help="seconds per run (default: zhuge 300, scone 120)")
    p.add_argument("--ks", metavar="K,...", help="ABW-drop factors (default: zhuge 2,3,...,50 as in the paper; scone 2,5,10,20)")
    p.add_argument("--seed", type=int, default=1, help="seed of every run and of the drop instants (default 1)")
    p.add_argument("--jobs", type=int, metavar="N", help="parallel runs (default: all cores)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--no-progress", action="store_true", help="never show a progress bar")

    # Emulator (issue 16): lowlat emulate, and lowlat bench --relay.
    add_emulate_parser(sub)
    bench_parser = sub.choices["bench"]
    bench_parser.add_argument("--relay", action="store_true", help="also measure the UDP relay of `lowlat emulate`: added delay P50/P99 unshaped, throughput limit, timer error at 100 Mbit/s")
    bench_parser.add_argument("--relay-only", action="store_true", help="measure only the relay")

    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return COMMANDS[args.command](args)
    except (_native.ScenarioError, FileNotFoundError, NotADirectoryError) as e:
        print(f"lowlat: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("lowlat: interrupted", file=sys.stderr)
        return 130


def cmd_run(args: argparse.Namespace) -> int:
    progress = False if args.no_progress else None
    if not args.cc:
        result = run(args.scenario, seed=args.seed, queue=args.queue, progress=progress)
        if args.json:
            print(json.dumps(result.summary, indent=2))
        else:
            print(result.table())
        if args.out:
            written = result.write(args.out, plots=not args.no_plots)
            print(f"\nwrote {len(written)} files to {args.out}: " + ", ".join(p.name for p in written), file=sys.stderr)
        return 0
    ccs = [c.strip() for c in args.cc.split(",") if c.strip()]
    results = {}
    for cc in ccs:
        results[cc] = run(args.scenario, seed=args.seed, cc=cc, queue=args.queue, progress=progress)
        if args.out:
            results[cc].write(Path(args.out) / cc, plots=not args.no_plots)
    if args.out and not args.no_plots:
        from .plots import plot_comparison

        plot_comparison(results, Path(args.out))
    if args.json:
        print(json.dumps({cc: r.summary for cc, r in results.items()}, indent=2))
    else:
        first = next(iter(results.values())).summary
        print(f"scenario {first['scenario']}  seed {first['seed']}  {first['sim_duration_s']:g} s simulated\n")
        print(comparison(results).to_string(index=False, float_format=number))
    if args.out:
        print(f"\nwrote results of {len(ccs)} runs to {args.out}/{{{','.join(ccs)}}}/", file=sys.stderr)
    return 0


def _list(text: str, what: str, conv=str) -> list:
    try:
        items = [conv(x.strip()) for x in text.split(",") if x.strip()]
    except ValueError:
        raise _native.ScenarioError(f"--{what}: got {text!r}, expected a comma-separated list of numbers") from None
    if not items:
        raise _native.ScenarioError(f"--{what}: got {text!r}, expected at least one value")
    return items


def cmd_suite(args: argparse.Namespace) -> int:
    from . import suite

    ccs = _list(args.cc, "cc")
    bad = [c for c in ccs if c not in _native.controllers()]
    if bad:
        raise _native.ScenarioError(f"--cc: got {bad[0]!r}, expected one of {', '.join(_native.controllers())}")
    cases = _list(args.cases, "cases")
    bad = [c for c in cases if c not in suite.CASES]
    if bad:
        raise _native.ScenarioError(f"--cases: got {bad[0]!r}, expected some of {', '.join(suite.CASES)}")
    queues = _list(args.queues, "queues")
    bad = [q for q in queues if q not in _native.queue_variants()]
    if bad:
        raise _native.ScenarioError(f"--queues: got {bad[0]!r}, expected droptail and/or codel")
    rtts = _list(args.rtts, "rtts", float)
    jitters = _list(args.jitters, "jitters", float)
    if any(x < 0 for x in rtts + jitters):
        raise _native.ScenarioError("--rtts and --jitters must be non-negative")
    specs = suite.matrix(ccs, cases, rtts, jitters, queues)
    started = time.perf_counter()
    df = suite.run_matrix(specs, jobs=args.jobs, progress=False if args.no_progress else None)
    wall = time.perf_counter() - started
    failed = int((df["error"] != "").sum())
    table = (
        df[df["error"] == ""]
        .groupby(["case", "cc"], sort=False)[["throughput_kbps", "owd_p95_ms", "frame_delay_p99_ms", "jain_index"]]
        .median()
        .reset_index()
    )
    print(f"{len(df)} runs in {wall:.1f} s on {args.jobs or os.cpu_count()} processes, {failed} failed")
    print("medians over RTT x jitter x queue:\n")
    print(table.to_string(index=False, float_format=number))
    if args.out:
        written = suite.write(df, args.out, plots=not args.no_plots)
        print(f"\nwrote {', '.join(str(p) for p in written)}", file=sys.stderr)
    return 1 if failed else 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from . import scone, zhuge

    if args.duration is not None and args.duration <= 0:
        raise _native.ScenarioError(f"--duration: got {args.duration}, expected a positive number of seconds")
    ks = [int(k) for k in _list(args.ks, "ks", float)] if args.ks else None
    if ks and any(k < 1 for k in ks):
        raise _native.ScenarioError(f"--ks: got {args.ks!r}, expected factors of at least 1")
    talk = scone if args.talk == "scone" else zhuge
    res = talk.reproduce(
        args.out,
        args.traces,
        seconds=args.duration or (120.0 if args.talk == "scone" else 300.0),
        ks=ks,
        seed=args.seed,
        jobs=args.jobs,
        progress=False if args.no_progress else None,
        plots=not args.no_plots,
    )
    print(f"\nwrote {', '.join(str(p) for p in res['written'])}", file=sys.stderr)
    return 1 if res["failed"] else 0


def cmd_scenarios(args: argparse.Namespace) -> int:
    entries = scenarios()
    width = max((len(e["name"]) for e in entries), default=4)
    for e in entries:
        print(f"{e['name']:<{width}}  {e['description']}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    failed = 0
    for f in args.files:
        try:
            info = validate(f)
        except (_native.ScenarioError, FileNotFoundError) as e:
            print(f"lowlat: error: {e}", file=sys.stderr)
            failed += 1
            continue
        print(f"{f}: ok ({info['name']})")
        for w in info["warnings"]:
            print(f"  warning: {w}")
    return 1 if failed else 0


def cmd_bench(args: argparse.Namespace) -> int:
    if args.relay or args.relay_only:
        bench_relay_print(args.json)
        if args.relay_only:
            return 0
    try:
        rates = [float(r) for r in args.rates.split(",") if r.strip()]
    except ValueError:
        print(f"lowlat: error: --rates: got {args.rates!r}, expected Mbit/s values such as 10,100", file=sys.stderr)
        return 2
    if not rates or any(r <= 0 for r in rates) or args.duration <= 0:
        print("lowlat: error: --rates and --duration must be positive", file=sys.stderr)
        return 2
    cases = []
    flows = ["cbr", *(["cbr-l4s"] if args.ecn else []), *[f for f in args.tcp.split(",") if f.strip()]]
    for flow, mbps in [(f, r) for f in flows for r in rates]:
        name, wall, events, sim_s, delivered = _native.bench_dumbbell(int(mbps * 1e6), args.duration, flow.strip())
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        cases.append(
            {
                "case": name,
                "bottleneck_mbps": mbps,
                "sim_s": sim_s,
                "wall_s": wall,
                "events": events,
                "events_per_s": events / wall,
                "sim_s_per_wall_s": sim_s / wall,
                "delivered_packets": delivered,
                "delivered_per_s": delivered / wall,
                "peak_rss_mib": peak_mib,
            }
        )
        if not args.json:
            c = cases[-1]
            print(
                f"{c['case']:<26} wall {c['wall_s']:7.3f} s  events {c['events']:>10}  "
                f"{c['events_per_s'] / 1e6:6.2f} M events/s  {c['sim_s_per_wall_s']:8.1f} sim s/s  "
                f"{c['delivered_per_s'] / 1e6:6.2f} M delivered pkt/s  peak RSS {c['peak_rss_mib']:.0f} MiB",
                flush=True,
            )
    # RMCAT case 5.1 (100 s), one controller per run: the figure a sweep of the matrix scales with.
    for cc in [c for c in args.rmcat_cc.split(",") if c.strip()]:
        walls = []
        for _ in range(args.repeat):
            r = run("rmcat-5.1", cc=cc.strip(), progress=False)
            walls.append(r.summary["wall_s"])
        wall = min(walls)
        s = r.summary
        cases.append(
            {
                "case": f"rmcat-5.1/{cc.strip()}",
                "sim_s": s["sim_duration_s"],
                "wall_s": wall,
                "events": s["events"],
                "events_per_s": s["events"] / wall,
                "sim_s_per_wall_s": s["sim_duration_s"] / wall,
            }
        )
        if not args.json:
            c = cases[-1]
            print(
                f"{c['case']:<26} wall {c['wall_s'] * 1e3:7.1f} ms per 100 s run (best of {args.repeat})  "
                f"events {c['events']:>8}  {c['sim_s_per_wall_s']:8.0f} sim s/s",
                flush=True,
            )
    if args.json:
        print(json.dumps({"lowlat_version": _native.version(), "cases": cases}, indent=2))
    else:
        print("reference: ns-3 3.44 delivers about 23 000 packets per wall second on this topology at 100 Mbit/s;")
        print("           its TCP variant (one bulk flow, 120 s) takes about 12 s at 10 Mbit/s and 270 s at 100 Mbit/s")
    return 0


# --- emulator (issue 16) ---------------------------------------------------------------------


def add_emulate_parser(sub) -> None:
    p = sub.add_parser(
        "emulate",
        help="relay real UDP datagrams through a scenario's links on the wall clock",
        description="Datagrams reaching --listen cross the scenario's forward path (access, bottleneck "
        "with its queue/trace/loss/jitter, egress) and leave towards --forward; answers from --forward "
        "cross the reverse path back to the client that spoke last. Runs for the scenario's duration "
        "(or --duration), Ctrl-C ends it early; prints the table and with --out writes summary.json "
        "(plus a `relay` object: malformed, unexpected, overflow counts and the timer error) and the "
        "series, as `lowlat run` does, measured on the real packets. Loopback or your own hosts only.",
    )
    p.add_argument("scenario", help="a scenario file or a catalog name")
    p.add_argument("--listen", required=True, metavar="IP:PORT", help="where clients send")
    p.add_argument("--forward", required=True, metavar="IP:PORT", help="where their datagrams go (the server)")
    p.add_argument("--duration", type=float, metavar="S", help="seconds to run (default: the scenario's duration)")
    p.add_argument("--flow", metavar="ID", help="the flow whose access/egress links the traffic crosses (default: the first)")
    p.add_argument("--pcap", metavar="FILE", help="write every forwarded datagram (with IPv4/UDP headers) to FILE")
    p.add_argument("--max-datagram", type=int, default=65_507, metavar="BYTES", help="larger datagrams are malformed (default 65507)")
    p.add_argument("--overhead", type=int, default=0, metavar="BYTES", help="bytes added to each datagram on the links (28: IPv4+UDP headers; default 0)")
    p.add_argument("--out", metavar="DIR", help="write summary.json, series and plots to DIR")
    p.add_argument("--no-plots", action="store_true", help="with --out: skip the PNG plots")
    p.add_argument("--json", action="store_true", help="print summary.json instead of the table")

    for side in ("send", "receive"):
        p = sub.add_parser(
            side,
            help=f"{side} real RTP video of a scenario's rtp-video flow (lowlat's controllers, real transport-cc / RFC 8888 feedback)",
            description="The simulator's media endpoints on real sockets: `lowlat receive` listens and answers "
            "with the flow's feedback_format; `lowlat send` sends the flow's video (source model, pacer, "
            "controller) and reads the feedback on its own socket. Put `lowlat emulate` between them to "
            "cross the scenario's links. Prints a JSON summary (receiver: frame delay, fps, one-way delay, "
            "loss; sender: rate per bin, RTT). Sender and receiver on one host (frame delay uses the sender's clock).",
        )
        p.add_argument("scenario", help="a scenario file or a catalog name (its first rtp-video flow, or --flow)")
        if side == "send":
            p.add_argument("--to", required=True, metavar="IP:PORT", help="the receiver (or the relay's --listen)")
            p.add_argument("--bind", default="0.0.0.0:0", metavar="IP:PORT", help="the local address (default any)")
            p.add_argument("--cc", choices=_native.controllers(), help="override the flow's controller")
        else:
            p.add_argument("--listen", required=True, metavar="IP:PORT", help="where the media arrives")
        p.add_argument("--flow", metavar="ID", help="the rtp-video flow (default: the first)")
        p.add_argument("--duration", type=float, metavar="S", help="seconds (default: the scenario's duration; the receiver counts from the sender's start)")
        p.add_argument("--out", metavar="FILE", help="also write the JSON summary to FILE")


def cmd_rtp(args: argparse.Namespace) -> int:
    from .emulate import receive, send

    if args.command == "send":
        summary = send(args.scenario, args.to, bind=args.bind, flow=args.flow, duration_s=args.duration, cc=args.cc)
    else:
        summary = receive(args.scenario, args.listen, flow=args.flow, duration_s=args.duration)
    text = json.dumps(summary, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


def cmd_emulate(args: argparse.Namespace) -> int:
    from .emulate import emulate

    print(f"lowlat: relaying {args.listen} -> {args.forward} through {args.scenario} (Ctrl-C to stop)", file=sys.stderr, flush=True)
    result = emulate(
        args.scenario, args.listen, args.forward, duration_s=args.duration, flow=args.flow,
        pcap=args.pcap, max_datagram=args.max_datagram, overhead=args.overhead,
    )
    print(json.dumps(result.summary, indent=2) if args.json else result.table())
    if not args.json:
        r = result.summary["relay"]
        print(f"\nrelay: received {r['received']}, forwarded {r['forwarded']}, malformed {r['malformed']}, "
              f"unexpected {r['unexpected']}, overflow {r['overflow']} (forward, reverse)")
    if args.out:
        written = result.write(args.out, plots=not args.no_plots)
        print(f"wrote {len(written)} files to {args.out}", file=sys.stderr)
    return 0


def bench_relay_print(as_json: bool) -> None:
    from .emulate import bench_relay

    b = bench_relay()
    if as_json:
        print(json.dumps({"relay": b}, indent=2))
        return
    print(f"relay unshaped, added delay: one-way P50 {b['relay_owd_p50_us']:.0f} us / P99 {b['relay_owd_p99_us']:.0f} us "
          f"(loopback alone: {b['direct_owd_p50_us']:.0f} / {b['direct_owd_p99_us']:.0f} us)")
    print(f"relay unshaped throughput limit: {b['unshaped_pps'] / 1e3:.0f} k datagrams/s, {b['unshaped_bps'] / 1e9:.2f} Gbit/s "
          f"of 1200-byte datagrams at the sink; the relay forwarded {b['relay_forwarded_pps'] / 1e3:.0f} k/s "
          f"(two senders sent {b['unshaped_sent']}, the relay read {b['unshaped_read']}, forwarded {b['unshaped_forwarded']}; "
          f"senders, relay and sink share this machine's cores)")
    print(f"relay CPU cost: {b['relay_pps_per_cpu_s'] / 1e3:.0f} k datagrams per CPU second of its thread "
          f"= {b['relay_pps_per_cpu_s'] * 1200 * 8 / 1e9:.2f} Gbit/s of 1200-byte datagrams on a core of its own")
    print(f"relay shaped at {b['shaped_bps'] / 1e6:.0f} Mbit/s (90 % load): departure timer error P50 "
          f"{b['shaped_lateness_p50_us']:.0f} us / P99 {b['shaped_lateness_p99_us']:.0f} us", flush=True)


COMMANDS = {
    "run": cmd_run,
    "suite": cmd_suite,
    "scenarios": cmd_scenarios,
    "validate": cmd_validate,
    "bench": cmd_bench,
    "reproduce": cmd_reproduce,
    "emulate": cmd_emulate,
    "send": cmd_rtp,
    "receive": cmd_rtp,
}

if __name__ == "__main__":
    sys.exit(main())
