"""Running scenarios from Python."""

from __future__ import annotations

import functools
import json
import os
import operator
import pickle
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar

from . import _native, controller
from .catalog import ScenarioSource, resolve
from .results import Result

T = TypeVar("T")

#: Runs that take longer than this many wall seconds get a progress bar.
PROGRESS_AFTER_S = 2.0
#: Wall time of one slice of :func:`run` below which the next slice is twice as long, and above
#: which it is half as long (seconds).
SLICE_MIN_S = 0.02
SLICE_MAX_S = 0.1


#: The per-sample tables a run builds unless :func:`run`'s ``tables`` leaves them out.
SAMPLE_TABLES = ("predictions", "sender_rtt")

#: Environment variable with the default memory budget of a run (a size such as ``"16 GB"``).
MEMORY_BUDGET_ENV = "LOWLAT_MEMORY_BUDGET"


def _budget(memory_budget: str | None) -> str | None:
    return memory_budget if memory_budget is not None else os.environ.get(MEMORY_BUDGET_ENV) or None


def validate(scenario: str | Path | Mapping[str, Any] | ScenarioSource, *, memory_budget: str | None = None) -> dict[str, Any]:
    """Checks a scenario without running it, the run's limits included (see :func:`run`).

    Returns ``{"name", "description", "warnings"}``; raises :class:`lowlat.ScenarioError` naming the
    file, the key and what was expected.
    """
    src = resolve(scenario)
    name, description, warnings = _native.validate(
        src.text, src.format, src.label, src.base_dir, _budget(memory_budget)
    )
    return {"name": name, "description": description, "warnings": list(warnings)}


def _write_atomically(path: Path, data: bytes) -> None:
    """Writes ``path`` through a temporary file beside it: never a half-written file."""
    tmp = path.with_name(f".{path.name}.lowlat-partial-{os.getpid()}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _seed(seed: Any) -> int:
    try:
        value = operator.index(seed)
    except TypeError:
        value = -1
    if not 0 <= value < 2**64:
        raise _native.ScenarioError(f"seed: got {seed!r}, expected an integer from 0 to 2^64-1")
    return value


def run(
    scenario: str | Path | Mapping[str, Any] | ScenarioSource,
    *,
    seed: int | None = None,
    cc: str | None = None,
    queue: str | None = None,
    rtt_s: float | None = None,
    jitter_s: float | None = None,
    progress: bool | None = None,
    memory_budget: str | None = None,
    pcap: str | Path | None = None,
    tables: Iterable[str] | None = None,
    summary_only: bool = False,
    link_stats: bool = True,
    prediction_sample: int | None = None,
) -> Result:
    """Runs a scenario (a path, a catalog name, or a dict in the scenario format) to its end.

    ``seed`` overrides the scenario's seed; ``cc`` the controller of every rtp-video flow (a
    name, or ``module:Class`` for a Python controller, see :mod:`lowlat.controller`; a failing
    Python controller raises :class:`lowlat.controller.ControllerError` naming the run and flow);
    ``queue`` the bottleneck queues (``"droptail"``: 300 ms, ``"codel"``: RFC 8289 defaults);
    ``rtt_s`` sets the minimum RTT (half of it one way on the bottleneck and on the reverse link)
    and ``jitter_s`` the jitter's standard deviation on both, as the RMCAT matrix varies them.
    ``progress``: ``None`` shows a bar on a terminal once a run has taken more than a few
    seconds, ``True`` always, ``False`` never.

    Before it starts, the run's memory is estimated (bins per series x series, flows, links,
    queues) and a run that would need more than ``memory_budget`` (a size such as ``"16 GB"``;
    default ``$LOWLAT_MEMORY_BUDGET`` or 4 GiB) is refused with the estimate, as is one that would
    take more than about 2e10 events.

    ``pcap``: a file to write every packet the endpoints send to, as Wireshark reads it (RTP with
    the transport-wide extension on UDP 5004 + 2k, its RTCP feedback on 5005 + 2k, transport
    datagrams on 6000 + k, CBR/Poisson on 7000 + k; see ``lowlat_sim::capture``).

    ``tables``: which of the per-sample tables (:data:`SAMPLE_TABLES`: ``"predictions"``,
    ``"sender_rtt"``, one row per packet or ACK) to build; default all. A run that does not read
    one saves building it (millions of rows at 100 Mbit/s), and the run is told before it starts
    (without ``"predictions"`` Zhuge keeps no per-packet log: 40 B a packet); the summary and the
    other tables are the same, and reading a table left out raises an error naming it.

    ``summary_only``: build no table at all, the flow and link series and the frames included
    (what a sweep that keeps summary metrics reads; about a tenth of an RMCAT run's time went to
    the tables); ``summary`` and ``summary_json`` are the same, reading any table raises.

    ``prediction_sample``: with ``"predictions"``, Zhuge keeps a uniform random sample of at most
    that many predictions (drawn as they come, from its own random stream) instead of every one
    (1.5 million in a 300 s run at 60 Mbit/s): the table has those rows, in their order; the
    summary's prediction figures still count every one.

    ``link_stats=False``: the links keep no statistics (the per-packet sojourn and transmission
    counts, about 4 % of a fast single-flow run): the summary's ``links`` is empty, it says
    ``"link_stats": false``, and
    ``Result.links``, ``Result.link_series`` and ``Result.table`` raise. The flows' results are
    the same, bit for bit.
    """
    if cc is not None and ":" in cc and not cc.startswith("python:"):
        cc = f"python:{cc}"  # module:Class, a Python controller
    keep, series = _tables_kept(tables, summary_only)
    if prediction_sample is not None:
        if isinstance(prediction_sample, bool) or not isinstance(prediction_sample, int) or prediction_sample < 0:
            raise _native.ScenarioError(f"prediction_sample: got {prediction_sample!r}, expected a count of predictions (an integer >= 0)")
        if not keep["predictions"]:
            raise _native.ScenarioError("prediction_sample: this run builds no predictions table (add \"predictions\" to tables)")
    src, sim = _simulation(scenario, seed, cc, queue, rtt_s, jitter_s, memory_budget, keep, series, link_stats, prediction_sample)
    if pcap is not None:
        if str(pcap).strip() == "" or Path(pcap).is_dir():
            raise _native.ScenarioError(f"pcap: got {str(pcap)!r}, expected a file name")
        sim.capture_pcap()
    _advance(sim, sim.end_s(), progress, src.label if cc is None else f"{src.label} [{cc}]", f"{sim.name()} [{cc}]" if cc else sim.name())
    if pcap is not None:
        _write_atomically(Path(pcap), sim.take_pcap() or b"")
    return _finish(sim, keep, series)


def _tables_kept(tables: Iterable[str] | None, summary_only: bool) -> tuple[dict[str, bool], bool]:
    """Which per-sample tables a run builds (see :func:`run`'s ``tables``), and whether it builds
    the series and frames."""
    wanted = SAMPLE_TABLES if tables is None else tuple(tables)
    unknown = sorted(set(wanted) - set(SAMPLE_TABLES))
    if unknown:
        raise _native.ScenarioError(f"tables: got {unknown[0]!r}, expected some of {', '.join(SAMPLE_TABLES)}")
    return {name: name in wanted and not summary_only for name in SAMPLE_TABLES}, not summary_only


def _simulation(
    scenario: str | Path | Mapping[str, Any] | ScenarioSource,
    seed: int | None,
    cc: str | None,
    queue: str | None,
    rtt_s: float | None,
    jitter_s: float | None,
    memory_budget: str | None,
    keep: Mapping[str, bool],
    series: bool,
    link_stats: bool = True,
    prediction_sample: int | None = None,
) -> tuple[ScenarioSource, Any]:
    """A scenario's simulation, ready to run (see :func:`run` for the arguments)."""
    if cc is not None and cc not in _native.controllers() and cc != "external" and not cc.startswith("python:"):
        raise _native.ScenarioError(
            f"cc: got {cc!r}, expected one of {', '.join(_native.controllers())} or module:Class (a Python controller)"
        )
    if queue is not None and queue not in _native.queue_variants():
        raise _native.ScenarioError(f"queue: got {queue!r}, expected one of {', '.join(_native.queue_variants())}")
    if seed is not None:
        seed = _seed(seed)
    src = resolve(scenario)
    sim = _native.Simulation(
        src.text, src.format, src.label, src.base_dir, seed, cc, queue, rtt_s, jitter_s, _budget(memory_budget)
    )
    # Told before the run: what no table will show is not recorded (Zhuge's per-packet log).
    sim.plan_tables(**keep, series=series, frames=series, links=link_stats, prediction_sample=prediction_sample)
    controller.attach(sim)
    return src, sim


def _advance(sim: Any, until: float, progress: bool | None, label: str, desc: str) -> None:
    """Runs ``sim`` up to ``until`` simulated seconds, in slices so the bar moves and Ctrl-C is
    honoured: from 1/500 of the run, doubled while a slice takes under 20 ms of wall time (a
    short run then costs a few calls instead of 500) and halved above 100 ms. Where the slices
    end changes no result."""
    end = sim.end_s()
    t = sim.now_s()
    step = max(end / 500.0, 1e-3)
    started = time.perf_counter()
    bar = None
    show = sys.stderr.isatty() if progress is None else progress
    try:
        while t < until:
            t = min(t + step, until)
            slice_started = time.perf_counter()
            sim.advance(t)
            took = time.perf_counter() - slice_started
            if took < SLICE_MIN_S:
                step = min(step * 2.0, end)
            elif took > SLICE_MAX_S:
                step = max(step / 2.0, 1e-3)
            controller.check(sim, label)
            if bar is None and show and (progress or time.perf_counter() - started > PROGRESS_AFTER_S):
                from tqdm import tqdm

                tqdm.monitor_interval = 0  # no second thread (see the sweep bar in sweep.py)
                bar = tqdm(total=round(end, 3), unit="sim s", desc=desc, leave=False)
                # The bar appears late; its clock starts when the run did.
                bar.start_t -= time.perf_counter() - started
            if bar is not None:
                bar.update(round(t, 3) - bar.n)
    finally:
        if bar is not None:
            bar.close()


def _finish(sim: Any, keep: Mapping[str, bool], series: bool) -> Result:
    """The results of ``sim`` so far."""
    summary_json, flows, links, predictions, frames, sender_rtt = sim.finish(**keep, series=series, frames=series)
    return Result(
        json.loads(summary_json),
        flows,
        links,
        summary_json=summary_json,
        predictions=predictions,
        frames=frames,
        sender_rtt=sender_rtt,
        left_out=[name for name, kept in keep.items() if not kept]
        + ([] if series else ["flow_series", "link_series", "frames"]),
    )


#: How long before its capacity departs from the shared run's a branch of :func:`run_branches`
#: leaves it (simulated seconds): room for the transmissions a bottleneck times ahead.
BRANCH_MARGIN_S = 1.0


def run_branches(
    base: str | Path | Mapping[str, Any] | ScenarioSource,
    branches: Sequence[tuple[str | Path | Mapping[str, Any] | ScenarioSource, float | None]],
    each: Callable[[int, Result], T],
    *,
    tables: Iterable[str] | None = None,
    link_stats: bool = True,
) -> list[T | Exception]:
    """Runs scenarios that differ from ``base`` only in the bottleneck's capacity from some
    instant on (a capacity drop at several instants), sharing the run up to where each departs.

    ``branches``: ``(scenario, until_s)`` pairs; each branch runs to ``until_s`` simulated seconds
    (``None``: its end) and its results there (as :func:`run` would give them had it been
    stopped then; ``tables`` and ``link_stats`` as for :func:`run`) go to ``each`` with the branch's index, whose
    answer is the branch's entry in the list returned, in the branches' order. A branch that
    fails, or whose ``each`` raises, has the exception as its entry; the others go on.

    ``base`` runs once, up to :data:`BRANCH_MARGIN_S` before the next branch departs; each
    branch continues from a copy of it (a forked process) with its own capacity
    (``Simulation.switch_bottleneck``), so its results are those of a run of its own scenario,
    bit for bit. A branch the shared run cannot hand over (it differs in more than the
    bottleneck's capacity, the bottleneck has already timed a transmission past the change, or
    this process cannot fork safely: no fork on the platform, other threads, a Ray worker) runs
    on its own from the start: the same results, the time not saved."""
    keep, series = _tables_kept(tables, False)
    out: list[T | Exception | None] = [None] * len(branches)
    alone: list[int] = []
    shared: list[tuple[float, int, ScenarioSource]] = []
    try:
        src, sim = _simulation(base, None, None, None, None, None, None, keep, series, link_stats)
    except Exception as e:  # noqa: BLE001 - every branch gets the base's failure
        return [e for _ in branches]
    for i, (scenario, until) in enumerate(branches):
        try:
            b = resolve(scenario)
            at = sim.bottleneck_departure_s(b.text, b.format, b.label, b.base_dir)
        except Exception:  # noqa: BLE001 - told apart by running it alone
            alone.append(i)
            continue
        # Where it leaves the shared run: before it departs, and no later than where it stops.
        leave = sim.end_s() if at is None else at - BRANCH_MARGIN_S
        shared.append((leave if until is None else min(until, leave), i, b))
    can_fork = _can_fork()
    for leave, i, b in sorted(shared, key=lambda x: (x[0], x[1])):
        until = branches[i][1]
        if not can_fork or leave < sim.now_s():
            alone.append(i)
            continue
        _advance(sim, leave, False, src.label, sim.name())
        got = _in_fork(functools.partial(_branch, sim, b, until, functools.partial(each, i), keep, series))
        if isinstance(got, str) and got == _REFUSED:
            alone.append(i)
        else:
            out[i] = got
    for i in sorted(alone):
        scenario, until = branches[i]
        try:
            _, own = _simulation(scenario, None, None, None, None, None, None, keep, series, link_stats)
            _advance(own, own.end_s() if until is None else until, False, str(scenario), own.name())
            out[i] = each(i, _finish(own, keep, series))
        except Exception as e:  # noqa: BLE001 - the branch's entry
            out[i] = e
    return out  # type: ignore[return-value]


def _can_fork() -> bool:
    """Whether this process may fork a copy of a run: a platform with fork, and no other thread
    that could hold a lock the copy would then wait for (a Python thread, or a Ray worker's)."""
    ray = sys.modules.get("ray")
    in_ray = ray is not None and getattr(ray, "is_initialized", lambda: False)()
    return hasattr(os, "fork") and threading.active_count() == 1 and not in_ray


#: What a forked branch answers when the shared run cannot be handed over.
_REFUSED = "lowlat: the shared run could not take this branch"


def _branch(sim: Any, b: ScenarioSource, until: float | None, each: Callable[[Result], Any], keep: Mapping[str, bool], series: bool) -> Any:
    """In a forked copy of a shared run: switches to branch ``b`` and runs it (see
    :func:`run_branches`)."""
    try:
        sim.switch_bottleneck(b.text, b.format, b.label, b.base_dir)
    except RuntimeError:
        return _REFUSED
    _advance(sim, sim.end_s() if until is None else until, False, b.label, sim.name())
    return each(_finish(sim, keep, series))


def _in_fork(fn: Callable[[], Any]) -> Any:
    """``fn()`` run in a forked child (which changes nothing here); its answer, or the exception
    it raised, comes back pickled."""
    return _fork_start(fn)()


def in_background(fn: Callable[[], T]) -> Callable[[], T | Exception]:
    """Starts ``fn()`` in a forked child (which changes nothing here) and returns a function that
    waits for its answer, or the exception it raised: the caller goes on meanwhile (the
    reproductions draw their figures two at a time). Where this process cannot fork safely (see
    :func:`run_branches`), ``fn`` runs when the answer is asked for."""
    if not _can_fork():

        def inline() -> T | Exception:
            try:
                return fn()
            except Exception as e:  # noqa: BLE001 - returned, as from a child
                return e

        return inline
    return _fork_start(fn)


def _fork_start(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn()`` started in a forked child; the function returned waits for its pickled answer."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer, then leave without running anything of the parent's
        try:
            os.close(r)
            try:
                answer: Any = fn()
            except Exception as e:  # noqa: BLE001 - sent to the parent
                answer = e
            try:
                data = pickle.dumps(answer)
            except Exception as e:  # noqa: BLE001
                data = pickle.dumps(RuntimeError(f"the branch's answer cannot be sent back: {e}"))
            with os.fdopen(w, "wb") as f:
                f.write(data)
        finally:
            os._exit(0)
    os.close(w)

    def wait() -> Any:
        with os.fdopen(r, "rb") as f:
            data = f.read()
        _, status = os.waitpid(pid, 0)
        if not data:
            return RuntimeError(f"the forked child died ({_exit_reason(status)})")
        return pickle.loads(data)

    return wait


def _exit_reason(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"
