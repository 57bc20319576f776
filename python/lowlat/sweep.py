"""Sweeps as data: one runner for every parameter sweep, on local processes or on Ray.

A sweep spec (TOML) names a base scenario, the axes to vary and the metrics to keep::

    name = "gcc-vs-rate"
    base = "rmcat-5.1"                    # a catalog name, a scenario file (relative to the
                                          # spec), or an inline [base] table
    metrics = ["throughput_kbps", "owd_p95_ms", "flows.video.frame_delay_ms.p99"]

    [set]                                 # applied to every run
    duration = "20 s"

    [axes]                                # every combination, the first axis slowest
    cc = ["gcc", "nada", "my_cc:DelayGradient"]
    "bottleneck.delay" = ["10 ms", "50 ms"]
    "flows.video.cc_params.gcc.beta" = [0.85, 0.9]
    seed = [1, 2, 3]

An axis is any scenario key as a dotted path (a list element by index, or a flow/link by its
``id``: ``flows.video.rmax``), or a run option: ``scenario`` (the base itself), ``cc`` (every
rtp-video flow's controller; ``module:Class`` for a Python one), ``queue`` (droptail/codel),
``rtt_ms`` and ``jitter_ms`` (as the RMCAT matrix sets them), ``seed``. A metric is one of
:data:`STANDARD_METRICS` or a dotted path into summary.json.

With an output folder, each finished run is written at once to ``DIR/runs/<id>.json`` (atomically:
a temporary file renamed into place), so a sweep that is killed and started again skips the runs
it has and ends with the same table: ``DIR/summary.csv`` (and ``summary.parquet`` with pyarrow),
one row per run in the spec's order. A run that fails is a row with its ``error`` (naming the
run); the others go on.

A sweep whose runs are not "a scenario and its summary" names a **run function** instead of a
base (``run = "module:function"`` in a spec, or :func:`of_function` from Python): it gets each
point as a dict and returns the row's values; it may add ``"data"``, a dict of name -> DataFrame
kept beside the run (``DIR/runs/<id>.<name>.npz``, read back with :func:`read_data`) for what a
summary row cannot hold (per-packet predictions, a time series). The reproductions
(:mod:`lowlat.reproduce`) run their grids this way, so they resume, record failures and run on Ray
like any sweep.
"""

from __future__ import annotations

import copy
import ctypes
import hashlib
import itertools
import json
import math
import multiprocessing
import os
import signal
import importlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

import numpy as np
import pandas as pd

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]

from .catalog import ScenarioSource, resolve
from .userinput import UserError

#: The standard per-run metrics (over the rtp-video flows and the bottleneck), as the RMCAT suite
#: reports them.
STANDARD_METRICS = [
    "throughput_kbps",
    "utilization",
    "queue_delay_p95_ms",
    "owd_p50_ms",
    "owd_p95_ms",
    "frame_delay_mean_ms",
    "frame_delay_p90_ms",
    "frame_delay_p99_ms",
    "loss_ratio",
    "ratio_rtt_over_200ms",
    "ratio_frame_delay_over_400ms",
    "ratio_fps_below_10",
    "jain_index",
    "cross_throughput_kbps",
    "wall_s",
]
#: Kept when a spec names no metrics: the standard ones but the wall time (which differs from run
#: to run, so the table of a sweep is the same every time).
DEFAULT_METRICS = [m for m in STANDARD_METRICS if m != "wall_s"]
#: Axes that are options of a run rather than scenario keys.
RUN_OPTIONS = ("scenario", "cc", "queue", "rtt_ms", "jitter_ms", "seed")
#: Keys of a sweep spec.
SPEC_KEYS = ("name", "description", "base", "run", "set", "axes", "metrics")
BACKENDS = ("local", "ray")
#: The key of a run function's row that holds its per-run data (name -> DataFrame).
DATA = "data"


def standard_metrics(summary: Mapping[str, Any]) -> dict[str, float]:
    """The standard metrics of a run's summary: sums and means over the video flows, the worst
    frame-delay P99, the bottleneck's utilisation and queue, Jain's index of the video throughputs;
    the TCP cross traffic's throughput (0 in runs without)."""
    video = [f for f in summary["flows"] if f["kind"] == "rtp-video"]
    cross = [f for f in summary["flows"] if f["kind"] in ("bulk", "web")]
    bottleneck = next(link for link in summary["links"] if link["id"] == "bottleneck")

    def mean(values: list[float | None]) -> float:
        xs = [v for v in values if v is not None]
        return sum(xs) / len(xs) if xs else float("nan")

    thr = [f["throughput_kbps"] for f in video]
    jain = (sum(thr) ** 2) / (len(thr) * sum(x * x for x in thr)) if thr and any(thr) else float("nan")
    return {
        "throughput_kbps": sum(thr) if video else float("nan"),
        "utilization": bottleneck["utilization"],
        "queue_delay_p95_ms": bottleneck["queue_delay_ms"]["p95"],
        "owd_p50_ms": mean([f["owd_ms"]["p50"] for f in video]),
        "owd_p95_ms": mean([f["owd_ms"]["p95"] for f in video]),
        "frame_delay_mean_ms": mean([f["frame_delay_ms"]["mean"] for f in video]),
        "frame_delay_p90_ms": mean([f["frame_delay_ms"]["p90"] for f in video]),
        "frame_delay_p99_ms": max((f["frame_delay_ms"]["p99"] or 0.0) for f in video) if video else float("nan"),
        "loss_ratio": mean([f["loss_ratio"] for f in video]),
        "ratio_rtt_over_200ms": mean([f["ratio_rtt_over_200ms"] for f in video]),
        "ratio_frame_delay_over_400ms": mean([f["ratio_frame_delay_over_400ms"] for f in video]),
        "ratio_fps_below_10": mean([f["ratio_fps_below_10"] for f in video]),
        "jain_index": jain,
        "cross_throughput_kbps": sum(f["throughput_kbps"] for f in cross),
        "wall_s": summary["wall_s"],
    }


def lookup(doc: Any, path: str) -> Any:
    """The value at a dotted path; a list element by index or by its ``id``. KeyError if absent."""
    node = doc
    for part in path.split("."):
        if isinstance(node, list):
            node = node[_list_index(node, part, path)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise KeyError(path)
    return node


def _list_index(items: list[Any], part: str, path: str) -> int:
    if part.isdigit() and int(part) < len(items):
        return int(part)
    for i, item in enumerate(items):
        if isinstance(item, dict) and item.get("id") == part:
            return i
    raise KeyError(path)


def set_key(doc: dict[str, Any], path: str, value: Any) -> None:
    """Sets a dotted path (tables on the way are created; list elements must exist)."""
    parts = path.split(".")
    node: Any = doc
    for part in parts[:-1]:
        if isinstance(node, list):
            node = node[_list_index(node, part, path)]
        else:
            node = node.setdefault(part, {})
            if not isinstance(node, (dict, list)):
                raise KeyError(path)
    if isinstance(node, list):
        node[_list_index(node, parts[-1], path)] = value
    else:
        node[parts[-1]] = value


@dataclass(frozen=True)
class Sweep:
    """A sweep: its base scenario, the fixed settings, the axes and the metrics to keep."""

    name: str
    base: str | dict[str, Any]
    base_dir: str
    axes: list[tuple[str, list[Any]]]
    fixed: dict[str, Any] = field(default_factory=dict)
    metrics: list[str] = field(default_factory=lambda: list(DEFAULT_METRICS))
    label: str = "<sweep>"
    #: A run function (``module:function``) instead of the scenario runner; see the module doc.
    run: str = ""

    def points(self) -> list[dict[str, Any]]:
        """Every combination of the axes, the first axis slowest."""
        names = [k for k, _ in self.axes]
        return [dict(zip(names, values)) for values in itertools.product(*(v for _, v in self.axes))]

    def as_dict(self) -> dict[str, Any]:
        """The spec as plain data (what a Ray worker or a child process receives)."""
        return {
            "name": self.name,
            "base": self.base,
            "base_dir": self.base_dir,
            "axes": [[k, v] for k, v in self.axes],
            "fixed": self.fixed,
            "metrics": self.metrics,
            "label": self.label,
            "run": self.run,
        }

    @staticmethod
    def from_plain(d: Mapping[str, Any]) -> "Sweep":
        return Sweep(
            d["name"], d["base"], d["base_dir"], [(k, list(v)) for k, v in d["axes"]], dict(d["fixed"]),
            list(d["metrics"]), d["label"], d.get("run", ""),
        )

    def fingerprint(self) -> str:
        """Identifies the sweep's runs: the spec, and the base scenario's text when it is a file."""
        h = hashlib.sha256(json.dumps(self.as_dict() | {"label": ""}, sort_keys=True).encode())
        bases = [] if self.run else [self.base] + [v for k, vs in self.axes if k == "scenario" for v in vs]
        for b in bases:
            if isinstance(b, str):
                try:
                    h.update(resolve(_base_path(b, self.base_dir)).text.encode())
                except (OSError, ValueError):
                    pass
        return h.hexdigest()[:16]


def _base_path(base: str, base_dir: str) -> str:
    """A base named relative to the spec's folder, or a catalog name."""
    p = Path(base_dir) / base
    return str(p) if p.is_file() else base


def load(path: str | Path) -> Sweep:
    """Reads a sweep spec; a mistake is a :class:`UserError` naming the file and key."""
    p = Path(path)
    try:
        doc = tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise UserError(f"{p}: no such sweep spec") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"{p}: cannot read: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{p}: not valid TOML: {e}") from None
    return from_dict(doc, base_dir=str(p.absolute().parent), label=str(p))


def from_dict(doc: Mapping[str, Any], *, base_dir: str | None = None, label: str = "<sweep>") -> Sweep:
    """A sweep from a spec as data (the TOML's tables as dicts)."""
    for k in doc:
        if k not in SPEC_KEYS:
            raise UserError(f"{label}: unknown key {k!r}, expected one of {', '.join(SPEC_KEYS)}")
    base = doc.get("base")
    run = doc.get("run", "")
    if not isinstance(run, str) or (run and ":" not in run):
        raise UserError(f"{label}: run: got {run!r}, expected a run function as module:function")
    if run and base is not None:
        raise UserError(f"{label}: base: a sweep with a run function has no base scenario (its function builds the runs)")
    axes_doc = doc.get("axes", {})
    if not isinstance(axes_doc, dict):
        raise UserError(f"{label}: axes: expected a table of key = [values]")
    if base is None and not run and "scenario" not in axes_doc:
        raise UserError(f"{label}: base: missing; expected a catalog name, a scenario file or a [base] table")
    if base is not None and not isinstance(base, (str, dict)):
        raise UserError(f"{label}: base: got {base!r}, expected a catalog name, a scenario file or a [base] table")
    axes: list[tuple[str, list[Any]]] = []
    for key, values in axes_doc.items():
        if not isinstance(values, list):
            raise UserError(f"{label}: axes.{key}: got {values!r}, expected a list of values")
        if not values:
            raise UserError(f"{label}: axes.{key}: empty, expected at least one value")
        if key == "seed" and not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**64 for v in values):
            raise UserError(f"{label}: axes.seed: got {values!r}, expected integers from 0 to 2^64-1")
        if key in ("rtt_ms", "jitter_ms") and not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 <= v <= 10_000 for v in values
        ):
            raise UserError(f"{label}: axes.{key}: got {values!r}, expected milliseconds from 0 to 10000")
        axes.append((str(key), list(values)))
    fixed = doc.get("set", {})
    if not isinstance(fixed, dict):
        raise UserError(f"{label}: set: expected a table of key = value")
    metrics = doc.get("metrics", [] if run else DEFAULT_METRICS)
    if not isinstance(metrics, list) or not (metrics or run) or not all(isinstance(m, str) and m for m in metrics):
        raise UserError(f"{label}: metrics: got {metrics!r}, expected a non-empty list of metric names or summary.json paths")
    sweep = Sweep(
        name=str(doc.get("name", Path(label).stem)),
        base=base if base is not None else "",
        base_dir=base_dir or str(Path.cwd()),
        axes=axes,
        # A run function gets [set] as written (its own keys, not scenario paths).
        fixed=dict(fixed) if run else _flatten(fixed),
        metrics=list(metrics),
        label=label,
        run=run,
    )
    if run:
        try:
            run_function(run)
        except UserError as e:
            raise UserError(f"{label}: run: {e}") from None
    else:
        check(sweep)
    return sweep


def of_function(
    name: str,
    fn: Callable[[dict[str, Any]], Mapping[str, Any]] | str,
    metrics: list[str] | None = None,
    label: str | None = None,
    fixed: Mapping[str, Any] | None = None,
    axes: list[tuple[str, list[Any]]] | None = None,
) -> Sweep:
    """A sweep whose runs are calls of ``fn`` (a module-level function, or its ``module:function``
    name), each with one point (``fixed`` and the point's keys) as a dict; the points are the
    combinations of ``axes``, or given to :func:`execute`. ``metrics``: columns every row has (NaN
    when the run failed); other keys the rows return follow them."""
    ref = fn if isinstance(fn, str) else f"{fn.__module__}:{fn.__qualname__}"
    run_function(ref)
    return Sweep(
        name=name, base="", base_dir="", axes=list(axes or []), fixed=dict(fixed or {}),
        metrics=list(metrics or []), label=label or name, run=ref,
    )


def run_function(ref: str) -> Callable[[dict[str, Any]], Mapping[str, Any]]:
    """The function a ``module:function`` reference names; a :class:`UserError` if it cannot be
    imported or is not a function."""
    module, _, name = ref.partition(":")
    try:
        obj: Any = importlib.import_module(module)
        for part in name.split("."):
            obj = getattr(obj, part)
    except ImportError as e:
        raise UserError(f"{ref}: cannot import {module}: {e}") from None
    except AttributeError:
        raise UserError(f"{ref}: no {name!r} in {module}") from None
    if not callable(obj):
        raise UserError(f"{ref}: not a function")
    fn: Callable[[dict[str, Any]], Mapping[str, Any]] = obj
    return fn


def _flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"bottleneck": {"rate": x}}`` as ``{"bottleneck.rate": x}`` (a [set] table's keys)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v and key.split(".")[0] not in ("cc_params",):
            out.update(_flatten(v, f"{key}."))
        else:
            out[key] = v
    return out


def check(sweep: Sweep) -> None:
    """Checks [set] and each axis at its first value against the scenario (an unknown key, a
    value of the wrong kind, a controller that does not exist) before anything runs; a mistake is
    one line naming the axis."""
    from . import _native, api
    from .controller import load as load_controller

    scenario_axis = {k: vs[0] for k, vs in sweep.axes if k == "scenario"}
    for where, params in [("set", {})] + [(f"axes.{k}", {k: v[0]}) for k, v in sweep.axes]:
        point = {**scenario_axis, **params}
        try:
            src, _ = scenario_for(sweep, point)
            api.validate(src)
            cc = point.get("cc")
            if isinstance(cc, str) and ":" in cc:
                load_controller(cc)
            elif cc is not None and cc not in _native.controllers() and cc != "external":
                raise UserError(f"got {cc!r}, expected one of {', '.join(_native.controllers())} or module:Class")
        except KeyError as e:
            raise UserError(f"{sweep.label}: {where}: no key {e.args[0]!r} in the base scenario") from None
        except (UserError, ValueError, OSError) as e:
            raise UserError(f"{sweep.label}: {where}: {e}") from None


def scenario_for(sweep: Sweep, point: Mapping[str, Any]) -> tuple[ScenarioSource, str]:
    """The scenario of one point (its base with [set] and the point's keys applied) and a label."""
    base = point.get("scenario", sweep.base)
    keys = {**sweep.fixed, **{k: v for k, v in point.items() if k not in RUN_OPTIONS}}
    if isinstance(base, dict):
        src = ScenarioSource(json.dumps(base), "json", f"{sweep.label}:base", sweep.base_dir)
    else:
        src = resolve(_base_path(str(base), sweep.base_dir))
    if not keys:
        return src, src.label
    doc = tomllib.loads(src.text) if src.format == "toml" else json.loads(src.text)
    doc = copy.deepcopy(doc)
    for k, v in keys.items():
        set_key(doc, k, v)
    return ScenarioSource(json.dumps(doc), "json", src.label, src.base_dir), src.label


def run_id(point: Mapping[str, Any]) -> str:
    """A run's identity: a hash of its parameters (the same point, the same id, in every sweep)."""
    return hashlib.sha256(json.dumps(point, sort_keys=True).encode()).hexdigest()[:20]


def describe_point(index: int, point: Mapping[str, Any]) -> str:
    """``run 7 (cc=gcc, bottleneck.delay=10 ms)`` for error messages."""
    return f"run {index} (" + ", ".join(f"{k}={v}" for k, v in point.items()) + ")"


def run_point(plain: Mapping[str, Any], index: int, point: dict[str, Any]) -> dict[str, Any]:
    """Runs one point; never raises: a failure is the row's ``error``, naming the run."""
    from . import api

    sweep = Sweep.from_plain(plain)
    row: dict[str, Any] = {"run": index, **point}
    try:
        if sweep.run:
            got = dict(run_function(sweep.run)({**sweep.fixed, **point}))
            # The function may repeat the point's keys (they keep the point's values) and give its
            # own ``error`` (a failure it caught).
            row.update({k: v for k, v in got.items() if k not in row and k != "error"})
            row["error"] = str(got.get("error") or "")
            # Refused here, as this run's failure, rather than when the sweep stores it.
            json.dumps({k: v for k, v in row.items() if k != DATA}, default=_plain_value)
            return row
        src, _ = scenario_for(sweep, point)
        rtt = point.get("rtt_ms")
        result = api.run(
            src,
            seed=point.get("seed"),
            cc=point.get("cc"),
            queue=point.get("queue"),
            rtt_s=None if rtt is None else rtt / 1000.0,
            jitter_s=None if rtt is None else point.get("jitter_ms", 0.0) / 1000.0,
            progress=False,
            # Only summary metrics are kept: no per-bin or per-sample table is built.
            summary_only=True,
        )
        row.update(_metrics(result.summary, sweep.metrics))
        row["error"] = ""
    except BaseException as e:  # noqa: BLE001 - any failure is recorded, the sweep goes on
        # (a panic in the native core arrives as pyo3's PanicException, a BaseException)
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        row.update({m: float("nan") for m in sweep.metrics})
        msg = str(e).replace("\n", " ")
        row["error"] = f"{describe_point(index, point)}: {type(e).__name__}: {msg}"
    return row


def _metrics(summary: Mapping[str, Any], names: list[str]) -> dict[str, Any]:
    std: dict[str, float] | None = None
    out: dict[str, Any] = {}
    for m in names:
        if m in STANDARD_METRICS:
            std = std if std is not None else standard_metrics(summary)
            out[m] = std[m]
            continue
        try:
            v = lookup(summary, m)
        except (KeyError, IndexError):
            raise KeyError(f"metric {m!r}: not a standard metric nor a path in summary.json") from None
        out[m] = float("nan") if v is None else v
    return out


# ---------------------------------------------------------------------------------------------
# The runner


def _set_parent_death_signal() -> None:
    """A pool worker dies with the sweep (Linux): a killed sweep leaves no orphan running."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the parent, which ends the pool


def _local(plain: dict[str, Any], todo: list[tuple[int, dict[str, Any]]], jobs: int) -> Iterator[dict[str, Any]]:
    if jobs == 1:
        for index, point in todo:
            yield run_point(plain, index, point)
        return
    # fork: the workers inherit the loaded package; runs share nothing.
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(jobs, initializer=_set_parent_death_signal) as pool:
        args = [(plain, i, p) for i, p in todo]
        yield from pool.imap_unordered(_star, args, chunksize=1)


def _star(args: tuple[dict[str, Any], int, dict[str, Any]]) -> dict[str, Any]:
    return run_point(*args)


def _ray(
    plain: dict[str, Any], todo: list[tuple[int, dict[str, Any]]], jobs: int | None, address: str | None
) -> Iterator[dict[str, Any]]:
    try:
        import ray
    except ImportError:
        raise UserError("--backend ray: Ray is not installed; pip install 'lowlat[ray]'") from None
    started_here = not ray.is_initialized()
    if started_here:
        kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
        if address:
            kw["address"] = address
        elif jobs:
            kw["num_cpus"] = jobs
        try:
            ray.init(**kw)
        except ConnectionError as e:
            raise UserError(f"--address: cannot connect to the Ray cluster at {address}: {e}") from None
    try:
        remote = ray.remote(num_cpus=1, max_retries=3)(run_point)
        ref_plain: Any = ray.put(plain)
        pending = [remote.remote(ref_plain, i, p) for i, p in todo]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield ray.get(ref)
    finally:
        if started_here:
            ray.shutdown()


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.partial-{os.getpid()}")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _read_done(runs: Path, ids: dict[str, int]) -> dict[int, dict[str, Any]]:
    """The finished runs in ``runs/`` that belong to this sweep (a half-written file cannot
    exist: each is renamed into place whole)."""
    done: dict[int, dict[str, Any]] = {}
    if not runs.is_dir():
        return done
    for f in runs.glob("*.json"):
        index = ids.get(f.stem)
        if index is None:
            continue
        try:
            row = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        done[index] = row
    return done


def columns(sweep: Sweep, points: list[dict[str, Any]], rows: Iterable[Mapping[str, Any]] = ()) -> list[str]:
    """The table's columns: ``run``, the points' keys, the metrics, any other key the rows have
    (a run function's own columns, in the order they first appear) and ``error``."""
    names: list[str] = ["run"]
    for p in points:
        names += [k for k in p if k not in names]
    names += [m for m in sweep.metrics if m not in names]
    for r in rows:
        names += [k for k in r if k not in names and k != "error"]
    return [*names, "error"]


def _plain_value(v: Any) -> Any:
    """A JSON-able form of a numpy scalar (a row's value from pandas/numpy arithmetic)."""
    item = getattr(v, "item", None)
    if callable(item):
        return item()
    raise TypeError(f"a run's value {v!r} ({type(v).__name__}) cannot be stored: expected numbers, text, lists or tables")


def _as_stored(row: Mapping[str, Any]) -> dict[str, Any]:
    """The row as it is stored and read back (a JSON round trip), so that a run finished now and
    one read from ``runs/`` after a resume give the same table."""
    out: dict[str, Any] = json.loads(json.dumps(row, default=_plain_value))
    return out


def data_path(out: str | Path, point: Mapping[str, Any], name: str) -> Path:
    """Where a run's data table ``name`` is kept: a NumPy ``.npz`` of its columns (see
    :func:`write_table`)."""
    return Path(out) / "runs" / f"{run_id(point)}.{name}.npz"


#: pandas before 3 parses CSV floats to within an ulp unless told; 3 parses them exactly by
#: default (and deprecates the option).
_EXACT_FLOATS: dict[str, Any] = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}


def write_table(path: Path, table: pd.DataFrame) -> None:
    """Writes ``table`` to ``path`` as an uncompressed ``.npz`` (``numpy.load(path)``): one array
    per column (``c0``, ``c1``, ...), their names in ``columns``; text columns as Unicode arrays,
    a missing value as "". Binary, so floats are kept exactly, and a table of 20 000 predictions
    costs a few milliseconds where CSV's float formatting took about 70 (the sweep's process wrote
    them while the pool's ran)."""
    arrays: dict[str, Any] = {"columns": np.array([str(c) for c in table.columns], dtype=str)}
    for i, c in enumerate(table.columns):
        col = table[c]
        if col.dtype.kind in "biuf":
            arrays[f"c{i}"] = col.to_numpy()
        else:
            arrays[f"c{i}"] = np.array(["" if pd.isna(v) else str(v) for v in col], dtype=str)
    with open(path, "wb") as f:
        np.savez(f, allow_pickle=False, **arrays)


def read_table(path: Path) -> pd.DataFrame:
    """A table :func:`write_table` wrote (or, from a folder of an earlier version, a ``.csv.gz``),
    with "" in a text column read as missing, as CSV is read."""
    if path.suffix == ".gz":
        return pd.read_csv(path, keep_default_na=False, na_values=[""], **_EXACT_FLOATS)
    with np.load(path, allow_pickle=False) as z:
        names = [str(n) for n in z["columns"]]
        cols: dict[str, Any] = {}
        for i, n in enumerate(names):
            a = z[f"c{i}"]
            cols[n] = pd.Series(a, dtype=object).replace("", np.nan) if a.dtype.kind == "U" else a
    return pd.DataFrame(cols, columns=names)


def read_data(out: str | Path, points: list[dict[str, Any]], name: str) -> list[pd.DataFrame | None]:
    """Each point's data table ``name`` (None for a run that has none: it failed, or gave none),
    as the run function returned it (floats read back exactly)."""
    tables: list[pd.DataFrame | None] = []
    for p in points:
        f = data_path(out, p, name)
        old = f.with_name(f.name.removesuffix(".npz") + ".csv.gz")
        tables.append(read_table(f) if f.is_file() else read_table(old) if old.is_file() else None)
    return tables


def _write_data(out: Path, point: Mapping[str, Any], data: Mapping[str, Any]) -> None:
    for name, table in data.items():
        if table is None:
            continue
        if not isinstance(table, pd.DataFrame):
            table = pd.DataFrame(table)
        path = data_path(out, point, name)
        tmp = path.with_name(f".{path.name}.partial-{os.getpid()}")
        write_table(tmp, table)
        os.replace(tmp, path)


def execute(
    sweep: Sweep,
    points: list[dict[str, Any]] | None = None,
    *,
    out: str | Path | None = None,
    jobs: int | None = None,
    backend: str = "local",
    address: str | None = None,
    progress: bool | None = None,
    desc: str | None = None,
    force: bool = False,
    restart_flag: str = "--restart",
    cost: Callable[[Mapping[str, Any]], float] | None = None,
) -> pd.DataFrame:
    """Runs the sweep's points (default: every combination of its axes) and returns the table,
    one row per point in order. With ``out``, finished runs are kept in ``out/runs/`` as they
    complete and skipped when the same sweep runs again; ``summary.csv`` (and
    ``summary.parquet`` with pyarrow) are written at the end. A run function's per-run data
    (its row's ``"data"``) is kept only with ``out`` (:func:`read_data`). ``restart_flag``: the
    option a refusal of ``out`` suggests. ``cost``: a point's expected cost (any unit); the runs
    then start most costly first (see :func:`start_order`), which changes when they run, never
    the table."""
    if backend not in BACKENDS:
        raise UserError(f"--backend: got {backend!r}, expected one of {', '.join(BACKENDS)}")
    points = sweep.points() if points is None else points
    ids = {run_id(p): i for i, p in enumerate(points)}
    if len(ids) != len(points):
        raise UserError(f"{sweep.label}: axes: the same run appears twice (repeated values?)")
    done: dict[int, dict[str, Any]] = {}
    runs: Path | None = None
    if out is not None:
        runs = _prepare(Path(out), sweep, force, restart_flag)
        done = _read_done(runs, ids)
    todo = start_order([(i, p) for i, p in enumerate(points) if i not in done], cost)
    plain = sweep.as_dict()
    n_jobs = max(1, min(jobs or os.cpu_count() or 1, len(todo) or 1))
    show = sys.stderr.isatty() if progress is None else progress
    bar = None
    if show:
        from tqdm import tqdm

        # No monitor thread: a process with a second thread cannot fork a run safely
        # (api.run_branches, api.in_background), and the bar is updated at every run anyway.
        tqdm.monitor_interval = 0
        bar = tqdm(total=len(points), initial=len(done), unit="run", desc=desc or sweep.name, smoothing=0.1)
    stream: Iterable[dict[str, Any]]
    if backend == "ray":
        stream = _ray(plain, todo, jobs, address)
    else:
        stream = _local(plain, todo, n_jobs)
    try:
        for row in stream:
            index = int(row["run"])
            data = row.pop(DATA, None) or {}
            row = _as_stored(row)
            if runs is not None:
                # The data first: a run whose row is in runs/ has all its files.
                _write_data(runs.parent, points[index], data)
                _write_atomically(runs / f"{run_id(points[index])}.json", json.dumps(row))
            done[index] = row
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    rows = [done[i] for i in range(len(points))]
    df = pd.DataFrame(rows, columns=columns(sweep, points, rows))
    if out is not None:
        write_summary(df, Path(out))
    return df


def start_order(
    todo: list[tuple[int, dict[str, Any]]], cost: Callable[[Mapping[str, Any]], float] | None
) -> list[tuple[int, dict[str, Any]]]:
    """The runs to do in the order they start: as given without ``cost``; with it, the most
    costly first (equal costs in the given order). With the longest runs first, a pool of N
    processes ends with short runs and no process waits long for the last one (a long run
    started last would run alone)."""
    if cost is None:
        return todo
    costs = {i: float(cost(p)) for i, p in todo}
    return sorted(todo, key=lambda ip: -costs[ip[0]] if math.isfinite(costs[ip[0]]) else 0.0)


def _prepare(out: Path, sweep: Sweep, force: bool = False, restart_flag: str = "--restart") -> Path:
    """Creates ``out`` for this sweep, or checks that it holds runs of the same sweep (with
    ``force``, whatever it holds is removed first)."""
    import shutil

    marker = out / "sweep.json"
    if force and out.is_dir():
        shutil.rmtree(out)
    fp = sweep.fingerprint()
    if out.exists() and not out.is_dir():
        raise UserError(f"--out: {out} exists and is not a folder")
    if marker.is_file():
        try:
            old = json.loads(marker.read_text()).get("fingerprint")
        except (OSError, ValueError):
            old = None
        if old != fp:
            raise UserError(
                f"--out: {out} holds the runs of another sweep (or an earlier version of this spec); "
                f"choose another folder or add {restart_flag} to start again"
            )
    elif out.is_dir() and any(out.iterdir()):
        raise UserError(f"--out: {out} is not empty and is not a sweep's folder; choose another or add {restart_flag}")
    # The marker first: a sweep killed right after it still finds its folder its own.
    out.mkdir(parents=True, exist_ok=True)
    if not marker.is_file():
        _write_atomically(marker, json.dumps({"fingerprint": fp, "spec": sweep.as_dict()}, indent=2))
    (out / "runs").mkdir(exist_ok=True)
    return out / "runs"


def write_summary(df: pd.DataFrame, out: Path) -> list[Path]:
    """``summary.csv`` and, with pyarrow, ``summary.parquet``, each written atomically."""
    written = [out / "summary.csv"]
    _write_atomically(written[0], df.to_csv(index=False))
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return written
    tmp = out / f".summary.parquet.partial-{os.getpid()}"
    # Mixed-type axis columns (a number here, a string there) are stored as text.
    df.astype({c: str for c in df.columns if df[c].dtype == object}).to_parquet(tmp, index=False)
    os.replace(tmp, out / "summary.parquet")
    written.append(out / "summary.parquet")
    return written
