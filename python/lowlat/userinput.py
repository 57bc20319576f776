"""Checks of what a user types: one clear line for each mistake.

:class:`UserError` is a mistake of the user's (a bad flag value, a folder that cannot be used);
the ``lowlat`` command shows it as one line and exits with code 2, never with a traceback. The
parsers here are used as argparse ``type=`` functions or called on the parsed values;
:func:`check_common` checks the options several commands share (``--seed``, ``--jobs``,
``--duration``, ``--out``) by name, so a new subcommand gets the same checks for free.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Callable, Iterable, TypeVar

T = TypeVar("T")

#: Seeds are unsigned 64-bit integers.
SEED_MAX = 2**64 - 1


class UserError(Exception):
    """A mistake in what the user asked for (shown as one line, exit code 2)."""


def seed(text: str) -> int:
    """An argparse type: an integer in [0, 2^64)."""
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected an integer from 0 to 2^64-1") from None
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"got {text}, expected an integer from 0 to 2^64-1")
    return value


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected a whole number of at least 1") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"got {text}, expected a whole number of at least 1")
    return value


def finite_float(text: str) -> float:
    """An argparse type: a finite number (no nan, no inf)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"got {text}, expected a finite number")
    return value


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds above 0."""
    value = finite_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"got {text}, expected a positive number of seconds")
    return value


def items(text: str, flag: str, what: str, conv: Callable[[str], T] = str) -> list[T]:  # type: ignore[assignment]
    """A comma-separated list (``"10,100"``), at least one item; ``conv`` converts each."""
    parts = [x.strip() for x in str(text).split(",") if x.strip()]
    if not parts:
        raise UserError(f"{flag}: got {text!r}, expected a comma-separated list of {what}")
    out = []
    for x in parts:
        try:
            out.append(conv(x))
        except (ValueError, TypeError):
            raise UserError(f"{flag}: got {x!r} in {text!r}, expected {what}") from None
    return out


def numbers(
    text: str,
    flag: str,
    what: str,
    *,
    minimum: float | None = None,
    above: float | None = None,
    maximum: float | None = None,
) -> list[float]:
    """A comma-separated list of finite numbers within the given bounds."""
    values = items(text, flag, what, float)
    for v in values:
        ok = math.isfinite(v)
        ok = ok and (minimum is None or v >= minimum) and (above is None or v > above)
        ok = ok and (maximum is None or v <= maximum)
        if not ok:
            raise UserError(f"{flag}: got {v:g} in {text!r}, expected {what}")
    return values


def choices(text: str, flag: str, allowed: Iterable[str]) -> list[str]:
    """A comma-separated list of names, each one of ``allowed``."""
    allowed = list(allowed)
    names = items(text, flag, "names", str)
    for n in names:
        if n not in allowed:
            raise UserError(f"{flag}: got {n!r}, expected one of {', '.join(allowed)}")
    return names


def check_common(args: argparse.Namespace) -> None:
    """Checks the options several commands share, by name (whichever the command has)."""
    from .outdir import check_target

    s = getattr(args, "seed", None)
    if s is not None and not 0 <= s <= SEED_MAX:
        raise UserError(f"--seed: got {s}, expected an integer from 0 to 2^64-1")
    jobs = getattr(args, "jobs", None)
    if jobs is not None and jobs < 1:
        raise UserError(f"--jobs: got {jobs}, expected a whole number of at least 1")
    d = getattr(args, "duration", None)
    if isinstance(d, float) and not (math.isfinite(d) and d > 0):
        raise UserError(f"--duration: got {d}, expected a positive, finite number of seconds")
    pcap = getattr(args, "pcap", None)
    if pcap is not None:
        p = Path(pcap)
        if str(pcap).strip() == "" or p.is_dir():
            raise UserError(f"--pcap: got {str(pcap)!r}, expected a file name")
        if not p.absolute().parent.is_dir():
            raise UserError(f"--pcap: {p.absolute().parent} is not a folder")
    if hasattr(args, "out") and args.out is not None:
        if str(args.out).strip() == "":
            raise UserError("--out: got '', expected a folder name")
        if hasattr(args, "force") and getattr(args, "command", None) != "reproduce":
            # Commands with --force write through outdir.results_dir: check before running. (The
            # reproductions resume in their folder: reproduce.common.results_folder checks it.)
            check_target(args.out, force=args.force)
