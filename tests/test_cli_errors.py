"""The command never shows a traceback for a user's mistake: one line, exit code 2; an internal
error shows its traceback and asks to be reported."""

import argparse

import pytest

from lowlat import cli


def _one_line(p, *needles):
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr, p.stderr
    err = p.stderr.strip()
    assert len(err.splitlines()) == 1, err
    for n in needles:
        assert n in err, err


@pytest.mark.parametrize(
    "args, needles",
    [
        (["run", "dumbbell-cbr", "--seed", "-1"], ["--seed", "-1", "2^64"]),
        (["run", "dumbbell-cbr", "--seed", str(2**64)], ["--seed"]),
        (["run", "rmcat-5.1", "--cc", ",,,"], ["--cc", "list"]),
        (["run", "rmcat-5.1", "--cc", "foo"], ["--cc", "'foo'", "gcc"]),
        (["run", "dumbbell-cbr", "--out", ""], ["--out", "folder name"]),
        (["run", "dumbbell-cbr", "--memory-budget", "lots"], ["memory budget", "lots"]),
        (["bench", "--rates", "nan"], ["--rates", "nan"]),
        (["bench", "--rates", "1e12"], ["--rates"]),
        (["bench", "--duration", "inf"], ["--duration"]),
        (["bench", "--tcp", "reno"], ["--tcp", "reno", "cubic"]),
        (["suite", "rmcat", "--cc", "gcc", "--jobs", "-3"], ["--jobs", "-3"]),
        (["suite", "rmcat", "--cc", "gcc", "--jobs", "0"], ["--jobs"]),
        (["suite", "rmcat", "--cc", "gcc", "--rtts", "nan"], ["--rtts", "nan"]),
        (["suite", "rmcat", "--cc", "gcc", "--cases", "9.9"], ["--cases", "9.9"]),
        (["reproduce", "zhuge", "--out", "x", "--duration", "inf"], ["--duration", "inf"]),
        (["reproduce", "zhuge", "--out", "x", "--duration", "nan"], ["--duration", "nan"]),
    ],
)
def test_flag_mistakes_are_one_line(lowlat_cli, tmp_path, args, needles):
    _one_line(lowlat_cli(*args), *needles)


def test_out_on_a_file_or_an_impossible_place(lowlat_cli, tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    _one_line(lowlat_cli("run", "dumbbell-cbr", "--out", f, "--no-plots"), "--out", "not a folder")
    _one_line(lowlat_cli("run", "dumbbell-cbr", "--out", f / "sub", "--no-plots"), "--out", "file")
    _one_line(lowlat_cli("suite", "rmcat", "--cc", "gcc", "--out", f), "--out", "not a folder")


def test_non_empty_out_needs_force(lowlat_cli, tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "keep").write_text("mine")
    _one_line(lowlat_cli("run", "dumbbell-cbr", "--out", out, "--no-plots"), "not empty", "--force")
    assert (out / "keep").read_text() == "mine"
    p = lowlat_cli("run", "dumbbell-cbr", "--out", out, "--no-plots", "--force")
    assert p.returncode == 0, p.stderr
    assert not (out / "keep").exists() and (out / "summary.json").exists()


def _raise(exc):
    def command(args):
        raise exc

    return command


def test_internal_errors_show_the_traceback_and_ask_to_be_reported(capsys):
    assert cli.dispatch(_raise(RuntimeError("a bug")), argparse.Namespace()) == 70
    err = capsys.readouterr().err
    assert "Traceback" in err and "RuntimeError: a bug" in err and "please report" in err
    assert cli.dispatch(_raise(cli.UserError("--x: bad")), argparse.Namespace()) == 2
    assert capsys.readouterr().err == "lowlat: error: --x: bad\n"
    assert cli.dispatch(_raise(PermissionError(13, "Permission denied", "/root/x")), argparse.Namespace()) == 2
    assert capsys.readouterr().err == "lowlat: error: /root/x: Permission denied\n"


def test_a_late_progress_bar_counts_the_time_already_spent(monkeypatch):
    """The bar appears after two seconds; its elapsed time starts with the run, not at 00:00."""
    import io
    import time as real_time

    import tqdm as tqdm_module

    import lowlat
    from lowlat import api

    class Clock:
        """perf_counter advancing one second per call: the bar appears on the third slice."""

        t = 0.0

        def perf_counter(self):
            self.t += 1.0
            return self.t

    bars = []

    class Bar(tqdm_module.tqdm):
        def __init__(self, *a, **k):
            super().__init__(*a, file=io.StringIO(), **k)
            bars.append((self, real_time.time()))

    monkeypatch.setattr(api, "time", Clock())
    monkeypatch.setattr(tqdm_module, "tqdm", Bar)
    monkeypatch.setattr(api.sys.stderr, "isatty", lambda: True, raising=False)
    lowlat.run("dumbbell-cbr", progress=None)
    (bar, created), = bars
    assert created - bar.start_t >= 2.0, "the bar's clock starts when the run did"
