//! Property tests: random packet sets survive encode/decode; arbitrary bytes never panic a
//! decoder.

use lowlat_wire::{
    decode_compound, CcfbBlock, CcfbMetric, CcfbReport, GenericNack, NumReportsConvention, RtpHeader,
    TransportCcFeedback, TwccBuilder,
};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// Random arrivals: losses in bursts, gaps from microseconds to seconds, some reordering.
fn random_arrivals(rng: &mut Pcg64Mcg, n: usize) -> Vec<Option<i64>> {
    let mut t: i64 = rng.random_range(-1_000_000_000..1_000_000_000);
    let loss = rng.random_range(0.0..0.5);
    (0..n)
        .map(|_| {
            let gap = match rng.random_range(0..10) {
                0 => rng.random_range(0..20_000_000), // up to 20 s: forces a new packet
                1 => -rng.random_range(0..50_000),    // reordered: arrived earlier
                2..=4 => rng.random_range(0..100),    // back to back
                _ => rng.random_range(0..70_000),     // 1-byte or 2-byte deltas
            };
            t += gap;
            (!rng.random_bool(loss)).then_some(t)
        })
        .collect()
}

#[test]
fn transport_cc_round_trips_random_packet_sets() {
    let mut rng = Pcg64Mcg::seed_from_u64(1);
    let (mut kinds, mut packets) = ([0usize; 3], 0);
    for case in 0..2000 {
        let n = rng.random_range(1..600);
        let arrivals = random_arrivals(&mut rng, n);
        let base: u16 = rng.random();
        let mut b = TwccBuilder::new(rng.random(), rng.random());
        b.max_len = rng.random_range(64..1500);
        let fbs = b.build(base, &arrivals);
        let mut covered = Vec::new();
        for f in &fbs {
            let mut bytes = Vec::new();
            f.encode(&mut bytes).unwrap();
            assert!(bytes.len() <= b.max_len.max(64), "case {case}: {} > {}", bytes.len(), b.max_len);
            assert_eq!(bytes.len(), f.encoded_len());
            // Count chunk kinds: the vectors and runs must all be exercised.
            let count = u16::from_be_bytes([bytes[14], bytes[15]]) as usize;
            let mut i = 20;
            let mut seen = 0;
            while seen < count {
                let c = u16::from_be_bytes([bytes[i], bytes[i + 1]]);
                let (kind, k) = match c >> 14 {
                    0 | 1 => (0, (c & 0x1fff) as usize),
                    2 => (1, 14),
                    _ => (2, 7),
                };
                kinds[kind] += 1;
                seen += k;
                i += 2;
            }
            let back = TransportCcFeedback::decode(&bytes).unwrap();
            assert_eq!(&back, f);
            let mut streamed = Vec::new();
            TransportCcFeedback::decode_arrivals(&bytes, |s, a| streamed.push((s, a))).unwrap();
            assert_eq!(streamed, back.arrivals_us(), "case {case}");
            covered.extend(back.arrivals_us());
            packets += 1;
        }
        assert_eq!(covered.len(), n, "case {case}: every sequence number reported once");
        // Within each feedback packet the reconstruction has no drift: error <= 125 us.
        let mut k = 0;
        for f in &fbs {
            let arr = f.arrivals_us();
            let first = arrivals[k..].iter().flatten().next().copied();
            let epoch = first.map(|a| a.div_euclid(64_000) * 64_000 - i64::from(f.reference_time) * 64_000);
            for (j, (seq, got)) in arr.iter().enumerate() {
                assert_eq!(*seq, base.wrapping_add((k + j) as u16));
                match (got, arrivals[k + j]) {
                    (None, None) => {}
                    (Some(g), Some(a)) => {
                        let err = (g + epoch.unwrap() - a).abs();
                        assert!(err <= 125, "case {case}: error {err} us");
                    }
                    other => panic!("case {case}: status mismatch {other:?}"),
                }
            }
            k += arr.len();
        }
    }
    eprintln!(
        "{packets} packets; chunks: {} run-length, {} one-bit, {} two-bit",
        kinds[0], kinds[1], kinds[2]
    );
    assert!(kinds.iter().all(|&k| k > 100), "{kinds:?}");
}

#[test]
fn encode_into_writes_the_bytes_of_build_and_encode() {
    let mut rng = Pcg64Mcg::seed_from_u64(4);
    // One builder each, used for many reports in a row: the feedback count and the reused
    // scratch space must carry over exactly as with fresh packets.
    let (ssrc, media) = (rng.random(), rng.random());
    let (mut built, mut direct) = (TwccBuilder::new(ssrc, media), TwccBuilder::new(ssrc, media));
    let mut out = Vec::new();
    for case in 0..2000 {
        let max_len = rng.random_range(64..1500);
        built.max_len = max_len;
        direct.max_len = max_len;
        let n = rng.random_range(1..600);
        let arrivals = random_arrivals(&mut rng, n);
        let base: u16 = rng.random();
        let mut expected = Vec::new();
        for f in built.build(base, &arrivals) {
            f.encode(&mut expected).unwrap();
        }
        out.clear();
        direct.encode_into(base, &arrivals, &mut out);
        assert_eq!(out, expected, "case {case}");
        assert_eq!(direct.fb_pkt_count, built.fb_pkt_count, "case {case}");
    }
}

#[test]
fn encoded_len_is_the_length_encode_into_writes() {
    let mut rng = Pcg64Mcg::seed_from_u64(5);
    // Two builders in step: one sizes each report, the other encodes it. The sizes, and the
    // feedback counts they leave behind, must agree report after report.
    let (ssrc, media) = (rng.random(), rng.random());
    let (mut sized, mut encoded) = (TwccBuilder::new(ssrc, media), TwccBuilder::new(ssrc, media));
    let mut out = Vec::new();
    let mut several = 0;
    for case in 0..2000 {
        // Down to lengths too small for any status (each report then covers one packet).
        let max_len = rng.random_range(0..1500);
        sized.max_len = max_len;
        encoded.max_len = max_len;
        let n = rng.random_range(1..600);
        let arrivals = random_arrivals(&mut rng, n);
        let base: u16 = rng.random();
        let count = encoded.fb_pkt_count;
        out.clear();
        encoded.encode_into(base, &arrivals, &mut out);
        assert_eq!(sized.encoded_len(&arrivals), out.len(), "case {case}");
        assert_eq!(sized.fb_pkt_count, encoded.fb_pkt_count, "case {case}");
        several += usize::from(encoded.fb_pkt_count.wrapping_sub(count) > 1);
    }
    assert!(several > 100, "only {several} reports needed several feedback packets");
}

#[test]
fn rfc8888_round_trips_random_reports() {
    let mut rng = Pcg64Mcg::seed_from_u64(2);
    for _ in 0..2000 {
        let report = CcfbReport {
            sender_ssrc: rng.random(),
            blocks: (0..rng.random_range(1..4))
                .map(|_| CcfbBlock {
                    media_ssrc: rng.random(),
                    begin_seq: rng.random(),
                    metrics: (0..rng.random_range(1..200))
                        .map(|_| {
                            if rng.random_bool(0.2) {
                                CcfbMetric::lost()
                            } else {
                                CcfbMetric::received(rng.random_range(0..10_000_000), rng.random_range(0..4))
                            }
                        })
                        .collect(),
                })
                .collect(),
            report_timestamp: rng.random(),
        };
        let mut bytes = Vec::new();
        report.encode(&mut bytes).unwrap();
        assert_eq!(bytes.len(), report.encoded_len());
        assert_eq!(CcfbReport::decode(&bytes, NumReportsConvention::Count).unwrap(), report);
    }
}

#[test]
fn rtp_headers_round_trip() {
    let mut rng = Pcg64Mcg::seed_from_u64(3);
    for _ in 0..10_000 {
        let h = RtpHeader {
            marker: rng.random(),
            payload_type: rng.random_range(0..128),
            sequence_number: rng.random(),
            timestamp: rng.random(),
            ssrc: rng.random(),
            csrcs: (0..rng.random_range(0..4)).map(|_| rng.random()).collect(),
            transport_seq: rng.random_bool(0.8).then(|| rng.random()),
        };
        let id = rng.random_range(1..15);
        let mut bytes = Vec::new();
        h.encode(id, &mut bytes).unwrap();
        bytes.extend_from_slice(b"payload");
        let (back, off, len) = RtpHeader::decode(&bytes, id).unwrap();
        assert_eq!(back, h);
        assert_eq!(&bytes[off..off + len], b"payload");
    }
}

#[test]
fn generic_nacks_round_trip() {
    let mut rng = Pcg64Mcg::seed_from_u64(5);
    for _ in 0..10_000 {
        let mut s: u16 = rng.random();
        let lost: Vec<u16> = (0..rng.random_range(1..80))
            .map(|_| {
                s = s.wrapping_add(rng.random_range(1..40));
                s
            })
            .collect();
        let n = GenericNack::from_lost(rng.random(), rng.random(), &lost);
        let mut bytes = Vec::new();
        n.encode(&mut bytes).unwrap();
        assert_eq!(bytes.len(), n.encoded_len());
        let back = GenericNack::decode(&bytes).unwrap();
        assert_eq!(back, n);
        assert_eq!(back.lost().collect::<Vec<_>>(), lost);
    }
}

#[test]
fn arbitrary_bytes_never_panic_a_decoder() {
    let mut rng = Pcg64Mcg::seed_from_u64(4);
    // Valid packets to mutate.
    let mut seeds = Vec::new();
    let mut b = TwccBuilder::new(1, 2);
    for f in b.build(0, &random_arrivals(&mut rng, 300)) {
        let mut bytes = Vec::new();
        f.encode(&mut bytes).unwrap();
        seeds.push(bytes);
    }
    let mut bytes = Vec::new();
    CcfbReport {
        sender_ssrc: 1,
        blocks: vec![CcfbBlock {
            media_ssrc: 2,
            begin_seq: 3,
            metrics: vec![CcfbMetric::received(100, 1); 7],
        }],
        report_timestamp: 9,
    }
    .encode(&mut bytes)
    .unwrap();
    seeds.push(bytes);
    let mut bytes = Vec::new();
    GenericNack::from_lost(1, 2, &[7, 9, 30, 31, 60]).encode(&mut bytes).unwrap();
    seeds.push(bytes);
    let (mut ok, mut twcc_ok) = (0, 0);
    for i in 0..300_000 {
        let buf: Vec<u8> = if i % 2 == 0 {
            let n = rng.random_range(0..64);
            (0..n).map(|_| rng.random()).collect()
        } else {
            let mut s = seeds[rng.random_range(0..seeds.len())].clone();
            for _ in 0..rng.random_range(1..4) {
                match rng.random_range(0..3) {
                    0 if !s.is_empty() => {
                        let k = rng.random_range(0..s.len());
                        s[k] = rng.random();
                    }
                    1 => s.truncate(rng.random_range(0..=s.len())),
                    _ => s.push(rng.random()),
                }
            }
            // Keep version 2 most of the time so the decoders get past the first check.
            if !s.is_empty() && rng.random_bool(0.9) {
                s[0] = (s[0] & 0x3f) | 0x80;
            }
            s
        };
        let a = decode_compound(&buf, NumReportsConvention::Count).is_ok();
        let _ = decode_compound(&buf, NumReportsConvention::CountMinusOne);
        let whole = TransportCcFeedback::decode(&buf);
        // The streaming decoder agrees with the whole one on every input: same error, or the
        // same arrivals.
        let mut streamed = Vec::new();
        let got = TransportCcFeedback::decode_arrivals(&buf, |s, a| streamed.push((s, a)));
        match &whole {
            Ok(f) => {
                assert_eq!(got, Ok(()), "case {i}");
                assert_eq!(streamed, f.arrivals_us(), "case {i}");
                twcc_ok += 1;
            }
            Err(e) => assert_eq!(got.as_ref(), Err(e), "case {i}"),
        }
        let _ = CcfbReport::decode(&buf, NumReportsConvention::Count);
        let _ = RtpHeader::decode(&buf, 5);
        let _ = GenericNack::decode(&buf);
        ok += usize::from(a);
    }
    // Some mutated packets are still valid, most random ones are not.
    assert!(ok > 1000 && ok < 250_000, "{ok} decoded");
    assert!(twcc_ok > 1000, "{twcc_ok} transport-cc packets decoded");
}
