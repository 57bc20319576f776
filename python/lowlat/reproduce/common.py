"""What the reproductions share: the trace families (the Zhuge paper's, generated stand-ins or
files told apart by name), running many independent runs on a process pool, and the results
folder they write into."""

from __future__ import annotations

import math
import multiprocessing
import os
import random
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

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


def results_folder(out_dir: str | Path) -> Path:
    """The folder a reproduction writes its files into, created if missing."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return out


def show_progress(progress: bool | None) -> bool:
    """Whether to draw progress bars: as asked, else when stderr is a terminal."""
    return sys.stderr.isatty() if progress is None else progress


def _indexed(item: tuple[int, Callable[[Any], dict[str, Any]], Any]) -> tuple[int, dict[str, Any]]:
    return item[0], item[1](item[2])


def pool_map(
    fn: Callable[[Any], dict[str, Any]],
    specs: list[Any],
    jobs: int | None,
    progress: bool,
    desc: str,
    cost: Callable[[Any], float] | None = None,
) -> list[dict[str, Any]]:
    """``fn`` over ``specs`` on ``jobs`` processes, results in order, with a progress bar.
    ``cost`` (an estimate of a run's time) hands out the longest runs first, so no long run
    starts last and keeps one process busy while the others idle."""
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(specs) or 1))
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(specs), unit="run", desc=desc)
    out: dict[int, dict[str, Any]] = {}
    try:
        items = [(i, fn, s) for i, s in enumerate(specs)]
        if cost is not None:
            items.sort(key=lambda item: -cost(item[2]))  # stable: equal costs keep their order
        if jobs == 1:
            for item in items:
                i, row = _indexed(item)
                out[i] = row
                if bar is not None:
                    bar.update(1)
        else:
            with multiprocessing.get_context("fork").Pool(jobs) as pool:
                for i, row in pool.imap_unordered(_indexed, items, chunksize=1):
                    out[i] = row
                    if bar is not None:
                        bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return [out[i] for i in range(len(specs))]
