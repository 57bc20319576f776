"""The emulator: a scenario's network on the wall clock, forwarding real UDP datagrams.

``lowlat emulate SCENARIO --listen ADDR --forward ADDR`` relays datagrams that reach ``--listen``
through the scenario's forward path (access, bottleneck, egress links) to ``--forward``, and the
answers back through the reverse path. Each source address is a client with its own server-side
socket (the server's answers find their way back, as through a NAT): the ``k``-th client crosses
the ``k``-th scenario flow's access/egress links (round robin beyond; ``--flow`` pins every client
to one flow); all share the bottleneck and reverse link. The links, queues, traces,
jitter and loss are the simulator's own (crate ``lowlat-emu``); the run writes the same
``summary.json`` and series as ``lowlat run``, measured on the real packets, with a ``relay``
object of counters (malformed, unexpected, overflow) and the timer error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from . import _native
from .catalog import resolve
from .outdir import check_target, results_dir
from .results import Result


def emulate(
    scenario: str | Path | Mapping[str, Any],
    listen: str,
    forward: str,
    *,
    duration_s: float | None = None,
    flow: str | None = None,
    pcap: str | Path | None = None,
    max_datagram: int = 65_507,
    overhead: int = 0,
    max_clients: int = 64,
) -> Result:
    """Runs the relay until the scenario's duration (or ``duration_s``) ends, or Ctrl-C.

    ``flow``: the scenario flow whose access/egress links the traffic crosses (default: the first);
    ``pcap``: write each forwarded datagram there; ``max_datagram``: larger ones are malformed;
    ``overhead``: bytes added to each datagram's size on the links (28 counts IPv4 + UDP headers);
    ``max_clients``: datagrams from further source addresses are refused.
    Raises :class:`lowlat.ScenarioError` (``EmulatorError``) with a one-line reason if it cannot start.
    """
    if not 1 <= max_datagram <= 65_535:
        raise _native.EmulatorError(f"--max-datagram: got {max_datagram}, expected 1 to 65535 bytes")
    if not 0 <= overhead <= 1_000:
        raise _native.EmulatorError(f"--overhead: got {overhead}, expected 0 to 1000 bytes")
    if not 1 <= max_clients <= 4_194_304:
        raise _native.EmulatorError(f"--max-clients: got {max_clients}, expected 1 to 4194304")
    src = resolve(scenario)
    summary_json, flows, links = _native.emulate(
        src.text,
        src.format,
        src.label,
        src.base_dir,
        listen,
        forward,
        duration_s,
        flow,
        str(pcap) if pcap is not None else None,
        max_datagram,
        overhead,
        max_clients,
    )
    return Result(json.loads(summary_json), flows, links, summary_json=summary_json)


def _endpoint(out: tuple[str, Any, Any], out_dir: str | Path | None, force: bool, plots: bool) -> dict[str, Any]:
    """The endpoint's own report; with ``out_dir``, its results folder written atomically."""
    summary_json, flows, links = out
    result = Result(json.loads(summary_json), flows, links, summary_json=summary_json)
    if out_dir is not None:
        with results_dir(out_dir, force=force) as tmp:
            result.write(tmp, plots=plots)
    endpoint: dict[str, Any] = result.summary["endpoint"]
    return endpoint


def send(
    scenario: str | Path | Mapping[str, Any],
    to: str,
    *,
    bind: str = "0.0.0.0:0",
    flow: str | None = None,
    duration_s: float | None = None,
    cc: str | None = None,
    out: str | Path | None = None,
    force: bool = False,
    plots: bool = True,
) -> dict[str, Any]:
    """Sends a scenario's flow to ``to``: an rtp-video flow as real RTP with its controller (or
    ``cc``) and real transport-cc / RFC 8888 feedback, a bulk flow over lowlat's transport
    (QUIC-shaped packets and ACKs); the feedback is read on the same socket. Runs for the
    scenario's duration or ``duration_s``. Returns the sender's report (controller, rate per bin,
    RTT); with ``out``, also writes the results contract there (``summary.json`` with the report as
    ``endpoint``, the flow series, plots), replacing a non-empty folder only with ``force``."""
    src = resolve(scenario)
    if out is not None:
        check_target(out, force=force)
    return _endpoint(_native.rtp_send(src.text, src.format, src.label, src.base_dir, to, bind, flow, duration_s, cc), out, force, plots)


def receive(
    scenario: str | Path | Mapping[str, Any],
    listen: str,
    *,
    flow: str | None = None,
    duration_s: float | None = None,
    out: str | Path | None = None,
    force: bool = False,
    plots: bool = True,
) -> dict[str, Any]:
    """Receives a scenario's rtp-video flow (answering with its feedback format) or bulk flow
    (answering with ACKs) on ``listen``; returns the receiver's report (frame delay stats, fps,
    one-way delay, loss, rate per bin); ``out`` as for :func:`send`."""
    src = resolve(scenario)
    if out is not None:
        check_target(out, force=force)
    return _endpoint(_native.rtp_receive(src.text, src.format, src.label, src.base_dir, listen, flow, duration_s), out, force, plots)


def bench_relay(seconds: float = 2.0, shaped_mbps: float = 100.0) -> dict[str, float]:
    """The relay's added delay, unshaped throughput limit and timer error (``lowlat bench --relay``)."""
    return dict(_native.bench_relay(seconds, int(shaped_mbps * 1e6)))
