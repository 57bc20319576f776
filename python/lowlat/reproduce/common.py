"""What the reproductions share: the trace families (the Zhuge paper's, generated stand-ins or
files told apart by name), running a grid of runs as a sweep (:func:`run_grid`: the one runner of
:mod:`lowlat.sweep`, so a reproduction resumes after a kill, records a failed run and runs on
Ray), and the results folder they write into."""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import shutil
import sys
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import pandas as pd

from .. import sweep
from ..userinput import UserError

#: Trace families: label, file-name prefix, what it is, and how the generated stand-in looks
#: (mean Mbit/s, relative spread, deep fades per minute).
FAMILIES = {
    "W1": ("rest-wifi", "restaurant Wi-Fi", 22.0, 0.45, 3.0),
    "W2": ("office-wifi", "office Wi-Fi", 26.0, 0.35, 2.0),
    "C1": ("pitree4g", "indoor mixed 4G/5G", 79.0, 0.6, 2.0),
    "C2": ("xu4g", "city 4G", 65.0, 0.7, 3.0),
    "C3": ("xu5g", "city 5G", 341.0, 0.8, 3.0),
}


def family_of(path: Path) -> str:
    """The family label of a trace file, from its name."""
    for label, (prefix, *_rest) in FAMILIES.items():
        if path.name.startswith(prefix + "_") or path.stem == prefix:
            return label
    stem = path.stem
    return stem.rsplit("_", 1)[0] if "_" in stem else stem


def check_seconds(seconds: float) -> None:
    """Refuses a run length that is not a finite, positive number of seconds (an infinite one would
    loop forever generating a trace; a day is far beyond any run)."""
    if not (math.isfinite(seconds) and 0 < seconds <= 86_400):
        raise UserError(f"seconds: got {seconds}, expected a duration above 0 and at most 86400 s")


def generate_trace(family: str, seed: int, seconds: float = 300.0) -> str:
    """A two-column stand-in for a family's traces: log-normal fluctuation every 0.2 s around the
    family's mean, with deep fades (to 2-10 % of the mean for 0.4-3 s) at the family's rate."""
    check_seconds(seconds)
    _, _, mean, spread, fades_per_min = FAMILIES[family]
    rng = random.Random(f"{family}-{seed}")
    lines, level, fade_until, t = [], 0.0, -1.0, 0.0
    sigma = math.sqrt(math.log(1 + spread * spread))
    while t < seconds:
        level = 0.9 * level + rng.gauss(0.0, sigma * math.sqrt(1 - 0.81))
        rate = mean * math.exp(level - sigma * sigma / 2)
        if t >= fade_until and rng.random() < fades_per_min / 300.0:
            fade_until = t + rng.uniform(0.4, 3.0)
        if t < fade_until:
            rate = mean * rng.uniform(0.02, 0.1)
        lines.append(f"{t:.1f} {max(rate, 0.1):.3f}")
        t = round(t + 0.2, 1)
    return "\n".join(lines) + "\n"


def find_traces(paths: Iterable[str]) -> list[tuple[str, Path]]:
    """``(family, file)`` for every trace file given or inside the folders given, sorted."""
    found = []
    for p in map(Path, paths):
        if p.is_dir():
            files = sorted(f for f in p.iterdir() if f.is_file() and not f.name.startswith(".") and f.suffix != ".md")
            if not files:
                raise FileNotFoundError(f"{p}: no trace files in this folder")
            found += files
        elif p.is_file():
            found.append(p)
        else:
            raise FileNotFoundError(f"{p}: no such trace file or folder")
    return sorted(((family_of(f), f.resolve()) for f in found), key=lambda x: (x[0], str(x[1])))


def family_traces(out: Path, traces: list[str] | None, seed: int, seconds: float) -> list[tuple[str, Path]]:
    """``(family, file)`` of the traces given (files or folders, see :func:`find_traces`), or,
    without any, one generated trace per family written to ``out/traces``."""
    if traces:
        return find_traces(traces)
    tdir = out / "traces"
    tdir.mkdir(exist_ok=True)
    found = []
    for fam, (prefix, *_r) in FAMILIES.items():
        f = tdir / f"{prefix}_generated.rate"
        f.write_text(generate_trace(fam, seed, seconds))
        found.append((fam, f.resolve()))
    return found


#: The file that marks a reproduction's results folder (and says which reproduction).
MARKER = "reproduce.json"


def results_folder(out_dir: str | Path, name: str, force: bool = False, options: Mapping[str, Any] | None = None) -> Path:
    """The folder reproduction ``name`` writes into, created if missing. A folder it wrote before
    with the same ``options`` (what decides the results: durations, seeds, the traces' contents)
    is kept and its finished runs reused: the same command resumes. ``force`` empties it first. A
    non-empty folder without the marker, another reproduction's, or the same one's with other
    options is refused."""
    out = Path(out_dir)
    if str(out_dir).strip() == "":
        raise UserError("--out: got '', expected a folder name")
    if out.exists() and not out.is_dir():
        raise UserError(f"--out: {out} exists and is not a folder")
    marker = out / MARKER
    if force and out.is_dir():
        shutil.rmtree(out)
    mine = {"reproduction": name, "options": json.loads(json.dumps(dict(options or {}), default=str))}
    if marker.is_file():
        try:
            got = json.loads(marker.read_text())
        except (OSError, ValueError):
            got = {}
        got = got if isinstance(got, dict) else {}
        if got.get("reproduction") != name:
            raise UserError(
                f"--out: {out} holds the results of `lowlat reproduce {got.get('reproduction')}`; "
                "choose another folder or add --force to replace it whole"
            )
        old = got.get("options") or {}
        changed = [k for k in sorted(set(old) | set(mine["options"])) if old.get(k) != mine["options"].get(k)]
        if changed:
            what = ", ".join(f"{k} {old.get(k)!r} there, {mine['options'].get(k)!r} now" for k in changed)
            raise UserError(
                f"--out: {out} holds `lowlat reproduce {name}` results with other options ({what}); "
                "rerun with the same options to resume, choose another folder, or add --force to start again"
            )
    elif out.is_dir() and any(out.iterdir()):
        raise UserError(
            f"--out: {out} is not empty (results of an earlier run?); choose another folder or add --force to replace it whole"
        )
    out.mkdir(parents=True, exist_ok=True)
    if not marker.is_file():
        tmp = out / f".{MARKER}.partial-{os.getpid()}"
        tmp.write_text(json.dumps(mine, indent=2) + "\n")
        os.replace(tmp, marker)
    return out


def digest(paths: Iterable[Path]) -> str:
    """A digest of the files' names and contents (a changed trace is a different experiment)."""
    h = hashlib.sha256()
    for p in paths:
        h.update(str(p).encode() + b"\0")
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def write_csv(df: pd.DataFrame, path: Path) -> Path:
    """``df`` to ``path`` as CSV, atomically (a reproduction killed while writing its tables leaves
    the old file or the new one; the rerun writes them again)."""
    tmp = path.with_name(f".{path.name}.partial-{os.getpid()}")
    df.to_csv(tmp, index=False)
    os.replace(tmp, path)
    return path


def failure_lines(failures: Iterable[tuple[str, str, str]]) -> list[str]:
    """The lines that report failed runs, given as ``(where, run, error)``: the runs that failed
    at the same place with the same error (a corrupt trace fails each scheme's run alike) share
    one line, ``failed: WHERE (RUN, RUN, ...): ERROR``, in the order they first came."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for where, run, error in failures:
        grouped.setdefault((where, error), []).append(run)
    return [f"failed: {where} ({', '.join(runs)}): {error}" for (where, error), runs in grouped.items()]


def show_progress(progress: bool | None) -> bool:
    """Whether to draw progress bars: as asked, else when stderr is a terminal."""
    return sys.stderr.isatty() if progress is None else progress


@dataclass(frozen=True)
class Runner:
    """How a reproduction's grids run: ``jobs`` processes (default: all cores) on the ``local``
    pool or on Ray (``backend = "ray"``, ``address`` of a running cluster), with a progress bar
    (default: when stderr is a terminal)."""

    jobs: int | None = None
    backend: str = "local"
    address: str | None = None
    progress: bool | None = None


def run_grid(
    out: Path,
    grid: str,
    call: Callable[[Any], Mapping[str, Any]],
    specs: list[Any],
    runner: Runner,
    desc: str,
    data: Iterable[str] = (),
    cost: Callable[[Any], float] | None = None,
) -> tuple[pd.DataFrame, dict[str, list[pd.DataFrame | None]]]:
    """Runs ``call`` (a reproduction's run function: a dataclass spec -> its row) over ``specs``
    with the sweep runner, kept in ``out/sweeps/<grid>`` (one file per finished run: rerunning
    resumes). Returns the rows in the specs' order (a spec's fields, then the row's values, then
    ``error``) and, for each name in ``data``, the per-run tables the rows held under that key
    (None for a run without). A run that raises is a row with its ``error``. ``cost``: a spec's
    expected cost (e.g. simulated seconds x packets per second): the costliest runs start first,
    so the pool does not end waiting on one long run (the rows and tables do not change)."""
    types = {type(s) for s in specs}
    if len(types) > 1 or not all(is_dataclass(s) for s in specs):
        raise TypeError("run_grid: the specs must be instances of one dataclass")
    kind = next(iter(types), object)
    names = list(data)
    fixed = {
        "call": f"{call.__module__}:{call.__qualname__}",
        "spec": f"{kind.__module__}:{kind.__qualname__}",
        "data": names,
        # Runs of another version of the experiment (its module's code, the simulator) are not
        # reused: the folder is then refused unless --force.
        "code": code_version(call),
    }
    grid_sweep = sweep.of_function(grid, run_spec, label=f"{out}: {grid}", fixed=fixed)
    points = [asdict(s) for s in specs]
    folder = out / "sweeps" / grid
    df = sweep.execute(
        grid_sweep,
        points,
        out=folder,
        jobs=runner.jobs,
        backend=runner.backend,
        address=runner.address,
        progress=runner.progress,
        desc=desc,
        restart_flag="--force",
        cost=None if cost is None else _point_cost(cost, kind),
    )
    return df.drop(columns=["run"]), {n: sweep.read_data(folder, points, n) for n in names}


def _point_cost(cost: Callable[[Any], float], kind: Any) -> Callable[[Mapping[str, Any]], float]:
    """``cost`` of a spec as a cost of its sweep point (the spec's fields)."""
    return lambda point: cost(kind(**point))


def code_version(fn: Callable[..., Any]) -> str:
    """The simulator's version and a digest of the source of ``fn``'s module."""
    from .. import _native

    module = sys.modules.get(fn.__module__)
    source = getattr(module, "__file__", None)
    text = Path(source).read_bytes() if source and Path(source).is_file() else b""
    return f"{_native.version()}-{hashlib.sha256(text).hexdigest()[:16]}"


def run_spec(point: dict[str, Any]) -> dict[str, Any]:
    """The run function of :func:`run_grid`'s sweeps: builds the spec (``point["spec"]``, a
    dataclass) from the point's other keys, calls ``point["call"]`` on it and moves the row's
    ``point["data"]`` entries into the run's data."""
    point = dict(point)
    call: Any = sweep.run_function(point.pop("call"))
    kind: Any = sweep.run_function(point.pop("spec"))
    names: list[str] = point.pop("data")
    point.pop("code", None)
    row = dict(call(kind(**point)))
    row[sweep.DATA] = {n: row.pop(n, None) for n in names}
    return row
