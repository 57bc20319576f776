"""The bad-input catalogue (tests/bad_inputs/): every case is refused with a clear one-line
error that contains its expected fragment. A traceback, a panic, a hang or a silent accept fails.

One file per case, its first line ``# expect: FRAGMENT``:

- ``<category>/*.toml``: a scenario; ``lowlat.validate`` and ``lowlat.run`` must both raise
  ScenarioError (never a panic) with the fragment.
- ``cli/*.cli``: a ``lowlat`` command line (``{tmp}``, ``{file}``, ``{nonempty}`` are filled in);
  it must exit with code 2 and one line on stderr, no traceback.
- ``python_api/*.py``: a call (``run``/``validate`` in scope) that must raise ScenarioError,
  UserError, TypeError or FileNotFoundError with the fragment.
"""

from __future__ import annotations

import contextlib
import io
import shlex
import signal
from pathlib import Path

import pytest

import lowlat
from lowlat import cli
from lowlat.userinput import UserError

ROOT = Path(__file__).parent / "bad_inputs"
CASES = sorted(p for p in ROOT.rglob("*") if p.suffix in (".toml", ".cli", ".py"))
#: Seconds a case may take before it counts as a hang.
HANG_S = 20


def expected(path: Path) -> tuple[str, str]:
    first, _, rest = path.read_text().partition("\n")
    assert first.startswith("# expect: "), f"{path}: first line must be '# expect: FRAGMENT'"
    return first.removeprefix("# expect: ").strip(), rest


@contextlib.contextmanager
def no_hang(case: Path):
    def alarm(signum, frame):
        raise TimeoutError(f"{case}: no answer in {HANG_S} s (a hang)")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(HANG_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def refused(call, fragment: str, allowed=(lowlat.ScenarioError,)) -> str:
    """Runs ``call``; it must raise one of ``allowed`` (not a panic) whose one-line message holds
    ``fragment``."""
    try:
        call()
    except allowed as e:
        msg = str(e)
    except BaseException as e:  # a panic arrives as pyo3's PanicException (a BaseException)
        if isinstance(e, (KeyboardInterrupt, TimeoutError)):
            raise
        pytest.fail(f"{type(e).__name__} instead of a clear error: {e}")
    else:
        pytest.fail("accepted silently")
    assert "\n" not in msg.strip(), msg
    assert fragment in msg, f"expected {fragment!r} in: {msg}"
    return msg


@pytest.mark.parametrize("case", CASES, ids=[c.relative_to(ROOT).as_posix() for c in CASES])
def test_bad_input_is_refused_clearly(case: Path, tmp_path, capsys):
    fragment, body = expected(case)
    with no_hang(case):
        if case.suffix == ".toml":
            refused(lambda: lowlat.validate(case), fragment)
            refused(lambda: lowlat.run(case, progress=False), fragment)
        elif case.suffix == ".py":
            scope = {"run": lambda *a, **k: lowlat.run(*a, progress=False, **k), "validate": lowlat.validate}
            refused(lambda: exec(body, scope), fragment, (lowlat.ScenarioError, UserError, TypeError, FileNotFoundError))
        else:
            f = tmp_path / "file"
            f.write_text("x")
            nonempty = tmp_path / "nonempty"
            nonempty.mkdir()
            (nonempty / "old.json").write_text("{}")
            line = body.strip().format(tmp=tmp_path, file=f, nonempty=nonempty)
            try:
                code = cli.main(shlex.split(line))
            except SystemExit as e:  # argparse's own errors
                code = e.code
            err = capsys.readouterr().err.strip()
            assert "Traceback" not in err, err
            assert code == 2, (code, err)
            assert len(err.splitlines()) == 1, err
            assert fragment in err, f"expected {fragment!r} in: {err}"
            assert (nonempty / "old.json").exists(), "a refused command touched the old results"


def test_catalogue_covers_every_category():
    categories = {c.relative_to(ROOT).parts[0] for c in CASES}
    assert {"syntax", "types", "units", "ranges", "scale", "ids", "traces", "cc_params", "cli", "python_api"} <= categories
