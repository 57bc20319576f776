"""Congestion controllers written in Python.

Subclass :class:`Controller`, implement :meth:`Controller.on_feedback` (called with every feedback
report the sender receives: the same per-packet results the Rust controllers get) and
:meth:`Controller.target_bitrate`, and name the class in a scenario (``cc =
"python:my_module:MyController"``) or on the command line (``--cc my_module:MyController``). The
simulator (Rust) calls it per report; the rate it answers is clamped to the flow's ``rmin`` ..
``rmax`` and paced at 1.5x, as the ``fixed`` controller. A controller that raises, or answers
something that is not a finite number of bit/s above 0, stops the run with a
:class:`ControllerError` naming the flow, the controller and the cause.

A tiny delay-gradient controller (docs/python-controllers.md has it with its results)::

    from lowlat.controller import Controller

    class DelayGradient(Controller):
        def __init__(self):
            self.rate = 300_000.0
        def on_feedback(self, report):
            if report.delay_gradient() > 0.01:   # delay grows faster than 10 ms per second
                self.rate *= 0.85
            else:
                self.rate += 20_000.0
        def target_bitrate(self):
            return self.rate
"""

from __future__ import annotations

import importlib
import math
import re
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from .userinput import UserError


class ControllerError(UserError):
    """A Python controller failed (raised, or answered a rate that is not a finite bit/s > 0)."""


class PacketResult(NamedTuple):
    """The fate of one packet: its transport-wide sequence number, when it left the sender,
    when it arrived (receiver clock; ``None`` if reported lost), its size and ECN bits (3 = CE)."""

    seq: int
    send_time_s: float
    arrival_time_s: float | None
    size_bytes: int
    ecn: int


@dataclass(frozen=True)
class FeedbackReport:
    """One feedback report, as :class:`lowlat_cc::FeedbackReport` (transport-cc or RFC 8888):
    ``now_s`` when it reached the sender, ``report_time_s`` when the receiver built it, and its
    packets in sequence order (columns as lists)."""

    now_s: float
    report_time_s: float
    seq: list[int]
    send_time_s: list[float]
    arrival_time_s: list[float]  # NaN for a lost packet
    size_bytes: list[int]
    ecn: list[int]

    @property
    def packets(self) -> list[PacketResult]:
        """The packets as records."""
        return [
            PacketResult(q, s, None if math.isnan(a) else a, b, e)
            for q, s, a, b, e in zip(self.seq, self.send_time_s, self.arrival_time_s, self.size_bytes, self.ecn)
        ]

    def received(self) -> list[tuple[float, float, int]]:
        """``(send_time_s, arrival_time_s, size_bytes)`` of the packets that arrived."""
        return [(s, a, b) for s, a, b in zip(self.send_time_s, self.arrival_time_s, self.size_bytes) if a == a]

    def lost(self) -> int:
        """Packets reported lost."""
        return sum(1 for a in self.arrival_time_s if a != a)

    def rtt_s(self) -> float | None:
        """A round-trip sample from the newest received packet (time since it was sent, minus
        the time it waited at the receiver before the report left), as the Rust controllers
        compute it."""
        for s, a in zip(reversed(self.send_time_s), reversed(self.arrival_time_s)):
            if a == a:
                return (self.now_s - s) - (self.report_time_s - a)
        return None

    def delay_gradient(self) -> float:
        """Least-squares slope of one-way delay against arrival time (seconds per second) over
        the report's received packets; 0 with fewer than two."""
        pts = [(a, a - s) for s, a, _ in self.received()]
        if len(pts) < 2:
            return 0.0
        n = len(pts)
        mt = sum(t for t, _ in pts) / n
        md = sum(d for _, d in pts) / n
        den = sum((t - mt) ** 2 for t, _ in pts)
        return sum((t - mt) * (d - md) for t, d in pts) / den if den > 0 else 0.0


class Controller:
    """Base class of a Python congestion controller; the constructor takes no arguments."""

    def on_feedback(self, report: FeedbackReport) -> None:
        """A feedback report arrived (at ``report.now_s``)."""
        raise NotImplementedError

    def target_bitrate(self) -> float:
        """The rate (bit/s) the encoder should produce from now on."""
        raise NotImplementedError


#: How the simulator prints the adapter's exception type (removed: the message says it all).
_RAISED = re.compile(r"[\w.]*_Raised: ")


class _Raised(Exception):
    """The user's controller raised; its message says what and where (the simulator keeps it)."""


def _where(e: BaseException) -> str:
    frames = traceback.extract_tb(e.__traceback__)
    if not frames:
        return ""
    f = frames[-1]
    return f" (at {Path(f.filename).name}:{f.lineno} in {f.name})"


class Adapter:
    """What the simulator calls per report: builds the report, calls the user's controller,
    answers its target."""

    def __init__(self, controller: Any) -> None:
        self.controller = controller

    def __call__(
        self,
        now_s: float,
        report_time_s: float,
        seq: list[int],
        send: list[float],
        arrival: list[float],
        size: list[int],
        ecn: list[int],
    ) -> Any:
        report = FeedbackReport(now_s, report_time_s, seq, send, arrival, size, ecn)
        try:
            self.controller.on_feedback(report)
            return self.controller.target_bitrate()
        except Exception as e:  # noqa: BLE001 - the run stops with this message, naming the flow
            raise _Raised(f"{type(e).__name__}: {e}{_where(e)}") from None


def load(ref: str) -> type:
    """The class ``ref`` names (``module:Class`` or ``python:module:Class``); the current folder
    is searched first, as ``python -m`` does. Raises :class:`UserError` with one line."""
    spec = ref.removeprefix("python:")
    module_name, _, class_name = spec.partition(":")
    if not module_name or not class_name:
        raise UserError(f"cc: got {ref!r}, expected module:Class (a Python controller)")
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # noqa: BLE001 - an import error of the user's module is theirs
        raise UserError(f"cc: cannot import {module_name!r} for {ref!r}: {type(e).__name__}: {e}") from None
    cls = getattr(module, class_name, None)
    if not isinstance(cls, type):
        raise UserError(f"cc: module {module_name!r} has no class {class_name!r}")
    for method in ("on_feedback", "target_bitrate"):
        if not callable(getattr(cls, method, None)):
            raise UserError(f"cc: {ref!r} has no method {method}(); subclass lowlat.controller.Controller")
    return cls


def attach(sim: Any) -> None:
    """Instantiates and installs the Python controller of every flow that names one."""
    for flow, cc in sim.external_controllers():
        if cc.startswith("python:"):
            cls = load(cc)
            try:
                instance = cls()
            except Exception as e:  # noqa: BLE001
                raise ControllerError(f"flow {flow} ({cc}): the constructor raised {type(e).__name__}: {e}{_where(e)}") from None
            sim.set_controller(flow, Adapter(instance))


def check(sim: Any, label: str) -> None:
    """Raises :class:`ControllerError` if a Python controller of ``sim`` failed."""
    err = sim.controller_error()
    if err is not None:
        cause = _RAISED.sub("", err)
        raise ControllerError(f"{label}: {cause}")
