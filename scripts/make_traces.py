"""Generates the small synthetic traces lowlat ships (python/lowlat/traces/), deterministically.

- cellular-like.mahi: mahimahi delivery opportunities (ms timestamps of 1500-byte opportunities),
  30 s, a rate that wanders between about 2 and 20 Mbit/s with short outages.
- wifi-like.rate: the two-column `<seconds> <Mbit/s>` format, 60 s at 0.2 s steps, about 25 Mbit/s
  with fades and two deep drops.

Run: python3 scripts/make_traces.py
"""

import math
import random
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "python" / "lowlat" / "traces"


def cellular_like(seed: int = 1, seconds: int = 30) -> list[int]:
    rng = random.Random(seed)
    stamps: list[int] = []
    rate = 10.0  # Mbit/s
    carry = 0.0
    for ms in range(1, seconds * 1000 + 1):
        if ms % 100 == 0:  # the rate wanders every 100 ms
            rate = min(20.0, max(2.0, rate * math.exp(rng.gauss(0.0, 0.25))))
        outage = 12_000 <= ms < 12_400 or 21_000 <= ms < 21_150
        if outage:
            continue
        carry += rate * 1e6 / 8 / 1500 / 1000  # opportunities this ms
        while carry >= 1.0:
            stamps.append(ms)
            carry -= 1.0
    return stamps


def wifi_like(seed: int = 2, seconds: int = 60) -> list[tuple[float, float]]:
    rng = random.Random(seed)
    rows = []
    for i in range(1, seconds * 5 + 1):
        t = i * 0.2
        base = 25.0 + 6.0 * math.sin(t / 7.0) + rng.gauss(0.0, 2.0)
        if 20.0 <= t < 23.0 or 44.0 <= t < 45.0:
            base *= 0.1
        rows.append((round(t, 3), round(max(0.5, base), 3)))
    return rows


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "cellular-like.mahi").write_text("".join(f"{s}\n" for s in cellular_like()))
    (OUT / "wifi-like.rate").write_text("".join(f"{t} {r}\n" for t, r in wifi_like()))


if __name__ == "__main__":
    main()
