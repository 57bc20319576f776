"""Plots of a run, as PNG files (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

if TYPE_CHECKING:
    import numpy as np

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
    if flows["flow"].nunique() > 0:
        ax_owd.legend(loc="upper right", fontsize="small", title="flow", title_fontsize="small")
    ax_owd.set_xlabel("time (s)")
    for ax in (ax_rate, ax_queue, ax_owd):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    path = out_dir / "overview.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]


def _media_panels(result: "Result", axes: Any, title: str) -> None:
    """Rate vs capacity, bottleneck queueing delay, frame delay: the SCReAM talk's three views."""
    links = result.link_series
    flows = result.flow_series
    video_ids = [f["id"] for f in result.summary["flows"] if f["kind"] == "rtp-video"]
    ax_rate, ax_queue, ax_frame = axes
    bott = links[links["link"] == "bottleneck"]
    ax_rate.step(bott["t_s"], bott["capacity_kbps"] / 1e3, where="post", color="black", label="capacity")
    for fid in video_ids:
        g = flows[flows["flow"] == fid]
        ax_rate.plot(g["t_s"], g["recv_kbps"] / 1e3, label=f"{fid}")
    ax_rate.set_ylabel("throughput Mbit/s")
    ax_rate.set_ylim(bottom=0)
    ax_rate.set_title(title)
    ax_rate.legend(loc="upper right", fontsize="x-small")
    ax_queue.plot(bott["t_s"], bott["queue_delay_ms"], color="tab:red")
    ax_queue.set_ylabel("queue delay ms")
    ax_queue.set_ylim(bottom=0)
    for fid in video_ids:
        g = flows[flows["flow"] == fid]
        ax_frame.plot(g["t_s"], g["frame_delay_ms"], label=f"{fid}")
    ax_frame.set_ylabel("frame delay ms")
    ax_frame.set_ylim(bottom=0)
    ax_frame.set_xlabel("time (s)")
    for ax in axes:
        ax.grid(alpha=0.3)


def plot_media(result: "Result", out_dir: Path) -> list[Path]:
    """``media.png`` for runs with video flows: throughput vs capacity, queue and frame delay."""
    if not any(f["kind"] == "rtp-video" for f in result.summary["flows"]):
        return []
    ccs = sorted({f["cc"] for f in result.summary["flows"] if f["kind"] == "rtp-video"})
    fig, axes = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    _media_panels(result, axes, f"{result.summary['scenario']}: {', '.join(ccs)}")
    fig.tight_layout()
    path = out_dir / "media.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]


def comparison_figure(results: dict[str, "Result"]) -> Any:
    """The figure of :func:`plot_comparison`: one column per controller, rows as in
    :func:`plot_media`, each row's y range fitted to every controller's data."""
    n = len(results)
    fig, axes = plt.subplots(3, n, figsize=(4.5 * n, 8), sharex=True, squeeze=False)
    for i, (cc, result) in enumerate(results.items()):
        _media_panels(result, axes[:, i], f"{result.summary['scenario']}: {cc}")
    # One y range per row, fitted to every controller's data (a shared axis frozen at the first
    # panel's range cut the others' peaks off).
    for row in axes:
        tops = [ax.dataLim.y1 for ax in row if ax.has_data()]
        top = max(tops, default=0.0)
        if 0 < top < float("inf"):
            for ax in row:
                ax.set_ylim(0, top * 1.05)
    fig.tight_layout()
    return fig


def plot_comparison(results: dict[str, "Result"], out_dir: Path) -> list[Path]:
    """``comparison.png``: one column per controller, rows as in :func:`plot_media`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    fig = comparison_figure(results)
    path = out_dir / "comparison.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]


def cdf_steps(sorted_values: "np.ndarray", max_points: int = 2000) -> tuple["np.ndarray", "np.ndarray"]:
    """The empirical CDF of ``sorted_values`` (ascending) as the points of a post-step curve,
    ``(x, F(x))``, at most ``max_points`` of them (at least 2). Above that, the points at evenly
    spaced ranks, the first and the last among them: the curve drawn from them is within
    ``1 / (max_points - 1)`` of the exact one everywhere, and a figure of a million samples draws
    in a fraction of the time (drawing every sample took over a second)."""
    import numpy as np

    n = len(sorted_values)
    if n <= max_points:
        return sorted_values, np.arange(1, n + 1) / n
    ranks = np.unique(np.linspace(0, n - 1, max(2, max_points)).round().astype(np.int64))
    return sorted_values[ranks], (ranks + 1) / n
