"""lowlat: design, test and deploy low-latency congestion control for real-time media.

The simulator core lives in Rust (``lowlat._native``); this package is the front: scenario
catalog, running with progress, results as pandas DataFrames, plots and the ``lowlat`` command.

>>> import lowlat
>>> result = lowlat.run("dumbbell-cbr")          # a catalog name, a path, or a dict
>>> result.summary["links"][0]["utilization"]
>>> result.flow_series.head()
"""

import importlib
from types import ModuleType

from ._native import ScenarioError
from .api import run, run_branches, validate
from .catalog import scenarios, find_scenario
from .results import Result

__all__ = ["run", "run_branches", "validate", "scenarios", "find_scenario", "Result", "ScenarioError", "__version__"]

from ._native import version as _version

__version__ = _version()

#: The reproductions' old module names (``from lowlat import zhuge``), now in :mod:`lowlat.reproduce`.
_MOVED = {"zhuge", "scone", "satellite"}


def __getattr__(name: str) -> ModuleType:
    if name in _MOVED:
        return importlib.import_module(f".reproduce.{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
