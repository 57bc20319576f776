"""lowlat emulate: the UDP relay on loopback, both directions, results and errors."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
import time

import pytest

from lowlat import ScenarioError
from lowlat.cli import main
from lowlat.emulate import emulate

SCENARIO = {
    "name": "emu-echo",
    "duration": "1.5 s",
    "bottleneck": {"rate": "2 Mbit/s", "delay": "20 ms"},
    "reverse": {"rate": "2 Mbit/s", "delay": "30 ms"},
    "flows": [{"id": "app", "kind": "cbr", "rate": "100 kbit/s", "packet_size": "200 B"}],
}


def _free_port() -> int:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_datagrams_cross_both_paths_with_the_scenarios_delays(tmp_path):
    echo = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    echo.bind(("127.0.0.1", 0))
    echo.settimeout(0.1)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                data, addr = echo.recvfrom(2048)
            except OSError:
                continue
            echo.sendto(data, addr)

    threading.Thread(target=serve, daemon=True).start()
    listen = f"127.0.0.1:{_free_port()}"
    out: dict = {}
    pcap = tmp_path / "relay.pcap"

    def relay():
        out["result"] = emulate(SCENARIO, listen, f"127.0.0.1:{echo.getsockname()[1]}", pcap=pcap)

    t = threading.Thread(target=relay)
    t.start()
    time.sleep(0.2)
    client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    client.settimeout(0.5)
    host, port = listen.split(":")
    rtts = []
    for i in range(20):
        sent = time.perf_counter()
        client.sendto(b"x" * 200, (host, int(port)))
        try:
            client.recvfrom(2048)
            rtts.append(time.perf_counter() - sent)
        except socket.timeout:
            pass
    client.sendto(b"", (host, int(port)))  # empty: malformed
    t.join()
    stop.set()
    r = out["result"]
    relay_counts = r.summary["relay"]
    assert relay_counts["malformed"] == [1, 0]
    assert relay_counts["forwarded"][0] == 20 and relay_counts["forwarded"][1] == len(rtts) > 15
    # 20 + 30 ms propagation plus 0.8 ms of service each way; a loaded machine adds some.
    assert 0.050 <= min(rtts) < 0.080
    flows = {f["id"]: f for f in r.summary["flows"]}
    assert flows["app"]["owd_ms"]["p50"] == pytest.approx(20.8, abs=1.0)
    assert flows["app.reverse"]["owd_ms"]["p50"] == pytest.approx(30.8, abs=1.0)
    assert r.summary["links"][0]["id"] == "bottleneck"
    written = r.write(tmp_path / "out", plots=False)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["relay"]["forwarded"][0] == 20 and len(written) >= 3
    # Global header + one record per forwarded datagram (16-byte record header, 28 header bytes).
    assert pcap.stat().st_size == 24 + sum(relay_counts["forwarded"]) * (16 + 28 + 200)


def test_bad_addresses_and_assistance_are_one_line_errors(capsys):
    assert main(["emulate", "dumbbell-cbr", "--listen", "nonsense", "--forward", "127.0.0.1:9"]) == 2
    assert "--listen: got 'nonsense'" in capsys.readouterr().err.replace('"', "'")
    bad = dict(SCENARIO, bottleneck=dict(SCENARIO["bottleneck"], assist="zhuge"))
    with pytest.raises(ScenarioError, match="assist"):
        emulate(bad, "127.0.0.1:0", "127.0.0.1:9")


def test_send_and_receive_rtp_through_the_relay(tmp_path):
    from lowlat.emulate import receive, send

    scenario = {
        "name": "rtp-short",
        "duration": "4 s",
        "bottleneck": {"rate": "1 Mbit/s", "delay": "20 ms"},
        "flows": [{"id": "video", "kind": "rtp-video", "cc": "gcc", "rmin": "150 kbit/s", "rmax": "1.5 Mbit/s", "fps": 30}],
    }
    listen, server = f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"
    out: dict = {}
    threads = [
        threading.Thread(target=lambda: out.__setitem__("relay", emulate(scenario, listen, server, pcap=tmp_path / "rtp.pcap"))),
        threading.Thread(target=lambda: out.__setitem__("rx", receive(scenario, server))),
    ]
    for t in threads:
        t.start()
    time.sleep(0.2)
    tx = send(scenario, listen, bind="127.0.0.1:0", duration_s=3.5, cc="nada")
    for t in threads:
        t.join()
    rx, relay = out["rx"], out["relay"].summary["relay"]
    assert tx["cc"] == "nada" and tx["malformed_feedback"] == 0 and rx["malformed"] == 0
    assert rx["frames_received"] > 0.8 * tx["frames_sent"] > 60
    assert rx["feedback_sent"] > 20 and tx["rtt_ms"]["p50"] > 40  # 20 ms each way at least
    # What the relay forwarded is what arrived (give or take the last in flight when each stopped).
    assert 0 <= relay["forwarded"][0] - rx["packets_received"] <= 2
    assert 0 <= rx["feedback_sent"] - relay["forwarded"][1] <= 2
    assert 20 < rx["frame_delay_ms"]["p50"] < 400

    # Wireshark reads the relay's pcap as RTP and RTCP (transport-cc) without malformed packets.
    tshark = shutil.which("tshark")
    if tshark is None:
        pytest.skip("tshark is not installed: the pcap decode check needs it")
    port = server.split(":")[1]
    cmd = [tshark, "-r", str(tmp_path / "rtp.pcap"), "-d", f"udp.port=={port},rtp", "-T", "fields", "-e", "_ws.col.Protocol", "-e", "_ws.malformed", "-e", "rtcp.rtpfb.fmt"]
    lines = subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.splitlines()
    protocols = [line.split("\t")[0] for line in lines]
    assert protocols.count("RTP") == relay["forwarded"][0] and protocols.count("RTCP") == relay["forwarded"][1]
    assert not any(line.split("\t")[1] for line in lines), "tshark found malformed packets"
    assert all(line.split("\t")[2] == "15" for line in lines if line.startswith("RTCP")), "transport-cc feedback"


def test_ctrl_c_ends_the_relay_and_writes_the_results(tmp_path):
    import os
    import signal
    import sys

    listen = f"127.0.0.1:{_free_port()}"
    cmd = [sys.executable, "-m", "lowlat.cli", "emulate", "dumbbell-cbr", "--listen", listen, "--forward", "127.0.0.1:9", "--out", str(tmp_path), "--no-plots"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    assert "Ctrl-C to stop" in p.stderr.readline()
    time.sleep(1.0)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    summary = json.loads((tmp_path / "summary.json").read_text())
    # dumbbell-cbr lasts 60 s: the run ended at the interrupt.
    assert 0.8 < summary["sim_duration_s"] < 10
    assert "relay: received [0, 0]" in out


def test_send_and_receive_write_the_results_contract_and_fastack_answers_for_the_client(tmp_path):
    """A bulk flow over lowlat's transport through the relay with FastAck: both endpoints write
    summary.json and the flow series as a simulated run's --out folder."""
    from lowlat.emulate import receive, send

    scenario = {
        "name": "bulk-fastack",
        "duration": "2 s",
        "bottleneck": {"rate": "2 Mbit/s", "delay": "20 ms", "assist": "fastack"},
        "reverse": {"rate": "2 Mbit/s", "delay": "20 ms"},
        "flows": [{"id": "bulk", "kind": "bulk", "cc": "cubic", "packet_size": "1200 B"}],
    }
    listen, server = f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"
    out: dict = {}
    threads = [
        threading.Thread(target=lambda: out.__setitem__("relay", emulate(scenario, listen, server, duration_s=2.3))),
        threading.Thread(target=lambda: out.__setitem__("rx", receive(scenario, server, out=tmp_path / "rx"))),
    ]
    for t in threads:
        t.start()
    time.sleep(0.2)
    tx = send(scenario, listen, bind="127.0.0.1:0", out=tmp_path / "tx", plots=False)
    for t in threads:
        t.join()
    rx, relay = out["rx"], out["relay"].summary["relay"]
    assert tx["kind"] == "bulk" and tx["cc"] == "cubic" and tx["malformed_feedback"] == 0
    assert relay["forwarded"][1] == 0 and relay["assist_feedback"] > 50, "the AP acknowledged, the client's ACKs dropped"
    assert tx["acks_received"] > 50 and tx["min_rtt_ms"] < 20, "FastAck's ACKs skip both 20 ms propagations"
    assert rx["packets_received"] > 100 and rx["malformed"] == 0
    for side, report in (("tx", tx), ("rx", rx)):
        summary = json.loads((tmp_path / side / "summary.json").read_text())
        assert summary["endpoint"] == report
        (flow,) = summary["flows"]
        assert flow["id"] == "bulk" and flow["kind"] == "bulk"
        assert any((tmp_path / side / f"flows.{ext}").exists() for ext in ("csv", "parquet"))
    assert (tmp_path / "rx" / "overview.png").exists(), "the plots of a run without links"
    assert json.loads((tmp_path / "rx" / "summary.json").read_text())["flows"][0]["packets_received"] == rx["packets_received"]
    # An existing results folder is not overwritten without force.
    with pytest.raises(Exception, match="not empty"):
        send(scenario, listen, out=tmp_path / "tx", duration_s=0.1)


def test_the_relay_speaks_ipv6_and_its_pcap_decodes(tmp_path):
    try:
        echo = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        echo.bind(("::1", 0))
    except OSError as e:
        pytest.skip(f"no IPv6 loopback here: {e}")
    echo.settimeout(0.1)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                data, addr = echo.recvfrom(2048)
            except OSError:
                continue
            echo.sendto(data, addr)

    threading.Thread(target=serve, daemon=True).start()
    probe = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    probe.bind(("::1", 0))
    port = probe.getsockname()[1]
    probe.close()
    out: dict = {}
    pcap = tmp_path / "v6.pcap"
    t = threading.Thread(target=lambda: out.__setitem__("r", emulate(SCENARIO, f"[::1]:{port}", f"[::1]:{echo.getsockname()[1]}", duration_s=1.0, pcap=pcap)))
    t.start()
    time.sleep(0.2)
    client = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    client.settimeout(1.0)
    answers = 0
    for i in range(5):
        client.sendto(b"hello %d" % i, ("::1", port))
        try:
            answers += client.recvfrom(64)[0] == b"hello %d" % i
        except OSError:
            pass
    t.join()
    stop.set()
    relay = out["r"].summary["relay"]
    assert answers == 5 and relay["forwarded"] == [5, 5]
    tshark = shutil.which("tshark")
    if tshark is None:
        pytest.skip("tshark is not installed: the pcap decode check needs it")
    cmd = [tshark, "-r", str(pcap), "-o", "udp.check_checksum:TRUE", "-T", "fields", "-e", "ipv6.src", "-e", "udp.checksum.status", "-e", "_ws.malformed"]
    lines = subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.splitlines()
    assert len(lines) == 10
    assert all(line.split("\t")[0] == "::1" for line in lines)
    assert all(line.split("\t")[1] == "1" for line in lines), f"UDP checksums verify (status 1 = good): {lines}"
    assert not any(line.split("\t")[2] for line in lines)
