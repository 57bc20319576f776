"""Running scenarios from Python."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Mapping

from . import _native
from .catalog import resolve
from .results import Result

#: Runs that take longer than this many wall seconds get a progress bar.
PROGRESS_AFTER_S = 2.0


def validate(scenario: str | Path | Mapping[str, Any]) -> dict[str, Any]:
    """Checks a scenario without running it.

    Returns ``{"name", "description", "warnings"}``; raises :class:`lowlat.ScenarioError` naming the
    file, the key and what was expected.
    """
    src = resolve(scenario)
    name, description, warnings = _native.validate(src.text, src.format, src.label, src.base_dir)
    return {"name": name, "description": description, "warnings": list(warnings)}


def run(
    scenario: str | Path | Mapping[str, Any],
    *,
    seed: int | None = None,
    cc: str | None = None,
    queue: str | None = None,
    rtt_s: float | None = None,
    jitter_s: float | None = None,
    progress: bool | None = None,
) -> Result:
    """Runs a scenario (a path, a catalog name, or a dict in the scenario format) to its end.

    ``seed`` overrides the scenario's seed; ``cc`` the controller of every rtp-video flow;
    ``queue`` the bottleneck queues (``"droptail"``: 300 ms, ``"codel"``: RFC 8289 defaults);
    ``rtt_s`` sets the minimum RTT (half of it one way on the bottleneck and on the reverse link)
    and ``jitter_s`` the jitter's standard deviation on both, as the RMCAT matrix varies them.
    ``progress``: ``None`` shows a bar on a terminal once a run has taken more than a few
    seconds, ``True`` always, ``False`` never.
    """
    src = resolve(scenario)
    sim = _native.Simulation(src.text, src.format, src.label, src.base_dir, seed, cc, queue, rtt_s, jitter_s)
    end = sim.end_s()
    # Advance in small slices of simulated time so the bar moves and Ctrl-C is honoured.
    step = max(end / 500.0, 1e-3)
    started = time.perf_counter()
    bar = None
    show = sys.stderr.isatty() if progress is None else progress
    try:
        t = 0.0
        while t < end:
            t = min(t + step, end)
            sim.advance(t)
            if bar is None and show and (progress or time.perf_counter() - started > PROGRESS_AFTER_S):
                from tqdm import tqdm

                desc = f"{sim.name()} [{cc}]" if cc else sim.name()
                bar = tqdm(total=round(end, 3), unit="sim s", desc=desc, leave=False)
            if bar is not None:
                bar.update(round(t, 3) - bar.n)
    finally:
        if bar is not None:
            bar.close()
    summary_json, flows, links, predictions = sim.finish()
    return Result(json.loads(summary_json), flows, links, summary_json=summary_json, predictions=predictions)
