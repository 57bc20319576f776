"""The standard benchmark dumbbell in ns-3, for ``lowlat bench --compare-ns3``.

The same topology as ``lowlat_sim::bench``: sender -(10 Gbit/s, 0 ms)- R1 =(bottleneck, 25 ms,
drop-tail of 300 ms worth of 1500-byte packets)= R2 -(10 Gbit/s, 0 ms)- receiver, with no queue disc
(ns-3 installs FqCoDel on each device by default; it is removed). The CBR row is a
UDP on/off source at a constant 95 % of the bottleneck with 1500-byte IP packets; the CUBIC row is
one unbounded ``BulkSend`` over ``ns3::TcpCubic`` with 1448-byte segments (1500-byte IP packets with
the timestamp option) and socket buffers large enough not to limit the window. ns-3's point-to-point devices add a 2-byte PPP header on the wire, the only
difference in bytes from lowlat's run.

ns-3 runs in a child Python process (``python -m lowlat.ns3bench``) so its C++ interpreter's start-up
(seconds) and console noise stay out of lowlat's process; the wall time reported is that of
``Simulator::Run`` alone, the figure comparable with lowlat's ``wall_s`` (and its CPU time, the
thread's, with lowlat's).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from typing import Any

#: Flows of the benchmark that have an ns-3 counterpart.
FLOWS = ("cbr", "cubic")


def available() -> bool:
    """Whether the ``ns3`` package (``pip install 'lowlat[bench]'``) is importable."""
    return importlib.util.find_spec("ns") is not None


def run_dumbbell(rate_mbps: float, flow: str, seconds: float) -> dict[str, Any]:
    """Runs one dumbbell in ns-3 in this process; returns wall seconds and what the receiver got."""
    from ns import ns  # type: ignore[import-untyped,import-not-found,unused-ignore]  # slow: only when asked

    if flow not in FLOWS:
        raise ValueError(f"flow: got {flow!r}, expected one of {', '.join(FLOWS)}")
    tcp = flow == "cubic"
    ns.Config.SetDefault("ns3::TcpL4Protocol::SocketType", ns.StringValue("ns3::TcpCubic"))
    ns.Config.SetDefault("ns3::TcpSocket::SegmentSize", ns.UintegerValue(1448))
    # Socket buffers of a path's worth (RTT plus the 300 ms queue at the bottleneck rate, twice):
    # ns-3's default 128 KiB would cap the window at about 20 Mbit/s over 50 ms, where lowlat's
    # sender is not limited by the receiver.
    buffer = max(131_072, int(2 * rate_mbps * 1e6 * 0.35 / 8))
    ns.Config.SetDefault("ns3::TcpSocket::SndBufSize", ns.UintegerValue(buffer))
    ns.Config.SetDefault("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(buffer))
    nodes = ns.NodeContainer()
    nodes.Create(4)

    def p2p(a: int, b: int, rate: str, delay: str, packets: int) -> Any:
        h = ns.PointToPointHelper()
        h.SetDeviceAttribute("DataRate", ns.StringValue(rate))
        h.SetChannelAttribute("Delay", ns.StringValue(delay))
        h.SetQueue("ns3::DropTailQueue", "MaxSize", ns.QueueSizeValue(ns.QueueSize(f"{packets}p")))
        return h.Install(nodes.Get(a), nodes.Get(b))

    limit = max(1, int(rate_mbps * 1e6 * 0.3 / 8 / 1500))  # 300 ms of 1500-byte packets
    devices = [
        p2p(0, 1, "10Gbps", "0ms", 100_000),
        p2p(1, 2, f"{rate_mbps}Mbps", "25ms", limit),
        p2p(2, 3, "10Gbps", "0ms", 100_000),
    ]
    ns.InternetStackHelper().Install(nodes)
    addresses = ns.Ipv4AddressHelper()
    interfaces = []
    for i, d in enumerate(devices):
        addresses.SetBase(ns.Ipv4Address(f"10.1.{i + 1}.0"), ns.Ipv4Mask("255.255.255.0"))
        interfaces.append(addresses.Assign(d))
    # Assigning addresses installs ns-3's default root queue disc (FqCoDel) on every point-to-point
    # device, in front of its drop-tail queue: remove it, so the bottleneck is the 300 ms drop-tail
    # alone, as in lowlat's dumbbell (with it, CUBIC met CoDel in ns-3 and not in lowlat).
    for d in devices:
        ns.TrafficControlHelper().Uninstall(d)
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()
    qdiscs = 0
    for i in range(4):
        node = nodes.Get(i)
        tc = node.GetObject[ns.TrafficControlLayer]()
        qdiscs += sum(1 for k in range(node.GetNDevices()) if tc.GetRootQueueDiscOnDevice(node.GetDevice(k)))
    factory = "ns3::TcpSocketFactory" if tcp else "ns3::UdpSocketFactory"
    sink = ns.PacketSinkHelper(factory, ns.InetSocketAddress(ns.Ipv4Address.GetAny(), 9).ConvertTo())
    sinks = sink.Install(nodes.Get(3))
    sinks.Start(ns.Seconds(0))
    destination = ns.InetSocketAddress(interfaces[2].GetAddress(1), 9).ConvertTo()
    if tcp:
        source = ns.BulkSendHelper(factory, destination)
        source.SetAttribute("MaxBytes", ns.UintegerValue(0))
        payload = 1448
    else:
        source = ns.OnOffHelper(factory, destination)
        # OnOff counts payload bytes: 95 % of the bottleneck in 1500-byte IP packets, as lowlat.
        source.SetConstantRate(ns.DataRate(f"{rate_mbps * 0.95 * 1472 / 1500}Mbps"), 1472)
        payload = 1472
    source.Install(nodes.Get(0)).Start(ns.Seconds(0))
    ns.Simulator.Stop(ns.Seconds(seconds))
    started, cpu = time.perf_counter(), time.thread_time()
    ns.Simulator.Run()
    wall, cpu = time.perf_counter() - started, time.thread_time() - cpu
    rx_bytes = int(ns.DynamicCast[ns.PacketSink](sinks.Get(0)).GetTotalRx())
    ns.Simulator.Destroy()
    return {"flow": flow, "bottleneck_mbps": rate_mbps, "sim_s": seconds, "wall_s": wall, "cpu_s": cpu,
            "rx_bytes": rx_bytes, "delivered_packets": rx_bytes // payload, "queue_discs": qdiscs}


def run_cases(
    cases: list[tuple[float, str]], seconds: float, repeat: int = 1, repeat_below_s: float = 0.0
) -> list[dict[str, Any]]:
    """Runs `(rate_mbps, flow)` cases in one child process; raises RuntimeError if it fails. A case
    whose first run took under ``repeat_below_s`` seconds runs ``repeat`` times in all and
    reports its best (shortest) run; ``runs`` says how many counted."""
    request = json.dumps({"cases": cases, "seconds": seconds, "repeat": repeat, "repeat_below_s": repeat_below_s})
    done = subprocess.run(
        [sys.executable, "-m", "lowlat.ns3bench", request], capture_output=True, text=True, check=False
    )
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the ns-3 run failed (exit {done.returncode}): {tail}")
    return list(json.loads(lines[-1])["results"])


def main() -> int:
    request = json.loads(sys.argv[1])
    seconds = float(request["seconds"])
    repeat = int(request.get("repeat", 1))
    below = float(request.get("repeat_below_s", 0.0))
    results = []
    for r, f in request["cases"]:
        runs = [run_dumbbell(float(r), str(f), seconds)]
        # ns-3's slow rows (minutes) run once; the fast ones as often as lowlat's, for the same
        # best-of-N statistic on both sides.
        while runs[0]["wall_s"] < below and len(runs) < repeat:
            runs.append(run_dumbbell(float(r), str(f), seconds))
        best = min(runs, key=lambda x: float(x["wall_s"]))
        results.append({**best, "cpu_s": min(float(x["cpu_s"]) for x in runs), "runs": len(runs)})
    print(json.dumps({"results": results}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
