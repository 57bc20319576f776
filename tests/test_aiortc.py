"""Interoperability: a real WebRTC stack (aiortc, the `emu` extra) through `lowlat emulate` over a
capacity step (python/lowlat/examples/aiortc_interop.py)."""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter

import pytest

aiortc = pytest.importorskip("aiortc", reason="aiortc is not installed: pip install 'lowlat[emu]'")

from lowlat.examples.aiortc_interop import phase_rates, run, step_scenario  # noqa: E402

MEDIA_S = 10.0


def test_aiortc_video_crosses_the_relay_and_tshark_decodes_it(tmp_path):
    relay_s = MEDIA_S + 3.0
    pcap = tmp_path / "relay.pcap"
    out = run(step_scenario(relay_s), MEDIA_S, pcap=str(pcap))
    relay = out["summary"]["relay"]
    # Everything (ICE, DTLS, SRTP, SRTCP) went through the relay, both ways, and nothing was refused.
    assert relay["malformed"] == [0, 0] and relay["unexpected"] == 0, relay
    assert relay["forwarded"][0] > 100 and relay["forwarded"][1] > 10, relay
    # Frames arrived, numbered as sent, after at least the path's 20 ms.
    assert out["frames_received"] >= 0.5 * out["frames_sent"], out
    assert out["undecodable"] <= 0.05 * max(out["frames_received"], 1), out
    fd = out["frame_delay_ms"]
    assert fd["p50"] >= 20.0 and fd["p95"] < 2_000.0, fd
    # The link's capacity holds: after the step to 0.3 Mbit/s the relay delivers at most that,
    # before it the call ran faster (aiortc starts near 500 kbit/s).
    before, after = phase_rates(out, relay_s / 2, out["call_start_s"] + MEDIA_S)
    print(f"aiortc: {out['frames_received']}/{out['frames_sent']} frames, frame delay {fd}, "
          f"relay rate {before:.0f} kbit/s before the step, {after:.0f} after")
    assert after <= 300 * 1.05, (before, after)
    assert before > 350, (before, after)

    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed: the pcap decode check needs it")
    fields = subprocess.run(
        ["tshark", "-r", str(pcap), "--enable-heuristic", "rtp_udp", "-T", "fields",
         "-e", "frame.protocols", "-e", "_ws.malformed", "-e", "rtcp.pt", "-e", "rtcp.psfb.fmt"],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()
    # Link type RAW: tshark names it ("raw:") before the IP layer.
    kinds = Counter(line.split("\t")[0].removeprefix("raw:") for line in fields)
    assert kinds["ip:udp:rtp"] > 100 and kinds["ip:udp:rtcp"] > 0 and kinds["ip:udp:stun"] > 0, kinds
    # Malformed only where SRTCP encrypts what Wireshark parses: everything in an RTCP compound
    # past its first 8 clear bytes (in practice the FCI of REMB, PSFB 206 fmt 15, and of NACK,
    # RTPFB 205). RTP headers, STUN and DTLS decode cleanly.
    malformed = [line.split("\t") for line in fields if "malformed" in line]
    print("malformed (protocols, rtcp.pt):", Counter((m[0], m[2]) for m in malformed))
    assert all(m[0].endswith(":rtcp") for m in malformed), malformed[:5]
