//! SCReAM v2 (draft-johansson-ccwg-rfc8298bis-screamv2), L4S-ready, held against Ericsson's
//! reference implementation (github.com/EricssonResearch/scream, `code/ScreamV2Tx.cpp` and
//! `ScreamV2TxStream.cpp`, checked at commit c8f84c3) mechanism by mechanism. `scripts/scream_diff.py`
//! runs both on the same paths (docs/scream-differential.md).
//!
//! One congestion window `cwnd` (the draft's ref_wnd) drives everything:
//! - Feedback, per report (reference `incomingStandardizedFeedback`): bytes in flight drop for every
//!   packet up to the highest reported; each received packet gives a queueing-delay sample (one-way
//!   delay - base, base = minimum over 50 x 10 s) that also feeds a min/max pair of averages; the
//!   RTT of the newest packet (its sending to the report's arrival, the receiver's hold time
//!   included) feeds `s_rtt_sh` (1/8) and, at most once per `s_rtt_sh`, `s_rtt` (1/8, or 1/1024
//!   downwards while application-limited). A lost packet raises a loss event at
//!   most once per `s_rtt`, and only when the loss rate exceeds 1 % or the averaged queue delay
//!   exceeds a quarter of the target (isolated random losses without queueing are ignored).
//! - Every min(30 ms, s_rtt): the averaged queue delay (minus its slow minimum) FOLLOWS A FALL AT
//!   ONCE and rises with gain 1/4; the spread between the max and min averages gives
//!   `latency_diff_cwnd_scale` in [0, 1] (1 = steady delay), which limits growth (down to 0.1x)
//!   and sets the window headroom between 1.5 and 3.0; "virtual L4S": when the averaged delay
//!   exceeds target / 2, alpha_v rises linearly from 0 to 1 at the target.
//! - Congestion reactions, at most once per min(30 ms, s_rtt) (loss: once per s_rtt): loss x
//!   BETA_LOSS; classic ECN x BETA_ECN; L4S x (1 - alpha / 2) and virtual x (1 - alpha_v / 2), each
//!   divided by max(1, s_rtt / 30 ms) (the virtual one twice, as the reference does; see
//!   `virtual_backoff_scaled_once`) and by 4 while the target is below 0.8 x the acked rate. Loss
//!   and virtual events share one clock, so while the delay stays above target / 2 losses are not
//!   reacted to (the reference's behaviour). The window at the last cut (inflection point) is
//!   remembered once per cut-free growth period.
//! - Nothing sent for `feedback_timeout` (0.5 s) clears the bytes in flight; the window is kept.
//! - Growth per update: bytes newly acked without CE x MSS / cwnd, x max(0.25, scl_i) (scl_i small
//!   near the inflection point), x min(1, s_rtt / 25 ms), x clamp(latency_diff_cwnd_scale, 0.1, 1),
//!   x (1 + MUL_INCREASE x cwnd / MSS x post_congestion_scale x scl_i), post_congestion_scale
//!   rising from 0 to 1 over 200 s_rtt after a cut; never beyond MSS + 2 x the recent maximum in
//!   flight, nor while the target is at the media's maximum.
//! - Rate: 8 x cwnd / min(0.2 s, s_rtt + 1 ms), x (1 - clamp(MSS / cwnd - 0.1, 0, 0.2)), / 1.1, x
//!   MSS / (MSS + 20), then divided by 1 + f, f in [0, 0.5] integrating how far the RTP queue
//!   delay exceeds half a frame period. Pacing at 1.5 x that (at least 50 kbit/s), every packet
//!   size / pacing rate after the previous one (`pacing_burst` 0: nothing saved up while idle, as
//!   the reference's isOkToTransmit; a burst would be marked by a 1 ms L4S step); a packet may
//!   leave while bytes in flight + its size stay within cwnd x headroom + MSS.
//! - Competing loss-based flows: a standing queue (slow minimum of the queue delay above target / 8)
//!   halves the target for max(100 ms, 5 s_rtt) at most once a minute and then restarts the base
//!   delay; optionally (`detect_competing_flows`, the reference's `enableSbd`, off by default there
//!   and here) the shared-bottleneck statistics raise the delay target up to `qdelay_target_hi`.
//!
//! Deliberate differences from the reference, each because lowlat's controller API differs:
//! - The controller does not see frames: the pacing rate is 1.5 x the target (the reference takes
//!   the larger of the target and the encoder's measured output and scales it by the frame-size
//!   based `adaptivePacingRateScale`, at most 1.5, and optionally by "relaxed pacing"); the RTP
//!   queue correction integrates once per send-queue report scaled by the time since the last one
//!   (the reference integrates once per frame); the window update is not forced on a new frame;
//!   the rare "refresh" that clears the RTP queue for 2 RTTs every ~490 s without a near-empty
//!   network queue is left out (it needs the queue; lowlat has no clock drift); the key-frame
//!   request on loss is left out.
//! - MSS is the largest packet sent in the current or previous second (as the reference's
//!   `getMss`), at least `mss`; the minimum window is max(`min_ref_wnd`, 2 x MSS).
//! - Clock-drift compensation (off by default in the reference), multi-stream priorities, rate
//!   hysteresis, the adaptive target-rate scale (off in the reference simulator), the rate policer
//!   protection (off by default) and the recommended-MSS list are not implemented.

use crate::base_delay::BaseDelay;
use crate::inflight::InFlight;
use crate::{FeedbackReport, RateController, SentPacket};
use lowlat_core::{Bitrate, Bytes, Duration, Time};

/// SCReAM v2's constants. "Draft" = draft-johansson-ccwg-rfc8298bis-screamv2 §"Constants";
/// "ref" = EricssonResearch/scream ScreamTx.h / ScreamV2Tx.cpp / scream_simulator.cpp.
#[derive(Clone, Debug, PartialEq)]
pub struct ScreamV2Config {
    /// Lowest media target.
    pub min_rate: Bitrate,
    /// Highest media target.
    pub max_rate: Bitrate,
    /// Media target before the first window update.
    pub start_rate: Bitrate,
    /// Window before the first feedback (ref: constructor argument `cwnd`, 0 = 2 x MSS; the
    /// reference simulator uses 10000 B). Default: `min_ref_wnd`.
    pub initial_ref_wnd: Bytes,
    /// QDELAY_TARGET_LO (draft 0.06 s; ref simulator 0.06 s, ref library default 0.1 s).
    pub qdelay_target_lo: Duration,
    /// Ceiling of the delay target raised against loss-based flows (ref kQueueDelayTargetMax
    /// 0.3 s; draft QDELAY_TARGET_HI 0.4 s). Read only with `detect_competing_flows`.
    pub qdelay_target_hi: Duration,
    /// Raise the delay target when shared-bottleneck statistics show a competing loss-based flow
    /// (ref `enableSbd`, default false: "a bit shaky", can cause self-inflicted congestion).
    pub detect_competing_flows: bool,
    /// MIN_REF_WND (draft 3000 B; ref 2 x MSS, simulator `cwndMinLow` 2000 B).
    pub min_ref_wnd: Bytes,
    /// BETA_LOSS (draft and ref 0.7).
    pub beta_loss: f64,
    /// BETA_ECN for classic ECN (draft and ref simulator 0.8; ref library default 0.9).
    pub beta_ecn: f64,
    /// Send ECN-capable packets and react to CE marks (ECT(0) with the classic reaction, or ECT(1)
    /// with `l4s`).
    pub ecn: bool,
    /// L4S: send ECT(1) and react to CE in proportion to the marked fraction (implies `ecn`).
    pub l4s: bool,
    /// MSS, the least packet size the window arithmetic assumes (draft 1000 B).
    pub mss: Bytes,
    /// RATE_PACE_MIN (draft and ref 50 kbit/s).
    pub rate_pace_min: Bitrate,
    /// Least window headroom: bytes in flight may reach this x cwnd + MSS when the delay varies
    /// (draft REF_WND_OVERHEAD 1.5; ref kMinWindowHeadroom 1.5).
    pub ref_wnd_overhead: f64,
    /// Most window headroom, reached when the delay is steady (ref `maxWindowHeadroom` 3.0).
    pub ref_wnd_overhead_max: f64,
    /// Gain of the CE fraction average when it rises (ref kL4sGUp 1/8; draft L4S_AVG_G 1/16).
    pub l4s_avg_g_up: f64,
    /// Decay of the CE fraction average per update when it falls (ref kL4sGDown 1/128).
    pub l4s_avg_g_down: f64,
    /// QDELAY_AVG_G: gain of the averaged queue delay when it rises (draft and ref 1/4; a fall is
    /// followed at once).
    pub qdelay_avg_g: f64,
    /// Multiplicative increase phases in over this many smoothed RTTs after congestion (ref
    /// kPostCongestionDelayRtts 200; the draft's POST_CONGESTION_DELAY is 4 s).
    pub post_congestion_rtts: f64,
    /// MUL_INCREASE_FACTOR (ref kMultiplicativeIncreaseScalefactor and simulator 0.05; draft 0.02).
    pub mul_increase_factor: f64,
    /// VIRTUAL_RTT: growth scales by min(1, s_rtt / this) (draft and ref kSrttVirtual 0.025 s).
    pub virtual_rtt: Duration,
    /// Reactions to CE and delay repeat at most this often, and their size is divided by
    /// s_rtt / this (ref kMinCongestionBackOffInterval 1966/65536 s = 30 ms).
    pub min_backoff_interval: Duration,
    /// PACKET_PACING_HEADROOM (draft and ref 1.5).
    pub packet_pacing_headroom: f64,
    /// Sending time the pacer may save up while idle (0: every packet waits size / pacing rate
    /// after the previous one, as the reference's isOkToTransmit/addTransmitted space them; the
    /// sender's generic token bucket saves 5 ms). A burst of n back-to-back packets queues
    /// (n - 1) serialisation times at the bottleneck, which a 1 ms L4S step marks.
    pub pacing_burst: Duration,
    /// BYTES_IN_FLIGHT_HEAD_ROOM: cwnd grows to at most MSS + this x the recent maximum in flight
    /// (draft and ref 2.0).
    pub bytes_in_flight_head_room: f64,
    /// Bytes in flight are cleared when nothing could be sent for this long (ref isOkToTransmit:
    /// 0.5 s without transmission).
    pub feedback_timeout: Duration,
    /// The media's frame period, for the RTP queue correction (1/30 s).
    pub frame_period: Duration,
    /// Gain on the RTP queue delay error (ref kRateAdjustGain1 0.2).
    pub rate_adjust_gain1: f64,
    /// Gain integrating it into the correction factor per frame (ref kRateAdjustGain2 1/8).
    pub rate_adjust_gain2: f64,
    /// Loss reactions need a loss rate above this (ref kLossRateThreshold 0.01) or an averaged
    /// queue delay above a quarter of the target.
    pub loss_rate_threshold: f64,
    /// Back-offs shrink to a quarter while the target is below this x the acked rate (ref
    /// kTotalAckedBitrateFraction 0.8).
    pub acked_rate_fraction: f64,
    /// Divide the virtual-L4S back-off by max(1, s_rtt / `min_backoff_interval`) once instead of
    /// twice. The reference divides twice (when alpha_v is computed and again in updateCwnd), so at
    /// long RTTs a full queue is backed off from very slowly (docs/scream-differential.md); off by
    /// default, as the reference.
    pub virtual_backoff_scaled_once: bool,
    /// Restart the base delay after halving the target for a few RTTs when the slow minimum of
    /// the queue delay stays above target / 8 (ref getTargetBitrate, always on there).
    pub standing_queue_reset: bool,
}

impl Default for ScreamV2Config {
    fn default() -> Self {
        ScreamV2Config {
            min_rate: Bitrate::kbps(150),
            max_rate: Bitrate::kbps(1500),
            start_rate: Bitrate::kbps(150),
            initial_ref_wnd: Bytes(3000),
            qdelay_target_lo: Duration::from_millis(60),
            qdelay_target_hi: Duration::from_millis(300),
            detect_competing_flows: false,
            min_ref_wnd: Bytes(3000),
            beta_loss: 0.7,
            beta_ecn: 0.8,
            ecn: false,
            l4s: false,
            mss: Bytes(1000),
            rate_pace_min: Bitrate::kbps(50),
            ref_wnd_overhead: 1.5,
            ref_wnd_overhead_max: 3.0,
            l4s_avg_g_up: 1.0 / 8.0,
            l4s_avg_g_down: 1.0 / 128.0,
            qdelay_avg_g: 0.25,
            post_congestion_rtts: 200.0,
            mul_increase_factor: 0.05,
            virtual_rtt: Duration::from_millis(25),
            min_backoff_interval: Duration::from_nanos(30_000_000),
            packet_pacing_headroom: 1.5,
            bytes_in_flight_head_room: 2.0,
            feedback_timeout: Duration::from_millis(500),
            pacing_burst: Duration::ZERO,
            frame_period: Duration::from_nanos(33_333_333),
            rate_adjust_gain1: 0.2,
            rate_adjust_gain2: 1.0 / 8.0,
            loss_rate_threshold: 0.01,
            acked_rate_fraction: 0.8,
            virtual_backoff_scaled_once: false,
            standing_queue_reset: true,
        }
    }
}

crate::tunable!(ScreamV2Config {
    min_rate,
    max_rate,
    start_rate,
    initial_ref_wnd,
    qdelay_target_lo,
    qdelay_target_hi,
    detect_competing_flows,
    min_ref_wnd,
    beta_loss,
    beta_ecn,
    ecn,
    l4s,
    mss,
    rate_pace_min,
    ref_wnd_overhead,
    ref_wnd_overhead_max,
    l4s_avg_g_up,
    l4s_avg_g_down,
    qdelay_avg_g,
    post_congestion_rtts,
    mul_increase_factor,
    virtual_rtt,
    min_backoff_interval,
    pacing_burst,
    packet_pacing_headroom,
    bytes_in_flight_head_room,
    feedback_timeout,
    frame_period,
    rate_adjust_gain1,
    rate_adjust_gain2,
    loss_rate_threshold,
    acked_rate_fraction,
    virtual_backoff_scaled_once,
    standing_queue_reset,
});

impl ScreamV2Config {
    /// Checks each constant's range and their relations (min_rate <= start_rate <= max_rate,
    /// QDELAY_TARGET_LO <= QDELAY_TARGET_HI, REF_WND_OVERHEAD <= its maximum, the betas and
    /// gains in (0, 1], intervals above zero); the error names the key.
    pub fn validate(&self) -> Result<(), String> {
        use crate::tunable::bounds::{MAX_FACTOR, MAX_INTERVAL, MAX_RATE, MAX_SIZE};
        use crate::tunable::range::{above_up_to, not_below, within};
        let zero = Duration::ZERO;
        crate::tunable::check_rate_range(self.min_rate, self.start_rate, self.max_rate)?;
        within("initial_ref_wnd", self.initial_ref_wnd, Bytes::ZERO, MAX_SIZE)?;
        above_up_to("qdelay_target_lo", self.qdelay_target_lo, zero, MAX_INTERVAL)?;
        within("qdelay_target_hi", self.qdelay_target_hi, zero, MAX_INTERVAL)?;
        not_below("qdelay_target_hi", self.qdelay_target_hi, "qdelay_target_lo", self.qdelay_target_lo)?;
        above_up_to("min_ref_wnd", self.min_ref_wnd, Bytes::ZERO, MAX_SIZE)?;
        for (key, g) in [
            ("beta_loss", self.beta_loss),
            ("beta_ecn", self.beta_ecn),
            ("l4s_avg_g_up", self.l4s_avg_g_up),
            ("l4s_avg_g_down", self.l4s_avg_g_down),
            ("qdelay_avg_g", self.qdelay_avg_g),
            ("acked_rate_fraction", self.acked_rate_fraction),
        ] {
            above_up_to(key, g, 0.0, 1.0)?;
        }
        within("mss", self.mss, Bytes(1), Bytes(65_535))?;
        within("rate_pace_min", self.rate_pace_min, Bitrate::ZERO, MAX_RATE)?;
        above_up_to("ref_wnd_overhead", self.ref_wnd_overhead, 0.0, MAX_FACTOR)?;
        within("ref_wnd_overhead_max", self.ref_wnd_overhead_max, 0.0, MAX_FACTOR)?;
        not_below(
            "ref_wnd_overhead_max",
            self.ref_wnd_overhead_max,
            "ref_wnd_overhead",
            self.ref_wnd_overhead,
        )?;
        above_up_to("post_congestion_rtts", self.post_congestion_rtts, 0.0, MAX_FACTOR)?;
        within("mul_increase_factor", self.mul_increase_factor, 0.0, MAX_FACTOR)?;
        for (key, d) in [
            ("virtual_rtt", self.virtual_rtt),
            ("min_backoff_interval", self.min_backoff_interval),
            ("feedback_timeout", self.feedback_timeout),
            ("frame_period", self.frame_period),
        ] {
            above_up_to(key, d, zero, MAX_INTERVAL)?;
        }
        above_up_to("packet_pacing_headroom", self.packet_pacing_headroom, 0.0, MAX_FACTOR)?;
        above_up_to("bytes_in_flight_head_room", self.bytes_in_flight_head_room, 0.0, MAX_FACTOR)?;
        within("rate_adjust_gain1", self.rate_adjust_gain1, 0.0, MAX_FACTOR)?;
        within("rate_adjust_gain2", self.rate_adjust_gain2, 0.0, 1.0)?;
        within("loss_rate_threshold", self.loss_rate_threshold, 0.0, 1.0)?;
        // The pacer's token bucket: beyond a second it is no pacing at all.
        within("pacing_burst", self.pacing_burst, zero, Duration::from_millis(1000))?;
        Ok(())
    }
}

/// Reference-implementation constants that are structure rather than tuning (ScreamV2Tx.cpp).
mod k {
    /// Base delay history: 50 buckets of 10 s (kBaseOwdHistSize, kBaseDelayUpdateInterval).
    pub const BASE_BUCKET_S: u64 = 10;
    pub const BASE_BUCKETS: usize = 50;
    /// Initial smoothed RTT, s.
    pub const S_RTT_INIT: f64 = 0.05;
    /// Slow updates (in-flight history, competing-flow statistics) every 50 ms.
    pub const SLOW_UPDATE_S: f64 = 0.05;
    /// In-flight history: 20 slow updates (kMaxBytesInFlightHistSize).
    pub const BIF_HIST: usize = 20;
    /// Slow minimum of the queue delay: updated every 100 s_rtt, gain 1/8.
    pub const QDELAY_MIN_SLOW_RTTS: f64 = 100.0;
    pub const QDELAY_MIN_SLOW_G: f64 = 1.0 / 8.0;
    /// Delay-spread averaging (kLatencyDiffAlpha, kQueueDelayMinMaxAlpha, kLatencyDiffThreshold).
    pub const LATENCY_DIFF_G: f64 = 1.0 / 32.0;
    pub const QDELAY_MINMAX_G: f64 = 1.0 / 16.0;
    pub const LATENCY_DIFF_THRESHOLD: f64 = 0.01;
    /// L4S fraction update at most every 10 ms (655/65536 s).
    pub const L4S_UPDATE_S: f64 = 655.0 / 65536.0;
    /// Base delay reset: at most once per 60 s, target halved for max(100 ms, 5 s_rtt).
    pub const BASE_RESET_INTERVAL_S: f64 = 60.0;
    pub const RATE_LIMIT_RTTS: f64 = 5.0;
    pub const RATE_LIMIT_MIN_S: f64 = 0.1;
    /// Per-packet RTP + UDP overhead the rate is scaled for (kPacketOverhead).
    pub const PACKET_OVERHEAD: f64 = 20.0;
    /// Fixed headroom for frame-size variation in the rate (the `/ 1.1` of updateCwnd).
    pub const FRAME_SIZE_HEADROOM: f64 = 1.1;
    /// Shared-bottleneck history: 200 x 50 ms, the short mean over the newest 50.
    pub const SBD_HIST: usize = 200;
    pub const SBD_HIST_SHORT: usize = 50;
}

impl ScreamV2Config {
    /// Builds the controller once its `validate` accepts the constants: a caller that
    /// set fields by hand (skipping the scenario's checks) gets the error naming the key here, not
    /// a panic or a stuck run later.
    pub fn build(&self) -> Result<ScreamV2, String> {
        self.validate()?;
        let mss = self.mss.0 as f64;
        Ok(ScreamV2 {
            cfg: self.clone(),
            cwnd: (self.initial_ref_wnd.0 as f64).max(self.min_ref_wnd.0 as f64),
            cwnd_i: 1.0,
            cwnd_i_blocked: false,
            in_flight: InFlight::default(),
            base: BaseDelay::new(Duration::from_secs(k::BASE_BUCKET_S), k::BASE_BUCKETS),
            mss_now: mss,
            mss_prev: mss,
            last_mss_reset: 0.0,
            s_rtt: k::S_RTT_INIT,
            s_rtt_sh: k::S_RTT_INIT,
            s_rtt_sh_prev: k::S_RTT_INIT,
            last_s_rtt_update: 0.0,
            queue_delay: 0.0,
            queue_delay_avg: 0.0,
            queue_delay_min: 1000.0,
            queue_delay_min_slow_avg: 0.0,
            queue_delay_max_avg: 0.0,
            queue_delay_min_avg: 1000.0,
            latency_diff_avg: 0.0,
            latency_diff_cwnd_scale: 1.0,
            queue_delay_target: self.qdelay_target_lo.as_secs_f64(),
            window_headroom: self.ref_wnd_overhead_max,
            bytes_newly_acked: 0,
            bytes_newly_acked_ce: 0,
            bytes_in_flight_at_feedback: 0,
            max_bif: 0,
            max_bif_prev: 0,
            max_bif_hist: [0; k::BIF_HIST],
            max_bif_hist_ix: 0,
            app_limited: false,
            loss_rate: 0.0,
            loss_event: false,
            was_loss_event: false,
            loss_event_rate: 0.0,
            ce_this_feedback: false,
            packets_delivered: 0,
            packets_marked: 0,
            fraction_marked: 0.0,
            l4s_alpha: 0.1,
            virtual_alpha: 0.0,
            acked_bytes_window: 0,
            acked_rate_bps: 0.0,
            last_acked_rate_update: 0.0,
            last_loss_event: 0.0,
            last_congestion: 0.0,
            last_cwnd_update: None,
            last_qdelay_avg_update: 0.0,
            last_qdelay_min_slow_update: 0.0,
            last_l4s_update: 0.0,
            last_slow_update: 0.0,
            last_rtt_tick: 0.0,
            last_rate_limit: 0.0,
            rate_limited: false,
            can_reset_base: false,
            sbd_hist: vec![0.0; if self.detect_competing_flows { k::SBD_HIST } else { 0 }],
            sbd_ix: 0,
            sbd_skew: 0.0,
            rate_share: None,
            rate_adjust: 0.0,
            last_send_queue: None,
            last_transmit: None,
        })
    }
}

/// The SCReAM v2 controller.
#[derive(Clone, Debug)]
pub struct ScreamV2 {
    cfg: ScreamV2Config,
    /// Congestion window (the draft's ref_wnd), bytes.
    cwnd: f64,
    /// Window at the last congestion event (inflection point) and whether it is frozen until the
    /// window grows again.
    cwnd_i: f64,
    cwnd_i_blocked: bool,
    in_flight: InFlight,
    base: BaseDelay,
    /// Largest packet of the current and previous second.
    mss_now: f64,
    mss_prev: f64,
    last_mss_reset: f64,
    /// Smoothed RTT (slow, used for rates) and its fast companion, s.
    s_rtt: f64,
    s_rtt_sh: f64,
    s_rtt_sh_prev: f64,
    last_s_rtt_update: f64,
    /// Latest queue delay sample and its averages, s.
    queue_delay: f64,
    queue_delay_avg: f64,
    queue_delay_min: f64,
    queue_delay_min_slow_avg: f64,
    queue_delay_max_avg: f64,
    queue_delay_min_avg: f64,
    latency_diff_avg: f64,
    latency_diff_cwnd_scale: f64,
    queue_delay_target: f64,
    window_headroom: f64,
    bytes_newly_acked: u64,
    bytes_newly_acked_ce: u64,
    bytes_in_flight_at_feedback: u64,
    /// Maximum in flight over the current and previous slow-update interval, and its history.
    max_bif: u64,
    max_bif_prev: u64,
    max_bif_hist: [u64; k::BIF_HIST],
    max_bif_hist_ix: usize,
    app_limited: bool,
    loss_rate: f64,
    loss_event: bool,
    was_loss_event: bool,
    loss_event_rate: f64,
    ce_this_feedback: bool,
    packets_delivered: u64,
    packets_marked: u64,
    fraction_marked: f64,
    l4s_alpha: f64,
    virtual_alpha: f64,
    /// Acked bytes since the last rate update and the acked rate (100 ms windows), bit/s.
    acked_bytes_window: u64,
    acked_rate_bps: f64,
    last_acked_rate_update: f64,
    last_loss_event: f64,
    last_congestion: f64,
    last_cwnd_update: Option<f64>,
    last_qdelay_avg_update: f64,
    last_qdelay_min_slow_update: f64,
    last_l4s_update: f64,
    last_slow_update: f64,
    last_rtt_tick: f64,
    last_rate_limit: f64,
    /// The target is halved while a standing queue is drained before a base-delay restart.
    rate_limited: bool,
    can_reset_base: bool,
    /// Normalised queue delays for shared-bottleneck detection (empty when off).
    sbd_hist: Vec<f64>,
    sbd_ix: usize,
    sbd_skew: f64,
    /// The rate the window allows before the RTP queue correction (None: no update yet).
    rate_share: Option<f64>,
    /// RTP queue correction factor, 0..0.5.
    rate_adjust: f64,
    last_send_queue: Option<f64>,
    /// When a packet was last sent.
    last_transmit: Option<Time>,
}

impl ScreamV2 {
    /// The congestion (reference) window.
    pub fn ref_wnd(&self) -> Bytes {
        Bytes(self.cwnd as u64)
    }

    /// Bytes in flight.
    pub fn bytes_in_flight(&self) -> Bytes {
        self.in_flight.bytes()
    }

    /// The averaged queueing delay the delay reaction reads.
    pub fn queue_delay_avg(&self) -> Duration {
        Duration::from_secs_f64(self.queue_delay_avg.max(0.0))
    }

    /// The current queueing-delay target.
    pub fn queue_delay_target(&self) -> Duration {
        Duration::from_secs_f64(self.queue_delay_target)
    }

    /// The averaged fraction of CE-marked packets (L4S mode).
    pub fn l4s_alpha(&self) -> f64 {
        self.l4s_alpha
    }

    fn mss(&self) -> f64 {
        self.mss_now.max(self.mss_prev)
    }

    fn cwnd_min(&self) -> f64 {
        (self.cfg.min_ref_wnd.0 as f64).max(2.0 * self.mss())
    }

    fn max_rate(&self) -> f64 {
        self.cfg.max_rate.as_bps_f64()
    }

    /// The media target (bit/s) before the temporary halving.
    fn stream_target(&self) -> f64 {
        let c = &self.cfg;
        let share = self.rate_share.unwrap_or(c.start_rate.as_bps_f64());
        (share / (1.0 + self.rate_adjust)).clamp(c.min_rate.as_bps_f64(), self.max_rate())
    }

    /// The encoder's target: the stream target, halved while a standing queue is drained.
    fn target_bps(&self) -> f64 {
        let t = self.stream_target();
        if self.rate_limited {
            t * 0.5
        } else {
            t
        }
    }

    /// ScreamV2Tx::setLossEvent: a loss counts only with a loss rate above the threshold or a
    /// queue building up (random losses on an empty path are ignored).
    fn set_loss_event(&mut self) {
        if self.loss_rate > self.cfg.loss_rate_threshold
            || self.queue_delay_avg > self.queue_delay_target / 4.0
        {
            self.loss_event = true;
        }
    }

    fn update_loss_rate(&mut self, lost: bool) {
        let alpha = (self.cfg.loss_rate_threshold / 4.0).min(self.mss() / self.cwnd / 2.0);
        self.loss_rate = (1.0 - alpha) * self.loss_rate + alpha * if lost { 1.0 } else { 0.0 };
    }

    /// ScreamV2Tx::computeSbd and the queue-delay-target update of updateCwnd.
    fn update_competing_flows(&mut self) {
        let lo = self.cfg.qdelay_target_lo.as_secs_f64();
        let hi = self.cfg.qdelay_target_hi.as_secs_f64();
        let n = self.sbd_hist.len();
        self.sbd_hist[self.sbd_ix] = self.queue_delay / lo;
        self.sbd_ix = (self.sbd_ix + 1) % n;
        let mean = self.sbd_hist.iter().sum::<f64>() / n as f64;
        // The newest SBD_HIST_SHORT entries end just before sbd_ix.
        let mean_sh = (1..=k::SBD_HIST_SHORT).map(|i| self.sbd_hist[(self.sbd_ix + n - i) % n]).sum::<f64>()
            / k::SBD_HIST_SHORT as f64;
        let (mut var, mut skew) = (0.0, self.sbd_skew);
        for x in &self.sbd_hist {
            let d = x - mean;
            var += d * d;
            skew += d * d * d;
        }
        // The reference never clears its skew accumulator between calls; kept.
        var /= n as f64;
        skew /= n as f64;
        self.sbd_skew = skew;
        let oh = lo * (mean_sh + var.sqrt());
        if self.loss_event_rate > 0.002 && mean_sh > 0.5 && var < 0.2 {
            self.queue_delay_target = hi.min(oh * 1.5);
        } else if var < 0.2 && skew < 0.05 {
            self.queue_delay_target = oh.clamp(lo, hi.max(lo));
        }
        if oh < self.queue_delay_target {
            self.queue_delay_target = lo.max((self.queue_delay_target * 0.99).max(oh));
        } else {
            self.queue_delay_target = lo.max(self.queue_delay_target * 0.999);
        }
    }

    /// ScreamV2Tx::updateCwnd.
    fn update_cwnd(&mut self, now: f64, ecn_ce_event: bool, virtual_ce_event: bool) {
        let c = self.cfg.clone();
        let mss = self.mss();
        let cwnd_min = self.cwnd_min();
        let mut post_congestion_scale =
            ((now - self.last_congestion) / (c.post_congestion_rtts * self.s_rtt)).clamp(0.0, 1.0);
        self.queue_delay_min = self.queue_delay_min.min(self.queue_delay);
        if now - self.last_slow_update > k::SLOW_UPDATE_S {
            if !self.sbd_hist.is_empty() {
                self.update_competing_flows();
            }
            self.max_bif_hist[self.max_bif_hist_ix] = self.max_bif;
            self.max_bif_hist_ix = (self.max_bif_hist_ix + 1) % k::BIF_HIST;
            if self.stream_target() > 0.95 * self.max_rate() {
                // Near the media's maximum the window need not exceed what was in flight lately
                // (or what the maximum rate needs), so a capacity drop builds less queue.
                let hist = self.max_bif_hist.iter().copied().max().unwrap_or(0).max(self.max_bif) as f64;
                let need = c.packet_pacing_headroom * self.max_rate() / 8.0 * (self.s_rtt + 0.001);
                self.cwnd = self.cwnd.min(hist.max(need));
            }
            if now > 2.0 {
                self.max_bif_prev = self.max_bif;
                self.max_bif = 0;
            }
            self.last_slow_update = now;
        }
        let cwnd_ratio = mss / self.cwnd;
        self.window_headroom =
            c.ref_wnd_overhead + (c.ref_wnd_overhead_max - c.ref_wnd_overhead) * self.latency_diff_cwnd_scale;
        let scl_i = ((self.cwnd - self.cwnd_i) / self.cwnd_i * 8.0).powi(2).clamp(0.1, 1.0);
        let acked_rate = self.acked_rate_bps;
        let below_acked = self.stream_target() < acked_rate * c.acked_rate_fraction;
        let rtt_scale = (self.s_rtt / c.min_backoff_interval.as_secs_f64()).max(1.0);
        if self.loss_event || ecn_ce_event || virtual_ce_event {
            if !self.cwnd_i_blocked {
                self.cwnd_i = self.cwnd;
                self.cwnd_i_blocked = true;
            }
            if self.loss_event {
                self.cwnd = (c.beta_loss * self.cwnd).floor().max(cwnd_min);
                self.loss_event = false;
            } else if ecn_ce_event {
                if c.l4s {
                    let mut back_off = self.l4s_alpha / 2.0;
                    if below_acked {
                        back_off *= 0.25;
                    }
                    back_off /= rtt_scale;
                    if self.queue_delay < self.queue_delay_target * 0.25 {
                        back_off *= scl_i.max(0.25);
                        back_off *= self.latency_diff_cwnd_scale.clamp(0.25, 1.0);
                    }
                    if now - self.last_congestion > 100.0 * self.s_rtt.max(c.virtual_rtt.as_secs_f64()) {
                        // Long uncongested (media at its maximum): the window may have drifted
                        // far above what was in flight.
                        self.cwnd = self.cwnd.min(self.max_bif_prev as f64);
                    }
                    self.cwnd = ((1.0 - back_off) * self.cwnd).floor().max(cwnd_min);
                } else {
                    self.cwnd = (c.beta_ecn * self.cwnd).floor().max(cwnd_min);
                }
            } else {
                let mut back_off = self.virtual_alpha / 2.0;
                if below_acked {
                    back_off *= 0.25;
                }
                back_off /= rtt_scale;
                self.cwnd = ((1.0 - back_off) * self.cwnd).floor().max(cwnd_min);
            }
            self.last_congestion = now;
            self.was_loss_event = true;
            post_congestion_scale = 0.0;
        }
        if now - self.last_rtt_tick > self.s_rtt {
            self.loss_event_rate = if self.was_loss_event {
                0.98 * self.loss_event_rate + 0.02
            } else {
                0.98 * self.loss_event_rate
            };
            self.was_loss_event = false;
            self.last_rtt_tick = now;
        }
        // Growth for the bytes acked without CE since the last update.
        let acked = self.bytes_newly_acked.saturating_sub(self.bytes_newly_acked_ce) as f64;
        let mut increment = acked * cwnd_ratio;
        increment *= scl_i.max(0.25);
        increment *= (self.s_rtt / c.virtual_rtt.as_secs_f64()).min(1.0);
        increment *= self.latency_diff_cwnd_scale.clamp(0.1, 1.0);
        let mul = 1.0 + c.mul_increase_factor * self.cwnd / mss;
        increment *= 1.0 + (mul - 1.0) * post_congestion_scale * scl_i;
        let cwnd_prev = self.cwnd;
        let max_allowed = mss + self.max_bif.max(self.max_bif_prev) as f64 * c.bytes_in_flight_head_room;
        self.app_limited = max_allowed < self.cwnd;
        let grown = self.cwnd + (increment + 0.5).floor();
        if grown <= max_allowed && self.stream_target() < self.max_rate() {
            self.cwnd = grown;
        }
        if self.cwnd > cwnd_prev {
            self.cwnd_i_blocked = false;
        }
        self.cwnd = self.cwnd.max(cwnd_min);
        self.bytes_newly_acked = 0;
        self.bytes_newly_acked_ce = 0;
        // The rate the window carries over one RTT (at most 200 ms counted), with the reference's
        // margins for small windows, frame-size variation and per-packet overhead.
        let mut rate = 8.0 * self.cwnd / (self.s_rtt + 0.001).clamp(0.001, 0.2);
        rate *= 1.0 - (mss / self.cwnd - 0.1).clamp(0.0, 0.2);
        rate /= k::FRAME_SIZE_HEADROOM;
        rate *= mss / (mss + k::PACKET_OVERHEAD);
        self.rate_share = Some(rate.min(self.max_rate()));
    }

    /// ScreamV2Tx::getTargetBitrate's standing-queue check: a long-lasting queue (or a base delay
    /// that crept up) halves the target for a few RTTs, then the base delay restarts.
    fn check_standing_queue(&mut self, now: f64) {
        self.rate_limited = false;
        if !self.cfg.standing_queue_reset || self.queue_delay_min_slow_avg <= self.queue_delay_target / 8.0 {
            return;
        }
        if now - self.last_rate_limit > k::BASE_RESET_INTERVAL_S {
            self.last_rate_limit = now;
        }
        if now - self.last_rate_limit < k::RATE_LIMIT_MIN_S.max(k::RATE_LIMIT_RTTS * self.s_rtt) {
            self.rate_limited = true;
            self.can_reset_base = true;
        } else if self.can_reset_base {
            self.base = BaseDelay::new(Duration::from_secs(k::BASE_BUCKET_S), k::BASE_BUCKETS);
            self.queue_delay_min_slow_avg = 0.0;
            self.queue_delay = 0.0;
            self.can_reset_base = false;
        }
    }
}

impl RateController for ScreamV2 {
    fn name(&self) -> &'static str {
        "scream2"
    }

    fn on_packet_sent(&mut self, now: Time, packet: &SentPacket) {
        let t = now.as_secs_f64();
        self.in_flight.on_sent(packet);
        self.last_transmit = Some(now);
        // MSS = the largest recent packet; the reference restarts it every second.
        if t - self.last_mss_reset > 1.0 {
            self.mss_prev = self.mss_now;
            self.mss_now = self.cfg.mss.0 as f64;
            self.last_mss_reset = t;
        }
        self.mss_now = self.mss_now.max(packet.size.0 as f64);
        self.cwnd = self.cwnd.max(self.cwnd_min());
    }

    fn on_feedback(&mut self, now_t: Time, report: &FeedbackReport) {
        let now = now_t.as_secs_f64();
        let target = self.queue_delay_target;
        // Per packet: bytes in flight before it is settled, queue-delay samples and their
        // min/max averages, CE marks, loss rate.
        self.bytes_in_flight_at_feedback = self.in_flight.bytes().0;
        self.max_bif = self.max_bif.max(self.bytes_in_flight_at_feedback);
        for p in &report.packets {
            match p.one_way_delay() {
                Some(owd) => {
                    self.queue_delay = self.base.update(now_t, owd).as_secs_f64();
                    self.packets_delivered += 1;
                    if (self.cfg.ecn || self.cfg.l4s) && p.ecn == 3 {
                        self.packets_marked += 1;
                        self.bytes_newly_acked_ce += p.sent.size.0;
                        self.ce_this_feedback = true;
                    }
                    self.update_loss_rate(false);
                }
                None => {
                    if now - self.last_loss_event > self.s_rtt && self.cfg.beta_loss < 1.0 {
                        self.set_loss_event();
                    }
                    self.update_loss_rate(true);
                }
            }
            self.queue_delay_min_avg = self.queue_delay_min_avg.min(self.queue_delay);
            self.queue_delay_max_avg = target.min(self.queue_delay_max_avg.max(self.queue_delay));
        }
        // Everything up to the highest reported sequence number leaves the flight (as SACK).
        let before = self.in_flight.bytes().0;
        let acked = self.in_flight.on_report(report);
        self.bytes_newly_acked += before - self.in_flight.bytes().0;
        self.acked_bytes_window += acked.bytes;
        if now - self.last_acked_rate_update >= 0.1 {
            let dt = now - self.last_acked_rate_update;
            self.acked_rate_bps = self.acked_bytes_window as f64 * 8.0 / dt;
            self.acked_bytes_window = 0;
            self.last_acked_rate_update = now;
        }
        // RTT of the newest received packet, counted as the reference does (markAcked): from its
        // sending to the report's arrival, the time it waited at the receiver included.
        if let Some(last) = report.packets.iter().rev().find(|p| p.arrival.is_some()) {
            let rtt = (now_t - last.sent.send_time).as_secs_f64();
            self.s_rtt_sh_prev = self.s_rtt_sh;
            self.s_rtt_sh = (7.0 * self.s_rtt_sh + rtt) / 8.0;
            if now - self.last_s_rtt_update > self.s_rtt_sh {
                self.s_rtt = if self.app_limited && self.s_rtt > self.s_rtt_sh {
                    (1023.0 * self.s_rtt + self.s_rtt_sh) / 1024.0
                } else {
                    (7.0 * self.s_rtt + self.s_rtt_sh) / 8.0
                };
                self.last_s_rtt_update = now;
            }
        }
        // End of the report: events and averages.
        let interval = self.cfg.min_backoff_interval.as_secs_f64().min(self.s_rtt);
        let mut ecn_ce_event = false;
        if now - self.last_loss_event > interval && self.ce_this_feedback {
            ecn_ce_event = true;
        }
        self.ce_this_feedback = false;
        if self.cfg.l4s {
            if now - self.last_l4s_update > k::L4S_UPDATE_S.min(self.s_rtt) {
                self.last_l4s_update = now;
                if self.packets_delivered > 0 {
                    let f = self.packets_marked as f64 / self.packets_delivered as f64;
                    self.fraction_marked = f;
                    if f >= self.l4s_alpha {
                        let g = self.cfg.l4s_avg_g_up;
                        self.l4s_alpha = (g * f + (1.0 - g) * self.l4s_alpha).min(1.0);
                    } else {
                        self.l4s_alpha *= 1.0 - self.cfg.l4s_avg_g_down;
                    }
                    self.packets_delivered = 0;
                    self.packets_marked = 0;
                }
            }
        } else {
            self.l4s_alpha = 0.0;
            self.packets_delivered = 0;
            self.packets_marked = 0;
        }
        if now - self.last_qdelay_avg_update > interval {
            if now - self.last_qdelay_min_slow_update > self.s_rtt * k::QDELAY_MIN_SLOW_RTTS {
                self.queue_delay_min_slow_avg = if self.queue_delay_min < self.queue_delay_min_slow_avg {
                    self.queue_delay_min
                } else {
                    k::QDELAY_MIN_SLOW_G * self.queue_delay_min
                        + (1.0 - k::QDELAY_MIN_SLOW_G) * self.queue_delay_min_slow_avg
                };
                self.queue_delay_min = 1000.0;
                self.last_qdelay_min_slow_update = now;
            }
            // The averaged delay follows a fall at once and a rise with gain QDELAY_AVG_G.
            let q = self.queue_delay - self.queue_delay_min_slow_avg;
            self.queue_delay_avg = if q < self.queue_delay_avg {
                q
            } else {
                (1.0 - self.cfg.qdelay_avg_g) * self.queue_delay_avg + self.cfg.qdelay_avg_g * q
            };
            let diff = (self.queue_delay_max_avg - self.queue_delay_min_avg)
                .clamp(0.0, 2.0 * k::LATENCY_DIFF_THRESHOLD);
            self.latency_diff_avg =
                (1.0 - k::LATENCY_DIFF_G) * self.latency_diff_avg + k::LATENCY_DIFF_G * diff;
            self.latency_diff_cwnd_scale =
                (1.0 - self.latency_diff_avg / k::LATENCY_DIFF_THRESHOLD).clamp(0.0, 1.0);
            // The max average decays towards zero, the min average towards the max: robust to
            // drift and scheduling jitter.
            self.queue_delay_max_avg *= 1.0 - k::QDELAY_MINMAX_G;
            self.queue_delay_min_avg = (1.0 - k::QDELAY_MINMAX_G) * self.queue_delay_min_avg
                + k::QDELAY_MINMAX_G * self.queue_delay_max_avg;
            self.last_qdelay_avg_update = now;
        }
        let mut virtual_ce_event = false;
        if self.queue_delay_avg > target / 2.0 && now - self.last_loss_event > interval {
            virtual_ce_event = true;
            let a = ((self.queue_delay_avg - target / 2.0) / (target / 2.0)).clamp(0.0, 1.0);
            self.virtual_alpha = if self.cfg.virtual_backoff_scaled_once {
                a
            } else {
                a / (self.s_rtt / self.cfg.min_backoff_interval.as_secs_f64()).max(1.0)
            };
        }
        if self.s_rtt_sh_prev > self.s_rtt_sh && self.fraction_marked == 1.0 {
            // Everything marked but the RTT falls: the queue drains, the marks lag behind.
            ecn_ce_event = false;
        }
        if self.loss_event || ecn_ce_event || virtual_ce_event {
            self.last_loss_event = now;
        }
        let last_update = *self.last_cwnd_update.get_or_insert(now);
        if now - last_update > interval || self.loss_event || ecn_ce_event || virtual_ce_event {
            self.update_cwnd(now, ecn_ce_event, virtual_ce_event);
            self.last_cwnd_update = Some(now);
        }
        self.check_standing_queue(now);
    }

    /// The RTP queue correction of ScreamV2TxStream::newMediaFrame: the target is divided by
    /// 1 + factor, the factor growing while the queue holds more than half a frame period. The
    /// reference integrates once per frame; here each report counts for the frames it spans.
    fn on_send_queue(&mut self, now: Time, _bytes: Bytes, delay: Duration) {
        let c = &self.cfg;
        let t = now.as_secs_f64();
        let period = c.frame_period.as_secs_f64();
        let frames = self.last_send_queue.map_or(1.0, |last| ((t - last) / period).min(4.0));
        self.last_send_queue = Some(t);
        let error = c.rate_adjust_gain1 * (delay.as_secs_f64() - period / 2.0) / period;
        self.rate_adjust = (self.rate_adjust + error * c.rate_adjust_gain2 * frames).clamp(0.0, 0.5);
    }

    /// ScreamV2Tx::isOkToTransmit's deadlock guard: nothing sent for `feedback_timeout` (the
    /// window stayed full without feedback) clears the bytes in flight; the window is kept.
    fn handle_timeout(&mut self, now: Time) {
        if self.last_transmit.is_some_and(|t| now - t >= self.cfg.feedback_timeout) {
            self.in_flight.expire(now);
        }
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.in_flight.oldest()?;
        self.last_transmit.map(|t| t + self.cfg.feedback_timeout)
    }

    fn can_send(&self, _now: Time, size: Bytes) -> bool {
        (self.in_flight.bytes().0 + size.0) as f64 <= self.cwnd * self.window_headroom + self.mss()
    }

    fn target_bitrate(&self) -> Bitrate {
        Bitrate::from_bps_f64(self.target_bps())
    }

    /// max(RATE_PACE_MIN, PACKET_PACING_HEADROOM x target).
    fn pacing_rate(&self) -> Bitrate {
        let r =
            (self.cfg.packet_pacing_headroom * self.stream_target()).max(self.cfg.rate_pace_min.as_bps_f64());
        Bitrate::from_bps_f64(r)
    }

    /// A send changes the bytes in flight, the MSS and the window; the pacing rate reads the
    /// stream target (rate share and adjustment) and constants only.
    fn pacing_rate_ignores_sends(&self) -> bool {
        true
    }

    /// The timer only clears the bytes in flight.
    fn pacing_rate_ignores_timeouts(&self) -> bool {
        true
    }

    fn pacing_burst(&self) -> Option<Duration> {
        Some(self.cfg.pacing_burst)
    }

    fn ecn_codepoint(&self) -> u8 {
        match (self.cfg.l4s, self.cfg.ecn) {
            (true, _) => 0b01,
            (false, true) => 0b10,
            (false, false) => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PacketResult;

    /// Feeds `n` packets of 1000 B sent at `at`; packets whose index is in `lost` are lost, the others
    /// arrive after `owd` with ECN field `ecn`; the report reaches the sender 50 ms later.
    struct Path {
        seq: u64,
    }

    impl Path {
        fn exchange(&mut self, s: &mut ScreamV2, at: Time, n: u64, lost: &[u64], owd_ms: u64, ecn: u8) {
            let owd = Duration::from_millis(owd_ms);
            let packets: Vec<_> = (0..n)
                .map(|i| {
                    let sent = SentPacket { seq: self.seq + i, size: Bytes(1000), send_time: at };
                    s.on_packet_sent(at, &sent);
                    let arrival = (!lost.contains(&i)).then_some(at + owd);
                    PacketResult { sent, arrival, ecn }
                })
                .collect();
            self.seq += n;
            let report = FeedbackReport { packets, report_time: at + owd };
            s.on_feedback(at + owd + Duration::from_millis(50), &report);
        }

        /// `secs` seconds of clean exchanges every 100 ms from `from`.
        fn warm_up(&mut self, s: &mut ScreamV2, from: u64, secs: u64) {
            for i in 0..secs * 10 {
                self.exchange(s, Time::from_millis(from + 100 * i), 10, &[], 50, 0);
            }
        }
    }

    fn cfg() -> ScreamV2Config {
        ScreamV2Config { max_rate: Bitrate::mbps(50), ..ScreamV2Config::default() }
    }

    #[test]
    fn heavy_loss_cuts_the_window_by_beta_loss_at_most_once_per_rtt() {
        let mut s = cfg().build().unwrap();
        let mut p = Path { seq: 0 };
        p.warm_up(&mut s, 0, 10);
        let before = s.cwnd;
        assert!(before > 6000.0, "window {before}");
        // 8 of 10 lost: the loss rate passes 1 % within the report.
        p.exchange(&mut s, Time::from_millis(10_000), 10, &[1, 2, 3, 4, 5, 6, 7, 8], 50, 0);
        let after = s.cwnd;
        // The cut, plus at most the growth for the report's acked bytes.
        assert!(after >= (0.7 * before).floor() && after <= 0.7 * before + 2000.0, "{before} -> {after}");
        // Within an RTT of that reaction another lossy report does not cut again.
        p.exchange(&mut s, Time::from_millis(10_010), 10, &[1, 2, 3, 4, 5, 6, 7, 8], 50, 0);
        assert!(s.cwnd >= after, "{after} -> {}", s.cwnd);
        // One RTT later it does.
        let w = s.cwnd;
        p.exchange(&mut s, Time::from_millis(10_300), 10, &[1, 2, 3, 4, 5, 6, 7, 8], 50, 0);
        assert!(s.cwnd <= 0.7 * w + 2000.0 && s.cwnd < w, "{w} -> {}", s.cwnd);
    }

    #[test]
    fn an_isolated_loss_without_queueing_is_ignored() {
        // The reference reacts to loss only above a 1 % loss rate or with a queue building.
        let mut s = cfg().build().unwrap();
        let mut p = Path { seq: 0 };
        p.warm_up(&mut s, 0, 10);
        let before = s.cwnd;
        p.exchange(&mut s, Time::from_millis(10_000), 10, &[3], 50, 0);
        assert!(s.cwnd >= before, "{before} -> {}", s.cwnd);
    }

    #[test]
    fn queueing_above_half_the_target_backs_off_and_the_average_falls_at_once() {
        let mut s = cfg().build().unwrap();
        let mut p = Path { seq: 0 };
        p.warm_up(&mut s, 0, 10);
        let before = s.cwnd;
        // A standing 60 ms queue (the whole target) on top of the 50 ms base.
        for k in 0..10 {
            p.exchange(&mut s, Time::from_millis(10_000 + 100 * k), 10, &[], 110, 0);
        }
        assert!(s.queue_delay_avg() > Duration::from_millis(40), "{:?}", s.queue_delay_avg());
        assert!(s.cwnd < 0.9 * before, "{before} -> {}", s.cwnd);
        // The queue empties: the average follows at once (it rises with gain 1/4 only).
        p.exchange(&mut s, Time::from_millis(11_000), 10, &[], 50, 0);
        assert_eq!(s.queue_delay_avg(), Duration::ZERO);
    }

    #[test]
    fn the_delay_back_off_softens_fourfold_below_0_8_of_the_acked_rate() {
        let cut = |acked_bps: f64| {
            let mut s = cfg().build().unwrap();
            s.cwnd = 50_000.0;
            s.cwnd_i = 50_000.0;
            s.rate_share = Some(1e6);
            s.acked_rate_bps = acked_bps;
            s.virtual_alpha = 0.4;
            s.s_rtt = 0.02; // below 30 ms: no RTT scaling
            s.update_cwnd(1.0, false, true);
            1.0 - s.cwnd / 50_000.0
        };
        assert!((cut(0.0) - 0.2).abs() < 1e-3, "{}", cut(0.0));
        assert!((cut(2e6) - 0.05).abs() < 1e-3, "{}", cut(2e6));
    }

    #[test]
    fn the_inflection_point_is_taken_once_per_cut_free_growth_period() {
        let mut s = cfg().build().unwrap();
        s.cwnd = 40_000.0;
        s.virtual_alpha = 0.5;
        s.update_cwnd(1.0, false, true);
        assert_eq!(s.cwnd_i, 40_000.0);
        let after = s.cwnd;
        // A second cut before any growth keeps the first inflection point.
        s.update_cwnd(1.1, false, true);
        assert_eq!(s.cwnd_i, 40_000.0);
        assert!(s.cwnd < after);
        // Growth unblocks it: the next cut records the window it reached.
        s.max_bif = 1_000_000;
        s.bytes_newly_acked = 20_000;
        s.update_cwnd(1.2, false, false);
        let grown = s.cwnd;
        s.update_cwnd(1.3, false, true);
        assert_eq!(s.cwnd_i, grown);
    }

    #[test]
    fn a_varying_delay_limits_growth_and_the_window_headroom() {
        let mut steady = cfg().build().unwrap();
        let mut varying = cfg().build().unwrap();
        let (mut p, mut q) = (Path { seq: 0 }, Path { seq: 0 });
        for i in 0..100u64 {
            let at = Time::from_millis(100 * i);
            p.exchange(&mut steady, at, 10, &[], 50, 0);
            // 0 / 20 ms of queueing, alternately: well below the target, but not steady.
            q.exchange(&mut varying, at, 10, &[], if i % 2 == 0 { 50 } else { 70 }, 0);
        }
        assert!(steady.latency_diff_cwnd_scale > 0.99);
        assert!((steady.window_headroom - 3.0).abs() < 1e-6);
        assert!(varying.latency_diff_cwnd_scale < 0.5, "{}", varying.latency_diff_cwnd_scale);
        assert!(varying.window_headroom < 2.3, "{}", varying.window_headroom);
        // Growth is scaled by clamp(scale, 0.1, 1).
        let grow = |s: &ScreamV2| {
            let mut s = s.clone();
            (s.cwnd, s.cwnd_i, s.max_bif, s.bytes_newly_acked) = (20_000.0, 1.0, 1_000_000, 20_000);
            s.update_cwnd(s.last_slow_update, false, false);
            s.cwnd - 20_000.0
        };
        assert!(grow(&varying) < 0.6 * grow(&steady), "{} vs {}", grow(&varying), grow(&steady));
    }

    #[test]
    fn multiplicative_increase_phases_in_over_200_rtts_after_congestion() {
        let grow = |since_congestion: f64| {
            let mut s = cfg().build().unwrap();
            s.cwnd = 20_000.0;
            s.cwnd_i = 1.0;
            s.s_rtt = 0.05;
            s.max_bif = 1_000_000;
            s.last_congestion = 0.0;
            s.bytes_newly_acked = 20_000;
            s.update_cwnd(since_congestion, false, false);
            s.cwnd - 20_000.0
        };
        // Additive part: 20000 x 1000 / 20000 = 1000 B; multiplicative: x (1 + 0.05 x 20) = 2.
        assert!((grow(0.0) - 1000.0).abs() <= 1.0, "{}", grow(0.0));
        assert!((grow(5.0) - 1500.0).abs() <= 1.0, "{}", grow(5.0)); // half of 200 x 50 ms
        assert!((grow(20.0) - 2000.0).abs() <= 1.0, "{}", grow(20.0));
    }

    #[test]
    fn ecn_capable_sending_is_a_config_choice() {
        assert_eq!(cfg().build().unwrap().ecn_codepoint(), 0);
        assert_eq!(ScreamV2Config { ecn: true, ..cfg() }.build().unwrap().ecn_codepoint(), 0b10);
        assert_eq!(ScreamV2Config { l4s: true, ..cfg() }.build().unwrap().ecn_codepoint(), 0b01);
    }

    #[test]
    fn classic_ecn_cuts_by_beta_ecn_and_ce_is_ignored_when_not_ecn_capable() {
        let mut off = cfg().build().unwrap();
        let mut on = ScreamV2Config { ecn: true, ..cfg() }.build().unwrap();
        let (mut p, mut q) = (Path { seq: 0 }, Path { seq: 0 });
        p.warm_up(&mut off, 0, 10);
        q.warm_up(&mut on, 0, 10);
        let (a, b) = (off.cwnd, on.cwnd);
        p.exchange(&mut off, Time::from_millis(10_000), 10, &[], 50, 3);
        q.exchange(&mut on, Time::from_millis(10_000), 10, &[], 50, 3);
        assert!(off.cwnd >= a);
        // x 0.8, and no growth for CE-marked bytes.
        assert!((on.cwnd - (0.8 * b).floor()).abs() <= 1.0, "{b} -> {}", on.cwnd);
    }

    #[test]
    fn l4s_backs_off_in_proportion_to_the_marked_fraction() {
        // Every packet CE-marked for a second: alpha climbs towards 1 and the window shrinks
        // every reaction; a mark on one packet in ten barely dents it.
        let run = |marked_every: u64| {
            let mut s = ScreamV2Config { l4s: true, ..cfg() }.build().unwrap();
            let mut p = Path { seq: 0 };
            p.warm_up(&mut s, 0, 10);
            let before = s.cwnd;
            for k in 0..25u64 {
                let at = Time::from_millis(10_000 + 40 * k);
                let sent: Vec<_> = (0..10)
                    .map(|i| {
                        let sent = SentPacket { seq: p.seq + i, size: Bytes(1000), send_time: at };
                        s.on_packet_sent(at, &sent);
                        let ecn = if (p.seq + i).is_multiple_of(marked_every) { 3 } else { 1 };
                        PacketResult { sent, arrival: Some(at + Duration::from_millis(50)), ecn }
                    })
                    .collect();
                p.seq += 10;
                let report = FeedbackReport { packets: sent, report_time: at + Duration::from_millis(50) };
                s.on_feedback(at + Duration::from_millis(100), &report);
            }
            (s.l4s_alpha(), s.cwnd / before)
        };
        let (alpha_all, ratio_all) = run(1);
        let (alpha_few, ratio_few) = run(10);
        assert!(alpha_all > 0.9, "alpha with every packet marked {alpha_all}");
        assert!(alpha_few < 0.2, "alpha with 10 % marked {alpha_few}");
        assert!(ratio_all < 0.3, "window kept {ratio_all} with every packet marked");
        assert!(ratio_few > ratio_all * 2.0, "{ratio_few} vs {ratio_all}");
    }

    #[test]
    fn at_long_rtts_the_reference_scales_the_virtual_back_off_twice() {
        // 300 ms RTT, then a standing queue above the target: the reference's double division by
        // s_rtt / 30 ms leaves the window nearly untouched; dividing once backs off clearly.
        let run = |once: bool| {
            let mut s = ScreamV2Config { virtual_backoff_scaled_once: once, ..cfg() }.build().unwrap();
            let mut p = Path { seq: 0 };
            for i in 0..100u64 {
                p.exchange(&mut s, Time::from_millis(100 * i), 10, &[], 250, 0);
            }
            let before = s.cwnd;
            for k in 0..20u64 {
                p.exchange(&mut s, Time::from_millis(10_000 + 100 * k), 10, &[], 330, 0);
            }
            s.cwnd / before
        };
        let (twice, once) = (run(false), run(true));
        assert!(twice > 0.85, "reference scaling kept {twice}");
        assert!(once < 0.8 * twice, "single scaling kept {once} vs {twice}");
    }
}
