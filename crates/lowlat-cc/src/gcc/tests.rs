//! GCC as a whole: the glue of `mod.rs` driven by synthetic feedback and by a small fluid model of
//! the RMCAT 5.1 bottleneck.

use super::*;
use crate::{PacketResult, SentPacket};
use lowlat_core::Bytes;

/// Packets of 1200 B sent every `gap`; arrival = send + 50 ms + queue(send). Reports every
/// 100 ms, from `from` until `seconds`.
fn drive(gcc: &mut Gcc, from: Time, seconds: f64, gap: Duration, queue: impl Fn(Time) -> Duration) {
    let mut pending = Vec::new();
    let mut t = from;
    let mut seq = from.as_nanos() / gap.as_nanos();
    let mut next_report = from + Duration::from_millis(100);
    while t.as_secs_f64() < seconds {
        let sent = SentPacket { seq, size: Bytes(1200), send_time: t };
        gcc.on_packet_sent(t, &sent);
        pending.push(PacketResult { sent, arrival: Some(t + Duration::from_millis(50) + queue(t)), ecn: 0 });
        seq += 1;
        t += gap;
        if t >= next_report {
            let report = FeedbackReport { packets: std::mem::take(&mut pending), report_time: t };
            gcc.on_feedback(t + Duration::from_millis(50), &report);
            next_report += Duration::from_millis(100);
        }
    }
}

/// 1200 B every 10 ms (960 kbit/s) for 2 s, then the queue grows by 2 ms per packet (the
/// path carries 800 kbit/s).
fn overload(t0: Time) -> impl Fn(Time) -> Duration {
    move |t| if t < t0 { Duration::ZERO } else { Duration::from_secs_f64((t - t0).as_secs_f64() * 0.2) }
}

#[test]
fn growing_delay_is_overuse_and_cuts_the_rate_to_beta_times_the_receive_rate() {
    let cfg = GccConfig {
        initial_probes: vec![],
        start_rate: Bitrate::mbps(2),
        max_rate: Bitrate::mbps(5),
        ..GccConfig::default()
    };
    let mut gcc = cfg.build().unwrap();
    let t0 = Time::from_secs(2);
    drive(&mut gcc, Time::ZERO, 2.0, Duration::from_millis(10), overload(t0));
    assert_eq!(gcc.usage(), Usage::Normal);
    assert!(gcc.delay_based_rate() >= Bitrate::mbps(2));
    assert_eq!(gcc.link_capacity(), None);
    drive(&mut gcc, t0, 3.0, Duration::from_millis(10), overload(t0));
    // The receive rate over the window is between 800 and 960 kbit/s; 5 kbit/s come off too.
    let r = gcc.delay_based_rate().as_bps_f64();
    assert!((0.85 * 800e3 - 5e3..=0.85 * 960e3 - 5e3).contains(&r), "rate {r}");
    assert!(gcc.link_capacity().is_some());
}

#[test]
fn steady_delay_increases_multiplicatively_about_8_percent_per_second() {
    let cfg = GccConfig { initial_probes: vec![], max_rate: Bitrate::mbps(100), ..GccConfig::default() };
    let mut gcc = cfg.build().unwrap();
    // Enough packets that the throughput cap does not bind: 1200 B every 2 ms = 4.8 Mbit/s.
    drive(&mut gcc, Time::ZERO, 10.0, Duration::from_millis(2), |_| Duration::ZERO);
    let r = gcc.delay_based_rate().as_bps_f64();
    let expected = 300e3 * 1.08f64.powf(9.9);
    assert!((r / expected - 1.0).abs() < 0.05, "rate {r} vs {expected}");
    assert_eq!(gcc.usage(), Usage::Normal);
}

#[test]
fn heavy_loss_halves_by_loss_over_two_once_per_loss_update() {
    let cfg = GccConfig { initial_probes: vec![], ..GccConfig::default() };
    let mut gcc = cfg.build().unwrap();
    let mut seq = 0;
    let mut make = |lost_every: u64, t: Time| {
        let packets = (0..40)
            .map(|i| {
                let sent = SentPacket { seq, size: Bytes(1200), send_time: t + Duration::from_millis(i) };
                seq += 1;
                let arrival = (seq % lost_every != 0).then(|| sent.send_time + Duration::from_millis(50));
                PacketResult { sent, arrival, ecn: 0 }
            })
            .collect();
        FeedbackReport { packets, report_time: t + Duration::from_millis(90) }
    };
    let before = gcc.target_bitrate().as_bps_f64();
    // 20 % loss (every 5th): 51/256, x (512 - 51) / 512.
    gcc.on_feedback(Time::from_millis(140), &make(5, Time::ZERO));
    let after = gcc.loss_based_rate().as_bps_f64();
    assert!((after - before * 461.0 / 512.0).abs() < 1.0, "{before} -> {after}");
    assert_eq!(gcc.target_bitrate().as_bps_f64().round(), after.round());
    // The next report within the loss update interval does not cut again.
    gcc.on_feedback(Time::from_millis(240), &make(5, Time::from_millis(100)));
    assert!((gcc.loss_based_rate().as_bps_f64() - after).abs() < 1.0);
}

#[test]
fn kalman_variant_detects_overuse_too() {
    let cfg = GccConfig {
        initial_probes: vec![],
        start_rate: Bitrate::mbps(2),
        max_rate: Bitrate::mbps(5),
        ..GccConfig::kalman()
    };
    let mut gcc = cfg.build().unwrap();
    let t0 = Time::from_secs(2);
    drive(&mut gcc, Time::ZERO, 2.0, Duration::from_millis(10), overload(t0));
    assert_eq!(gcc.usage(), Usage::Normal);
    drive(&mut gcc, t0, 3.0, Duration::from_millis(10), overload(t0));
    assert!(gcc.delay_based_rate() < Bitrate::kbps(900));
}

/// A fluid model of the RMCAT 5.1 path (RFC 8867 §5.1): a bottleneck of capacity `capacity(t)`
/// (bit/s), 50 ms one way each direction, a 300 ms drop-tail queue. The sender sends 1200 B
/// packets at the target rate (at the probe's rate while probing); the receiver reports every
/// 100 ms (transport-cc). Returns `(report time s, delay-based rate bit/s, link-capacity estimate
/// known)` after each report.
fn rmcat_5_1_path(gcc: &mut Gcc, capacity: impl Fn(f64) -> f64, seconds: f64) -> Vec<(f64, f64, bool)> {
    let owd = Duration::from_millis(50);
    let mut out = Vec::new();
    let (mut t, mut seq, mut link_free) = (Time::ZERO, 0u64, Time::ZERO);
    let mut next_report = Time::from_millis(100);
    let mut pending: Vec<PacketResult> = Vec::new();
    let mut reports: VecDeque<(Time, FeedbackReport)> = VecDeque::new();
    while t.as_secs_f64() < seconds {
        while reports.front().is_some_and(|r| r.0 <= t) {
            let (at, r) = reports.pop_front().unwrap();
            gcc.on_feedback(at, &r);
            out.push((at.as_secs_f64(), gcc.delay_based_rate().as_bps_f64(), gcc.link_capacity().is_some()));
        }
        let sent = SentPacket { seq, size: Bytes(1200), send_time: t };
        gcc.on_packet_sent(t, &sent);
        let start = link_free.max(t);
        let arrival = (start - t < Duration::from_millis(300)).then(|| {
            link_free = start + Duration::from_secs_f64(1200.0 * 8.0 / capacity(start.as_secs_f64()));
            link_free + owd
        });
        pending.push(PacketResult { sent, arrival, ecn: 0 });
        seq += 1;
        // Media at the target rate; during a probe the pacer pads up to the probe's rate.
        let rate = if gcc.wants_padding(t) { gcc.pacing_rate() } else { gcc.target_bitrate() };
        t += rate.transmit_time(Bytes(1200)).unwrap();
        while next_report <= t {
            let (ready, later): (Vec<_>, Vec<_>) =
                pending.drain(..).partition(|p| p.arrival.unwrap_or(p.sent.send_time + owd) <= next_report);
            pending = later;
            if !ready.is_empty() {
                reports.push_back((
                    next_report + owd,
                    FeedbackReport { packets: ready, report_time: next_report },
                ));
            }
            next_report += Duration::from_millis(100);
        }
    }
    out
}

/// The rises of the rate over one second (ten reports) during which it never fell, from `from`
/// to `to` s, while above `floor` bit/s; and the share of those reports with a capacity estimate.
fn climbs(rates: &[(f64, f64, bool)], from: f64, to: f64, floor: f64) -> (Vec<f64>, f64) {
    let part: Vec<_> = rates.iter().filter(|r| r.0 >= from && r.0 < to).collect();
    let known = part.iter().filter(|r| r.2).count() as f64 / part.len() as f64;
    let rises = part
        .windows(11)
        .filter(|w| w.windows(2).all(|p| p[1].1 >= p[0].1) && w[0].1 > floor)
        .map(|w| (w[10].1 - w[0].1) / (w[10].0 - w[0].0))
        .collect();
    (rises, known)
}

#[test]
fn rmcat_5_1_rate_near_capacity_grows_additively() {
    // RMCAT 5.1's capacity steps (1, 2.5, 0.6, 1 Mbit/s at 0, 40, 60, 80 s), default GCC
    // (150 kbit/s - 1.5 Mbit/s, so the 2.5 Mbit/s phase caps at 1.5 Mbit/s).
    let capacity = |t: f64| match t {
        t if t < 40.0 => 1e6,
        t if t < 60.0 => 2.5e6,
        t if t < 80.0 => 0.6e6,
        _ => 1e6,
    };
    let mut gcc = GccConfig::default().build().unwrap();
    let rates = rmcat_5_1_path(&mut gcc, capacity, 100.0);
    // Near capacity = once an over-use (a decrease) located it in the phase.
    let first_decrease =
        |from: f64| rates.windows(2).find(|w| w[0].0 >= from && w[1].1 < w[0].1).map(|w| w[1].0).unwrap();
    for (start, end, c) in [(0.0, 40.0, 1e6), (60.0, 80.0, 0.6e6), (80.0, 100.0, 1e6)] {
        let from = first_decrease(start);
        assert!(from < end - 5.0, "{start}-{end} s: first decrease at {from} s");
        let (rises, known) = climbs(&rates, from, end, 0.6 * c);
        // The capacity estimate (a band of ±3 x sqrt(0.4 x C in kbit/s), ±60 kbit/s at 1 Mbit/s)
        // holds the rate in additive increase ...
        assert!(known > 0.95, "{from}-{end} s: capacity estimate known in {:.0} % of reports", known * 100.0);
        // ... so it climbs about one packet per two response times, ~10-20 kbit/s per second,
        // where the multiplicative 8 %/s would be 48-80 kbit/s per second.
        assert!(rises.len() > 10, "{from}-{end} s: {} rising one-second stretches", rises.len());
        let fastest = rises.iter().copied().fold(0.0, f64::max);
        let mean = rises.iter().sum::<f64>() / rises.len() as f64;
        eprintln!("5.1 {from:.1}-{end} s near {c} bit/s: {} climbs, mean {mean:.0} bit/s per s, fastest {fastest:.0}", rises.len());
        assert!(
            fastest < 0.035 * c,
            "{from}-{end} s: fastest climb {fastest:.0} bit/s per s is not additive"
        );
        assert!(mean > 4e3, "{from}-{end} s: the rate must still climb: {mean:.0} bit/s per s");
    }
    // After the step up at 40 s the throughput leaves the band, the estimate resets and the
    // multiplicative increase finds the new capacity (here the 1.5 Mbit/s maximum) well before 60 s.
    let at_max = rates.iter().find(|r| r.0 > 40.0 && r.1 >= 1.5e6).map(|r| r.0);
    assert!(at_max.is_some_and(|t| t < 58.0), "1.5 Mbit/s reached at {at_max:?} s");
    assert!(rates.iter().any(|r| r.0 > 40.0 && r.0 < 60.0 && !r.2), "the estimate never reset after 40 s");
}

// The Zhuge artifact's GCC (`GccConfig::artifact`): each rule that differs from libwebrtc's,
// against the default on the same input.

fn artifact(start: Bitrate) -> GccConfig {
    GccConfig { start_rate: start, max_rate: Bitrate::mbps(100), ..GccConfig::artifact() }
}

fn libwebrtc(start: Bitrate) -> GccConfig {
    GccConfig {
        start_rate: start,
        max_rate: Bitrate::mbps(100),
        initial_probes: vec![],
        ..GccConfig::default()
    }
}

#[test]
fn artifact_has_no_loss_based_cut() {
    // gcc-controller.cc: UpdatePacketsLost is commented out, so a lossy report leaves the target.
    let report = |t: Time| {
        let packets = (0..40u64)
            .map(|i| {
                let sent = SentPacket { seq: i, size: Bytes(1200), send_time: t + Duration::from_millis(i) };
                let arrival = (i % 5 != 0).then(|| sent.send_time + Duration::from_millis(50));
                PacketResult { sent, arrival, ecn: 0 }
            })
            .collect();
        FeedbackReport { packets, report_time: t + Duration::from_millis(90) }
    };
    let mut art = artifact(Bitrate::mbps(1)).build().unwrap();
    let mut lib = libwebrtc(Bitrate::mbps(1)).build().unwrap();
    for g in [&mut art, &mut lib] {
        g.on_feedback(Time::from_millis(140), &report(Time::ZERO));
    }
    assert!(lib.target_bitrate() < Bitrate::kbps(950), "{}", lib.target_bitrate());
    assert!(art.target_bitrate() >= Bitrate::mbps(1), "{}", art.target_bitrate());
}

#[test]
fn artifact_receive_rate_counts_lost_bytes_over_one_second() {
    // sender-based-controller.cc: each record carries the bytes sent since the previous one
    // (intvl_pseudo_size), so lost packets count; the window is the last second of arrivals.
    let loss_every_5th = |gcc: &mut Gcc| {
        let mut seq = 0u64;
        let mut t = Time::ZERO;
        while t < Time::from_secs(3) {
            let packets: Vec<_> = (0..10)
                .map(|_| {
                    let sent = SentPacket { seq, size: Bytes(1200), send_time: t };
                    gcc.on_packet_sent(t, &sent);
                    seq += 1;
                    t += Duration::from_millis(10);
                    let arrival =
                        (!seq.is_multiple_of(5)).then(|| sent.send_time + Duration::from_millis(50));
                    PacketResult { sent, arrival, ecn: 0 }
                })
                .collect();
            gcc.on_feedback(t + Duration::from_millis(50), &FeedbackReport { packets, report_time: t });
        }
    };
    let mut art = artifact(Bitrate::mbps(1)).build().unwrap();
    let mut lib = libwebrtc(Bitrate::mbps(1)).build().unwrap();
    loss_every_5th(&mut art);
    loss_every_5th(&mut lib);
    // 1200 B every 10 ms = 960 kbit/s sent, 768 kbit/s received.
    let (a, l) = (art.throughput().unwrap(), lib.throughput().unwrap());
    assert!((a / 960e3 - 1.0).abs() < 0.03, "artifact {a}");
    assert!((l / 768e3 - 1.0).abs() < 0.03, "libwebrtc {l}");
    assert_eq!(art.cfg.throughput_window, Duration::from_secs(1));
}

#[test]
fn artifact_decreases_from_the_rate_when_the_receive_rate_is_above_it() {
    // processFeedback: Update(.., min(m_RecvR, current_bitrate_bps_), ..): an over-use cuts to
    // 0.85 x the rate itself when more arrives than the rate (libwebrtc: 0.85 x the receive rate
    // is above the rate and no capacity estimate exists, so it holds).
    let mut art = artifact(Bitrate::mbps(1)).build().unwrap();
    let mut lib = libwebrtc(Bitrate::mbps(1)).build().unwrap();
    for g in [&mut art, &mut lib] {
        drive(g, Time::ZERO, 3.0, Duration::from_millis(2), |_| Duration::ZERO); // 4.8 Mbit/s
        assert!(g.throughput().unwrap() > 2.0 * g.aimd.rate);
        g.detector.usage = Usage::Overusing;
    }
    let now = Time::from_secs(4);
    let (ra, rl) = (art.aimd.rate, lib.aimd.rate);
    assert!(art.update_delay_based(now, None));
    assert!(lib.update_delay_based(now, None));
    assert!((art.aimd.rate - 0.85 * ra).abs() < 1.0, "{ra} -> {}", art.aimd.rate);
    assert_eq!(lib.aimd.rate, rl);
}

#[test]
fn artifact_runs_aimd_once_per_clamped_rtt_unless_reducing_further() {
    // processFeedback: an update only when now - last_update_ms_ > clamp(rtt, 10, 200), or on
    // over-use when TimeToReduceFurther (incoming below half the rate).
    let mut art = artifact(Bitrate::mbps(1)).build().unwrap();
    let mut lib = libwebrtc(Bitrate::mbps(1)).build().unwrap();
    for g in [&mut art, &mut lib] {
        drive(g, Time::ZERO, 3.0, Duration::from_millis(2), |_| Duration::ZERO);
        g.aimd.rtt = 0.1;
    }
    let t = |ms| Time::from_secs(4) + Duration::from_millis(ms);
    assert!(art.update_delay_based(t(0), None));
    assert!(!art.update_delay_based(t(50), None), "within the 100 ms RTT");
    assert!(lib.update_delay_based(t(0), None) && lib.update_delay_based(t(50), None));
    assert!(art.update_delay_based(t(101), None));
    // Over-use with the receive rate under half the rate: at once.
    art.detector.usage = Usage::Overusing;
    art.aimd.rate = 3.0 * art.throughput().unwrap();
    let before = art.aimd.rate;
    assert!(art.update_delay_based(t(110), None));
    assert!(art.aimd.rate < 0.5 * before);
}

#[test]
fn artifact_rtt_is_the_smallest_of_the_last_15_group_records() {
    // getCurrentRTT: the minimum of the newest ntab = 15 records' rttUs, and processFeedback
    // records one packet per closed group (the one that opened the next group).
    // Group k: 3 packets sent 2 ms apart from 1 s + 20k ms, reported together 100 ms after its
    // first was sent (group 5: 50 ms after).
    let feed = |gcc: &mut Gcc| {
        let mut seq = 0u64;
        for k in 0..20u64 {
            let first = Time::from_secs(1) + Duration::from_millis(20 * k);
            let packets = (0..3u64)
                .map(|i| {
                    let send_time = first + Duration::from_millis(2 * i);
                    let sent = SentPacket { seq, size: Bytes(1200), send_time };
                    seq += 1;
                    PacketResult { sent, arrival: Some(send_time + Duration::from_millis(10)), ecn: 0 }
                })
                .collect();
            let now = first + Duration::from_millis(if k == 5 { 50 } else { 100 });
            gcc.on_feedback(now, &FeedbackReport { packets, report_time: now });
        }
    };
    let mut art = artifact(Bitrate::mbps(1)).build().unwrap();
    feed(&mut art);
    // Records: the first packets of groups 2..19, each 100 ms (group 5's 50 ms); the newest 15
    // (groups 5..19) hold the 50 ms one.
    assert!((art.aimd.rtt - 0.050).abs() < 1e-9, "{}", art.aimd.rtt);
    // Per packet, the newest 15 packets (groups 15..19) give 96 ms.
    let mut per_packet = GccConfig { update_per_group: false, ..artifact(Bitrate::mbps(1)) }.build().unwrap();
    feed(&mut per_packet);
    assert!((per_packet.aimd.rtt - 0.096).abs() < 1e-9, "{}", per_packet.aimd.rtt);
}

#[test]
fn artifact_records_once_per_closed_group_with_the_bytes_since_the_last_record() {
    // OnSocketRecv_sender calls processFeedback only when a packet opens a new 10 ms send-time
    // group; the record carries every byte since the previous record (intvl_pseudo_size).
    let mut art = artifact(Bitrate::mbps(1)).build().unwrap();
    let mut seq = 0u64;
    let mut t = Time::from_secs(1);
    // One packet every 2 ms, each in its own report 30 ms after sending: groups of 6 packets
    // (0, 2, .., 10 ms: 10 ms is not more than 10 after the first), one every 12 ms.
    while t < Time::from_secs(3) {
        let sent = SentPacket { seq, size: Bytes(1000), send_time: t };
        art.on_packet_sent(t, &sent);
        seq += 1;
        let packets = vec![PacketResult { sent, arrival: Some(t + Duration::from_millis(30)), ecn: 0 }];
        art.on_feedback(t + Duration::from_millis(30), &FeedbackReport { packets, report_time: t });
        t += Duration::from_millis(2);
    }
    // The last second of arrivals holds one record per 12 ms, not one per 2 ms ...
    let records = art.arrivals.len();
    assert!((83..=85).contains(&records), "{records} records");
    // ... each with the 6 packets' bytes since the previous one: the rate is still 4 Mbit/s.
    assert!(art.arrivals.iter().skip(1).all(|&(_, b)| b == 6000), "{:?}", art.arrivals);
    let tp = art.throughput().unwrap();
    assert!((tp / 4e6 - 1.0).abs() < 0.02, "{tp}");
    // The bytes are those *sent* (the sender's transit history), so a report naming one packet
    // in three (the artifact AP's sampled reports) gives the same rate.
    let mut sampled = artifact(Bitrate::mbps(1)).build().unwrap();
    let (mut seq, mut t) = (0u64, Time::from_secs(1));
    while t < Time::from_secs(3) {
        let sent = SentPacket { seq, size: Bytes(1000), send_time: t };
        sampled.on_packet_sent(t, &sent);
        if seq % 3 == 0 {
            let packets = vec![PacketResult { sent, arrival: Some(t + Duration::from_millis(30)), ecn: 0 }];
            sampled.on_feedback(t + Duration::from_millis(30), &FeedbackReport { packets, report_time: t });
        }
        seq += 1;
        t += Duration::from_millis(2);
    }
    let tp = sampled.throughput().unwrap();
    assert!((tp / 4e6 - 1.0).abs() < 0.02, "sampled {tp}");
}

#[test]
fn variant_names_a_preset_and_refuses_others() {
    assert_eq!(GccConfig::variant("libwebrtc").unwrap(), GccConfig::default());
    assert_eq!(GccConfig::variant("artifact").unwrap(), GccConfig::artifact());
    let e = GccConfig::variant("ns3").unwrap_err();
    assert_eq!(e, "variant: got \"ns3\", expected \"libwebrtc\" or \"artifact\"");
    GccConfig::artifact().validate().unwrap();
}
