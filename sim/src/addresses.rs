//! Sets and maps keyed by the address of a record the trace keeps alive (or by another pair
//! of numbers), for the oracle's and the digest's "seen before" questions.
//!
//! They are asked and filled, never iterated, so no order of theirs can reach a trace or a
//! report; and their hash is a fixed function, with no per-process random key, so a run does
//! the same work every time (determinism, I11).

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A set of addresses (or numbers).
pub(crate) type AddressSet<K> = HashSet<K, BuildHasherDefault<AddressHasher>>;

/// A map from addresses (or numbers).
pub(crate) type AddressMap<K, V> = HashMap<K, V, BuildHasherDefault<AddressHasher>>;

/// A hash of whole numbers: each is mixed in with a multiply, and the result goes through the
/// SplitMix64 finaliser. Addresses are aligned, so their low bits carry nothing; the
/// finaliser spreads every input bit over the low bits that pick a bucket and the high bits
/// the table keeps as tags.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct AddressHasher(u64);

/// 2^64 divided by the golden ratio, odd.
const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

impl Hasher for AddressHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, number: u64) {
        self.0 = (self.0.rotate_left(5) ^ number).wrapping_mul(MULTIPLIER);
    }

    fn write_usize(&mut self, number: usize) {
        self.write_u64(number as u64);
    }

    fn finish(&self) -> u64 {
        let mut mixed = self.0;
        mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        mixed ^ (mixed >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_addresses_spread_over_the_low_bits() {
        let hash = |address: usize| {
            let mut hasher = AddressHasher::default();
            hasher.write_usize(address);
            hasher.finish()
        };
        let buckets: HashSet<u64> = (0..1024usize)
            .map(|index| hash(0x7f00_0000_0000 + index * 64) & 1023)
            .collect();
        // 1024 keys thrown at random into 1024 buckets fill about 647 (1 - 1/e).
        assert!(buckets.len() > 600, "{} buckets of 1024", buckets.len());
    }

    #[test]
    fn sets_and_maps_answer_like_ordered_ones() {
        let mut set: AddressSet<(usize, u64)> = AddressSet::default();
        assert!(set.insert((3, 9)));
        assert!(!set.insert((3, 9)));
        assert!(set.insert((9, 3)));
        let mut map: AddressMap<usize, u64> = AddressMap::default();
        map.insert(64, 1);
        assert_eq!(map.get(&64), Some(&1));
        assert_eq!(map.get(&128), None);
    }
}
