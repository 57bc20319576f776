"""lowlat shell: a command in a network namespace behind the scenario's links (TUN devices)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import statistics
import sys
import threading
import time

import pytest

from lowlat import _native
from lowlat.cli import main
from lowlat.shell import check_permitted, shell

WHY = check_permitted()
needs_shell = pytest.mark.skipif(WHY is not None, reason=WHY or "")

# 4 Mbit/s, 20 ms each way (the reverse path defaults to the bottleneck's rate and delay).
SCENARIO = {
    "name": "shell-constant",
    "duration": "20 s",
    "bottleneck": {"rate": "4 Mbit/s", "delay": "20 ms"},
    "flows": [{"id": "app", "kind": "cbr", "rate": "1 Mbit/s"}],
}

# Inside the namespace: 20 echo probes (RTT), then 1.5 s of 8 Mbit/s CBR (twice the link) to
# the sink. Prints the RTTs in ms.
CLIENT = r"""
import os, socket, sys, time
host = os.environ["LOWLAT_SHELL_HOST"]
echo_port, sink_port = int(sys.argv[1]), int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2.0)
rtts = []
for i in range(20):
    t = time.monotonic()
    s.sendto(i.to_bytes(4, "big") + bytes(96), (host, echo_port))
    s.recvfrom(2048)
    rtts.append((time.monotonic() - t) * 1e3)
    time.sleep(0.02)
print(" ".join(f"{r:.3f}" for r in rtts), flush=True)
payload = bytes(972)  # 1000 B with the IPv4 and UDP headers
gap = 1000 * 8 / 8e6
t0 = time.monotonic()
n = 0
while time.monotonic() - t0 < 1.5:
    due = t0 + n * gap
    while time.monotonic() < due:
        pass
    s.sendto(payload, (host, sink_port))
    n += 1
"""


def test_addresses_are_distinct_pairs():
    from lowlat.shell import addresses

    pairs = {addresses(p) for p in range(1, 5000)}
    assert len(pairs) == 4999
    inside, host = addresses(1234)
    assert inside != host and inside.startswith("10.251.")


@pytest.mark.skipif(WHY is None, reason="this machine permits namespaces and TUN (root)")
def test_unpermitted_is_a_one_line_error():
    with pytest.raises(_native.EmulatorError, match="lowlat shell needs"):
        shell(SCENARIO, ["true"])


@needs_shell
def test_shell_errors_are_one_line(capsys):
    assert main(["shell", "dumbbell-cbr"]) == 2
    assert "no command" in capsys.readouterr().err
    bad = dict(SCENARIO, bottleneck={"rate": "4 Mbit/s", "delay": "20 ms", "assist": "zhuge"})
    with pytest.raises(_native.EmulatorError):
        shell(bad, ["true"])


@needs_shell
def test_echo_and_cbr_through_the_shell_show_the_delay_and_the_rate(tmp_path):
    echo = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    echo.bind(("0.0.0.0", 0))
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("0.0.0.0", 0))
    sink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    for s in (echo, sink):
        s.settimeout(0.2)
    stop = threading.Event()
    arrivals: list[tuple[float, int]] = []

    def serve_echo() -> None:
        while not stop.is_set():
            try:
                data, addr = echo.recvfrom(2048)
            except OSError:
                continue
            echo.sendto(data, addr)

    def serve_sink() -> None:
        while not stop.is_set():
            try:
                data, _ = sink.recvfrom(2048)
            except OSError:
                continue
            arrivals.append((time.monotonic(), len(data) + 28))

    threads = [threading.Thread(target=f, daemon=True) for f in (serve_echo, serve_sink)]
    for t in threads:
        t.start()
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    out = tmp_path / "rtts.txt"
    try:
        # The command's stdout goes to a file (through sh) for the RTTs.
        status, summary = shell(
            SCENARIO,
            ["sh", "-c", f'"{sys.executable}" {script} {echo.getsockname()[1]} {sink.getsockname()[1]} > {out}'],
            timeout_s=30,
            pcap=tmp_path / "shell.pcap",
        )
        time.sleep(0.5)  # the queue's last packets
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert status == 0, summary
    rtts = [float(x) for x in out.read_text().split()]
    assert len(rtts) == 20
    # 20 ms each way plus 128 B serialized at 4 Mbit/s each way (0.26 ms): 40.5 ms.
    med = statistics.median(rtts)
    assert 40.0 <= med <= 44.0, rtts
    assert min(rtts) >= 40.0, rtts
    sh = summary["shell"]
    assert sh["forwarded"][0] >= 20 + 500 and sh["forwarded"][1] == 20
    assert 20.0 <= sh["owd_ms"]["reverse"]["p50"] <= 22.0
    # The CBR at twice the link: the sink receives the link's 4 Mbit/s (IP bytes), the rest dropped.
    assert len(arrivals) > 300
    span = arrivals[-1][0] - arrivals[0][0]
    rate = sum(b for _, b in arrivals[1:]) * 8 / span
    print(f"shell: RTT median {med:.2f} ms (min {min(rtts):.2f}), CBR at the sink {rate / 1e6:.3f} Mbit/s, "
          f"forward one-way P50 {sh['owd_ms']['forward']['p50']:.1f} ms, {summary['links'][0]}")
    assert 3.8e6 <= rate <= 4.1e6, rate
    assert summary["links"][0]["drops"] > 0, "the excess was dropped at the bottleneck"
    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed: the pcap decode check needs it")
    fields = subprocess.run(
        ["tshark", "-r", str(tmp_path / "shell.pcap"), "-T", "fields", "-e", "frame.protocols", "-e", "_ws.malformed"],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()
    # Every packet that crossed, as whole IPv4/UDP packets: the echoes both ways and the CBR.
    assert len(fields) == sh["forwarded"][0] + sh["forwarded"][1]
    # Link type RAW: tshark names it ("raw:") before the IP layer.
    assert all(f.removeprefix("raw:").startswith("ip:udp") and "malformed" not in f for f in fields), fields[:3]


@needs_shell
def test_the_cli_reads_options_after_the_scenario_and_returns_the_commands_status(tmp_path, capsys):
    pcap, out = tmp_path / "s.pcap", tmp_path / "s.json"
    assert main(["shell", "dumbbell-cbr", "--pcap", str(pcap), "--out", str(out), "--", "sh", "-c", "exit 3"]) == 3
    assert pcap.exists() and '"exit_status": 3' in out.read_text()
    assert main(["shell", "dumbbell-cbr", "--bogus", "--", "true"]) == 2
    assert "cannot read options" in capsys.readouterr().err
