"""The link shell: ``lowlat shell SCENARIO -- CMD...`` runs CMD in a network namespace whose
traffic crosses the scenario's links (the mahimahi idea, with lowlat's models).

The namespace holds one TUN device (``lowlat0``) carrying its default route; the caller's
namespace holds another (``llsh<pid>``). The pump (crate ``lowlat-emu``, module ``shell``) reads
the IP packets the command sends, passes them through the forward path (access, bottleneck,
egress) and writes them to the host-side TUN, and the answers back through the reverse path.
Only traffic between the two tunnel addresses crosses (no NAT): the command talks to a server
the caller runs on the host side, at ``$LOWLAT_SHELL_HOST`` (the command's own address is
``$LOWLAT_SHELL_ADDR``). Needs root (or CAP_SYS_ADMIN and CAP_NET_ADMIN), ``/dev/net/tun`` and
``ip`` (iproute2).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from . import _native
from .catalog import resolve

#: The TUN device inside the namespace.
INSIDE_TUN = "lowlat0"


def addresses(pid: int) -> tuple[str, str]:
    """(the command's address, the host side's): a /30-like pair in 10.251.0.0/16 chosen by
    ``pid`` so that shells running side by side do not collide."""
    k = pid % 16_384
    a, b = k // 64, (k % 64) * 4
    return f"10.251.{a}.{b + 2}", f"10.251.{a}.{b + 1}"


def check_permitted() -> str | None:
    """Why this machine cannot run the shell, or None."""
    if os.geteuid() != 0:
        return "lowlat shell needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) to create a network namespace and TUN devices"
    if not os.path.exists("/dev/net/tun"):
        return "lowlat shell needs /dev/net/tun (the tun kernel module), which this machine lacks"
    if shutil.which("ip") is None:
        return "lowlat shell needs the `ip` command (iproute2)"
    if shutil.which("unshare") is not None:
        # Root in a container may still be refused new namespaces: ask the kernel once.
        r = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True)
        if r.returncode != 0:
            msg = (r.stderr.strip().splitlines() or ["refused"])[-1]
            return f"lowlat shell: this machine does not permit new network namespaces (unshare -n: {msg})"
    return None


def _ip(*args: str) -> None:
    r = subprocess.run(["ip", *args], capture_output=True, text=True)
    if r.returncode != 0:
        msg = (r.stderr or r.stdout).strip().splitlines()
        raise _native.EmulatorError(f"lowlat shell: `ip {' '.join(args)}` failed: {msg[0] if msg else r.returncode}")


def shell(
    scenario: str | Path | Mapping[str, Any],
    cmd: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout_s: float | None = None,
    pcap: str | Path | None = None,
) -> tuple[int, dict[str, Any]]:
    """Runs ``cmd`` behind the scenario's links until it exits (or ``timeout_s``, or Ctrl-C: it is
    then terminated). Returns its exit status and the pump's summary (counters, one-way delay per
    direction, the links' summaries); ``pcap``: write every packet that crossed there (raw IPv4,
    as it left the emulated path). Raises ``EmulatorError`` with one line where namespaces or
    TUN devices are not permitted."""
    if not cmd:
        raise _native.EmulatorError("lowlat shell: no command; expected `lowlat shell SCENARIO -- CMD...`")
    why = check_permitted()
    if why:
        raise _native.EmulatorError(why)
    src = resolve(scenario)
    pid = os.getpid()
    netns, host_tun = f"lowlat{pid}", f"llsh{pid}"[:15]
    inside, host = addresses(pid)
    _ip("netns", "add", netns)
    proc: subprocess.Popen[bytes] | None = None
    started = time.monotonic()
    try:

        def ready() -> None:
            nonlocal proc
            _ip("-n", netns, "link", "set", "lo", "up")
            _ip("-n", netns, "addr", "add", inside, "peer", host, "dev", INSIDE_TUN)
            _ip("-n", netns, "link", "set", INSIDE_TUN, "up")
            _ip("-n", netns, "route", "add", "default", "dev", INSIDE_TUN)
            _ip("addr", "add", host, "peer", inside, "dev", host_tun)
            _ip("link", "set", host_tun, "up")
            child_env = dict(os.environ if env is None else env)
            child_env.update(LOWLAT_SHELL_HOST=host, LOWLAT_SHELL_ADDR=inside)
            try:
                proc = subprocess.Popen(["ip", "netns", "exec", netns, *cmd], env=child_env)
            except OSError as e:
                raise _native.EmulatorError(f"lowlat shell: cannot run {cmd[0]!r}: {e}") from None

        def should_stop() -> bool:
            if proc is None or proc.poll() is not None:
                return True
            return timeout_s is not None and time.monotonic() - started > timeout_s

        summary_json = _native.shell_pump(
            src.text, src.format, src.label, src.base_dir, f"/run/netns/{netns}",
            INSIDE_TUN, host_tun, inside, host, ready, should_stop,
            str(pcap) if pcap is not None else None,
        )
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        subprocess.run(["ip", "netns", "del", netns], capture_output=True)
    assert proc is not None
    summary: dict[str, Any] = json.loads(summary_json)
    summary["shell"]["exit_status"] = proc.returncode
    return proc.returncode, summary


def add_shell_parser(sub: Any) -> None:
    """``lowlat shell SCENARIO [--json] [--out FILE] -- CMD...``."""
    import argparse

    p = sub.add_parser(
        "shell",
        help="run a command behind a scenario's links (network namespace + TUN; needs root)",
        description="Runs CMD in a network namespace whose default route leaves through a TUN device; its "
        "IP packets cross the scenario's forward path (access, bottleneck, egress) to a TUN on this host, "
        "and the answers the reverse path. Only traffic between the two tunnel addresses passes (no NAT): "
        "CMD talks to a server you run on this host at $LOWLAT_SHELL_HOST (CMD's own address: "
        "$LOWLAT_SHELL_ADDR). Ends when CMD exits (or Ctrl-C); prints the pump's counters and one-way "
        "delays. Needs root (or CAP_SYS_ADMIN + CAP_NET_ADMIN), /dev/net/tun and iproute2. "
        "bottleneck.assist runs on the first flow's UDP datagrams as in lowlat emulate (RTP for zhuge and "
        "scone, lowlat's transport for fastack and out-of-band zhuge); what the access point writes reaches CMD "
        "as IPv4/UDP from the host's side of that flow.",
    )
    p.add_argument("scenario", help="a scenario file or a catalog name")
    _options(p)
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ARGS...: the command to run")


def _options(p: Any) -> None:
    p.add_argument("--timeout", type=float, metavar="S", help="stop CMD after S seconds")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--out", metavar="FILE", help="also write the summary JSON to FILE")
    p.add_argument("--pcap", metavar="FILE", help="write every packet that crossed (whole IPv4 packets) to FILE")


def cmd_shell(args: Any) -> int:
    """The ``lowlat shell`` command: CMD's exit status (the summary on stderr, or stdout with --json)."""
    import sys

    import argparse

    cmd = list(args.cmd)
    if "--" in cmd:
        # Options written after SCENARIO land in the remainder (argparse stops at the first
        # positional's end): parse what comes before `--` as the shell's own options.
        cut = cmd.index("--")
        own, cmd = cmd[:cut], cmd[cut + 1 :]
        if own:
            q = argparse.ArgumentParser(prog="lowlat shell", add_help=False, exit_on_error=False)
            _options(q)
            try:
                extra, rest = q.parse_known_args(own)
            except (argparse.ArgumentError, SystemExit):
                rest = own
            if rest:
                raise _native.EmulatorError(f"lowlat shell: cannot read options {own}; expected --timeout S, --pcap FILE, --out FILE, --json before `--`") from None
            for k, v in vars(extra).items():
                if v not in (None, False):
                    setattr(args, k, v)
    status, summary = shell(args.scenario, cmd, timeout_s=args.timeout, pcap=args.pcap)
    text = json.dumps(summary, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    if args.json:
        print(text)
    else:
        s = summary["shell"]
        o = s["owd_ms"]

        def fmt(v: float | None) -> str:
            return "-" if v is None else f"{v:.2f}"

        print(f"lowlat shell: {s['inside_addr']} <-> {s['host_addr']}: forwarded {s['forwarded']}, unexpected "
              f"{s['unexpected']}, overflow {s['overflow']} (forward, reverse); one-way delay P50/P95 ms: forward "
              f"{fmt(o['forward']['p50'])}/{fmt(o['forward']['p95'])}, reverse {fmt(o['reverse']['p50'])}/"
              f"{fmt(o['reverse']['p95'])}", file=sys.stderr)
    return status if status >= 0 else 128 - status
