"""Results folders that are never stale: written aside, renamed into place when complete.

A command that writes a folder of results does it through :func:`results_dir`::

    with results_dir("out/run1", force=args.force) as tmp:
        result.write(tmp)            # anything, in any number of steps

The files go to a hidden temporary folder beside the target (same file system, so the final
rename is atomic). Only when the block ends without an exception does the temporary folder take
the target's place; if the target existed (allowed only with ``force``, or when it is empty) it is
replaced whole, never merged. An exception, Ctrl-C or a killed process leaves the old results
intact, or nothing: never a folder that mixes two runs. Leftovers of killed runs (hidden
``.NAME.lowlat-*`` folders whose process is gone) are removed the next time.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import shutil
from pathlib import Path
from typing import Iterator

from .userinput import UserError

#: Hidden siblings: ``.NAME.lowlat-partial-PID`` (being written), ``.NAME.lowlat-old-PID`` (the
#: replaced results, being removed).
_PARTIAL = "lowlat-partial"
_OLD = "lowlat-old"


def check_target(target: str | os.PathLike[str], *, force: bool = False, flag: str = "--out") -> Path:
    """Checks that results may be written to ``target`` and returns it as a Path.

    Raises :class:`UserError` for an empty name, an existing file, or a non-empty folder without
    ``force``. Cheap: commands call it before a long run so a mistake is reported at once.
    """
    if target is None or str(target).strip() == "":
        raise UserError(f"{flag}: got {str(target)!r}, expected a folder name")
    path = Path(target)
    if path.exists() and not path.is_dir():
        raise UserError(f"{flag}: {path} exists and is not a folder")
    if path.is_dir() and not force and any(path.iterdir()):
        raise UserError(
            f"{flag}: {path} is not empty (results of an earlier run?); "
            "choose another folder or add --force to replace it whole"
        )
    return path


@contextlib.contextmanager
def results_dir(target: str | os.PathLike[str], *, force: bool = False, flag: str = "--out") -> Iterator[Path]:
    """Yields a temporary folder to write into; it becomes ``target`` when the block succeeds."""
    path = check_target(target, force=force, flag=flag)
    parent = path.absolute().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise UserError(f"{flag}: {parent} exists and is not a folder") from None
    except OSError as e:
        raise UserError(f"{flag}: cannot create {parent}: {e.strerror}") from None
    _remove_leftovers(parent, path.name)
    tmp = parent / f".{path.name}.{_PARTIAL}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir()
    except OSError as e:
        raise UserError(f"{flag}: cannot write in {parent}: {e.strerror}") from None
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    # The target may have appeared meanwhile (another command): check again before replacing.
    check_target(path, force=force, flag=flag)
    _replace(tmp, path.absolute())


def _replace(tmp: Path, target: Path) -> None:
    """Puts ``tmp`` in ``target``'s place; an old ``target`` is swapped out whole, then removed."""
    if not target.exists():
        os.rename(tmp, target)
        return
    if _exchange(tmp, target):
        # ``tmp`` now holds the old results.
        shutil.rmtree(tmp, ignore_errors=True)
        return
    # No atomic exchange on this system: two renames. A kill between them leaves no target
    # (and the old results in the hidden folder) rather than a mix.
    old = target.parent / f".{target.name}.{_OLD}-{os.getpid()}"
    shutil.rmtree(old, ignore_errors=True)
    os.rename(target, old)
    os.rename(tmp, target)
    shutil.rmtree(old, ignore_errors=True)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swaps two paths atomically (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    result: int = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return result == 0


def _remove_leftovers(parent: Path, name: str) -> None:
    """Removes hidden folders of earlier runs on ``name`` whose process is gone."""
    for kind in (_PARTIAL, _OLD):
        for p in parent.glob(f".{name}.{kind}-*"):
            pid = p.name.rsplit("-", 1)[-1]
            if pid.isdigit() and not _alive(int(pid)):
                shutil.rmtree(p, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # a leftover of ours from an earlier call that was killed mid-way cannot exist
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
