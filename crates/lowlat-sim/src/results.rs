//! What a run produces: the summary of the results contract (docs/architecture.md) and the 200 ms
//! time series, as plain data that serialises to the stable `summary.json`.

use crate::media::MediaMetrics;
use crate::sim::Simulation;
use hdrhistogram::Histogram;
use lowlat_core::{Duration, Time};
use serde::Serialize;

/// The version written into every summary.
pub const LOWLAT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Mean, percentiles and maximum of a sample, in the unit of the field; all `None` without samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Stats {
    /// Arithmetic mean (exact).
    pub mean: Option<f64>,
    /// Median.
    pub p50: Option<f64>,
    /// 90th percentile.
    pub p90: Option<f64>,
    /// 95th percentile.
    pub p95: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
    /// Maximum.
    pub max: Option<f64>,
}

impl Stats {
    /// From raw samples (exact percentiles: nearest rank), in the samples' unit.
    pub fn from_samples(samples: &mut [f64]) -> Stats {
        if samples.is_empty() {
            return Stats::default();
        }
        sort_samples(samples);
        let n = samples.len();
        let q = |p: f64| Some(samples[((p * n as f64).ceil() as usize).clamp(1, n) - 1]);
        Stats {
            mean: Some(samples.iter().sum::<f64>() / n as f64),
            p50: q(0.50),
            p90: q(0.90),
            p95: q(0.95),
            p99: q(0.99),
            max: Some(samples[n - 1]),
        }
    }

    /// The statistics of `durations` in milliseconds ([`Duration::as_millis_f64`]), and how many
    /// of them exceed `over_ms` milliseconds.
    ///
    /// The percentiles are nearest-rank, as [`Stats::from_samples`] gives them (the same bits:
    /// `ns as f64 / 1e6` never decreases as `ns` grows), found without sorting (see
    /// [`values_at_ranks`]): a 300 s run at 100 Mbit/s has 2.5 million RTT samples, and a sort and
    /// its two copies of them cost about 5 % of the run. The mean is the exact nanosecond sum over
    /// the count, in milliseconds.
    pub fn from_durations_ms(durations: &[Duration], over_ms: f64) -> (Stats, usize) {
        let n = durations.len();
        if n == 0 {
            return (Stats::default(), 0);
        }
        let ms = |ns: u64| Duration(ns).as_millis_f64();
        // `ms(ns) > over_ms` as one integer comparison per sample.
        let over_from = first_ns_over(over_ms);
        let threshold = over_from.unwrap_or(u64::MAX);
        let (mut sum, mut lo, mut hi, mut over) = (0u128, u64::MAX, 0u64, 0usize);
        for &Duration(ns) in durations {
            sum += u128::from(ns);
            lo = lo.min(ns);
            hi = hi.max(ns);
            over += usize::from(ns >= threshold);
        }
        if over_from.is_none() {
            // (A sample of `u64::MAX` was counted above.)
            over = 0;
        }
        let rank = |p: f64| ((p * n as f64).ceil() as usize).clamp(1, n) - 1;
        let [p50, p90, p95, p99] =
            values_at_ranks(durations, lo, hi, [rank(0.50), rank(0.90), rank(0.95), rank(0.99)]).map(ms);
        let stats = Stats {
            mean: Some(sum as f64 / n as f64 / 1e6),
            p50: Some(p50),
            p90: Some(p90),
            p95: Some(p95),
            p99: Some(p99),
            max: Some(ms(hi)),
        };
        (stats, over)
    }

    /// From a histogram of nanoseconds, the exact sum and the exact max, in milliseconds.
    pub fn from_ns(h: &Histogram<u64>, sum_ns: u128, max_ns: Option<u64>) -> Stats {
        if h.is_empty() {
            return Stats::default();
        }
        let ms = |ns: u64| ns as f64 * 1e-6;
        // Quantiles are the histogram's (0.1 % precision), never above the exact max.
        let max = max_ns.unwrap_or_else(|| h.max());
        let q = |p: f64| Some(ms(h.value_at_quantile(p).min(max)));
        Stats {
            mean: Some(sum_ns as f64 / h.len() as f64 * 1e-6),
            p50: q(0.50),
            p90: q(0.90),
            p95: q(0.95),
            p99: q(0.99),
            max: Some(ms(max)),
        }
    }
}

/// The least nanosecond count whose milliseconds ([`Duration::as_millis_f64`]) exceed `over_ms`
/// (`None`: none does): the milliseconds never decrease as the count grows, so a sample is over
/// exactly when it is at least this count.
fn first_ns_over(over_ms: f64) -> Option<u64> {
    let over = |ns: u64| Duration(ns).as_millis_f64() > over_ms;
    if !over(u64::MAX) {
        return None;
    }
    if over(0) {
        return Some(0);
    }
    // `lo` is not over, `hi` is.
    let (mut lo, mut hi) = (0u64, u64::MAX);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if over(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// The values at the ascending sorted positions `ranks` of `values`, whose least and greatest are
/// `lo` and `hi`: one counting pass over 4096 equal buckets of `[lo, hi]` finds the bucket that
/// holds each rank, and a selection among that bucket's values alone (gathered in a second pass)
/// finds the value. Two linear passes instead of a sort or repeated selections over every value.
fn values_at_ranks(values: &[Duration], lo: u64, hi: u64, ranks: [usize; 4]) -> [u64; 4] {
    const BUCKET_BITS: u32 = 12;
    const NONE: u8 = u8::MAX;
    let shift = (u64::BITS - (hi - lo).leading_zeros()).saturating_sub(BUCKET_BITS);
    let bucket = |ns: u64| ((ns - lo) >> shift) as usize;
    let mut counts = vec![0usize; 1 << BUCKET_BITS];
    for &Duration(ns) in values {
        counts[bucket(ns)] += 1;
    }
    // Each rank's bucket and its position among the bucket's values; a bucket gathered once.
    let mut slot_of = vec![NONE; 1 << BUCKET_BITS];
    let mut gathered: Vec<Vec<u64>> = Vec::with_capacity(ranks.len());
    let mut wanted = [(0usize, 0usize); 4];
    let (mut b, mut start) = (0usize, 0usize);
    for (w, &r) in wanted.iter_mut().zip(&ranks) {
        while start + counts[b] <= r {
            start += counts[b];
            b += 1;
        }
        if slot_of[b] == NONE {
            slot_of[b] = gathered.len() as u8;
            gathered.push(Vec::with_capacity(counts[b]));
        }
        *w = (usize::from(slot_of[b]), r - start);
    }
    for &Duration(ns) in values {
        let s = slot_of[bucket(ns)];
        if s != NONE {
            gathered[usize::from(s)].push(ns);
        }
    }
    wanted.map(|(s, at)| *gathered[s].select_nth_unstable(at).1)
}

/// Sorts `samples` in `f64::total_cmp` order. Samples with the sign bit clear (every delay and
/// RTT: never negative, never NaN) are sorted as their bit patterns, which `total_cmp` orders
/// alike, by a radix sort: a run at 100 Mbit/s has a million RTT samples, and a comparison sort
/// of them cost about 2 % of the run. Equal under `total_cmp` means the same bits, so the result
/// is the same as a comparison sort's, stable or not.
fn sort_samples(samples: &mut [f64]) {
    const MIN_RADIX: usize = 1024;
    if samples.len() < MIN_RADIX || samples.iter().any(|x| x.to_bits() >> 63 != 0) {
        samples.sort_unstable_by(f64::total_cmp);
        return;
    }
    let mut keys: Vec<u64> = samples.iter().map(|x| x.to_bits()).collect();
    radix_sort(&mut keys);
    for (x, k) in samples.iter_mut().zip(keys) {
        *x = f64::from_bits(k);
    }
}

/// Sorts `keys` ascending: a least-significant-digit radix sort for many keys, else a
/// comparison sort (the same result: equal keys are alike).
fn radix_sort(keys: &mut Vec<u64>) {
    const MIN_RADIX: usize = 1024;
    const BITS: u32 = 11;
    const MASK: u64 = (1 << BITS) - 1;
    if keys.len() < MIN_RADIX {
        keys.sort_unstable();
        return;
    }
    let mut scratch = vec![0u64; keys.len()];
    // Least significant digit first, 11 bits a pass; a pass whose digit is the same in every
    // key (the high bits, mostly) is skipped.
    let (mut or, mut and) = (0u64, u64::MAX);
    for &k in keys.iter() {
        or |= k;
        and &= k;
    }
    let varying = or ^ and;
    let mut counts = vec![0usize; 1 << BITS];
    for shift in (0..64).step_by(BITS as usize) {
        if (varying >> shift) & MASK == 0 {
            continue;
        }
        counts.fill(0);
        for &k in keys.iter() {
            counts[((k >> shift) & MASK) as usize] += 1;
        }
        let mut total = 0;
        for c in counts.iter_mut() {
            let n = *c;
            *c = total;
            total += n;
        }
        for &k in keys.iter() {
            let d = ((k >> shift) & MASK) as usize;
            scratch[counts[d]] = k;
            counts[d] += 1;
        }
        std::mem::swap(keys, &mut scratch);
    }
}

/// One flow's line of the summary.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlowSummary {
    /// The flow's id.
    pub id: String,
    /// `cbr`, `poisson`, later `rtp-video`, `bulk`, ...
    pub kind: String,
    /// The congestion controller (`none` for open-loop sources).
    pub cc: String,
    /// Start, seconds.
    pub start_s: f64,
    /// End, seconds.
    pub end_s: f64,
    /// Received bits per second from the flow's start until its last packet arrived (at least its
    /// stop, at most the end of the run), kbit/s.
    pub throughput_kbps: f64,
    /// Useful received rate (no retransmissions or headers of its own yet), kbit/s.
    pub goodput_kbps: f64,
    /// Packets lost / packets that could have arrived.
    pub loss_ratio: f64,
    /// One-way delay, ms.
    pub owd_ms: Stats,
    /// Round-trip time, ms (no samples for open-loop sources).
    pub rtt_ms: Stats,
    /// Packets sent.
    pub packets_sent: u64,
    /// Packets received.
    pub packets_received: u64,
    /// Media flows: frame delay (capture to complete at the receiver), ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame_delay_ms: Option<Stats>,
    /// Media flows: frames completed per second over the flow's active time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fps_mean: Option<f64>,
    /// Media flows: share of RTT samples above 200 ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_rtt_over_200ms: Option<f64>,
    /// Media flows: share of frames later than 400 ms (a frame that never completes counts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_frame_delay_over_400ms: Option<f64>,
    /// Media flows: share of 1 s bins with fewer than 10 frames completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_fps_below_10: Option<f64>,
    /// Media flows: packets the feedback told the sender arrived with CE (RFC 8888's ECN field,
    /// or the transport's ACK_ECN count; transport-cc cannot tell).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ce_reported: Option<u64>,
    /// RTP video with repair (`nack = true` or `repair = "timeout"`): retransmissions sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmissions: Option<u64>,
    /// RTP video with repair: lost packets a retransmission recovered at the receiver (with
    /// `repair = "timeout"`: retransmitted packets that arrived before any other copy).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovered: Option<u64>,
    /// Network RTT, ms: each packet's one-way delay plus the reverse path's propagation delay
    /// (what the path gives the media, whoever writes the feedback; the same for every scheme).
    pub net_rtt_ms: Stats,
    /// Share of packets whose network RTT exceeds 200 ms.
    pub ratio_net_rtt_over_200ms: f64,
    /// Web flows: downloads completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfers: Option<u64>,
    /// Web flows: download completion time (first packet sent to last one acknowledged), ms;
    /// downloads flows: the client's (connection opened to last packet received).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_ms: Option<Stats>,
    /// Downloads flows: per connection (start-up, saved sets, phases, window series).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections: Option<Vec<crate::downloads::ConnectionSummary>>,
}

/// The media fields of a flow's summary, from its endpoints' metrics.
struct MediaSummary {
    rtt_ms: Stats,
    frame_delay_ms: Stats,
    fps_mean: f64,
    ratio_rtt_over_200ms: f64,
    ratio_frame_delay_over_400ms: f64,
    ratio_fps_below_10: f64,
}

fn media_summary(sent: MediaMetrics, recv: &MediaMetrics, start: Time, end: Time) -> MediaSummary {
    let rtt_samples = sent.rtt.len();
    let (rtt_ms, over_200) = Stats::from_durations_ms(&sent.rtt, 200.0);
    let delays: Vec<Duration> = recv.frames.iter().map(|&(_, d)| d).collect();
    let completed = delays.len() as u64;
    let (frame_delay_ms, late) = Stats::from_durations_ms(&delays, 400.0);
    let late = late as u64;
    let never = sent.frames_sent.saturating_sub(completed);
    let active = (end - start).as_secs_f64();
    let bins = (end - start).as_nanos().div_ceil(1_000_000_000).max(1) as usize;
    let mut per_bin = vec![0u32; bins];
    for (t, _) in &recv.frames {
        if let Some(b) = per_bin.get_mut(((*t - start).as_nanos() / 1_000_000_000) as usize) {
            *b += 1;
        }
    }
    MediaSummary {
        ratio_rtt_over_200ms: if rtt_samples == 0 { 0.0 } else { over_200 as f64 / rtt_samples as f64 },
        rtt_ms,
        ratio_frame_delay_over_400ms: if sent.frames_sent == 0 {
            0.0
        } else {
            (late + never) as f64 / sent.frames_sent as f64
        },
        frame_delay_ms,
        fps_mean: if active > 0.0 { recv.frames.len() as f64 / active } else { 0.0 },
        ratio_fps_below_10: per_bin.iter().filter(|&&n| n < 10).count() as f64 / bins as f64,
    }
}

/// Network RTT stats and the share over 200 ms, from the one-way delays shifted by the reverse
/// path's propagation delay.
fn net_rtt(
    m: &crate::traffic::FlowMetrics,
    h: &Histogram<u64>,
    reverse: lowlat_core::Duration,
) -> (Stats, f64) {
    if h.is_empty() {
        return (Stats::default(), 0.0);
    }
    let shift = reverse.as_millis_f64();
    let s = Stats::from_ns(h, m.owd_sum_ns, Some(m.owd_max_ns));
    let add = |v: Option<f64>| v.map(|x| x + shift);
    let stats = Stats {
        mean: add(s.mean),
        p50: add(s.p50),
        p90: add(s.p90),
        p95: add(s.p95),
        p99: add(s.p99),
        max: add(s.max),
    };
    let limit_ns = (200e6 - reverse.as_nanos() as f64).max(0.0) as u64;
    let within = h.count_between(0, limit_ns);
    (stats, (h.len() - within.min(h.len())) as f64 / h.len() as f64)
}

/// What the network assistance did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AssistSummary {
    /// `zhuge`, `fastack`, `scone-rtc` or `scone`.
    pub name: String,
    /// Predictions logged (Zhuge).
    pub predictions: u64,
    /// Mean absolute prediction error, ms (Zhuge).
    pub prediction_mae_ms: Option<f64>,
    /// Share of predictions within 10 ms of the actual delay (Zhuge).
    pub predictions_within_10ms: Option<f64>,
    /// Receiver feedback packets the AP dropped (its own replaced them).
    pub dropped_client_feedback: u64,
}

/// One link's line of the summary.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkSummary {
    /// `bottleneck`, `reverse`, `flow.<id>.access.up`, ...
    pub id: String,
    /// Mean capacity over the run, kbit/s.
    pub capacity_mean_kbps: f64,
    /// Bytes transmitted / bytes the capacity allowed over the run.
    pub utilization: f64,
    /// Sojourn time in the queue, ms.
    pub queue_delay_ms: Stats,
    /// Packets dropped: tail, AQM, random loss and middlebox.
    pub drops: u64,
    /// Of those, by random loss on the wire.
    pub random_losses: u64,
    /// Largest queue held, bytes.
    pub max_queue_bytes: u64,
    /// Packets the queue marked CE instead of dropping (CoDel with ECN, L4S).
    pub ecn_marks: u64,
}

fn is_true(b: &bool) -> bool {
    *b
}

/// `summary.json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// lowlat's version.
    pub lowlat_version: String,
    /// The scenario's name.
    pub scenario: String,
    /// The seed used.
    pub seed: u64,
    /// Simulated seconds.
    pub sim_duration_s: f64,
    /// Wall-clock seconds the run took (the one field that differs between identical runs).
    pub wall_s: f64,
    /// Events processed.
    pub events: u64,
    /// Per flow.
    pub flows: Vec<FlowSummary>,
    /// Per link; empty when the run kept no link statistics ([`Tables::links`]).
    pub links: Vec<LinkSummary>,
    /// False when the run kept no link statistics ([`Tables::links`]): then `links` is empty
    /// whatever links there were. In `summary.json` only when false.
    #[serde(skip_serializing_if = "is_true")]
    pub link_stats: bool,
    /// What the network assistance at the bottleneck did, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assist: Option<AssistSummary>,
    /// Things to check before trusting the results.
    pub warnings: Vec<String>,
}

/// A column of a series table.
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    /// Numbers (NaN where a bin has no sample).
    F64(Vec<f64>),
    /// Counts.
    I64(Vec<i64>),
    /// Labels.
    Str(Vec<String>),
    /// Labels as their distinct `values` and, per row, the index of its value: a per-sample
    /// table's flow column (a few ids over up to millions of rows) without a string per row,
    /// whose allocation, copy and release cost more than the rest of the table.
    Labels {
        /// The distinct labels.
        values: Vec<String>,
        /// Per row, an index into `values`.
        codes: Vec<u32>,
    },
}

impl Column {
    /// The label of each row of a label column ([`Column::Str`] or [`Column::Labels`]), in
    /// order; nothing for a numeric one.
    pub fn labels(&self) -> impl Iterator<Item = &str> {
        let (str_rows, label_rows) = match self {
            Column::Str(v) => (v.as_slice(), None),
            Column::Labels { values, codes } => (&[][..], Some((values, codes))),
            _ => (&[][..], None),
        };
        let coded = label_rows
            .into_iter()
            .flat_map(|(values, codes)| codes.iter().map(|&c| values[c as usize].as_str()));
        str_rows.iter().map(String::as_str).chain(coded)
    }

    /// Rows.
    pub fn len(&self) -> usize {
        match self {
            Column::F64(v) => v.len(),
            Column::I64(v) => v.len(),
            Column::Str(v) => v.len(),
            Column::Labels { codes, .. } => codes.len(),
        }
    }

    /// Whether it has no row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A table in long format: named columns of equal length.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// `(name, values)`, in order.
    pub columns: Vec<(String, Column)>,
}

/// The results of one run.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// The summary.
    pub summary: Summary,
    /// Per-flow series: flow, t_s, send_kbps, recv_kbps, owd_ms, frame_delay_ms, frames (video
    /// frames completed in the bin).
    pub flow_series: Table,
    /// Per-link series: link, t_s, capacity_kbps, throughput_kbps, queue_delay_ms,
    /// queue_delay_max_ms, drops.
    pub link_series: Table,
    /// Zhuge's predictions with the delays the packets had: flow, seq, arrival_s, predicted_ms,
    /// actual_ms (empty without Zhuge).
    pub predictions: Table,
    /// Video flows' frames at the receiver, one row per frame id up to the newest that arrived:
    /// flow, frame, capture_s (the source's clock: start + frame / fps), complete_s (when its
    /// last packet arrived, first time; NaN: never), newest_s (when its first packet arrived if
    /// no newer frame had arrived before; NaN otherwise). Enough to replay any decoder rule (the
    /// Zhuge artifact's in-order decoding with a deadline in frames).
    pub frames: Table,
    /// Media senders' RTT samples: flow, t_s (when the sender took it), rtt_ms (the sample:
    /// per feedback report for RTP, the transport's latest sample per ACK).
    pub sender_rtt: Table,
}

/// Which of a run's per-sample tables [`RunResult`] builds (one row per packet or per ACK:
/// millions of rows in a long run at a high rate), and whether the links keep statistics. The
/// summary's flows never depend on them. Default: all; a caller that does not read a table (a
/// sweep keeping summary metrics) saves building it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tables {
    /// [`RunResult::predictions`] (Zhuge's, one row per prediction).
    pub predictions: bool,
    /// With `predictions`: keep a uniform random sample of at most this many predictions
    /// instead of every one (Zhuge draws it as they come, from its own stream
    /// `"assist.zhuge.sample"`; see `lowlat_assist::prediction_log`). The rows stay in the order
    /// of the predictions; the summary's prediction figures still count every one. Only
    /// [`Simulation::plan_tables`](crate::Simulation::plan_tables) reads it.
    pub prediction_sample: Option<usize>,
    /// [`RunResult::sender_rtt`] (one row per RTT sample of a media sender).
    pub sender_rtt: bool,
    /// [`RunResult::flow_series`] and [`RunResult::link_series`] (one row per flow or link and
    /// bin).
    pub series: bool,
    /// [`RunResult::frames`] (one row per frame of each media flow).
    pub frames: bool,
    /// The links' statistics: the summary's `links` lines and [`RunResult::link_series`]. Unlike
    /// the tables, leaving them out changes the summary: its `links` is empty and it says
    /// `"link_stats": false`. Left out in [`Simulation::plan_tables`](crate::Simulation::plan_tables),
    /// the links count nothing per packet ([`lowlat_net::Link::set_recording`]), and the result
    /// has no link lines whatever `finish_with` asks.
    pub links: bool,
}

impl Default for Tables {
    fn default() -> Tables {
        Tables {
            predictions: true,
            prediction_sample: None,
            sender_rtt: true,
            series: true,
            frames: true,
            links: true,
        }
    }
}

impl Tables {
    /// No table at all, only the summary (the links' lines included): what a sweep keeping
    /// summary metrics reads (the RMCAT suite). Building and handing over the tables was about a
    /// tenth of such a run's time.
    pub fn none() -> Tables {
        Tables {
            predictions: false,
            prediction_sample: None,
            sender_rtt: false,
            series: false,
            frames: false,
            links: true,
        }
    }
}

/// The assistance summary and Zhuge's prediction table (empty unless `table`).
fn assist_results(sim: &Simulation, table: bool) -> Option<(AssistSummary, Table)> {
    let mb = sim.links.first()?.middlebox()?;
    let any = mb.as_any()?;
    if let Some(f) = any.downcast_ref::<lowlat_assist::FastAck>() {
        let s = AssistSummary {
            name: "fastack".into(),
            predictions: 0,
            prediction_mae_ms: None,
            predictions_within_10ms: None,
            dropped_client_feedback: f.dropped_client_acks(),
        };
        return Some((s, Table::default()));
    }
    if let Some(ap) = any.downcast_ref::<lowlat_assist::SconeAp>() {
        let s = AssistSummary {
            name: lowlat_net::Middlebox::name(ap).into(),
            predictions: 0,
            prediction_mae_ms: None,
            predictions_within_10ms: None,
            dropped_client_feedback: 0,
        };
        return Some((s, Table::default()));
    }
    let z = any.downcast_ref::<lowlat_assist::Zhuge>()?;
    // From the running figures: the same whether or not the log was kept.
    let stats = z.prediction_stats();
    let s = AssistSummary {
        name: "zhuge".into(),
        predictions: stats.count,
        prediction_mae_ms: stats.mae_ms(),
        predictions_within_10ms: stats.share_within_10ms(),
        dropped_client_feedback: z.dropped_client_feedback(),
    };
    let log = z.predictions();
    if !table {
        return Some((s, Table::default()));
    }
    let ids = &sim.scenario.flows;
    let table = Table {
        columns: vec![
            (
                "flow".into(),
                Column::Labels {
                    values: ids.iter().map(|f| f.id.clone()).collect(),
                    codes: log.iter().map(|r| r.flow.0).collect(),
                },
            ),
            ("seq".into(), Column::F64(log.iter().map(|r| r.seq as f64).collect())),
            ("arrival_s".into(), Column::F64(log.iter().map(|r| r.arrival.as_secs_f64()).collect())),
            ("predicted_ms".into(), Column::F64(log.iter().map(|r| r.predicted.as_millis_f64()).collect())),
            ("actual_ms".into(), Column::F64(log.iter().map(|r| r.actual.as_millis_f64()).collect())),
        ],
    };
    Some((s, table))
}

/// The links' lines of the summary and their series (`link, t_s, capacity_kbps, throughput_kbps,
/// queue_delay_ms, queue_delay_max_ms, drops`) over `[0, end)` in bins of `bin`: what any driver
/// of the links (the simulator, the emulator) reports from their own statistics.
pub fn link_results(
    links: &[lowlat_net::Link],
    names: &[String],
    end: Time,
    bin: lowlat_core::Duration,
) -> (Vec<LinkSummary>, Table) {
    link_results_with(links, names, end, bin, true)
}

/// [`link_results`], the series built only if `series` (else an empty table; the summary lines
/// are the same).
pub fn link_results_with(
    links: &[lowlat_net::Link],
    names: &[String],
    end: Time,
    bin: lowlat_core::Duration,
    series: bool,
) -> (Vec<LinkSummary>, Table) {
    let dur_s = end.as_secs_f64();
    let bin_ns = bin.as_nanos().max(1);
    let nbins = end.as_nanos().div_ceil(bin_ns) as usize;
    let mut rows = Vec::new();
    let (mut l_id, mut l_t, mut l_cap, mut l_thr, mut l_q, mut l_qmax, mut l_drops) =
        (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
    for (link, name) in links.iter().zip(names) {
        let s = link.stats();
        let cap_bytes = link.capacity().capacity_bytes(Time::ZERO, end);
        rows.push(LinkSummary {
            id: name.clone(),
            capacity_mean_kbps: cap_bytes * 8.0 / dur_s / 1e3,
            utilization: if cap_bytes > 0.0 { s.tx_bytes() as f64 / cap_bytes } else { 0.0 },
            queue_delay_ms: Stats::from_ns(&s.sojourn(), s.sojourn_sum_ns, Some(s.sojourn_max_ns)),
            drops: s.tail_drops + link.queue().aqm_drops() + s.random_losses + s.middlebox_drops,
            random_losses: s.random_losses,
            max_queue_bytes: s.max_queue_bytes,
            ecn_marks: link.queue().ecn_marks(),
        });
        for i in (0..nbins).filter(|_| series) {
            let b = s.bin(i);
            let t0 = Time(i as u64 * bin_ns);
            let t1 = Time(((i as u64 + 1) * bin_ns).min(end.as_nanos()));
            let width = (t1 - t0).as_secs_f64();
            l_id.push(name.clone());
            l_t.push(t0.as_secs_f64());
            l_cap.push(link.capacity().capacity_bytes(t0, t1) * 8.0 / width / 1e3);
            l_thr.push(b.tx_bytes as f64 * 8.0 / width / 1e3);
            l_q.push(if b.dequeued > 0 {
                b.sojourn_sum_ns as f64 / b.dequeued as f64 * 1e-6
            } else {
                f64::NAN
            });
            l_qmax.push(if b.dequeued > 0 { b.sojourn_max_ns as f64 * 1e-6 } else { f64::NAN });
            l_drops.push(i64::try_from(b.drops).unwrap_or(i64::MAX));
        }
    }

    if !series {
        return (rows, Table::default());
    }
    let col = |n: &str, v: Vec<f64>| (n.to_string(), Column::F64(v));
    let series = Table {
        columns: vec![
            ("link".into(), Column::Str(l_id)),
            col("t_s", l_t),
            col("capacity_kbps", l_cap),
            col("throughput_kbps", l_thr),
            col("queue_delay_ms", l_q),
            col("queue_delay_max_ms", l_qmax),
            ("drops".into(), Column::I64(l_drops)),
        ],
    };
    (rows, series)
}

impl RunResult {
    /// The results of `sim`, with the per-sample tables `tables` asks for (the others empty).
    pub(crate) fn collect(sim: &mut Simulation, tables: Tables) -> RunResult {
        // The senders' metrics are moved out, not copied (a sample per ACK).
        let mut senders_media: Vec<_> =
            sim.flows.iter_mut().map(|st| st.sender.take_media_metrics()).collect();
        let sim: &Simulation = sim;
        let sc = &sim.scenario;
        let end = sim.end();
        let dur_s = sc.duration.as_secs_f64();
        let bin_ns = sc.bin.as_nanos();
        let nbins = sc.duration.as_nanos().div_ceil(bin_ns) as usize;
        let bin_s = sc.bin.as_secs_f64();

        let mut flows = Vec::new();
        let (mut f_id, mut f_t, mut f_send, mut f_recv, mut f_owd) = (vec![], vec![], vec![], vec![], vec![]);
        let mut f_frame = vec![];
        let mut f_frames = vec![];
        let (mut fr_id, mut fr_n, mut fr_cap, mut fr_done, mut fr_new) =
            (vec![], vec![], vec![], vec![], vec![]);
        let (mut r_values, mut r_id, mut r_t, mut r_ms) = (vec![], vec![], vec![], vec![]);
        for ((cfg, st), sender_media) in sc.flows.iter().zip(&sim.flows).zip(&mut senders_media) {
            let m = &st.metrics;
            // Received over the time packets kept arriving: what was in flight (or queued) at
            // `stop` still arrives after it, and counting it over [start, stop] alone would
            // report more than the link carried.
            let rx_end = m.last_rx.map_or(cfg.stop, |t| t.max(cfg.stop)).min(end);
            let rx_span = (rx_end - cfg.start).as_secs_f64();
            let thr = if rx_span > 0.0 { m.rx_bytes as f64 * 8.0 / rx_span / 1e3 } else { 0.0 };
            let could_arrive = m.max_seq.map_or(0, |s| s + 1);
            let end_t = cfg.stop.min(end);
            let receiver_media = st.receiver.media_metrics();
            if tables.series {
                // Mean delay of the frames completed in each bin (NaN: none, or not a video flow).
                let mut frame_bins = vec![(0.0f64, 0u32); nbins];
                for (t, d) in receiver_media.iter().flat_map(|m| m.frames.iter()) {
                    if let Some(b) = frame_bins.get_mut((t.as_nanos() / bin_ns) as usize) {
                        b.0 += d.as_millis_f64();
                        b.1 += 1;
                    }
                }
                f_frame.extend(
                    frame_bins.iter().map(|&(sum, n)| if n > 0 { sum / f64::from(n) } else { f64::NAN }),
                );
                f_frames.extend(frame_bins.iter().map(|&(_, n)| i64::from(n)));
            }
            let sender_media = sender_media.take();
            if let (Some(r), Some(media), true) = (&receiver_media, &cfg.media, tables.frames) {
                let last = r.newest_frames.iter().map(|x| x.0).chain(r.frame_ids.iter().copied()).max();
                let n = last.map_or(0, |l| l as usize + 1);
                let mut done = vec![f64::NAN; n];
                let mut newest = vec![f64::NAN; n];
                for (id, (t, _)) in r.frame_ids.iter().zip(&r.frames) {
                    let d = &mut done[*id as usize];
                    if d.is_nan() {
                        *d = t.as_secs_f64();
                    }
                }
                for (id, t) in &r.newest_frames {
                    newest[*id as usize] = t.as_secs_f64();
                }
                for (i, (d, w)) in done.into_iter().zip(newest).enumerate() {
                    fr_id.push(cfg.id.clone());
                    fr_n.push(i as i64);
                    fr_cap.push(cfg.start.as_secs_f64() + i as f64 / media.source.fps);
                    fr_done.push(d);
                    fr_new.push(w);
                }
            }
            if let Some(s) = sender_media.as_ref().filter(|_| tables.sender_rtt) {
                let code = r_values.len() as u32;
                r_values.push(cfg.id.clone());
                // Column by column from slices of known length (a row per sample: each column
                // reserved once and filled in a plain loop).
                let n = s.rtt_at.len().min(s.rtt.len());
                r_id.extend(std::iter::repeat_n(code, n));
                r_t.extend(s.rtt_at[..n].iter().map(|t| t.as_secs_f64()));
                r_ms.extend(s.rtt[..n].iter().map(|d| d.as_millis_f64()));
            }
            let ce_reported = sender_media.as_ref().map(|s| s.ce_reported);
            let nack = matches!(&cfg.media, Some(m) if m.repair != crate::scenario::Repair::None);
            let retransmissions = sender_media.as_ref().filter(|_| nack).map(|s| s.retransmissions);
            let recovered = receiver_media.as_ref().filter(|_| nack).map(|r| r.recovered);
            let media = match (sender_media, receiver_media) {
                (Some(s), Some(r)) => Some(media_summary(s, &r, cfg.start, end_t)),
                _ => None,
            };
            let transfers = st.sender.transfer_times();
            // (One histogram for both figures: built from the counts on each call.)
            let owd = m.owd.histogram();
            let net_rtt = net_rtt(m, &owd, sim.reverse_propagation(st));
            flows.push(FlowSummary {
                id: cfg.id.clone(),
                kind: cfg.kind.name().into(),
                cc: st.sender.cc_name().unwrap_or("none").into(),
                start_s: cfg.start.as_secs_f64(),
                end_s: end_t.as_secs_f64(),
                throughput_kbps: thr,
                goodput_kbps: thr,
                loss_ratio: if could_arrive > 0 { m.lost() as f64 / could_arrive as f64 } else { 0.0 },
                owd_ms: Stats::from_ns(&owd, m.owd_sum_ns, Some(m.owd_max_ns)),
                rtt_ms: media.as_ref().map_or(Stats::default(), |x| x.rtt_ms),
                packets_sent: m.sent_packets,
                packets_received: m.rx_packets,
                frame_delay_ms: media.as_ref().map(|x| x.frame_delay_ms),
                fps_mean: media.as_ref().map(|x| x.fps_mean),
                ratio_rtt_over_200ms: media.as_ref().map(|x| x.ratio_rtt_over_200ms),
                ratio_frame_delay_over_400ms: media.as_ref().map(|x| x.ratio_frame_delay_over_400ms),
                ratio_fps_below_10: media.as_ref().map(|x| x.ratio_fps_below_10),
                ce_reported,
                retransmissions,
                recovered,
                net_rtt_ms: net_rtt.0,
                ratio_net_rtt_over_200ms: net_rtt.1,
                transfers: transfers.as_ref().map(|t| t.len() as u64),
                completion_ms: transfers.map(|t| Stats::from_durations_ms(&t, f64::INFINITY).0),
                connections: st.sender.connections(),
            });
            for i in (0..nbins).filter(|_| tables.series) {
                let b = m.bins.get(i).copied().unwrap_or_default();
                f_id.push(cfg.id.clone());
                // The same exact instant as the link series (a multiple of the bin in ns), so the
                // two merge on t_s.
                f_t.push(Time(i as u64 * bin_ns).as_secs_f64());
                f_send.push(b.tx_bytes as f64 * 8.0 / bin_s / 1e3);
                f_recv.push(b.rx_bytes as f64 * 8.0 / bin_s / 1e3);
                f_owd.push(if b.rx_packets > 0 {
                    b.owd_sum_ns as f64 / b.rx_packets as f64 * 1e-6
                } else {
                    f64::NAN
                });
            }
        }

        let links_kept = tables.links && sim.links.iter().all(|l| l.is_recording());
        let (links, link_series) = if links_kept {
            link_results_with(&sim.links, &sim.link_names, end, sc.bin, tables.series)
        } else {
            (Vec::new(), Table::default())
        };

        let assist = assist_results(sim, tables.predictions);
        let summary = Summary {
            lowlat_version: LOWLAT_VERSION.into(),
            scenario: sc.name.clone(),
            seed: sc.seed,
            sim_duration_s: dur_s,
            wall_s: sim.wall.as_secs_f64(),
            events: sim.events(),
            flows,
            links,
            link_stats: links_kept,
            assist: assist.as_ref().map(|a| a.0.clone()),
            warnings: sc.warnings.clone(),
        };
        let col = |n: &str, v: Vec<f64>| (n.to_string(), Column::F64(v));
        RunResult {
            summary,
            flow_series: Table {
                columns: vec![
                    ("flow".into(), Column::Str(f_id)),
                    col("t_s", f_t),
                    col("send_kbps", f_send),
                    col("recv_kbps", f_recv),
                    col("owd_ms", f_owd),
                    col("frame_delay_ms", f_frame),
                    ("frames".into(), Column::I64(f_frames)),
                ],
            },
            link_series,
            predictions: assist.map(|a| a.1).unwrap_or_default(),
            frames: Table {
                columns: vec![
                    ("flow".into(), Column::Str(fr_id)),
                    ("frame".into(), Column::I64(fr_n)),
                    col("capture_s", fr_cap),
                    col("complete_s", fr_done),
                    col("newest_s", fr_new),
                ],
            },
            sender_rtt: Table {
                columns: vec![
                    ("flow".into(), Column::Labels { values: r_values, codes: r_id }),
                    col("t_s", r_t),
                    col("rtt_ms", r_ms),
                ],
            },
        }
    }

    /// `summary.json`, pretty-printed, keys in contract order.
    pub fn summary_json(&self) -> String {
        serde_json::to_string_pretty(&self.summary).expect("the summary holds only plain data")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Samples of a few shapes (spread over many exponents, repeated values, zeros, a long run
    /// of one value) from a fixed generator.
    fn samples(n: usize, seed: u64) -> Vec<f64> {
        let mut x = seed;
        (0..n)
            .map(|i| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                match i % 5 {
                    0 => (x >> 11) as f64 * 1e-9,
                    1 => ((x >> 40) % 7) as f64 * 0.25,
                    2 => 0.0,
                    3 => f64::from_bits(x >> 2), // any non-negative bit pattern, subnormals too
                    _ => 68.0,
                }
            })
            .collect()
    }

    #[test]
    fn the_radix_sort_orders_samples_as_total_cmp_does() {
        for (n, seed) in [(0, 1), (5, 2), (1023, 3), (1024, 4), (10_000, 5), (100_003, 6)] {
            let mut a = samples(n, seed);
            let mut b = a.clone();
            sort_samples(&mut a);
            b.sort_by(f64::total_cmp);
            assert_eq!(
                a.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                b.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                "n = {n}"
            );
        }
        // A negative sample (or -0.0) takes the comparison sort.
        let mut c = samples(1000, 7);
        c[10] = -0.0;
        c[20] = -3.5;
        let mut d = c.clone();
        sort_samples(&mut c);
        d.sort_by(f64::total_cmp);
        assert_eq!(
            c.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            d.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        assert_eq!(c[0], -3.5);
    }

    /// The threshold count agrees with comparing each sample's milliseconds, at and around it.
    #[test]
    fn the_first_count_over_a_bound_is_where_the_milliseconds_pass_it() {
        let ms = |ns: u64| Duration(ns).as_millis_f64();
        // (`u64::MAX` ns is about 1.845e13 ms.)
        for bound in [200.0, 400.0, 0.0, -1.0, 0.5e-6, 1e-6, 123.456_789, 1.8e13] {
            let first = first_ns_over(bound).expect("some count is over");
            assert!(ms(first) > bound, "{bound}");
            assert!(first == 0 || ms(first - 1) <= bound, "{bound}");
        }
        for bound in [f64::INFINITY, f64::NAN, 1.9e13, 1e20] {
            assert_eq!(first_ns_over(bound), None, "{bound}");
        }
        assert_eq!(Stats::from_durations_ms(&[Duration(u64::MAX)], f64::INFINITY).1, 0);
        assert_eq!(Stats::from_durations_ms(&[Duration(u64::MAX)], 1e3).1, 1);
    }

    /// Selecting among the nanoseconds gives the percentiles and the maximum that sorting the
    /// milliseconds gives, bit for bit, the count above a bound, and the exact mean.
    #[test]
    fn durations_give_the_stats_of_their_milliseconds() {
        for (n, seed) in [(0, 1), (1, 2), (7, 3), (1023, 4), (1024, 5), (50_001, 6)] {
            let mut x: u64 = seed;
            let durations: Vec<Duration> = (0..n)
                .map(|i| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    Duration(match i % 4 {
                        0 => x >> 34,                 // below 1 s
                        1 => 200_000_000 + (x >> 60), // around a bound
                        2 => 0,
                        _ => x >> 20, // hours
                    })
                })
                .collect();
            let mut ms: Vec<f64> = durations.iter().map(|d| d.as_millis_f64()).collect();
            let over = ms.iter().filter(|&&m| m > 200.0).count();
            let want = Stats::from_samples(&mut ms);
            let exact_sum: u128 = durations.iter().map(|d| u128::from(d.0)).sum();
            let (got, got_over) = Stats::from_durations_ms(&durations, 200.0);
            let bits = |s: Stats| [s.p50, s.p90, s.p95, s.p99, s.max].map(|v| v.map(f64::to_bits));
            assert_eq!(bits(got), bits(want), "n = {n}");
            assert_eq!(got_over, over, "n = {n}");
            if n == 0 {
                assert_eq!(got.mean, None);
            } else {
                let mean = got.mean.unwrap();
                assert_eq!(mean, exact_sum as f64 / n as f64 / 1e6, "n = {n}");
                // The sorted sum of rounded milliseconds agrees to rounding.
                assert!((mean - want.mean.unwrap()).abs() <= 1e-9 * mean.abs().max(1.0), "n = {n}");
            }
        }
        // Every value alike (one bucket), and two far clusters (the ranks in their edge buckets).
        for values in [
            vec![Duration(68_000_000); 5000],
            (0..5000u64).map(|i| Duration(if i % 3 == 0 { 9_000_000_000 + i } else { i })).collect(),
        ] {
            let mut ms: Vec<f64> = values.iter().map(|d| d.as_millis_f64()).collect();
            let want = Stats::from_samples(&mut ms);
            let (got, _) = Stats::from_durations_ms(&values, 200.0);
            assert_eq!(
                [got.p50, got.p90, got.p95, got.p99, got.max],
                [want.p50, want.p90, want.p95, want.p99, want.max]
            );
        }
    }
}
