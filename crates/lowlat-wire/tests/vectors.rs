//! Interoperability: feedback packets written by an independent implementation (pion, Go) for
//! random arrival patterns (`shared/wire-vectors/pion-feedback.jsonl`) decode to what the
//! receiver saw; our encoder, given the same arrivals, produces packets that decode to the same.

use lowlat_wire::ccfb::{compact_ntp, ATO_OVER_RANGE};
use lowlat_wire::{
    decode_compound, CcfbBlock, CcfbMetric, CcfbReport, NumReportsConvention, RtcpPacket,
    TransportCcFeedback, TwccBuilder,
};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::PathBuf;

#[derive(Deserialize)]
struct Vector {
    kind: String,
    sender_ssrc: u32,
    media_ssrc: u32,
    packets: Vec<Seen>,
    report_time_us: Option<i64>,
    rtcp_hex: Vec<String>,
}

#[derive(Deserialize)]
struct Seen {
    seq: u16,
    arrival_us: Option<i64>,
    ecn: u8,
}

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit")).collect()
}

fn vectors() -> Option<Vec<Vector>> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/wire-vectors/pion-feedback.jsonl");
    let Ok(text) = std::fs::read_to_string(&path) else {
        assert!(std::env::var_os("CI").is_none(), "CI must have the wire vectors at {}", path.display());
        eprintln!("skipped: no wire vectors at {}", path.display());
        return None;
    };
    Some(
        text.lines()
            .enumerate()
            .map(|(i, l)| serde_json::from_str(l).unwrap_or_else(|e| panic!("line {}: {e}", i + 1)))
            .collect(),
    )
}

/// Arrival (µs, the feedback's own epoch) per sequence number, from transport-cc packets.
fn twcc_arrivals(packets: &[TransportCcFeedback]) -> HashMap<u16, Option<i64>> {
    packets.iter().flat_map(|f| f.arrivals_us()).collect()
}

/// The transport-cc facts: every packet reported, received status right, arrival = truth plus
/// one constant offset within 250 µs (no drift).
fn check_twcc(v: &Vector, decoded: &HashMap<u16, Option<i64>>, what: &str) {
    let mut offsets = Vec::new();
    for p in &v.packets {
        let got = decoded.get(&p.seq).unwrap_or_else(|| panic!("{what}: seq {} not covered", p.seq));
        assert_eq!(got.is_some(), p.arrival_us.is_some(), "{what}: seq {} received status", p.seq);
        if let (Some(g), Some(a)) = (got, p.arrival_us) {
            offsets.push(g - a);
        }
    }
    let (lo, hi) = (offsets.iter().min().unwrap(), offsets.iter().max().unwrap());
    assert!(hi - lo <= 250, "{what}: arrivals drift by {} us", hi - lo);
}

/// The RFC 8888 facts for one decoded block.
fn check_ccfb(v: &Vector, block: &CcfbBlock, what: &str) {
    assert_eq!(block.media_ssrc, v.media_ssrc, "{what}");
    assert_eq!(block.metrics.len(), v.packets.len(), "{what}: metric count");
    let report = v.report_time_us.expect("rfc8888 vectors carry report_time_us");
    for (i, (m, p)) in block.metrics.iter().zip(&v.packets).enumerate() {
        assert_eq!(block.begin_seq.wrapping_add(i as u16), p.seq, "{what}");
        assert_eq!(m.received, p.arrival_us.is_some(), "{what}: seq {} R bit", p.seq);
        if let Some(a) = p.arrival_us {
            assert_eq!(m.ecn, p.ecn, "{what}: seq {} ECN", p.seq);
            if m.ato < ATO_OVER_RANGE {
                let ato_us = f64::from(m.ato) * 1e6 / 1024.0;
                let err = ((report - a) as f64 - ato_us).abs();
                assert!(err <= 1e6 / 1024.0, "{what}: seq {} offset off by {err} us", p.seq);
            } else {
                assert!(report - a >= i64::from(ATO_OVER_RANGE) * 1_000_000 / 1024 - 1000, "{what}");
            }
        }
    }
}

#[test]
fn pion_vectors_decode_and_our_encoder_agrees() {
    let Some(vectors) = vectors() else { return };
    let (mut twcc, mut ccfb) = (0, 0);
    for (line, v) in vectors.iter().enumerate() {
        let what = format!("line {} ({})", line + 1, v.kind);
        let mut decoded = Vec::new();
        for hex in &v.rtcp_hex {
            decoded.extend(
                decode_compound(&unhex(hex), NumReportsConvention::Count)
                    .unwrap_or_else(|e| panic!("{what}: {e}")),
            );
        }
        let arrivals: Vec<Option<i64>> = v.packets.iter().map(|p| p.arrival_us).collect();
        match v.kind.as_str() {
            "transport-cc" => {
                let fbs: Vec<TransportCcFeedback> = decoded
                    .into_iter()
                    .map(|p| match p {
                        RtcpPacket::TransportCc(f) => f,
                        other => panic!("{what}: unexpected {other:?}"),
                    })
                    .collect();
                assert!(fbs.iter().all(|f| f.sender_ssrc == v.sender_ssrc && f.media_ssrc == v.media_ssrc));
                check_twcc(v, &twcc_arrivals(&fbs), &what);
                // Ours, from the same arrivals, through bytes and back.
                let mut b = TwccBuilder::new(v.sender_ssrc, v.media_ssrc);
                let mut ours = Vec::new();
                for f in b.build(v.packets[0].seq, &arrivals) {
                    let mut bytes = Vec::new();
                    f.encode(&mut bytes).unwrap();
                    ours.push(TransportCcFeedback::decode(&bytes).unwrap());
                }
                check_twcc(v, &twcc_arrivals(&ours), &format!("{what}, re-encoded"));
                twcc += 1;
            }
            "rfc8888" => {
                let [RtcpPacket::Ccfb(report)] = decoded.as_slice() else {
                    panic!("{what}: expected one RFC 8888 packet, got {decoded:?}")
                };
                assert_eq!(report.sender_ssrc, v.sender_ssrc);
                check_ccfb(v, &report.blocks[0], &what);
                let rt = v.report_time_us.unwrap();
                let ours = CcfbReport {
                    sender_ssrc: v.sender_ssrc,
                    blocks: vec![CcfbBlock {
                        media_ssrc: v.media_ssrc,
                        begin_seq: v.packets[0].seq,
                        metrics: v
                            .packets
                            .iter()
                            .map(|p| {
                                p.arrival_us
                                    .map_or(CcfbMetric::lost(), |a| CcfbMetric::received(rt - a, p.ecn))
                            })
                            .collect(),
                    }],
                    report_timestamp: compact_ntp(rt),
                };
                let mut bytes = Vec::new();
                ours.encode(&mut bytes).unwrap();
                let back = CcfbReport::decode(&bytes, NumReportsConvention::Count).unwrap();
                check_ccfb(v, &back.blocks[0], &format!("{what}, re-encoded"));
                ccfb += 1;
            }
            other => panic!("{what}: unknown kind {other:?}"),
        }
    }
    eprintln!("checked {twcc} transport-cc and {ccfb} RFC 8888 vectors");
    assert!(twcc > 0 && ccfb > 0);
}

#[test]
fn the_vectors_use_the_rfc_num_reports_convention() {
    let Some(vectors) = vectors() else { return };
    for v in vectors.iter().filter(|v| v.kind == "rfc8888") {
        let bytes = unhex(&v.rtcp_hex[0]);
        let count = u16::from_be_bytes([bytes[14], bytes[15]]) as usize;
        assert_eq!(count, v.packets.len(), "num_reports is the number of metrics");
    }
}
