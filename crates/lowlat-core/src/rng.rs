//! Per-component random streams.
//!
//! A scenario has one seed. Each component derives its own stream from that seed and a stable name
//! (`"link.bottleneck.loss"`, `"flow.cbr1"`), so adding or removing a component never changes the
//! numbers another component draws: results stay comparable across scenario edits.

use rand::SeedableRng;

/// The generator every component uses: PCG-64 (MCG variant), fast and statistically solid.
pub type Rng = rand_pcg::Pcg64Mcg;

/// FNV-1a, 64 bit: a stable hash of the stream name (std's hasher is not stable across releases).
fn fnv1a(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.as_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// SplitMix64 finaliser: spreads nearby inputs over the whole 64-bit space.
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The random stream of component `name` in a scenario with seed `seed`.
pub fn stream(seed: u64, name: &str) -> Rng {
    let h = fnv1a(name);
    let hi = splitmix(seed ^ h);
    let lo = splitmix(hi ^ seed.rotate_left(17) ^ 0x5851_f42d_4c95_7f2d);
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&hi.to_le_bytes());
    bytes[8..].copy_from_slice(&lo.to_le_bytes());
    Rng::from_seed(bytes)
}

/// Uniform 64-bit words from the stream of `name` (seed `seed`): the random input of property
/// tests and tools, from the generator the components use.
pub fn words(seed: u64, name: &str) -> impl FnMut() -> u64 {
    let mut r = stream(seed, name);
    move || rand::Rng::random(&mut r)
}

/// Uniform integers in `0..n` (`n` > 0) from the stream of `name` (seed `seed`), as [`words`].
pub fn below(seed: u64, name: &str) -> impl FnMut(u64) -> u64 {
    let mut r = stream(seed, name);
    move |n| rand::Rng::random_range(&mut r, 0..n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng as _;

    #[test]
    fn same_seed_and_name_give_the_same_stream() {
        let a: Vec<u64> = (0..8)
            .map({
                let mut r = stream(7, "x");
                move |_| r.random()
            })
            .collect();
        let b: Vec<u64> = (0..8)
            .map({
                let mut r = stream(7, "x");
                move |_| r.random()
            })
            .collect();
        assert_eq!(a, b);
    }

    #[test]
    fn other_name_or_seed_gives_another_stream() {
        let first = |seed, name| stream(seed, name).random::<u64>();
        assert_ne!(first(7, "x"), first(7, "y"));
        assert_ne!(first(7, "x"), first(8, "x"));
    }
}
