//! The simulator's one source of randomness: a PCG generator (`Pcg64Mcg`, a fixed algorithm
//! with a fixed output for a given seed on every platform), seeded from the run's seed.
//!
//! Nothing else in the simulator draws randomness: no `thread_rng`, no OS entropy, no
//! `HashMap` iteration. Everything a seed produces is a pure function of that seed.

use rand_core::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// A seeded generator with the helpers the generator needs.
#[derive(Clone, Debug)]
pub struct SimRng {
    inner: Pcg64Mcg,
}

impl SimRng {
    /// The generator of `seed`. Seeds are mixed first so that neighbouring seeds start far
    /// apart.
    pub fn new(seed: u64) -> SimRng {
        SimRng {
            inner: Pcg64Mcg::seed_from_u64(seed ^ 0x5761_7264_5369_6d00),
        }
    }

    /// A uniform `u64`.
    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }

    /// A uniform value in `0..bound` (`bound` > 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        debug_assert!(bound > 0);
        // Lemire's multiply-shift reduction; the bias is below 2^-64 per draw.
        ((u128::from(self.next_u64()) * u128::from(bound.max(1))) >> 64) as u64
    }

    /// A uniform value in `low..=high`.
    pub fn range(&mut self, low: u64, high: u64) -> u64 {
        debug_assert!(low <= high);
        low + self.below(high - low + 1)
    }

    /// A uniform `usize` in `low..=high`.
    pub fn range_usize(&mut self, low: usize, high: usize) -> usize {
        self.range(low as u64, high as u64) as usize
    }

    /// True with probability `percent` / 100.
    pub fn percent(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// True with probability `per_mille` / 1000.
    pub fn per_mille(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }

    /// One element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// One of `items`, drawn as [`pick`](Self::pick) draws from the same items in a slice,
    /// without collecting them; `None`, and no draw, when there are none.
    pub fn pick_from<I: Iterator + Clone>(&mut self, items: I) -> Option<I::Item> {
        let count = items.clone().count();
        if count == 0 {
            return None;
        }
        let index = self.below(count as u64) as usize;
        items.into_iter().nth(index)
    }

    /// A string of `length` characters drawn from `alphabet`.
    pub fn string(&mut self, alphabet: &[u8], length: usize) -> String {
        let mut text = String::with_capacity(length);
        for _ in 0..length {
            text.push(char::from(*self.pick(alphabet)));
        }
        text
    }

    /// A derived generator for an independent stream (so adding draws to one part of the
    /// generator does not shift every later part).
    pub fn fork(&mut self) -> SimRng {
        SimRng::new(self.next_u64())
    }
}

/// Letters and digits.
pub const ALPHANUMERIC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_stream() {
        let (mut a, mut b) = (SimRng::new(7), SimRng::new(7));
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(SimRng::new(7).next_u64(), SimRng::new(8).next_u64());
    }

    #[test]
    fn the_stream_of_a_seed_is_fixed() {
        // Pinned: a change of algorithm would silently change every campaign's seeds.
        let mut rng = SimRng::new(0);
        let first: Vec<u64> = (0..3).map(|_| rng.below(1000)).collect();
        assert_eq!(first, PINNED);
    }

    const PINNED: [u64; 3] = [124, 70, 971];

    #[test]
    fn ranges_stay_in_bounds() {
        let mut rng = SimRng::new(1);
        for _ in 0..10_000 {
            let value = rng.range(3, 9);
            assert!((3..=9).contains(&value));
        }
    }
}
