//! Video sources after RFC 8593 (video traffic models for RMCAT evaluations).
//!
//! The synthetic codec (RFC 8593 §4): the encoder follows the controller's target rate R_v, but
//! only takes a new target once `tau_v` (0.2 s) has passed since it last changed its rate (updates
//! in between are ignored); its output is clipped to [R_min, R_max]. In steady state each frame is
//! R_v / fps x (1 + e), e Gaussian with standard deviation 10 %. A key frame (periodic, or forced
//! by a large rate change) starts a transient: that frame is K_r times the steady size and the next
//! K_d frames are shrunk to give those bytes back, so the long-run rate stays R_v.
//! The perfect codec produces exactly R_v / fps per frame. The trace-driven codec (RFC 8593 §5)
//! replays frame sizes recorded from a real encoder, scaled so that their mean is R_v / fps.

use lowlat_core::rng::Rng;
use lowlat_core::{Bitrate, Bytes, Duration, Time};
use rand_distr::{Distribution, StandardNormal};
use std::sync::Arc;

/// Which encoder model.
#[derive(Clone, Debug, PartialEq)]
pub enum Codec {
    /// RFC 8593's synthetic codec.
    Synthetic,
    /// Exactly the target rate, no noise, no key frames.
    Perfect,
    /// Frame sizes replayed from a trace (cyclically), scaled to the target rate.
    Trace(FrameSizeTrace),
}

/// Recorded frame sizes, shared between runs.
#[derive(Clone, Debug, PartialEq)]
pub struct FrameSizeTrace {
    sizes: Arc<[u32]>,
    mean: f64,
}

impl FrameSizeTrace {
    /// A trace of frame sizes in bytes; None if empty or all zero.
    pub fn new(sizes: Vec<u32>) -> Option<FrameSizeTrace> {
        let mean = sizes.iter().map(|&s| f64::from(s)).sum::<f64>() / sizes.len().max(1) as f64;
        (mean > 0.0).then(|| FrameSizeTrace { sizes: sizes.into(), mean })
    }

    /// Parses one frame size in bytes per line (blank lines and `#` comments skipped); errors
    /// name the line (`line N: ...`).
    pub fn parse(text: &str) -> Result<FrameSizeTrace, String> {
        let mut sizes = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let v: u32 = line
                .parse()
                .map_err(|_| format!("line {}: got {line:?}, expected a frame size in bytes", i + 1))?;
            sizes.push(v);
        }
        FrameSizeTrace::new(sizes).ok_or_else(|| "no frame sizes (or all zero)".to_string())
    }

    /// The largest frame relative to the trace's mean.
    pub fn peak_ratio(&self) -> f64 {
        self.sizes.iter().map(|&s| f64::from(s)).fold(0.0, f64::max) / self.mean
    }

    /// Frames in the trace.
    pub fn len(&self) -> usize {
        self.sizes.len()
    }

    /// Whether the trace is empty (never, once built).
    pub fn is_empty(&self) -> bool {
        self.sizes.is_empty()
    }

    /// Frame `i`'s size relative to the trace's mean.
    fn relative(&self, i: u64) -> f64 {
        f64::from(self.sizes[(i % self.sizes.len() as u64) as usize]) / self.mean
    }
}

/// Settings of a [`VideoSource`]; defaults from RFC 8867 §4 and RFC 8593.
#[derive(Clone, Debug, PartialEq)]
pub struct VideoSourceConfig {
    /// The model.
    pub codec: Codec,
    /// Frames per second (RFC 8867: 10-30).
    pub fps: f64,
    /// Lowest rate the encoder produces (RFC 8867 §4: 150 kbit/s).
    pub rmin: Bitrate,
    /// Highest rate the encoder produces (RFC 8867 §4: 1.5 Mbit/s).
    pub rmax: Bitrate,
    /// Reaction delay of the encoder to a new target (RFC 8593: 0.2 s).
    pub tau_v: Duration,
    /// Standard deviation of the frame-size error, relative (RFC 8593: 0.1).
    pub size_sigma: f64,
    /// Size of a key frame relative to a steady frame (K_r, 5).
    pub key_frame_ratio: f64,
    /// Frames over which a key frame's extra bytes are given back (K_d, 5).
    pub transient_frames: u32,
    /// Interval between periodic key frames (None: only the first frame and large rate changes).
    pub key_frame_interval: Option<Duration>,
    /// A target change by more than this factor (up or down) forces a key frame (2).
    pub key_frame_on_change: f64,
    /// The share of the controller's target the encoder produces, applied after the target is
    /// clipped to [R_min, R_max] (1: the target itself). An encoder that leaves headroom below
    /// the estimate, as the Zhuge artifact's: `PacketSenderUdp::UpdateSendingRate` sets the
    /// encoder to `0.85 * getSendBps()` (GCC's estimate), which `GameServer::UpdateBitrate`
    /// passes as `bps >> 10` to `DumbVideoEncoder`, which reads it as kbit/s (`bitrate * 1000 /
    /// 8 / fps` bytes a frame): 0.85 x 1000 / 1024 of the estimate.
    pub target_share: f64,
}

impl VideoSourceConfig {
    /// The largest frame the codec makes relative to a steady frame (rate / fps): a key frame
    /// (K_r) for the synthetic codec, the trace's largest frame over its mean for a trace;
    /// before the synthetic codec's noise (10 %, so a key frame is within about 1.5x of this).
    pub fn peak_frame_ratio(&self) -> f64 {
        match &self.codec {
            Codec::Synthetic => self.key_frame_ratio.max(1.0),
            Codec::Perfect => 1.0,
            Codec::Trace(t) => t.peak_ratio(),
        }
    }
}

impl Default for VideoSourceConfig {
    fn default() -> Self {
        VideoSourceConfig {
            codec: Codec::Synthetic,
            fps: 30.0,
            rmin: Bitrate::kbps(150),
            rmax: Bitrate::kbps(1500),
            tau_v: Duration::from_millis(200),
            size_sigma: 0.1,
            key_frame_ratio: 5.0,
            transient_frames: 5,
            key_frame_interval: None,
            key_frame_on_change: 2.0,
            target_share: 1.0,
        }
    }
}

/// One encoded frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Frame number, from 0.
    pub id: u64,
    /// When it was captured (and encoded: encoding takes no time in the model).
    pub capture_time: Time,
    /// Encoded size.
    pub size: Bytes,
    /// Whether it is a key frame.
    pub key: bool,
}

/// The rate the encoder produces for `target`: clipped to [R_min, R_max], then its share.
fn shared(cfg: &VideoSourceConfig, target: Bitrate) -> Bitrate {
    let clipped = target.clamp(cfg.rmin, cfg.rmax);
    if cfg.target_share == 1.0 {
        // Exactly the clipped target (no float round trip).
        clipped
    } else {
        Bitrate::from_bps_f64(clipped.as_bps_f64() * cfg.target_share)
    }
}

/// A video encoder model.
#[derive(Clone, Debug)]
pub struct VideoSource {
    cfg: VideoSourceConfig,
    rng: Rng,
    start: Time,
    next_id: u64,
    /// When frame `next_id` is captured (kept: the sender asks after every event).
    next_due: Time,
    /// The rate the encoder currently produces.
    rate: Bitrate,
    /// The latest target, waiting for tau_v.
    pending: Option<Bitrate>,
    last_rate_change: Time,
    last_key_frame: Option<Time>,
    /// Bytes of the last key frame still to give back, and over how many frames.
    debt: f64,
    debt_frames: u32,
}

impl VideoSource {
    /// A source whose first frame is captured at `start`, at rate `initial` (clipped, then
    /// scaled by the target share).
    pub fn new(cfg: VideoSourceConfig, start: Time, initial: Bitrate, rng: Rng) -> VideoSource {
        let rate = shared(&cfg, initial);
        VideoSource {
            cfg,
            rng,
            start,
            next_id: 0,
            next_due: start,
            rate,
            pending: None,
            last_rate_change: start,
            last_key_frame: None,
            debt: 0.0,
            debt_frames: 0,
        }
    }

    /// The rate the encoder produces now.
    pub fn rate(&self) -> Bitrate {
        self.rate
    }

    /// The controller's new target (the encoder produces its share of it, see
    /// [`VideoSourceConfig::target_share`]).
    pub fn set_target(&mut self, target: Bitrate) {
        self.pending = Some(shared(&self.cfg, target));
    }

    /// When the next frame is captured.
    pub fn poll_timeout(&self) -> Time {
        self.next_due
    }

    /// When frame `id` is captured.
    fn capture_time(&self, id: u64) -> Time {
        self.start + Duration::from_secs_f64(id as f64 / self.cfg.fps)
    }

    /// The frame captured at `now`, if one is due.
    pub fn poll_frame(&mut self, now: Time) -> Option<Frame> {
        let due = self.poll_timeout();
        if due > now {
            return None;
        }
        let mut key = self.next_id == 0;
        // The encoder adopts a pending target only once tau_v has passed since its last change.
        if let Some(target) = self.pending {
            if due - self.last_rate_change >= self.cfg.tau_v && target != self.rate {
                let ratio = target.as_bps_f64() / self.rate.as_bps_f64().max(1.0);
                if ratio > self.cfg.key_frame_on_change || ratio < 1.0 / self.cfg.key_frame_on_change {
                    key = true;
                }
                self.rate = target;
                self.last_rate_change = due;
                self.pending = None;
            }
        }
        if let (Some(every), Some(last)) = (self.cfg.key_frame_interval, self.last_key_frame) {
            key |= due - last >= every;
        }
        let steady = self.rate.as_bps_f64() / 8.0 / self.cfg.fps;
        let size = match &self.cfg.codec {
            Codec::Perfect => {
                key = self.next_id == 0;
                steady
            }
            Codec::Trace(trace) => {
                // The trace carries its own key frames.
                key = false;
                steady * trace.relative(self.next_id)
            }
            Codec::Synthetic => {
                let noise: f64 = StandardNormal.sample(&mut self.rng);
                let mut s = steady * (1.0 + self.cfg.size_sigma * noise);
                if key && self.cfg.key_frame_ratio > 1.0 && self.cfg.transient_frames > 0 {
                    s *= self.cfg.key_frame_ratio;
                    self.debt = steady * (self.cfg.key_frame_ratio - 1.0);
                    self.debt_frames = self.cfg.transient_frames;
                } else if self.debt_frames > 0 {
                    // Give the key frame's extra bytes back, never below a tenth of a frame.
                    let share = self.debt / self.debt_frames as f64;
                    s = (s - share).max(0.1 * steady);
                    self.debt -= share;
                    self.debt_frames -= 1;
                }
                s
            }
        };
        if key {
            self.last_key_frame = Some(due);
        }
        let frame =
            Frame { id: self.next_id, capture_time: due, size: Bytes(size.round().max(1.0) as u64), key };
        self.next_id += 1;
        self.next_due = self.capture_time(self.next_id);
        Some(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lowlat_core::rng::stream;

    fn run(src: &mut VideoSource, seconds: u64) -> Vec<Frame> {
        let mut frames = Vec::new();
        let end = Time::from_secs(seconds);
        loop {
            let t = src.poll_timeout();
            if t >= end {
                return frames;
            }
            frames.extend(src.poll_frame(t));
        }
    }

    #[test]
    fn perfect_codec_produces_exactly_the_target_rate() {
        let cfg = VideoSourceConfig { codec: Codec::Perfect, fps: 25.0, ..Default::default() };
        let mut s = VideoSource::new(cfg, Time::ZERO, Bitrate::mbps(1), stream(1, "v"));
        let frames = run(&mut s, 10);
        assert_eq!(frames.len(), 250);
        assert!(frames.iter().all(|f| f.size == Bytes(5000)));
    }

    #[test]
    fn synthetic_codec_averages_the_target_with_ten_percent_noise() {
        let mut s =
            VideoSource::new(VideoSourceConfig::default(), Time::ZERO, Bitrate::mbps(1), stream(2, "v"));
        let frames = run(&mut s, 100);
        let bytes: u64 = frames.iter().map(|f| f.size.0).sum();
        let rate = bytes as f64 * 8.0 / 100.0;
        assert!((rate - 1e6).abs() < 0.01e6, "rate {rate}");
        let steady: Vec<f64> =
            frames[10..].iter().map(|f| f.size.0 as f64 / (1e6 / 8.0 / 30.0) - 1.0).collect();
        let sd = (steady.iter().map(|e| e * e).sum::<f64>() / steady.len() as f64).sqrt();
        assert!((sd - 0.1).abs() < 0.01, "relative std {sd}");
        assert!(frames[0].key && frames[0].size.0 as f64 > 4.0 * 1e6 / 8.0 / 30.0);
    }

    #[test]
    fn reacts_only_after_tau_v_and_stays_within_bounds() {
        let mut s =
            VideoSource::new(VideoSourceConfig::default(), Time::ZERO, Bitrate::kbps(500), stream(3, "v"));
        run(&mut s, 1); // the last change (the start) is long past
        s.set_target(Bitrate::kbps(600));
        let t = s.poll_timeout();
        s.poll_frame(t);
        assert_eq!(s.rate(), Bitrate::kbps(600));
        // A new target within tau_v of that change waits.
        s.set_target(Bitrate::kbps(700));
        let t2 = s.poll_timeout();
        s.poll_frame(t2);
        assert_eq!(s.rate(), Bitrate::kbps(600));
        while s.poll_timeout() < t + Duration::from_millis(200) {
            let t = s.poll_timeout();
            s.poll_frame(t);
        }
        let t3 = s.poll_timeout();
        s.poll_frame(t3);
        assert_eq!(s.rate(), Bitrate::kbps(700));
        s.set_target(Bitrate::mbps(50));
        let mut t4 = s.poll_timeout();
        while s.rate() == Bitrate::kbps(700) {
            s.poll_frame(t4);
            t4 = s.poll_timeout();
        }
        assert_eq!(s.rate(), Bitrate::kbps(1500));
    }

    #[test]
    fn the_encoder_produces_its_share_of_the_clipped_target() {
        let cfg = VideoSourceConfig {
            codec: Codec::Perfect,
            fps: 25.0,
            rmin: Bitrate::kbps(500),
            rmax: Bitrate::mbps(10),
            tau_v: Duration::ZERO,
            target_share: 0.85,
            ..Default::default()
        };
        let mut s = VideoSource::new(cfg.clone(), Time::ZERO, Bitrate::mbps(2), stream(4, "v"));
        assert_eq!(s.rate(), Bitrate::kbps(1700));
        let f = s.poll_frame(Time::ZERO).unwrap();
        assert_eq!(f.size, Bytes(8500)); // 1.7 Mbit/s / 8 / 25
                                         // Below R_min the target is raised to it first, then shared: 0.85 x 500 kbit/s.
        s.set_target(Bitrate::kbps(100));
        let t = s.poll_timeout();
        s.poll_frame(t);
        assert_eq!(s.rate(), Bitrate::kbps(425));
        // Above R_max: 0.85 x 10 Mbit/s.
        s.set_target(Bitrate::mbps(50));
        let t = s.poll_timeout();
        s.poll_frame(t);
        assert_eq!(s.rate(), Bitrate::kbps(8500));
        // A share of 1 is the clipped target itself.
        let mut one = VideoSource::new(
            VideoSourceConfig { target_share: 1.0, ..cfg },
            Time::ZERO,
            Bitrate::mbps(2),
            stream(4, "v"),
        );
        assert_eq!(one.rate(), Bitrate::mbps(2));
        one.set_target(Bitrate::kbps(100));
        let t = one.poll_timeout();
        one.poll_frame(t);
        assert_eq!(one.rate(), Bitrate::kbps(500));
    }
}
