"""The ``lowlat`` command."""

from __future__ import annotations

import argparse
import errno
import json
import os
import resource
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable, NoReturn

from . import _native
from .api import run, validate
from .catalog import scenarios
from .outdir import results_dir
from .results import comparison, text_table
from .suite import CASES, JITTERS_MS, QUEUES, RTTS_MS
from .userinput import UserError, check_common, choices, numbers, positive_int, positive_seconds, seed

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
  lowlat reproduce satellite --out out/sat  0-RTT, 0-RTT-BDP and Careful Resume over GEO (the seed's tables)
  lowlat sweep my-sweep.toml --out out/sweep
                                            a sweep spec's runs on all cores; rerun to resume
  lowlat validate my-scenario.toml          check a scenario file without running it
  lowlat bench                              the simulator's standard benchmark
  lowlat emulate dumbbell-cbr --listen 127.0.0.1:5000 --forward 127.0.0.1:6000 --out out/emu
                                            relay real UDP datagrams through the scenario's links

Documents (in lowlat's source tree and its sdist): docs/scenario-format.md (the scenario
format), docs/architecture.md (the architecture and the results contract), README.md."""


#: Where an internal error should be reported.
REPORT = "please report it to the lowlat developers with the command line and the traceback above"


class Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line (``lowlat run: error: ...``) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def main(argv: list[str] | None = None) -> int:
    """The ``lowlat`` command; returns its exit code."""
    args = build_parser().parse_args(argv)
    if args.command is None:
        build_parser().print_help()
        return 2
    return dispatch(COMMANDS[args.command], args)


def dispatch(command: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Runs a command: a user's mistake is one line and exit code 2; an internal error shows its
    traceback and asks to be reported (exit code 70)."""
    try:
        check_common(args)
        return command(args)
    except BrokenPipeError:
        # Output piped into a command that stopped reading (``lowlat run x | head``); before
        # USER_ERRORS, which holds OSError.
        sys.stderr.close()
        return 141
    except USER_ERRORS as e:
        print(f"lowlat: error: {describe(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("lowlat: interrupted", file=sys.stderr)
        return 130
    except Exception:
        traceback.print_exc()
        print(f"lowlat: internal error: {REPORT}", file=sys.stderr)
        return 70
    except BaseException as e:  # a panic in the native core (pyo3's PanicException)
        if isinstance(e, SystemExit):
            raise
        traceback.print_exc()
        print(f"lowlat: internal error (the simulator panicked): {REPORT}", file=sys.stderr)
        return 70


#: Exceptions that report a user's mistake rather than a bug.
USER_ERRORS = (UserError, _native.ScenarioError, OSError)


def describe(e: BaseException) -> str:
    """One line for a user error; for a file system error, the path and the reason."""
    if isinstance(e, OSError) and not isinstance(e, BrokenPipeError) and e.strerror:
        name = e.filename if e.filename is not None else ""
        reason = e.strerror
        if e.errno == errno.ENOENT and name:
            reason = "no such file or folder"
        return f"{name}: {reason}" if name else reason
    return str(e).replace("\n", " ")


def add_out(p: argparse.ArgumentParser, help: str) -> None:
    """``--out DIR`` and ``--force`` for a command that writes its folder with results_dir."""
    p.add_argument("--out", metavar="DIR", help=help + " (written aside and renamed into place when complete)")
    p.add_argument("--force", action="store_true", help="with --out: replace a non-empty DIR whole")


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = Parser(
        prog="lowlat",
        description="Deterministic simulation of low-latency congestion control for real-time media.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"lowlat {_native.version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("run", help="run a scenario, print its table and write its results")
    p.add_argument("scenario", help="a scenario file or a catalog name (see `lowlat scenarios`)")
    add_out(p, "write summary.json, series and plots to DIR")
    p.add_argument("--seed", type=seed, help="override the scenario's seed (0 to 2^64-1)")
    p.add_argument(
        "--cc",
        metavar="CC[,CC...]",
        help="run once per controller, each controlling every rtp-video flow, and compare "
        f"(available: {', '.join(_native.controllers())}, or module:Class for a Python controller, "
        "see docs/python-controllers.md); with --out, results go to DIR/CC/ (DIR/Class/)",
    )
    p.add_argument(
        "--queue",
        choices=_native.queue_variants(),
        help="replace the bottleneck queues: droptail (300 ms, RFC 8867) or codel (RFC 8289 defaults)",
    )
    p.add_argument(
        "--memory-budget",
        metavar="SIZE",
        help="refuse a run estimated to need more memory (default $LOWLAT_MEMORY_BUDGET or 4 GiB), e.g. 16GB",
    )
    p.add_argument(
        "--pcap",
        metavar="FILE",
        help="write the packets the endpoints send as a pcap for Wireshark (RTP + transport-wide "
        "extension on UDP 5004+2k, RTCP feedback on 5005+2k, transport datagrams on 6000+k, "
        "CBR/Poisson on 7000+k); with --cc, one FILE per controller: STEM.CC.pcap",
    )
    p.add_argument("--no-plots", action="store_true", help="with --out: skip the PNG plots")
    p.add_argument("--json", action="store_true", help="print summary.json instead of the table")
    p.add_argument("--wide", action="store_true", help="print every column of the table (default: the main ones)")
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
    add_out(p, "write summary.csv and report.html to DIR")
    p.add_argument("--cases", default=",".join(CASES), metavar="C,...", help=f"RMCAT cases (default {','.join(CASES)})")
    p.add_argument("--rtts", default=",".join(map(str, RTTS_MS)), metavar="MS,...", help="minimum RTTs in ms (default 20,100,200)")
    p.add_argument("--jitters", default=",".join(map(str, JITTERS_MS)), metavar="MS,...", help="jitter std in ms (default 5,30)")
    p.add_argument("--queues", default=",".join(QUEUES), metavar="Q,...", help="droptail and/or codel (default both)")
    p.add_argument("--jobs", type=positive_int, metavar="N", help="parallel runs (default: all cores)")
    p.add_argument("--no-plots", action="store_true", help="leave the plots out of report.html")
    p.add_argument("--no-progress", action="store_true", help="never show a progress bar")

    p = sub.add_parser(
        "sweep",
        help="run a sweep spec (a base scenario x axes over any key) on local processes or Ray; resumable",
        description="Runs every combination of a sweep spec's axes (any scenario key as a dotted path, "
        "cc, queue, rtt_ms, jitter_ms, seed, scenario) and keeps its metrics. Each finished run is "
        "written to DIR/runs/ as it completes: a killed sweep rerun with the same command skips the "
        "runs it has. A failed run is a row with its error; the others go on. Writes DIR/summary.csv "
        "(and summary.parquet with pyarrow). The format: docs/sweeps.md.",
    )
    p.add_argument("spec", help="the sweep spec (TOML)")
    p.add_argument("--out", required=True, metavar="DIR", help="where the runs and the summary go (resumes the runs already there)")
    p.add_argument("--restart", action="store_true", help="discard the runs already in DIR and start again")
    p.add_argument("--jobs", type=positive_int, metavar="N", help="parallel runs (default: all cores; with Ray: CPUs of the local instance)")
    p.add_argument("--backend", choices=["local", "ray"], default="local", help="local process pool (default) or Ray (pip install 'lowlat[ray]')")
    p.add_argument("--address", metavar="ADDR", help="with --backend ray: a running cluster (e.g. ray://head:10001 or auto); default: a local instance")
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
    p.add_argument(
        "--repeat",
        type=positive_int,
        default=3,
        metavar="N",
        help="timed runs per dumbbell row (after one warm-up run) and per RMCAT controller; the best counts (default 3)",
    )
    p.add_argument(
        "--no-satellite",
        action="store_true",
        help="skip the satellite row (one 1 GB CUBIC download over 10 Mbit/s, 600 ms, about 870 000 packets)",
    )
    p.add_argument(
        "--compare-ns3",
        action="store_true",
        help="also run the CBR and CUBIC dumbbells in ns-3 (the ns3 package: pip install 'lowlat[bench]') "
        "and print lowlat's speed-up on each row; skipped with a message when ns3 is not installed",
    )
    p.add_argument(
        "--gym-steps",
        type=int,
        default=20_000,
        metavar="N",
        help="steps of the Gymnasium environment (lowlat.gym, 50 ms each) to time; 0 to skip (default 20000; needs gymnasium)",
    )

    p = sub.add_parser(
        "reproduce",
        help="reproduce a talk's evaluation: zhuge, scone or satellite (`lowlat reproduce TALK --help`)",
        description="Reproduces the evaluation of one of the seed talks, writing its tables (CSV) and figures (PNG) "
        "to --out. zhuge: Zhuge at the wireless AP (trace families, ABW drop, prediction accuracy). scone: Copa vs "
        "RTC with SCONE-PRO, and the shoot-out of every kind of network help. satellite: fast start-up over GEO "
        "(0-RTT, 0-RTT-BDP, Careful Resume, picoquic's rule). The runs go through the sweep runner (docs/sweeps.md): "
        "each finished run is kept in DIR/sweeps/, so the same command on the same DIR resumes after a kill; "
        "--backend ray runs them on Ray; a failed run is recorded and the others complete (exit 1).",
    )
    talks = p.add_subparsers(dest="talk", metavar="TALK", required=True)

    def talk_parser(name: str, help: str, description: str) -> argparse.ArgumentParser:
        q = talks.add_parser(name, help=help, description=description)
        q.add_argument(
            "--out",
            required=True,
            metavar="DIR",
            help="where to write the runs (DIR/sweeps/, one file per finished run), tables and plots; "
            "the same command on the same DIR resumes, skipping the finished runs",
        )
        q.add_argument("--force", "--restart", dest="force", action="store_true", help="discard what DIR holds and start again")
        q.add_argument("--jobs", type=positive_int, metavar="N", help="parallel runs (default: all cores)")
        q.add_argument("--backend", choices=["local", "ray"], default="local", help="local process pool (default) or Ray (pip install 'lowlat[ray]')")
        q.add_argument("--address", metavar="ADDR", help="with --backend ray: a running cluster (e.g. ray://head:10001 or auto); default: a local instance")
        q.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
        q.add_argument("--no-progress", action="store_true", help="never show a progress bar")
        return q

    def trace_family_args(q: argparse.ArgumentParser, seconds: float, ks: str) -> None:
        q.add_argument(
            "--traces",
            nargs="+",
            metavar="PATH",
            help="trace files or folders (e.g. ../shared/traces/zhuge): two-column <s> <Mbit/s> or mahimahi; default: one generated trace per family",
        )
        q.add_argument(
            "--duration",
            type=positive_seconds,
            default=seconds,
            metavar="S",
            help=f"longest run (default {seconds:g}); a rate trace runs at most its lines x 200 ms, as in the Zhuge artifact",
        )
        q.add_argument("--ks", metavar="K,...", help=f"ABW-drop factors (default {ks})")
        q.add_argument("--seed", type=seed, default=1, help="seed of every run and of the drop instants (default 1)")

    q = talk_parser(
        "zhuge",
        "Zhuge (SIGCOMM 2022): GCC and Copa with and without the AP's help",
        "GCC+FIFO/CoDel/Zhuge and Copa(+FastAck/Zhuge) over the W1, W2, C1-C3 trace families, the ABW-drop "
        "experiment (30 -> 30/k Mbit/s) and the Fortune Teller's accuracy; writes summary.csv, table_<family>.csv, "
        "reductions.csv, abw_drop.csv/.png and accuracy.csv/.png to DIR.",
    )
    trace_family_args(q, 300.0, "2,3,...,50 as in the paper")
    q.set_defaults(duration=300.0)
    q.add_argument(
        "--trace-format",
        choices=["auto", "rate", "mahimahi"],
        default="auto",
        help="format of the --traces files (default auto: told from each file's first line)",
    )
    q.add_argument("--seeds", type=positive_int, default=1, metavar="N", help="ABW-drop seeds, each with its own drop instants (default 1)")
    q.add_argument(
        "--gcc-zhuge-queue",
        choices=["codel", "fifo"],
        default="codel",
        help="GCC+Zhuge's queue (default codel, the artifact's; fifo: see the docs)",
    )
    q.add_argument(
        "--repair",
        choices=["timeout", "nack"],
        default="timeout",
        help="the GCC flows' loss repair (default timeout, the artifact's sender: every packet acknowledged, "
        "a frame's missing packets resent after srtt + 4 deviations; nack: WebRTC's NACK/RTX)",
    )
    q.add_argument(
        "--in-band",
        choices=["sampled", "per-packet"],
        default="sampled",
        help="Zhuge's in-band reports to the GCC sender: sampled (default, the artifact's: the first packet arriving "
        "while no sample waits, reported alone 1 ms later) or per-packet (every packet's prediction, every 1 ms; "
        "the one to use with --gcc libwebrtc, whose receive rate counts only reported packets)",
    )
    q.add_argument(
        "--unpaced",
        action="store_true",
        help="send each GCC frame at once over a 1 Gbit/s access link, as the artifact's sender (default: GCC's pacing "
        "at 2.5x its target; see the docs)",
    )
    q.add_argument("--wifi-ap", action="store_true", help="serve W1/W2 through the Wi-Fi AP model (the paper's trace runs are point to point)")
    q.add_argument(
        "--copa",
        choices=["artifact", "paper"],
        default="artifact",
        help="the Copa schemes' Copa: artifact (default: the Zhuge artifact's tcp-copa.cc, which the paper's "
        "evaluation ran, over its TCP: ns-3's SACK recovery, a 1 s minimum retransmission timeout, 1448 B segments; "
        "Copa+FastAck with its run lists' delta 0.02) or paper (NSDI 2018, delta 0.5, over lowlat's QUIC-like transport)",
    )
    q.add_argument(
        "--gcc",
        choices=["artifact", "libwebrtc"],
        default="artifact",
        help="the GCC schemes' GCC: artifact (default: the Zhuge artifact's gcc-controller.cc, which the paper's "
        "evaluation ran: 1 s receive rate, no loss-based part, no probing) or libwebrtc (lowlat's goog_cc)",
    )
    q = talk_parser(
        "scone",
        "SCONE-PRO for RTC (IETF 120 hackathon): Copa vs RTC with SCONE-PRO, and the help shoot-out",
        "Copa, RTC with SCONE-PRO, GCC, GCC+Zhuge and SCReAM v2+L4S over the Zhuge trace families and ABW drops, "
        "frame latency mean/P90/P99 next to the seed talk's (frame_latency.csv/.png), and every sender (Copa, GCC, "
        "SCReAM v2, SCONE-PRO's RTC sender) with every help (none, zhuge, scone-rtc, scone-rtc-measured, scone, l4s) "
        "per family (shootout.csv/.png, summary.csv).",
    )
    trace_family_args(q, 120.0, "2,5,10,20")
    q = talk_parser(
        "satellite",
        "0-RTT-BDP and Careful Resume over GEO (the seed talk's tables)",
        "The GEO start-up evaluation (0-RTT, 0-RTT-BDP, Careful Resume, picoquic's rule): (a) the "
        "draft-kuhn-quic-4-sat targets per case and size, (b) the seed talk's comparison at 50/10 and 250/3 Mbit/s, "
        "(c) the 1 GB lossy table next to the seed's and the Mathis bound, (d) the cost of a wrong saved set; "
        "targets.csv, seed_comparison.csv, lossy_1gb.csv, wrong_saved_set.csv and one PNG each.",
    )
    q.add_argument("--parts", default="abcd", metavar="PARTS", help="which parts to run, e.g. bd (default abcd)")
    q.add_argument("--seeds", metavar="N,...", help="seeds of the lossy runs (default 1,2,3; lossless runs are deterministic)")
    q.add_argument("--cc", metavar="CC,...", help="controllers of parts a and d (default cubic,bbr)")
    q.add_argument("--sizes", metavar="MB,...", help="download sizes of part a in MB (default 2,10,100)")

    # Emulator (issue 16): lowlat emulate / send / receive, and lowlat bench --relay.
    add_emulate_parser(sub)
    bench_parser = sub.choices["bench"]
    bench_parser.add_argument("--relay", action="store_true", help="also measure the UDP relay of `lowlat emulate`: added delay P50/P99 unshaped, throughput limit, timer error at 100 Mbit/s")
    bench_parser.add_argument("--relay-only", action="store_true", help="measure only the relay")
    # Link shell (issue 16): lowlat shell SCENARIO -- CMD... (parser and command in shell.py).
    from .shell import add_shell_parser

    add_shell_parser(sub)

    return parser


def cmd_run(args: argparse.Namespace) -> int:
    progress = False if args.no_progress else None
    if not args.cc:
        result = run(
            args.scenario,
            seed=args.seed,
            queue=args.queue,
            progress=progress,
            memory_budget=args.memory_budget,
            pcap=args.pcap,
        )
        if args.json:
            print(json.dumps(result.summary, indent=2))
        else:
            print(result.table(wide=args.wide))
        if args.out:
            with results_dir(args.out, force=args.force) as tmp:
                written = result.write(tmp, plots=not args.no_plots)
            print(f"\nwrote {len(written)} files to {args.out}: " + ", ".join(p.name for p in written), file=sys.stderr)
        return 0
    ccs = controllers_flag(args.cc, "--cc")
    results = {}
    for cc in ccs:
        pcap = Path(args.pcap).with_suffix(f".{folder_name(cc)}.pcap") if args.pcap else None
        results[cc] = run(
            args.scenario,
            seed=args.seed,
            cc=cc,
            queue=args.queue,
            progress=progress,
            memory_budget=args.memory_budget,
            pcap=pcap,
        )
    if args.out:
        with results_dir(args.out, force=args.force) as tmp:
            for cc, r in results.items():
                r.write(tmp / folder_name(cc), plots=not args.no_plots)
            if not args.no_plots:
                from .plots import plot_comparison

                plot_comparison(results, tmp)
    if args.json:
        print(json.dumps({cc: r.summary for cc, r in results.items()}, indent=2))
    else:
        first = next(iter(results.values())).summary
        print(f"scenario {first['scenario']}  seed {first['seed']}  {first['sim_duration_s']:g} s simulated\n")
        print(text_table(comparison(results, wide=args.wide)))
    if args.out:
        print(f"\nwrote results of {len(ccs)} runs to {args.out}/{{{','.join(map(folder_name, ccs))}}}/", file=sys.stderr)
    return 0


def controllers_flag(text: str, flag: str) -> list[str]:
    """A comma-separated list of controllers: built-in names or ``module:Class`` (a Python
    controller, imported now so a mistake is reported before anything runs)."""
    from .controller import load
    from .userinput import items

    names: list[str] = items(text, flag, "controller names")
    for n in names:
        if ":" in n:
            load(n)
        elif n not in _native.controllers():
            raise UserError(
                f"{flag}: got {n!r}, expected one of {', '.join(_native.controllers())} or module:Class (a Python controller)"
            )
    return names


def folder_name(cc: str) -> str:
    """A controller's results folder: its name, or a Python controller's class name."""
    return cc.rsplit(":", 1)[-1] if ":" in cc else cc


def _list(text: str, what: str, conv: Callable[[str], Any] = str) -> list[Any]:
    """A comma-separated list for ``--what`` (kept for the commands that call it)."""
    from .userinput import items

    if conv is float:
        return numbers(text, f"--{what}", "finite numbers")
    return items(text, f"--{what}", "names", conv)


def cmd_suite(args: argparse.Namespace) -> int:
    from . import suite

    ccs = choices(args.cc, "--cc", _native.controllers())
    cases = choices(args.cases, "--cases", suite.CASES)
    queues = choices(args.queues, "--queues", _native.queue_variants())
    rtts = numbers(args.rtts, "--rtts", "minimum RTTs in ms from 0 to 10000", minimum=0, maximum=10_000)
    jitters = numbers(args.jitters, "--jitters", "jitters in ms from 0 to 10000", minimum=0, maximum=10_000)
    specs = suite.matrix(ccs, cases, rtts, jitters, queues)
    started = time.perf_counter()
    jobs = max(1, min(args.jobs or os.cpu_count() or 1, len(specs)))
    df = suite.run_matrix(specs, jobs=jobs, progress=False if args.no_progress else None)
    wall = time.perf_counter() - started
    failed = int((df["error"] != "").sum())
    table = suite.medians(df)
    print(f"{len(df)} runs in {wall:.1f} s on {jobs} processes, {failed} failed")
    print("medians over RTT x jitter x queue:\n")
    print(text_table(table.rename(columns=suite.MEDIAN_HEADERS)))
    if args.out:
        with results_dir(args.out, force=args.force) as tmp:
            written = suite.write(df, tmp, plots=not args.no_plots)
        print(f"\nwrote {', '.join(str(Path(args.out) / p.name) for p in written)}", file=sys.stderr)
    return 1 if failed else 0


def runner_args(args: argparse.Namespace) -> dict[str, Any]:
    """How a reproduction's runs go: --jobs, --backend, --address, --no-progress, --force."""
    if args.address and args.backend != "ray":
        raise UserError("--address: only with --backend ray")
    return dict(
        jobs=args.jobs,
        backend=args.backend,
        address=args.address,
        progress=False if args.no_progress else None,
        force=args.force,
    )


def cmd_reproduce(args: argparse.Namespace) -> int:
    if args.talk == "satellite":
        return cmd_reproduce_satellite(args)
    from .reproduce import scone, zhuge

    ks = [int(k) for k in _list(args.ks, "ks", float)] if args.ks else None
    if ks and any(k < 1 for k in ks):
        raise _native.ScenarioError(f"--ks: got {args.ks!r}, expected factors of at least 1")
    common: dict[str, Any] = dict(
        seconds=args.duration,
        ks=ks,
        seed=args.seed,
        plots=not args.no_plots,
        **runner_args(args),
    )
    if args.talk == "scone":
        res = scone.reproduce(args.out, args.traces, **common)
    else:
        res = zhuge.reproduce(
            args.out,
            args.traces,
            trace_format=args.trace_format,
            seeds=args.seeds,
            wifi_ap=args.wifi_ap,
            gcc_zhuge_queue=args.gcc_zhuge_queue,
            copa=args.copa,
            gcc=args.gcc,
            in_band=args.in_band,
            repair=args.repair,
            paced=not args.unpaced,
            **common,
        )
    print(f"\nwrote {', '.join(str(Path(args.out) / Path(p).name) for p in res['written'])}", file=sys.stderr)
    return 1 if res["failed"] else 0


def cmd_reproduce_satellite(args: argparse.Namespace) -> int:
    from .reproduce import satellite

    if not args.parts or set(args.parts) - set("abcd"):
        raise _native.ScenarioError(f"--parts: got {args.parts!r}, expected some of the letters a, b, c, d")
    seeds = [int(s) for s in _list(args.seeds, "seeds", float)] if args.seeds else None
    ccs = _list(args.cc, "cc") if args.cc else None
    window = _native.window_controllers()
    bad = [c for c in ccs or [] if c not in window]
    if bad:
        raise _native.ScenarioError(f"--cc: got {bad[0]!r}, expected window controllers ({', '.join(window)})")
    sizes = _list(args.sizes, "sizes", float) if args.sizes else None
    if sizes and any(s <= 0 for s in sizes):
        raise _native.ScenarioError(f"--sizes: got {args.sizes!r}, expected positive sizes in MB")
    started = time.perf_counter()
    res = satellite.reproduce(args.out, parts=args.parts, seeds=seeds, ccs=ccs, sizes=sizes, plots=not args.no_plots, **runner_args(args))
    from .results import number

    titles = {
        "targets": "(a) GEO targets: median completion of the second download (s)",
        "seed_comparison": "(b) seed comparison (CUBIC)",
        "lossy": "(c) 1 GB over 10 Mbit/s, 600 ms, uniform loss",
        "wrong": "(d) a saved set from 50 Mbit/s, 650 ms, used elsewhere (10 MB)",
    }
    for key, t in res["tables"].items():
        print(f"\n{titles[key]}\n")
        print(t.to_string(index=False, float_format=number))
    names = ", ".join(str(Path(args.out) / Path(p).name) for p in res["written"])
    print(f"\n{time.perf_counter() - started:.0f} s wall; wrote {names}", file=sys.stderr)
    return 1 if res["failed"] else 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from . import sweep

    if args.address and args.backend != "ray":
        raise UserError("--address: only with --backend ray")
    spec = sweep.load(args.spec)
    points = spec.points()
    started = time.perf_counter()
    df = sweep.execute(
        spec,
        points,
        out=args.out,
        jobs=args.jobs,
        backend=args.backend,
        address=args.address,
        progress=False if args.no_progress else None,
        force=args.restart,
    )
    wall = time.perf_counter() - started
    failed = df[df["error"] != ""]
    print(f"{len(df)} runs of {spec.name} ({args.backend}) in {wall:.1f} s, {len(failed)} failed")
    shown = df.drop(columns=["error"]).head(40)
    print(text_table(shown))
    if len(df) > 40:
        print(f"... {len(df) - 40} more rows in {args.out}/summary.csv")
    for e in failed["error"].head(10):
        print(f"failed: {e}", file=sys.stderr)
    print(f"\nwrote {args.out}/summary.csv and {args.out}/runs/", file=sys.stderr)
    return 1 if len(failed) else 0


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
        except USER_ERRORS as e:
            print(f"lowlat: error: {describe(e)}", file=sys.stderr)
            failed += 1
            continue
        print(f"{f}: ok ({info['name']})")
        for w in info["warnings"]:
            print(f"  warning: {w}")
    return 2 if failed else 0


def cmd_bench(args: argparse.Namespace) -> int:
    if args.relay or args.relay_only:
        bench_relay_print(args.json)
        if args.relay_only:
            return 0
    rates = numbers(args.rates, "--rates", "Mbit/s above 0, at most 10000000 (10 Tbit/s)", above=0, maximum=1e7)
    tcp = choices(args.tcp, "--tcp", _native.window_controllers()) if args.tcp.strip() else []
    rmcat = choices(args.rmcat_cc, "--rmcat-cc", _native.controllers()) if args.rmcat_cc.strip() else []
    if args.gym_steps < 0:
        raise UserError(f"--gym-steps: got {args.gym_steps}, expected a whole number of at least 0")
    cases: list[dict[str, Any]] = []
    flows = ["cbr", *(["cbr-l4s"] if args.ecn else []), *tcp]
    if not args.json:
        print(f"method: {BENCH_METHOD.format(n=args.repeat)}", flush=True)
    for flow, mbps in [(f, r) for f in flows for r in rates]:
        runs = _bench_row(int(mbps * 1e6), args.duration, flow.strip(), args.repeat)
        name, wall, events, sim_s, delivered, _ = runs[0]
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        cases.append(
            {
                "case": name,
                "bottleneck_mbps": mbps,
                "sim_s": sim_s,
                "wall_s": wall,
                "wall_median_s": statistics.median(r[1] for r in runs),
                "cpu_s": min(r[5] for r in runs),
                "runs": len(runs),
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
                f"{c['case']:<26} wall {c['wall_s']:7.3f} s (median {c['wall_median_s']:.3f})  events {c['events']:>10}  "
                f"{c['events_per_s'] / 1e6:6.2f} M events/s  {c['sim_s_per_wall_s']:8.1f} sim s/s  "
                f"{c['delivered_per_s'] / 1e6:6.2f} M delivered pkt/s  peak RSS {c['peak_rss_mib']:.0f} MiB",
                flush=True,
            )
    # RMCAT case 5.1 (100 s), one controller per run: the figure a sweep of the matrix scales with.
    for cc in rmcat:
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
    if args.compare_ns3:
        _compare_ns3(cases, args)
    if not args.no_satellite:
        cases.append(_bench_satellite(args.json))
    if args.gym_steps > 0:
        try:
            from .gym import steps_per_second
        except ImportError:
            print("gym: skipped (gymnasium is not installed: pip install 'lowlat[gym]')", file=sys.stderr)
        else:
            c = steps_per_second(args.gym_steps, 50.0)
            cases.append(c)
            if not args.json:
                print(
                    f"{c['case']:<26} {c['steps']} steps in {c['wall_s']:.3f} s  {c['steps_per_s']:9.0f} steps/s  "
                    f"{c['sim_s_per_wall_s']:8.0f} sim s/s (one core)",
                    flush=True,
                )
    if args.json:
        print(json.dumps({"lowlat_version": _native.version(), "cases": cases}, indent=2))
    else:
        if not args.compare_ns3:
            print("compare with ns-3 on this machine: lowlat bench --compare-ns3 (needs pip install 'lowlat[bench]')")
    return 0


#: ns-3 rows faster than this (seconds, its first run) are run --repeat times, the best counting.
NS3_REPEAT_BELOW_S = 10.0
#: How the dumbbell rows are timed (printed with them, and in the README's benchmark paragraph).
BENCH_METHOD = (
    "each dumbbell row runs once untimed (warm-up: the process's first runs pay for page faults and "
    "a cold cache), then {n} timed runs; the best (shortest) counts, as interference from other "
    "processes only ever adds time; the median is shown beside it. ns-3 (--compare-ns3) runs each "
    "row once in a child process, and a row that took under "
    + f"{NS3_REPEAT_BELOW_S:.0f}"
    + " s runs {n} times there, the best counting; lowlat's row is then timed {n} times more, so both "
    "sides have runs from the same minutes, and the best of all its runs counts; ratio = ns-3's best / "
    "lowlat's best wall time "
    "(the CPU-time ratio beside it is the fairer one on a busy machine)."
)


def _bench_row(bps: int, duration: float, flow: str, repeat: int) -> list[tuple[str, float, int, float, int, float]]:
    """One dumbbell row timed as :data:`BENCH_METHOD` says: the timed runs, best (shortest) first,
    each ``(name, wall_s, events, sim_s, delivered, cpu_s)`` (``cpu_s``: this thread's CPU time
    for the whole call, which a busy machine inflates less than the wall time)."""
    _native.bench_dumbbell(bps, duration, flow)  # warm-up, not timed
    runs = []
    for _ in range(repeat):
        cpu = time.thread_time()
        r = _native.bench_dumbbell(bps, duration, flow)
        runs.append((*r, time.thread_time() - cpu))
    return sorted(runs, key=lambda r: r[1])


def _compare_ns3(cases: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """Runs the dumbbell rows that have an ns-3 counterpart in ns-3 and records the ratios."""
    from . import ns3bench

    if not ns3bench.available():
        print("ns-3 comparison skipped: the ns3 package is not installed (pip install 'lowlat[bench]')", file=sys.stderr)
        return
    rows = [c for c in cases if c["case"].startswith("bench-dumbbell-")]
    flow_of = {c["case"]: c["case"].split("-")[2] for c in rows}
    rows = [c for c in rows if flow_of[c["case"]] in ns3bench.FLOWS]
    if not rows:
        print("ns-3 comparison skipped: no CBR or CUBIC row to compare (--tcp without cubic?)", file=sys.stderr)
        return
    if not args.json:
        print(f"ns-3: running {len(rows)} rows in ns-3 (a child process; its start-up takes seconds)...", flush=True)
    results = []
    for c in rows:
        try:
            results += ns3bench.run_cases(
                [(c["bottleneck_mbps"], flow_of[c["case"]])], args.duration, args.repeat, NS3_REPEAT_BELOW_S
            )
        except RuntimeError as e:
            raise UserError(f"--compare-ns3: {e}") from e
        # lowlat's row is timed again right after ns-3's, so both sides have runs from the same
        # period: this machine's speed can drift over minutes, and lowlat's first runs were taken
        # before ns-3 started. The best of all lowlat's runs counts, as the best of ns-3's does.
        again = _bench_row(int(c["bottleneck_mbps"] * 1e6), args.duration, flow_of[c["case"]], args.repeat)
        c["runs_after_ns3"] = len(again)
        c["runs"] += len(again)
        c["cpu_s"] = min(c["cpu_s"], min(r[5] for r in again))
        if again[0][1] < c["wall_s"]:
            wall = c["wall_s"] = again[0][1]
            c["events_per_s"] = c["events"] / wall
            c["sim_s_per_wall_s"] = c["sim_s"] / wall
            c["delivered_per_s"] = c["delivered_packets"] / wall
    for c, n in zip(rows, results):
        c["ns3_wall_s"] = n["wall_s"]
        c["ns3_runs"] = n["runs"]
        c["ns3_delivered_packets"] = n["delivered_packets"]
        c["ns3_queue_discs"] = n["queue_discs"]
        c["ns3_ratio"] = n["wall_s"] / c["wall_s"]
        c["ns3_cpu_s"] = n["cpu_s"]
        c["ns3_cpu_ratio"] = n["cpu_s"] / c["cpu_s"]
        if not args.json:
            print(
                f"{c['case']:<26} lowlat {c['wall_s']:8.3f} s (best of {c['runs']})  ns-3 {n['wall_s']:8.3f} s "
                f"(best of {n['runs']})  lowlat is {c['ns3_ratio']:6.1f}x faster  (CPU time: {c['cpu_s']:.3f} s vs "
                f"{n['cpu_s']:.3f} s, {c['ns3_cpu_ratio']:.1f}x; delivered: lowlat {c['delivered_packets']}, "
                f"ns-3 {n['delivered_packets']})",
                flush=True,
            )


def _bench_satellite(quiet: bool) -> dict[str, Any]:
    """The 1 GB download of `reproduce satellite`'s lossy table (loss 0), timed."""
    from .reproduce.satellite import lossy_scenario

    r = run(lossy_scenario(0.0, "cubic", 1), progress=False)
    s = r.summary
    f = s["flows"][0]
    done = f["connections"][0]["completion_s"]
    c = {
        "case": "satellite-1GB-10M/cubic",
        "sim_s": s["sim_duration_s"],
        "wall_s": s["wall_s"],
        "events": s["events"],
        "events_per_s": s["events"] / s["wall_s"],
        "delivered_packets": f["packets_received"],
        "delivered_per_s": f["packets_received"] / s["wall_s"],
        "completion_s": done,
    }
    if not quiet:
        print(
            f"{c['case']:<26} wall {c['wall_s']:7.3f} s  events {c['events']:>10}  "
            f"{c['events_per_s'] / 1e6:6.2f} M events/s  {c['delivered_packets']} packets, "
            f"download done at {done:.0f} s simulated",
            flush=True,
        )
    return c


# --- emulator (issue 16) ---------------------------------------------------------------------


def add_emulate_parser(sub: Any) -> None:
    p = sub.add_parser(
        "emulate",
        help="relay real UDP datagrams through a scenario's links on the wall clock",
        description="Datagrams reaching --listen cross the scenario's forward path (access, bottleneck "
        "with its queue/trace/loss/jitter, egress) and leave towards --forward; answers from --forward "
        "cross the reverse path back. Each source address is a client with its own server-side socket: the "
        "k-th client crosses the k-th flow's access/egress links (round robin beyond; --flow pins them all to "
        "one flow), all share the bottleneck. Network assistance (bottleneck.assist) runs on the real packets: "
        "zhuge (RTP in-band, or bulk flows out-of-band), fastack (bulk flows), scone / scone-rtc (RTP). Runs for the scenario's duration "
        "(or --duration), Ctrl-C ends it early; prints the table and with --out writes summary.json "
        "(plus a `relay` object: malformed, unexpected, overflow counts and the timer error) and the "
        "series, as `lowlat run` does, measured on the real packets. Loopback or your own hosts only.",
    )
    p.add_argument("scenario", help="a scenario file or a catalog name")
    p.add_argument("--listen", required=True, metavar="IP:PORT", help="where clients send")
    p.add_argument("--forward", required=True, metavar="IP:PORT", help="where their datagrams go (the server)")
    p.add_argument("--duration", type=float, metavar="S", help="seconds to run (default: the scenario's duration)")
    p.add_argument("--flow", metavar="ID", help="the flow whose access/egress links every client crosses (default: the k-th client the k-th flow)")
    p.add_argument("--max-clients", type=int, default=64, metavar="N", help="datagrams from more source addresses are refused (default 64)")
    p.add_argument("--pcap", metavar="FILE", help="write every forwarded datagram (with IPv4 or IPv6 and UDP headers) to FILE")
    p.add_argument("--max-datagram", type=int, default=65_507, metavar="BYTES", help="larger datagrams are malformed (default 65507)")
    p.add_argument("--overhead", type=int, default=0, metavar="BYTES", help="bytes added to each datagram on the links (28: IPv4+UDP headers; default 0)")
    p.add_argument("--out", metavar="DIR", help="write summary.json, series and plots to DIR")
    p.add_argument("--no-plots", action="store_true", help="with --out: skip the PNG plots")
    p.add_argument("--json", action="store_true", help="print summary.json instead of the table")

    for side in ("send", "receive"):
        p = sub.add_parser(
            side,
            help=f"{side} a scenario's rtp-video flow as real RTP (lowlat's controllers, real transport-cc / RFC 8888) or its bulk flow over lowlat's transport",
            description="The simulator's endpoints on real sockets: `lowlat receive` listens and answers "
            "(an rtp-video flow: with its feedback_format; a bulk flow: with ACK packets); `lowlat send` sends the "
            "flow (video: source model, pacer, controller; bulk: lowlat's transport with the flow's window "
            "controller, QUIC-shaped packets) and reads the feedback on its own socket. Put `lowlat emulate` "
            "between them to cross the scenario's links. Prints a JSON report (receiver: frame delay, fps, "
            "one-way delay, loss; sender: rate per bin, RTT); --out DIR writes summary.json (the report as "
            "`endpoint`) and the flow series as `lowlat run --out` does. Sender and receiver on one host "
            "(delays use the sender's clock).",
        )
        p.add_argument("scenario", help="a scenario file or a catalog name (its first rtp-video or bulk flow, or --flow)")
        if side == "send":
            p.add_argument("--to", required=True, metavar="IP:PORT", help="the receiver (or the relay's --listen)")
            p.add_argument("--bind", default="0.0.0.0:0", metavar="IP:PORT", help="the local address (default any)")
            p.add_argument("--cc", choices=_native.controllers(), help="override the flow's controller")
        else:
            p.add_argument("--listen", required=True, metavar="IP:PORT", help="where the media arrives")
        p.add_argument("--flow", metavar="ID", help="the rtp-video or bulk flow (default: the first rtp-video flow; a bulk flow when it is the first flow)")
        p.add_argument("--duration", type=float, metavar="S", help="seconds (default: the scenario's duration; the receiver counts from the sender's start)")
        p.add_argument("--out", metavar="DIR", help="write summary.json, the flow series and plots to DIR (atomically)")
        p.add_argument("--force", action="store_true", help="with --out: replace a non-empty DIR whole")
        p.add_argument("--no-plots", action="store_true", help="with --out: skip the PNG plots")


def cmd_rtp(args: argparse.Namespace) -> int:
    from .emulate import receive, send

    plots = not args.no_plots
    if args.command == "send":
        summary = send(args.scenario, args.to, bind=args.bind, cc=args.cc, flow=args.flow, duration_s=args.duration,
                       out=args.out, force=args.force, plots=plots)
    else:
        summary = receive(args.scenario, args.listen, flow=args.flow, duration_s=args.duration, out=args.out,
                          force=args.force, plots=plots)
    print(json.dumps(summary, indent=2))
    if args.out:
        print(f"wrote the results to {args.out}", file=sys.stderr)
    return 0


def cmd_emulate(args: argparse.Namespace) -> int:
    from .emulate import emulate

    print(f"lowlat: relaying {args.listen} -> {args.forward} through {args.scenario} (Ctrl-C to stop)", file=sys.stderr, flush=True)
    result = emulate(
        args.scenario, args.listen, args.forward, duration_s=args.duration, flow=args.flow,
        pcap=args.pcap, max_datagram=args.max_datagram, overhead=args.overhead, max_clients=args.max_clients,
    )
    print(json.dumps(result.summary, indent=2) if args.json else result.table())
    if not args.json:
        r = result.summary["relay"]
        print(f"\nrelay: received {r['received']}, forwarded {r['forwarded']}, malformed {r['malformed']}, "
              f"unexpected {r['unexpected']}, overflow {r['overflow']} (forward, reverse); "
              f"{r['clients']} clients, {r['refused']} datagrams refused")
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
    "sweep": cmd_sweep,
    "scenarios": cmd_scenarios,
    "validate": cmd_validate,
    "bench": cmd_bench,
    "reproduce": cmd_reproduce,
    "emulate": cmd_emulate,
    "send": cmd_rtp,
    "receive": cmd_rtp,
}
# Link shell (issue 16).
from .shell import cmd_shell as _cmd_shell  # noqa: E402

COMMANDS["shell"] = _cmd_shell

if __name__ == "__main__":
    sys.exit(main())
