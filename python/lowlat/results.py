"""Results of a run: the summary (the results contract), series as DataFrames, files and tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd


class Result:
    """One run's results.

    - ``summary``: the ``summary.json`` object (see ARCHITECTURE.md, "The results contract").
    - ``flow_series``: one row per flow and 200 ms bin: ``flow, t_s, send_kbps, recv_kbps, owd_ms,
      frame_delay_ms, frames``.
    - ``link_series``: one row per link and bin: ``link, t_s, capacity_kbps, throughput_kbps,
      queue_delay_ms, queue_delay_max_ms, drops``.
    - ``predictions``: Zhuge's per-packet predictions with the delays the packets had: ``flow, seq,
      arrival_s, predicted_ms, actual_ms`` (empty without Zhuge).
    """

    def __init__(
        self,
        summary: dict[str, Any],
        flow_series: dict[str, list],
        link_series: dict[str, list],
        *,
        summary_json: str | None = None,
        predictions: dict[str, list] | None = None,
    ) -> None:
        self.summary = summary
        self.flow_series = pd.DataFrame(flow_series)
        self.link_series = pd.DataFrame(link_series)
        self.predictions = pd.DataFrame(predictions or {})
        self._summary_json = summary_json or json.dumps(summary, indent=2)

    @property
    def flows(self) -> pd.DataFrame:
        """The per-flow summary as a flat DataFrame (``owd_ms_p95``, ...)."""
        return pd.DataFrame([flatten(f) for f in self.summary["flows"]])

    @property
    def links(self) -> pd.DataFrame:
        """The per-link summary as a flat DataFrame (``queue_delay_ms_p95``, ...)."""
        return pd.DataFrame([flatten(link) for link in self.summary["links"]])

    def table(self) -> str:
        """A plain-text table of the flows and the links that carried traffic."""
        f = self.flows
        flow_cols = {
            "id": "flow",
            "kind": "kind",
            "cc": "cc",
            "throughput_kbps": "thr kbit/s",
            "loss_ratio": "loss",
            "owd_ms_mean": "owd mean ms",
            "owd_ms_p50": "owd p50",
            "owd_ms_p95": "owd p95",
            "owd_ms_p99": "owd p99",
            "rtt_ms_p95": "rtt p95",
            "frame_delay_ms_mean": "frame mean ms",
            "frame_delay_ms_p90": "frame p90",
            "frame_delay_ms_p99": "frame p99",
            "fps_mean": "fps",
            "ratio_rtt_over_200ms": "rtt>200ms",
            "ratio_net_rtt_over_200ms": "net rtt>200ms",
            "ratio_frame_delay_over_400ms": "frame>400ms",
            "ratio_fps_below_10": "fps<10",
        }
        ft = f[[c for c in flow_cols if c in f and f[c].notna().any()]].rename(columns=flow_cols)
        links = self.links
        links = links[(links["utilization"] > 0) | (links["drops"] > 0)]
        link_cols = {
            "id": "link",
            "capacity_mean_kbps": "capacity kbit/s",
            "utilization": "util",
            "queue_delay_ms_mean": "queue mean ms",
            "queue_delay_ms_p95": "queue p95",
            "queue_delay_ms_max": "queue max",
            "drops": "drops",
        }
        lt = links[[c for c in link_cols if c in links]].rename(columns=link_cols)
        fmt = {"float_format": number, "index": False}
        head = (
            f"scenario {self.summary['scenario']}  seed {self.summary['seed']}  "
            f"{self.summary['sim_duration_s']:g} s simulated in {self.summary['wall_s']:.3f} s wall "
            f"({self.summary['events']} events)"
        )
        parts = [head, "", ft.to_string(**fmt), "", lt.to_string(**fmt)]
        for w in self.summary.get("warnings", []):
            parts.append(f"warning: {w}")
        return "\n".join(parts)

    def write(self, out_dir: str | Path, *, plots: bool = True) -> list[Path]:
        """Writes ``summary.json``, the series (Parquet, or CSV without pyarrow) and the plots."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        written = [out / "summary.json"]
        written[0].write_text(self._summary_json + "\n")
        written += write_frame(self.flow_series, out / "flows")
        written += write_frame(self.link_series, out / "links")
        if len(self.predictions):
            written += write_frame(self.predictions, out / "predictions")
        if plots:
            from .plots import plot_media, plot_run

            written += plot_run(self, out)
            written += plot_media(self, out)
        return written


def number(x: float) -> str:
    """Table format: 3 decimals below 10, 1 above."""
    return f"{x:.3f}" if abs(x) < 10 else f"{x:.1f}"


COMPARISON_COLUMNS = {
    "cc": "cc",
    "id": "flow",
    "throughput_kbps": "thr kbit/s",
    "utilization": "util",
    "owd_ms_p50": "owd p50 ms",
    "owd_ms_p95": "owd p95",
    "frame_delay_ms_mean": "frame mean ms",
    "frame_delay_ms_p90": "frame p90",
    "frame_delay_ms_p99": "frame p99",
    "loss_ratio": "loss",
    "ratio_rtt_over_200ms": "rtt>200ms",
    "ratio_frame_delay_over_400ms": "frame>400ms",
    "ratio_fps_below_10": "fps<10",
}


def comparison(results: dict[str, "Result"]) -> pd.DataFrame:
    """One row per (controller, video flow): the RMCAT comparison table."""
    rows = []
    for cc, r in results.items():
        bott = next((link for link in r.summary["links"] if link["id"] == "bottleneck"), {})
        for f in r.summary["flows"]:
            if f["kind"] != "rtp-video":
                continue
            row = flatten(f)
            row["cc"] = cc
            row["utilization"] = bott.get("utilization")
            rows.append(row)
    df = pd.DataFrame(rows)
    return df[[c for c in COMPARISON_COLUMNS if c in df]].rename(columns=COMPARISON_COLUMNS)


def write_frame(df: pd.DataFrame, stem: Path) -> list[Path]:
    """Writes ``stem.parquet`` when pyarrow is installed, else ``stem.csv``."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        path = stem.with_suffix(".csv")
        df.to_csv(path, index=False)
    else:
        path = stem.with_suffix(".parquet")
        df.to_parquet(path, index=False)
    return [path]


def flatten(obj: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"owd_ms": {"p95": 3}}`` -> ``{"owd_ms_p95": 3}`` (the summary.csv column names)."""
    flat: dict[str, Any] = {}
    for k, v in obj.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            flat.update(flatten(v, f"{key}_"))
        else:
            flat[key] = v
    return flat
