"""The emulator: a scenario's network on the wall clock, forwarding real UDP datagrams.

``lowlat emulate SCENARIO --listen ADDR --forward ADDR`` relays datagrams that reach ``--listen``
through the scenario's forward path (access, bottleneck, egress links) to ``--forward``, and the
answers back through the reverse path to the client that spoke last. The links, queues, traces,
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
) -> Result:
    """Runs the relay until the scenario's duration (or ``duration_s``) ends, or Ctrl-C.

    ``flow``: the scenario flow whose access/egress links the traffic crosses (default: the first);
    ``pcap``: write each forwarded datagram there; ``max_datagram``: larger ones are malformed;
    ``overhead``: bytes added to each datagram's size on the links (28 counts IPv4 + UDP headers).
    Raises :class:`lowlat.ScenarioError` (``EmulatorError``) with a one-line reason if it cannot start.
    """
    if not 1 <= max_datagram <= 65_535:
        raise _native.EmulatorError(f"--max-datagram: got {max_datagram}, expected 1 to 65535 bytes")
    if not 0 <= overhead <= 1_000:
        raise _native.EmulatorError(f"--overhead: got {overhead}, expected 0 to 1000 bytes")
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
    )
    return Result(json.loads(summary_json), flows, links, summary_json=summary_json)


def send(
    scenario: str | Path | Mapping[str, Any],
    to: str,
    *,
    bind: str = "0.0.0.0:0",
    flow: str | None = None,
    duration_s: float | None = None,
    cc: str | None = None,
) -> dict[str, Any]:
    """Sends a scenario's rtp-video flow as real RTP to ``to`` with its controller (or ``cc``) and
    real transport-cc / RFC 8888 feedback read on the same socket; returns the sender's summary
    (controller, rate per bin, RTT stats). Runs for the scenario's duration or ``duration_s``."""
    src = resolve(scenario)
    summary: dict[str, Any] = json.loads(_native.rtp_send(src.text, src.format, src.label, src.base_dir, to, bind, flow, duration_s, cc))
    return summary


def receive(
    scenario: str | Path | Mapping[str, Any],
    listen: str,
    *,
    flow: str | None = None,
    duration_s: float | None = None,
) -> dict[str, Any]:
    """Receives a scenario's rtp-video flow on ``listen``, answering with the flow's feedback format;
    returns the receiver's summary (frame delay stats, fps, one-way delay, loss, rate per bin)."""
    src = resolve(scenario)
    summary: dict[str, Any] = json.loads(_native.rtp_receive(src.text, src.format, src.label, src.base_dir, listen, flow, duration_s))
    return summary


def bench_relay(seconds: float = 2.0, shaped_mbps: float = 100.0) -> dict[str, float]:
    """The relay's added delay, unshaped throughput limit and timer error (``lowlat bench --relay``)."""
    return dict(_native.bench_relay(seconds, int(shaped_mbps * 1e6)))
