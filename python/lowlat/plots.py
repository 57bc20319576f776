"""Plots of a run, as PNG files (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

if TYPE_CHECKING:
    from .results import Result


def plot_run(result: "Result", out_dir: Path) -> list[Path]:
    """``overview.png``: bottleneck capacity and flow rates, queueing delay, one-way delay."""
    links = result.link_series
    flows = result.flow_series
    fig, (ax_rate, ax_queue, ax_owd) = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    bott = links[links["link"] == "bottleneck"]
    ax_rate.step(bott["t_s"], bott["capacity_kbps"] / 1e3, where="post", color="black", label="capacity")
    for fid, g in flows.groupby("flow", sort=False):
        ax_rate.plot(g["t_s"], g["recv_kbps"] / 1e3, label=f"{fid} received")
    ax_rate.set_ylabel("Mbit/s")
    ax_rate.set_ylim(bottom=0)
    ax_rate.legend(loc="upper right", fontsize="small")
    ax_rate.set_title(f"{result.summary['scenario']} (seed {result.summary['seed']})")
    ax_queue.plot(bott["t_s"], bott["queue_delay_ms"], label="mean")
    ax_queue.plot(bott["t_s"], bott["queue_delay_max_ms"], alpha=0.5, label="max")
    ax_queue.set_ylabel("bottleneck queue ms")
    ax_queue.set_ylim(bottom=0)
    ax_queue.legend(loc="upper right", fontsize="small")
    for fid, g in flows.groupby("flow", sort=False):
        ax_owd.plot(g["t_s"], g["owd_ms"], label=str(fid))
    ax_owd.set_ylabel("one-way delay ms")
    ax_owd.set_ylim(bottom=0)
    ax_owd.set_xlabel("time (s)")
    for ax in (ax_rate, ax_queue, ax_owd):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    path = out_dir / "overview.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]
