"""The scenario catalog shipped with lowlat, and resolution of what a user names as a scenario."""

from __future__ import annotations

import json
import math
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

CATALOG_DIR = Path(__file__).parent / "scenarios"


@dataclass(frozen=True)
class ScenarioSource:
    """A scenario's text and where it came from, ready for the native parser."""

    text: str
    format: str  # "toml" or "json"
    label: str  # names the scenario in error messages
    base_dir: str  # relative trace paths are resolved against it


def scenarios() -> list[dict[str, str]]:
    """The shipped catalog: one dict per scenario with ``name``, ``description`` and ``path``."""
    out = []
    for path in sorted(CATALOG_DIR.glob("*.toml")):
        try:
            doc = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError):
            doc = {}
        out.append(
            {
                "name": str(doc.get("name", path.stem)),
                "description": str(doc.get("description", "")),
                "path": str(path),
            }
        )
    return out


def find_scenario(name: str) -> Path | None:
    """The catalog file of ``name`` (file stem or declared name), if any."""
    direct = CATALOG_DIR / f"{name}.toml"
    if direct.is_file():
        return direct
    for entry in scenarios():
        if entry["name"] == name:
            return Path(entry["path"])
    return None


def _non_finite(value: Any, path: str) -> tuple[str, float] | None:
    """The key path (``flows[0].cc_params.nada.kappa``) and value of the first NaN or infinity
    in a scenario dict: JSON has no such numbers, so the parser would only say "invalid JSON"."""
    if isinstance(value, float) and not math.isfinite(value):
        return path, value
    if isinstance(value, Mapping):
        items: Any = ((f"{path}.{k}" if path else str(k), v) for k, v in value.items())
    elif isinstance(value, (list, tuple)):
        items = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    for sub, v in items:
        found = _non_finite(v, sub)
        if found is not None:
            return found
    return None


def resolve(scenario: str | Path | Mapping[str, Any] | ScenarioSource) -> ScenarioSource:
    """Turns a path, a catalog name or a dict into scenario text for the native parser (a
    ScenarioSource is returned as is).

    Raises FileNotFoundError with the catalog's names when a string is neither.
    """
    if isinstance(scenario, ScenarioSource):
        return scenario
    if isinstance(scenario, Mapping):
        bad = _non_finite(scenario, "")
        if bad is not None:
            from ._native import ScenarioError

            raise ScenarioError(f"<dict>: {bad[0]}: got {bad[1]}, expected a finite number")
        try:
            text = json.dumps(scenario, allow_nan=False)
        except (TypeError, ValueError) as e:
            from ._native import ScenarioError

            raise ScenarioError(
                f"<dict>: {e}: values must be strings, numbers, booleans, lists or dicts"
            ) from None
        return ScenarioSource(text, "json", "<dict>", str(Path.cwd()))
    path = Path(scenario)
    if not path.is_file():
        found = find_scenario(str(scenario))
        if found is None:
            names = ", ".join(e["name"] for e in scenarios())
            raise FileNotFoundError(
                f"{scenario}: no such scenario file, and not in the catalog (catalog: {names})"
            )
        path = found
    try:
        text = path.read_text()
    except UnicodeDecodeError as e:
        raise FileNotFoundError(f"{path}: not a text file ({e})") from None
    return ScenarioSource(text, "toml", str(path), str(path.parent.resolve()))
