//! A fast hasher for the simulator's per-packet maps keyed by small integers (frame numbers,
//! packet indices).
//!
//! The standard library's SipHash resists hash flooding, which a simulator's own counters do not
//! need, and costs tens of nanoseconds per look-up: on a Copa video run its hashing was about 4 %
//! of the time. This is the multiply-rotate hash of rustc's `FxHasher` (the Firefox hash), written
//! out here rather than adding a dependency for twenty lines. Maps and sets built with it behave
//! as any `HashMap`/`HashSet`; their iteration order differs, so they must not be iterated where
//! the order reaches a result.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// The multiplier of rustc's `FxHasher` (64-bit).
const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

/// The hasher: one rotate, xor and multiply per word written.
#[derive(Clone, Copy, Debug, Default)]
pub struct FastHasher {
    hash: u64,
}

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            // Invariant: chunks_exact(8) yields 8-byte slices.
            self.add(u64::from_le_bytes(c.try_into().expect("an 8-byte chunk")));
        }
        for &b in chunks.remainder() {
            self.add(u64::from(b));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

/// Builds [`FastHasher`]s.
pub type FastBuildHasher = BuildHasherDefault<FastHasher>;
/// A `HashMap` with [`FastHasher`].
pub type FastMap<K, V> = HashMap<K, V, FastBuildHasher>;
/// A `HashSet` with [`FastHasher`].
pub type FastSet<T> = HashSet<T, FastBuildHasher>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_as_a_set_and_spreads_nearby_keys() {
        let mut s: FastSet<(u64, u16)> = FastSet::default();
        for f in 0..100u64 {
            for i in 0..10u16 {
                assert!(s.insert((f, i)));
            }
        }
        assert!(!s.insert((5, 5)), "a key present is not inserted twice");
        assert_eq!(s.len(), 1000);
        s.retain(|&(f, _)| f >= 50);
        assert_eq!(s.len(), 500);
        assert!(s.contains(&(99, 9)) && !s.contains(&(49, 9)));
        // Consecutive integers land on different hashes (no identity hash).
        let h = |x: u64| {
            let mut hs = FastHasher::default();
            hs.write_u64(x);
            hs.finish()
        };
        let hashes: FastSet<u64> = (0..10_000).map(h).collect();
        assert_eq!(hashes.len(), 10_000);
        // Byte slices hash by their content.
        let mut a = FastHasher::default();
        a.write(b"0123456789");
        let mut b = FastHasher::default();
        b.write(b"0123456789");
        assert_eq!(a.finish(), b.finish());
    }
}
