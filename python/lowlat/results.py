"""Results of a run: the summary (the results contract), series as DataFrames, files and tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd


def _column(values: Any) -> Any:
    """A column as the native core hands it over: a list, ``(dtype, bytes)`` (numbers packed
    little-endian, read without a Python object per value) or ``("labels", distinct values,
    bytes)`` (labels as little-endian ``u32`` indices into the distinct values: the rows share
    the few Python strings, and the column is the same as the list of them)."""
    if isinstance(values, tuple):
        if len(values) == 3:
            _, labels, raw = values
            return list(np.asarray(labels, dtype=object)[np.frombuffer(raw, dtype="<u4")])
        dtype, raw = values
        return np.frombuffer(raw, dtype=dtype)
    return values


class Result:
    """One run's results.

    - ``summary``: the ``summary.json`` object (see docs/architecture.md, "The results contract").
    - ``flow_series``: one row per flow and 200 ms bin: ``flow, t_s, send_kbps, recv_kbps, owd_ms,
      frame_delay_ms, frames``.
    - ``link_series``: one row per link and bin: ``link, t_s, capacity_kbps, throughput_kbps,
      queue_delay_ms, queue_delay_max_ms, drops``.
    - ``predictions``: Zhuge's per-packet predictions with the delays the packets had: ``flow, seq,
      arrival_s, predicted_ms, actual_ms`` (empty without Zhuge).
    - ``frames``: the video flows' frames at the receiver, one row per frame id up to the newest
      that arrived: ``flow, frame, capture_s, complete_s`` (when its last packet first arrived;
      NaN: never), ``newest_s`` (when its first packet arrived, if no newer frame had arrived
      before; NaN otherwise): enough to replay a decoder's rule (see
      :func:`lowlat.reproduce.zhuge.in_order_frame_delays`).
    - ``sender_rtt``: the media senders' RTT samples, ``flow, t_s, rtt_ms`` (RTP: one per
      feedback report; transport video: the latest sample at each ACK).
    """

    def __init__(
        self,
        summary: dict[str, Any],
        flow_series: dict[str, Any],
        link_series: dict[str, Any],
        *,
        summary_json: str | None = None,
        predictions: dict[str, Any] | None = None,
        frames: dict[str, Any] | None = None,
        sender_rtt: dict[str, Any] | None = None,
        left_out: list[str] | None = None,
    ) -> None:
        self.summary = summary
        # The tables are built on first use: a sweep that keeps only summary metrics (the RMCAT
        # suite, most reproduction runs) never pays for five DataFrames per run.
        self._raw: dict[str, dict[str, Any]] = {
            "flow_series": flow_series,
            "link_series": link_series,
            "predictions": predictions or {},
            "frames": frames or {},
            "sender_rtt": sender_rtt or {},
        }
        self._frames: dict[str, pd.DataFrame] = {}
        #: Tables the run did not build (``lowlat.run(..., tables=...)``).
        self._left_out = set(left_out or [])
        self._summary_json = summary_json or json.dumps(summary, indent=2)

    def _frame(self, name: str) -> pd.DataFrame:
        if name == "link_series" and self.summary.get("link_stats") is False:
            self.link_lines()
        if name in self._left_out:
            raise ValueError(f"{name}: this run did not build it (lowlat.run(..., tables=...) left it out)")
        frame = self._frames.get(name)
        if frame is None:
            frame = self._frames[name] = pd.DataFrame({k: _column(v) for k, v in self._raw.pop(name).items()})
        return frame

    def columns(self, name: str, *columns: str) -> list[Any]:
        """Some columns of a table (see the class doc) as arrays, without building its DataFrame:
        what a caller that reads two columns of a table with millions of rows (Zhuge's
        per-packet predictions) needs. The table's DataFrame can still be built afterwards."""
        if name in self._left_out:
            raise ValueError(f"{name}: this run did not build it (lowlat.run(..., tables=...) left it out)")
        frame = self._frames.get(name)
        raw = self._raw.get(name)
        if frame is None and raw is None:
            raise ValueError(f"{name}: no such table, expected one of {', '.join(self._raw)}")
        have = list(frame.columns) if frame is not None else list(raw or {})
        missing = [c for c in columns if c not in have]
        if missing:
            raise ValueError(f"{name}: no column {missing[0]!r}, expected some of {', '.join(have)}")
        if frame is not None:
            return [frame[c].to_numpy() for c in columns]
        assert raw is not None
        return [np.asarray(_column(raw[c])) for c in columns]

    def label_is(self, name: str, column: str, value: str) -> Any:
        """A boolean array: which rows of table ``name`` have ``value`` in label column ``column``
        (a flow or link id), read from the label codes without a string per row."""
        raw = None if name in self._frames else (self._raw.get(name) or {}).get(column)
        if isinstance(raw, tuple) and len(raw) == 3:
            _, labels, packed = raw
            codes = np.frombuffer(packed, dtype="<u4")
            hits = [i for i, label in enumerate(labels) if label == value]
            return codes == hits[0] if hits else np.zeros(len(codes), dtype=bool)
        (values,) = self.columns(name, column)
        return np.asarray(values == value, dtype=bool)

    @property
    def flow_series(self) -> pd.DataFrame:
        """One row per flow and bin (see the class doc)."""
        return self._frame("flow_series")

    @property
    def link_series(self) -> pd.DataFrame:
        """One row per link and bin (see the class doc)."""
        return self._frame("link_series")

    @property
    def predictions(self) -> pd.DataFrame:
        """Zhuge's per-packet predictions (see the class doc)."""
        return self._frame("predictions")

    @property
    def frames(self) -> pd.DataFrame:
        """Per completed frame of each media flow (see the class doc)."""
        return self._frame("frames")

    @property
    def sender_rtt(self) -> pd.DataFrame:
        """The media senders' RTT samples (see the class doc)."""
        return self._frame("sender_rtt")

    @property
    def flows(self) -> pd.DataFrame:
        """The per-flow summary as a flat DataFrame (``owd_ms_p95``, ...)."""
        return pd.DataFrame([flatten(f) for f in self.summary["flows"]])

    @property
    def links(self) -> pd.DataFrame:
        """The per-link summary as a flat DataFrame (``queue_delay_ms_p95``, ...)."""
        return pd.DataFrame([flatten(link) for link in self.link_lines()])

    def link_lines(self) -> list[dict[str, Any]]:
        """The summary's ``links`` (one dict per link); raises if the run kept no link statistics
        (``lowlat.run(..., link_stats=False)``, whose summary says ``"link_stats": false``)."""
        if self.summary.get("link_stats") is False:
            raise ValueError("links: this run kept no link statistics (lowlat.run(..., link_stats=False))")
        lines: list[dict[str, Any]] = self.summary["links"]
        return lines

    def table(self, *, wide: bool = False) -> str:
        """A plain-text table of the flows and of the links that carried traffic.

        By default the columns a reader needs first (throughput, loss, delay percentiles, frame
        delay and rate for video); ``wide=True`` every column. Columns that apply to no row are
        left out; a cell that does not apply shows ``-``; every header carries its unit.
        """
        f = self.flows
        cols = FLOW_COLUMNS_WIDE if wide else FLOW_COLUMNS
        ft = f[[c for c in cols if c in f and f[c].notna().any()]].rename(columns=cols)
        links = self.links
        links = links[(links["utilization"] > 0) | (links["drops"] > 0)]
        lcols = LINK_COLUMNS_WIDE if wide else LINK_COLUMNS
        lt = links[[c for c in lcols if c in links]].rename(columns=lcols)
        head = (
            f"scenario {self.summary['scenario']}  seed {self.summary['seed']}  "
            f"{self.summary['sim_duration_s']:g} s simulated in {self.summary['wall_s']:.3f} s wall "
            f"({self.summary['events']} events)"
        )
        parts = [head, "", text_table(ft), "", text_table(lt)]
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
        if "predictions" not in self._left_out and len(self.predictions):
            written += write_frame(self.predictions, out / "predictions")
        if plots:
            from .plots import plot_media, plot_run

            written += plot_run(self, out)
            written += plot_media(self, out)
        return written


def number(x: float) -> str:
    """Table format: 3 decimals below 10, 1 above; ``-`` for a missing value."""
    if x != x:  # NaN
        return "-"
    return f"{x:.3f}" if abs(x) < 10 else f"{x:.1f}"


def text_table(df: pd.DataFrame) -> str:
    """A DataFrame as aligned text: numbers by :func:`number`, counts as integers, ``-`` for a
    value that does not apply."""
    if df.empty:
        return "(none)"
    out = df.copy()
    for c in out.columns:
        if pd.api.types.is_float_dtype(out[c]):
            out[c] = out[c].map(number)
        else:
            out[c] = out[c].map(lambda v: "-" if v is None or (isinstance(v, float) and v != v) else str(v))
    text: str = out.to_string(index=False)
    return text


#: The default flow columns of the run table (summary key -> header with unit).
FLOW_COLUMNS = {
    "id": "flow",
    "kind": "kind",
    "cc": "cc",
    "throughput_kbps": "thr kbit/s",
    "loss_ratio": "loss ratio",
    "owd_ms_p50": "owd p50 ms",
    "owd_ms_p95": "owd p95 ms",
    "frame_delay_ms_p99": "frame p99 ms",
    "fps_mean": "fps 1/s",
}
#: Every flow column (``--wide``).
FLOW_COLUMNS_WIDE = {
    "id": "flow",
    "kind": "kind",
    "cc": "cc",
    "throughput_kbps": "thr kbit/s",
    "loss_ratio": "loss ratio",
    "owd_ms_mean": "owd mean ms",
    "owd_ms_p50": "owd p50 ms",
    "owd_ms_p95": "owd p95 ms",
    "owd_ms_p99": "owd p99 ms",
    "rtt_ms_p95": "rtt p95 ms",
    "frame_delay_ms_mean": "frame mean ms",
    "frame_delay_ms_p90": "frame p90 ms",
    "frame_delay_ms_p99": "frame p99 ms",
    "fps_mean": "fps 1/s",
    "ratio_rtt_over_200ms": "rtt>200ms ratio",
    "ratio_net_rtt_over_200ms": "net rtt>200ms ratio",
    "ratio_frame_delay_over_400ms": "frame>400ms ratio",
    "ratio_fps_below_10": "fps<10 ratio",
    "packets_sent": "sent pkts",
    "packets_received": "recv pkts",
}
#: The default link columns.
LINK_COLUMNS = {
    "id": "link",
    "capacity_mean_kbps": "capacity kbit/s",
    "utilization": "util ratio",
    "queue_delay_ms_p95": "queue p95 ms",
    "drops": "drops pkts",
}
#: Every link column (``--wide``).
LINK_COLUMNS_WIDE = {
    "id": "link",
    "capacity_mean_kbps": "capacity kbit/s",
    "utilization": "util ratio",
    "queue_delay_ms_mean": "queue mean ms",
    "queue_delay_ms_p95": "queue p95 ms",
    "queue_delay_ms_max": "queue max ms",
    "drops": "drops pkts",
    "random_losses": "random losses pkts",
    "max_queue_bytes": "max queue B",
}


#: The default columns of the controller comparison.
COMPARISON_COLUMNS = {
    "cc": "cc",
    "id": "flow",
    "throughput_kbps": "thr kbit/s",
    "utilization": "util ratio",
    "owd_ms_p95": "owd p95 ms",
    "frame_delay_ms_p99": "frame p99 ms",
    "loss_ratio": "loss ratio",
    "ratio_frame_delay_over_400ms": "frame>400ms ratio",
}
#: Every column of the comparison (``--wide``).
COMPARISON_COLUMNS_WIDE = {
    "cc": "cc",
    "id": "flow",
    "throughput_kbps": "thr kbit/s",
    "utilization": "util ratio",
    "owd_ms_p50": "owd p50 ms",
    "owd_ms_p95": "owd p95 ms",
    "frame_delay_ms_mean": "frame mean ms",
    "frame_delay_ms_p90": "frame p90 ms",
    "frame_delay_ms_p99": "frame p99 ms",
    "loss_ratio": "loss ratio",
    "ratio_rtt_over_200ms": "rtt>200ms ratio",
    "ratio_frame_delay_over_400ms": "frame>400ms ratio",
    "ratio_fps_below_10": "fps<10 ratio",
}


def comparison(results: dict[str, "Result"], *, wide: bool = False) -> pd.DataFrame:
    """One row per (controller, video flow): the RMCAT comparison table (``wide``: every column)."""
    rows = []
    for cc, r in results.items():
        bott: dict[str, Any] = next((link for link in r.link_lines() if link["id"] == "bottleneck"), {})
        for f in r.summary["flows"]:
            if f["kind"] != "rtp-video":
                continue
            row = flatten(f)
            row["cc"] = cc
            row["utilization"] = bott.get("utilization")
            rows.append(row)
    df = pd.DataFrame(rows)
    cols = COMPARISON_COLUMNS_WIDE if wide else COMPARISON_COLUMNS
    return df[[c for c in cols if c in df]].rename(columns=cols)


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
