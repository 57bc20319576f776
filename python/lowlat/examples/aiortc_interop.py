"""A real WebRTC stack through ``lowlat emulate``: aiortc (pip install 'lowlat[emu]') sends a VP8
video track of synthetic frames from one RTCPeerConnection to another in the same process, over
the relay and a scenario with a capacity step.

Signalling is loopback (the two peers exchange SDP directly). ICE is restricted to host
candidates on 127.0.0.1 (aioice's host-address lookup is replaced for the run); the answer's
candidate port is rewritten to the relay's listening port, and the offer's to a port that
swallows everything (so the answerer cannot reach the offerer around the relay), so the offerer's checks, DTLS, SRTP and
SRTCP all go to the relay, which forwards them to the answerer's real port through the forward
path; the answerer's packets go back through the reverse path (it learns the relay's address as a
peer-reflexive candidate). Each frame carries its number in a strip of flat 16x16 blocks (16
bits, black or white, which survive VP8 at any quantiser), so the receiver measures each frame's
delay from its capture, on this process's clock.

Run it: ``python -m lowlat.examples.aiortc_interop [--duration 12] [--pcap relay.pcap]``.

Zhuge cannot sit in the relay for aiortc: aiortc 1.16 sends no transport-wide sequence numbers
(its video has only the mid and abs-send-time header extensions) and adapts its rate to REMB,
not to transport-cc, so the AP has nothing to read and its feedback nothing to drive;
:func:`run` refuses it with that reason.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import socket
import statistics
import threading
import time
from fractions import Fraction
from typing import Any

import numpy as np

from lowlat.emulate import emulate

W, H = 320, 240
#: Bits of the frame number, one 16x16 block each, in the top macroblock row.
BITS = 16
MB = 16


def step_scenario(duration_s: float, high: str = "1.5 Mbit/s", low: str = "0.3 Mbit/s", delay: str = "20 ms") -> dict[str, Any]:
    """A bottleneck stepping from ``high`` to ``low`` at half the run, ``delay`` each way, 300 ms
    drop-tail; a 2 Mbit/s reverse path. One flow entry names the relayed traffic."""
    return {
        "name": "aiortc-step",
        "duration": f"{duration_s} s",
        "bottleneck": {
            "schedule": [{"at": "0 s", "rate": high}, {"at": f"{duration_s / 2} s", "rate": low}],
            "delay": delay,
            "queue": {"kind": "droptail", "limit": "300 ms"},
        },
        "reverse": {"rate": "2 Mbit/s", "delay": delay},
        "flows": [{"id": "aiortc", "kind": "cbr", "rate": "1 Mbit/s"}],
    }


def _numbered_frame(n: int, rng: np.random.Generator) -> np.ndarray:
    """A yuv420p image: a moving gradient with mild noise (the encoder has work at any rate yet
    can meet its target) and frame number ``n`` in flat blocks along the top."""
    y, x = np.mgrid[0 : H * 3 // 2, 0:W]
    img = ((x + y + 4 * n) % 256 + rng.integers(0, 24, (H * 3 // 2, W))).clip(0, 255).astype(np.uint8)
    img[:MB, :] = 128
    for b in range(BITS):
        img[:MB, b * MB : (b + 1) * MB] = 255 if (n >> b) & 1 else 0
    img[H:, :] = 128  # grey chroma
    out: np.ndarray = img
    return out


def _frame_number(y: np.ndarray) -> int:
    n = 0
    for b in range(BITS):
        if y[4 : MB - 4, b * MB + 4 : (b + 1) * MB - 4].mean() > 128:
            n |= 1 << b
    return n


def _free_udp_port() -> int:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port: int = s.getsockname()[1]
    s.close()
    return port


async def _call(relay_port: int, start_relay: Any, media_s: float) -> dict[str, Any]:
    from aiortc import RTCPeerConnection, RTCSessionDescription, VideoStreamTrack
    from av import VideoFrame

    sent: dict[int, float] = {}
    delays: list[float] = []
    bad = 0

    class NumberedVideo(VideoStreamTrack):  # type: ignore[misc,unused-ignore]
        def __init__(self) -> None:
            super().__init__()
            self.n = 0
            self.rng = np.random.default_rng(1)

        async def recv(self) -> VideoFrame:
            pts, time_base = await self.next_timestamp()  # 30 frames/s
            frame = VideoFrame.from_ndarray(_numbered_frame(self.n, self.rng), format="yuv420p")
            frame.pts, frame.time_base = pts, time_base
            sent[self.n] = time.monotonic()
            self.n += 1
            return frame

    pc1, pc2 = RTCPeerConnection(), RTCPeerConnection()
    pc1.addTrack(NumberedVideo())
    done = asyncio.Event()

    @pc2.on("track")  # type: ignore[misc,untyped-decorator,unused-ignore]
    def on_track(track: Any) -> None:
        async def consume() -> None:
            nonlocal bad
            while not done.is_set():
                try:
                    frame = await asyncio.wait_for(track.recv(), 1.0)
                except Exception:
                    continue
                now = time.monotonic()
                n = _frame_number(frame.to_ndarray(format="yuv420p")[:H])
                if n in sent:
                    delays.append((now - sent[n]) * 1e3)
                else:
                    bad += 1

        asyncio.ensure_future(consume())

    await pc1.setLocalDescription(await pc1.createOffer())
    # The answerer must not reach the offerer directly (it would, and ICE would pick that path):
    # its copy of the offer names a port that swallows everything; it learns the offerer's real
    # address through the relay, as a peer-reflexive candidate.
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("127.0.0.1", 0))
    offer = re.sub(
        r"(a=candidate:\S+ 1 udp \d+ 127\.0\.0\.1) \d+ typ host",
        rf"\g<1> {sink.getsockname()[1]} typ host",
        pc1.localDescription.sdp,
    )
    await pc2.setRemoteDescription(RTCSessionDescription(sdp=offer, type="offer"))
    await pc2.setLocalDescription(await pc2.createAnswer())
    answer = pc2.localDescription.sdp
    ports = set(re.findall(r"a=candidate:\S+ 1 udp \d+ 127\.0\.0\.1 (\d+) typ host", answer))
    if len(ports) != 1:
        raise RuntimeError(f"expected one host candidate on 127.0.0.1 in the answer, got ports {ports}")
    (answer_port,) = ports
    start_relay(int(answer_port))
    rewritten = re.sub(rf"(127\.0\.0\.1) {answer_port} typ host", rf"\g<1> {relay_port} typ host", answer)
    t0 = time.monotonic()
    await pc1.setRemoteDescription(RTCSessionDescription(sdp=rewritten, type="answer"))
    await asyncio.sleep(media_s)
    done.set()
    await pc1.close()
    await pc2.close()
    sink.close()
    return {"delays_ms": delays, "frames_sent": len(sent), "undecodable": bad, "t0": t0}


def run(scenario: dict[str, Any], media_s: float, *, pcap: str | None = None) -> dict[str, Any]:
    """One call through the relay: the relay's summary and the receiver's frame delays."""
    import aioice.ice

    if scenario.get("bottleneck", {}).get("assist", "none") != "none":
        raise ValueError(
            "aiortc sends no transport-wide sequence numbers and adapts to REMB, not transport-cc: "
            "Zhuge in the relay has nothing to read (expected assist = \"none\")"
        )
    relay_port = _free_udp_port()
    box: dict[str, Any] = {}
    started = threading.Event()
    relay_s = media_s + 3.0

    def start_relay(answer_port: int) -> None:
        def go() -> None:
            try:
                box["result"] = emulate(scenario, f"127.0.0.1:{relay_port}", f"127.0.0.1:{answer_port}", duration_s=relay_s, pcap=pcap)
            except Exception as e:  # reported below
                box["error"] = e

        box["t_relay"] = time.monotonic()
        threading.Thread(target=go, daemon=True).start()
        started.set()

    original = aioice.ice.get_host_addresses
    aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: ["127.0.0.1"]
    try:
        call = asyncio.run(_call(relay_port, start_relay, media_s))
    finally:
        aioice.ice.get_host_addresses = original
    deadline = time.monotonic() + relay_s + 10
    while "result" not in box and "error" not in box and time.monotonic() < deadline:
        time.sleep(0.1)
    if "error" in box:
        raise box["error"]
    result = box["result"]
    d = call["delays_ms"]
    fwd = result.summary["flows"][0]
    series = result.flow_series
    offset = call["t0"] - box["t_relay"]
    return {
        "summary": result.summary,
        "frames_sent": call["frames_sent"],
        "frames_received": len(d),
        "undecodable": call["undecodable"],
        "frame_delay_ms": {
            "p50": statistics.median(d) if d else None,
            "p95": float(np.percentile(d, 95)) if d else None,
            "max": max(d) if d else None,
        },
        "relay_forward_kbps": fwd["throughput_kbps"],
        "call_start_s": offset,
        "recv_kbps_per_bin": [
            (t, r) for f, t, r in zip(series["flow"], series["t_s"], series["recv_kbps"]) if f == fwd["id"]
        ],
    }


def phase_rates(out: dict[str, Any], step_s: float, end_s: float) -> tuple[float, float]:
    """Mean received rate at the relay (kbit/s) before and after the step, from the call's start."""
    start = out["call_start_s"] + 1.0
    bins = out["recv_kbps_per_bin"]
    before = [r for t, r in bins if start <= t < step_s]
    after = [r for t, r in bins if step_s + 1.0 <= t < end_s]
    return (statistics.fmean(before) if before else 0.0, statistics.fmean(after) if after else 0.0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--duration", type=float, default=12.0, help="seconds of media (default 12)")
    p.add_argument("--pcap", help="write the relay's pcap here")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    relay_s = a.duration + 3.0
    sc = step_scenario(relay_s)
    out = run(sc, a.duration, pcap=a.pcap)
    before, after = phase_rates(out, relay_s / 2, out["call_start_s"] + a.duration)
    fd = out["frame_delay_ms"]
    if a.json:
        out.pop("summary")
        print(json.dumps(out, indent=2))
    print(
        f"aiortc through lowlat emulate (1.5 -> 0.3 Mbit/s at {relay_s / 2:.1f} s, 20 ms each way): "
        f"{out['frames_received']}/{out['frames_sent']} frames, frame delay P50 {fd['p50']:.1f} ms, "
        f"P95 {fd['p95']:.1f} ms, max {fd['max']:.1f} ms; relay forward rate {before:.0f} kbit/s before the step, "
        f"{after:.0f} after (mean {out['relay_forward_kbps']:.0f}); bottleneck drops "
        f"{out['summary']['links'][0]['drops']}, queueing delay P95 {out['summary']['links'][0]['queue_delay_ms']['p95']:.1f} ms"
    )


if __name__ == "__main__":
    main()
