//! The SCONE packet and the capacity/queue signal: random round trips, and garbage never panics.

use lowlat_wire::scone::{apply_advice, SconeRepr};
use lowlat_wire::NetworkSignalRepr;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

#[test]
fn signals_round_trip_random_values() {
    let mut rng = Pcg64Mcg::seed_from_u64(13);
    for _ in 0..20_000 {
        // Values of every varint length, up to 2^62 - 1.
        let mut v = || rng.random::<u64>() >> rng.random_range(2..64);
        let r = NetworkSignalRepr { sequence: v(), capacity_bps: v(), queue_bytes: v(), queue_delay_us: v() };
        let mut out = Vec::new();
        r.emit(&mut out).unwrap();
        assert_eq!(out.len(), r.buffer_len());
        assert_eq!(NetworkSignalRepr::decode(&out).unwrap(), r);
    }
}

#[test]
fn garbage_never_panics_the_scone_and_signal_decoders() {
    let mut rng = Pcg64Mcg::seed_from_u64(14);
    let mut seeds = Vec::new();
    let mut s = Vec::new();
    SconeRepr { rate_signal: 127, dcid: &[1; 8], scid: &[2; 4] }.emit(&mut s).unwrap();
    seeds.push(s);
    let mut f = Vec::new();
    NetworkSignalRepr { sequence: 9, capacity_bps: 30_000_000, queue_bytes: 64_000, queue_delay_us: 21_000 }
        .emit(&mut f)
        .unwrap();
    seeds.push(f);
    let (mut scone_ok, mut signal_ok) = (0, 0);
    for i in 0..200_000 {
        let mut buf: Vec<u8> = if i % 2 == 0 {
            let n = rng.random_range(0..40);
            (0..n).map(|_| rng.random()).collect()
        } else {
            let mut b = seeds[rng.random_range(0..seeds.len())].clone();
            for _ in 0..rng.random_range(1..4) {
                match rng.random_range(0..3) {
                    0 if !b.is_empty() => {
                        let k = rng.random_range(0..b.len());
                        b[k] = rng.random();
                    }
                    1 => b.truncate(rng.random_range(0..=b.len())),
                    _ => b.push(rng.random()),
                }
            }
            b
        };
        if let Ok(r) = SconeRepr::decode(&buf) {
            assert!(r.rate_signal <= 127 && r.buffer_len() <= buf.len());
            scone_ok += 1;
        }
        signal_ok += usize::from(NetworkSignalRepr::decode(&buf).is_ok());
        let target = rng.random_range(0..=127);
        let before = SconeRepr::decode(&buf).map(|r| r.rate_signal).ok();
        let is_scone = apply_advice(&mut buf, target).unwrap();
        assert_eq!(is_scone, before.is_some());
        if let Some(b) = before {
            assert_eq!(SconeRepr::decode(&buf).unwrap().rate_signal, b.min(target), "only ever lowered");
        }
    }
    // The mutations keep enough valid packets to exercise the accessors.
    assert!(scone_ok > 1_000 && signal_ok > 1_000, "{scone_ok} {signal_ok}");
}
