//! Finds the fragments a text shares with a few needles: the runs of at least a given number
//! of characters that stand, byte for byte, in one of the needles.
//!
//! ```
//! use ward_fragments::{Fragments, Run};
//!
//! // One needle (a secret value); any run of 8 or more characters of it counts.
//! let fragments = Fragments::new([("prov-KEY-9f8e7d6c5b4a", 8)]);
//! let text = b"the tail 9f8e7d6c5b4a leaked, 9f8e7d6 did not";
//! assert_eq!(
//!     fragments.find(text),
//!     Some(Run { start: 9, end: 21, needle: 0 })
//! );
//! assert_eq!(fragments.spans(text), vec![(9, 21)]);
//! assert_eq!(fragments.find(b"nothing of it here"), None);
//! ```
//!
//! ward has two users of this crate: the runtime's exact-value guard (R22), which redacts
//! any fragment of 8 or more characters of a configured secret, and the simulator's I8
//! oracle, which checks that none leaves. The oracle may share no code with the runtime it
//! judges other than neutral libraries; this is one, knowing nothing of either. A bug here
//! would blind both at once, so the fast scanner is checked against a plain
//! [`reference`](mod@reference) version written to be obviously right.
//!
//! # What counts
//!
//! A needle is given as `(bytes, min_chars)`. A **run** is a stretch `text[start..end]` equal
//! to `needle[offset..offset + (end - start)]` for some offset, maximal for that alignment
//! (the bytes before and after differ, or one side has none), that holds at least the
//! needle's **threshold** of characters: `min_chars` (2 when smaller), or the whole needle
//! when it holds fewer characters than that. A needle of fewer than 2 characters is ignored:
//! one character is no secret, and the search below needs runs of at least two bytes.
//!
//! Characters are counted on bytes: every byte that does not continue a UTF-8 sequence
//! (`byte & 0xC0 != 0x80`) starts one. On valid UTF-8 this is the `char` count; on other bytes
//! it is still defined, and texts and needles need not be UTF-8. A run can begin or end inside
//! a character (the text and the needle share a lead byte, then differ); callers that need
//! character boundaries widen the span to them.
//!
//! # Design
//!
//! Let `t` be the smallest threshold of any needle and `stride = t - 1`. A run holds at least
//! `t` characters, so at least `t` bytes, so it starts a byte pair at `stride` or more
//! consecutive text positions, and one of them is a multiple of `stride`. The scanner looks
//! only there: it reads the two bytes at positions `0, stride, 2·stride, …` and looks the pair
//! up in a 65,536-bit table of the pairs the needles hold, so that most text is cleared with
//! one lookup per `stride` bytes (per 7 bytes for the threshold 8 of secret values). A hit
//! leads, through a chain per bucket of pairs, to every place the pair stands in a needle; at
//! each, the run the text shares with the needle at that alignment is grown both ways and
//! judged by its characters.
//!
//! Building is one pass over the needles' bytes (one place per byte pair, chained in one
//! backward pass, nothing sorted) and an 8 KiB table zeroed: cheap enough to build one per
//! agent run, as the guard does. Searching is linear in the text: each looked-at position
//! costs at most the places of its pair times the length of a needle, and with needles that
//! are high-entropy keys, hits are rare.
//!
//! [`Fragments::runs`] reports every run, but not once each: a run is found from every
//! looked-at position where it holds a byte pair, so a run of more than `stride + 1` bytes
//! can be found twice or more. [`Fragments::spans`] merges them; the proptest of this crate
//! compares the distinct runs with [`reference::runs`].

#![forbid(unsafe_code)]
#![deny(missing_docs)]

use std::fmt;

/// A run of text shared with a needle: `text[start..end]` stands in the needle.
///
/// Ordered by start, then end, then needle.
///
/// ```
/// use ward_fragments::{Fragments, Run};
///
/// let text = b"key=abcdefgh!";
/// let run = Fragments::new([("xabcdefghx", 8)]).find(text).unwrap();
/// assert_eq!(run, Run { start: 4, end: 12, needle: 0 });
/// assert_eq!(&text[run.start..run.end], b"abcdefgh");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Run {
    /// The byte offset in the text where the run starts.
    pub start: usize,
    /// The byte offset in the text where the run ends (exclusive).
    pub end: usize,
    /// The needle's index, in the order the needles were given to [`Fragments::new`]
    /// (ignored needles keep their index).
    pub needle: usize,
}

/// The smallest threshold: a run of one character could be a single byte, which holds no
/// byte pair to be found by.
const THRESHOLD_CHARS_MIN: usize = 2;

/// A fragment scanner for a fixed set of needles. Cheap to build; cheap to clone is not a
/// goal (share it behind an `Arc`).
///
/// Its `Debug` output names how many needles it holds, never their bytes: needles are
/// usually secrets.
///
/// ```
/// use ward_fragments::Fragments;
///
/// let fragments = Fragments::new([("provider-key-1234", 8), ("search-key-987654", 8)]);
/// // "search-key-" of the second and "-key-1234" of the first overlap: one span.
/// assert_eq!(fragments.spans(b"search-key-1234"), vec![(0, 15)]);
/// assert!(fragments.spans(b"key-98").is_empty());
/// ```
#[derive(Clone)]
pub struct Fragments {
    /// One bit per byte pair that some needle holds.
    pairs: Box<PairTable>,
    /// The first place of each bucket of pairs (`NONE` for an empty bucket).
    heads: Vec<u32>,
    /// Every place a pair stands in a needle that counts, each bucket's places chained in
    /// (needle, offset) order.
    places: Vec<Place>,
    /// Every needle's bytes, one after the other.
    bytes: Vec<u8>,
    /// The needles, in the order given.
    needles: Vec<Needle>,
    /// One text position in this many is looked at; 0 when no needle counts.
    stride: usize,
}

/// A needle: where its bytes are in [`Fragments::bytes`], and the characters a run of it
/// must hold (`None` for an ignored needle).
#[derive(Clone, Copy, Debug)]
struct Needle {
    start: usize,
    end: usize,
    threshold: Option<usize>,
}

/// Where a byte pair stands in a needle, and the next place of its bucket.
#[derive(Clone, Copy, Debug)]
struct Place {
    pair: u16,
    needle: u32,
    offset: u32,
    next: u32,
}

/// The end of a bucket's chain.
const NONE: u32 = u32::MAX;

/// The number of buckets of pairs.
const BUCKETS: usize = 256;

/// The bucket of a pair: the top byte of a multiplicative hash, so that pairs of like bytes
/// (`aa`, `bb`) and ASCII text spread over all buckets.
fn bucket(pair: u16) -> usize {
    usize::from(pair.wrapping_mul(0x9E37) >> 8)
}

/// One bit per byte pair (65,536 bits): a fixed size, so that looking a pair up needs no
/// bounds check.
type PairTable = [u64; 1024];

/// An empty [`PairTable`], allocated zeroed.
fn empty_pair_table() -> Box<PairTable> {
    let table: Box<[u64]> = vec![0u64; 1024].into_boxed_slice();
    table
        .try_into()
        .unwrap_or_else(|_| unreachable!("the table has 1024 words"))
}

/// The pair of bytes at `position` and `position + 1`.
fn pair_at(bytes: &[u8], position: usize) -> u16 {
    u16::from_le_bytes([bytes[position], bytes[position + 1]])
}

/// The characters of `bytes`: every byte that does not continue a UTF-8 sequence starts one.
fn characters(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&byte| byte & 0xC0 != 0x80).count()
}

/// The characters a run of `needle` must hold, or `None` when nothing of it counts.
fn threshold(needle: &[u8], min_chars: usize) -> Option<usize> {
    let characters = characters(needle);
    (characters >= THRESHOLD_CHARS_MIN).then(|| min_chars.max(THRESHOLD_CHARS_MIN).min(characters))
}

impl Fragments {
    /// A scanner for `needles`, each `(bytes, min_chars)`: a run of a needle counts when it
    /// holds at least `min_chars` characters (2 when smaller), or the whole needle when the
    /// needle holds fewer. Needles of fewer than 2 characters are ignored.
    ///
    /// ```
    /// use ward_fragments::{Fragments, Run};
    ///
    /// // A short needle counts only whole; "é" counts one character of two bytes.
    /// let fragments = Fragments::new([("k3y", 8), ("clé-secrète-42", 8)]);
    /// assert_eq!(fragments.find(b"my k3y"), Some(Run { start: 3, end: 6, needle: 0 }));
    /// assert_eq!(fragments.find(b"my k3"), None);
    /// // 8 characters, 9 bytes.
    /// let text = "clé-secr".as_bytes();
    /// assert_eq!(fragments.find(text), Some(Run { start: 0, end: 9, needle: 1 }));
    /// ```
    ///
    /// # Panics
    ///
    /// When the needles hold 4 GiB or more in all: places are kept as `u32`, since needles
    /// are secret values of a few hundred bytes at most.
    pub fn new<I, B>(needles: I) -> Fragments
    where
        I: IntoIterator<Item = (B, usize)>,
        B: AsRef<[u8]>,
    {
        let mut bytes = Vec::new();
        let mut listed = Vec::new();
        for (needle, min_chars) in needles {
            let needle = needle.as_ref();
            let start = bytes.len();
            bytes.extend_from_slice(needle);
            listed.push(Needle {
                start,
                end: bytes.len(),
                threshold: threshold(needle, min_chars),
            });
        }
        let index_max = bytes.len().max(listed.len());
        assert!(u32::try_from(index_max).is_ok_and(|index| index < NONE));
        let counted = || {
            listed
                .iter()
                .enumerate()
                .filter(|(_, needle)| needle.threshold.is_some())
        };
        let pairs_count = counted()
            .map(|(_, needle)| (needle.end - needle.start).saturating_sub(1))
            .sum();
        let mut places: Vec<Place> = Vec::with_capacity(pairs_count);
        for (index, needle) in counted() {
            for (offset, pair) in bytes[needle.start..needle.end].windows(2).enumerate() {
                places.push(Place {
                    pair: u16::from_le_bytes([pair[0], pair[1]]),
                    needle: index as u32,
                    offset: offset as u32,
                    next: NONE,
                });
            }
        }
        // Chained back to front, so that each chain runs in (needle, offset) order.
        let mut heads = vec![NONE; BUCKETS];
        let mut pairs = empty_pair_table();
        for index in (0..places.len()).rev() {
            let pair = places[index].pair;
            pairs[usize::from(pair >> 6)] |= 1 << (pair & 63);
            places[index].next = heads[bucket(pair)];
            heads[bucket(pair)] = index as u32;
        }
        let stride = counted()
            .filter_map(|(_, needle)| needle.threshold)
            .min()
            .map_or(0, |threshold| threshold - 1);
        debug_assert!(stride == 0 || stride + 1 >= THRESHOLD_CHARS_MIN);
        debug_assert_eq!(stride == 0, places.is_empty());
        Fragments {
            pairs,
            heads,
            places,
            bytes,
            needles: listed,
            stride,
        }
    }

    /// Every run of `text`, in the order of the text positions they were found from (not
    /// sorted by start; a run can be reported more than once).
    ///
    /// ```
    /// use std::collections::BTreeSet;
    /// use ward_fragments::{Fragments, Run};
    ///
    /// let fragments = Fragments::new([("abcdefghijklmnop", 8)]);
    /// let runs: BTreeSet<Run> = fragments.runs(b"abcdefghijklmnop and ijklmnop").collect();
    /// let expected = [Run { start: 0, end: 16, needle: 0 }, Run { start: 21, end: 29, needle: 0 }];
    /// assert_eq!(runs, BTreeSet::from(expected));
    /// ```
    pub fn runs<'f, 't>(&'f self, text: &'t [u8]) -> Runs<'f, 't> {
        Runs {
            fragments: self,
            text,
            // Without a needle that counts, nothing is looked at (a stride of 0 would not move).
            position: if self.stride == 0 { text.len() } else { 0 },
            found: 0,
            pair: 0,
            place: NONE,
        }
    }

    /// The first run [`Fragments::runs`] reports: `None` when `text` holds no run.
    ///
    /// ```
    /// use ward_fragments::{Fragments, Run};
    ///
    /// let fragments = Fragments::new([("0123456789", 8)]);
    /// assert_eq!(fragments.find(b"<12345678>"), Some(Run { start: 1, end: 9, needle: 0 }));
    /// assert_eq!(fragments.find(b"<1234567>"), None);
    /// ```
    pub fn find(&self, text: &[u8]) -> Option<Run> {
        self.runs(text).next()
    }

    /// The stretches of `text` covered by runs, sorted, with overlapping or touching runs
    /// joined.
    ///
    /// ```
    /// use ward_fragments::Fragments;
    ///
    /// let fragments = Fragments::new([("abcdefgh", 8), ("ghijklmn", 8)]);
    /// // The two runs overlap in "gh"; a third stands apart.
    /// assert_eq!(fragments.spans(b"abcdefghijklmn abcdefgh"), vec![(0, 14), (15, 23)]);
    /// ```
    pub fn spans(&self, text: &[u8]) -> Vec<(usize, usize)> {
        let mut spans: Vec<(usize, usize)> =
            self.runs(text).map(|run| (run.start, run.end)).collect();
        spans.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
        for (start, end) in spans {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        merged
    }

    /// Whether some needle holds `pair`.
    fn holds(&self, pair: u16) -> bool {
        (self.pairs[usize::from(pair >> 6)] >> (pair & 63)) & 1 != 0
    }

    /// The run `text` shares with needle `needle` at the alignment where text position
    /// `position` is needle offset `offset`, when it holds the needle's threshold.
    fn run_at(&self, text: &[u8], position: usize, needle: usize, offset: usize) -> Option<Run> {
        let Needle {
            start,
            end,
            threshold,
        } = self.needles[needle];
        // An ignored needle has no places, so is never aligned with.
        let threshold = threshold?;
        let bytes = &self.bytes[start..end];
        let before = text[..position]
            .iter()
            .rev()
            .zip(bytes[..offset].iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        let after = text[position..]
            .iter()
            .zip(&bytes[offset..])
            .take_while(|(a, b)| a == b)
            .count();
        // The pair at `position` was found at `offset`, so the run holds at least it.
        debug_assert!(after >= 2);
        let run = Run {
            start: position - before,
            end: position + after,
            needle,
        };
        debug_assert_eq!(
            text[run.start..run.end],
            bytes[offset - before..offset + after]
        );
        (characters(&text[run.start..run.end]) >= threshold).then_some(run)
    }
}

impl fmt::Debug for Fragments {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("Fragments")
            .field("needles", &self.needles.len())
            .field("stride", &self.stride)
            .finish_non_exhaustive()
    }
}

/// The runs of a text, in the order of the text positions they were found from: made by
/// [`Fragments::runs`].
///
/// A hand-written iterator rather than a chain of adapters (`step_by`, `filter_map`,
/// `flat_map`): 14 % fewer instructions per search in the bench, and in the simulator, where
/// the I8 oracle's scans are hot, as few instructions per run as before the scanner was
/// shared.
#[derive(Clone)]
pub struct Runs<'f, 't> {
    fragments: &'f Fragments,
    text: &'t [u8],
    /// The next text position to look at.
    position: usize,
    /// The last position looked at whose pair some needle holds, and that pair.
    found: usize,
    pair: u16,
    /// The next place of the pair's bucket to try (`NONE` once the bucket is done).
    place: u32,
}

impl Iterator for Runs<'_, '_> {
    type Item = Run;

    fn next(&mut self) -> Option<Run> {
        let fragments = self.fragments;
        loop {
            // The remaining places of the pair found last, in (needle, offset) order.
            while let Some(place) = fragments.places.get(self.place as usize) {
                self.place = place.next;
                if place.pair == self.pair {
                    let (needle, offset) = (place.needle as usize, place.offset as usize);
                    let run = fragments.run_at(self.text, self.found, needle, offset);
                    if run.is_some() {
                        return run;
                    }
                }
            }
            // The next looked-at position whose pair some needle holds. The position is kept
            // in a local while looking, not read from and written to `self` at each step: 8 %
            // fewer instructions on clean prose and the oversized argument of the bench (9 %
            // on planted text), about 7 % less time.
            let (text, stride) = (self.text, fragments.stride);
            let mut position = self.position;
            loop {
                if position + 1 >= text.len() {
                    self.position = position;
                    return None;
                }
                let pair = pair_at(text, position);
                if fragments.holds(pair) {
                    (self.found, self.pair) = (position, pair);
                    self.place = fragments.heads[bucket(pair)];
                    self.position = position + stride;
                    break;
                }
                position += stride;
            }
        }
    }
}

impl fmt::Debug for Runs<'_, '_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("Runs")
            .field("position", &self.position)
            .finish_non_exhaustive()
    }
}

pub mod reference {
    //! The plain version of [`Fragments::runs`](crate::Fragments::runs), written to be
    //! obviously right rather than fast: it looks at every text position, every needle and
    //! every offset in it. Quadratic; it exists to check the fast version (this crate's
    //! proptest, the simulator's tests) and to be measured beside it.

    use std::collections::BTreeSet;

    use crate::Run;

    /// Every run of `text`, for `needles` as [`Fragments::new`](crate::Fragments::new) takes
    /// them: sorted, each once. Slow: for tests and benches only.
    ///
    /// ```
    /// use std::collections::BTreeSet;
    /// use ward_fragments::{Fragments, Run, reference};
    ///
    /// let needles = [("prov-KEY-9f8e7d6c5b4a", 8)];
    /// let text = b"tails: KEY-9f8e7d, 7d6c5b4a";
    /// let fast: BTreeSet<Run> = Fragments::new(needles).runs(text).collect();
    /// let slow = reference::runs(needles, text);
    /// assert_eq!(slow, fast.into_iter().collect::<Vec<Run>>());
    /// assert_eq!(slow.len(), 2);
    /// ```
    pub fn runs<I, B>(needles: I, text: &[u8]) -> Vec<Run>
    where
        I: IntoIterator<Item = (B, usize)>,
        B: AsRef<[u8]>,
    {
        let characters = |bytes: &[u8]| bytes.iter().filter(|&&byte| byte & 0xC0 != 0x80).count();
        let mut found = BTreeSet::new();
        for (index, (needle, min_chars)) in needles.into_iter().enumerate() {
            let needle = needle.as_ref();
            // Fewer than 2 characters: ignored. Otherwise min_chars, at least 2, at most the
            // whole needle.
            if characters(needle) < 2 {
                continue;
            }
            let threshold = min_chars.max(2).min(characters(needle));
            for start in 0..text.len() {
                for offset in 0..needle.len() {
                    // A run begins where the bytes before differ, or one side has none.
                    if start > 0 && offset > 0 && text[start - 1] == needle[offset - 1] {
                        continue;
                    }
                    let len = text[start..]
                        .iter()
                        .zip(&needle[offset..])
                        .take_while(|(a, b)| a == b)
                        .count();
                    if len > 0 && characters(&text[start..start + len]) >= threshold {
                        found.insert(Run {
                            start,
                            end: start + len,
                            needle: index,
                        });
                    }
                }
            }
        }
        found.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    /// The distinct runs of `text`, checked against the reference.
    fn runs(needles: &[(&str, usize)], text: &str) -> Vec<Run> {
        let fragments = Fragments::new(needles.iter().copied());
        let fast: BTreeSet<Run> = fragments.runs(text.as_bytes()).collect();
        let fast: Vec<Run> = fast.into_iter().collect();
        assert_eq!(
            fast,
            reference::runs(needles.iter().copied(), text.as_bytes())
        );
        fast
    }

    fn run(start: usize, end: usize, needle: usize) -> Run {
        Run { start, end, needle }
    }

    const NO_RUNS: [Run; 0] = [];

    const HEX: (&str, usize) = ("0123456789abcdef", 8);

    #[test]
    fn a_run_of_exactly_the_threshold_counts_and_one_character_less_does_not() {
        assert_eq!(runs(&[HEX], "xx01234567yy"), [run(2, 10, 0)]);
        assert_eq!(runs(&[HEX], "xx0123456yy"), NO_RUNS);
        assert_eq!(runs(&[HEX], "xx1234567yy9abcdef"), NO_RUNS);
        assert_eq!(runs(&[("0123456789abcdef", 9)], "xx01234567yy"), NO_RUNS);
    }

    #[test]
    fn runs_at_the_start_and_the_end_of_the_text_are_found() {
        assert_eq!(runs(&[HEX], "01234567"), [run(0, 8, 0)]);
        assert_eq!(
            runs(&[HEX], "01234567 89abcdef"),
            [run(0, 8, 0), run(9, 17, 0)]
        );
        assert_eq!(runs(&[HEX], "0123456789abcdef"), [run(0, 16, 0)]);
        // Lengths around every multiple of the stride.
        for len in 8..=16 {
            let tail = &HEX.0[16 - len..];
            assert_eq!(runs(&[HEX], &format!("-----{tail}")), [run(5, 5 + len, 0)]);
            assert_eq!(runs(&[HEX], &HEX.0[..len]), [run(0, len, 0)]);
        }
        assert_eq!(runs(&[HEX], ""), NO_RUNS);
        assert_eq!(runs(&[HEX], "0"), NO_RUNS);
    }

    #[test]
    fn a_needle_shorter_than_its_minimum_counts_only_whole() {
        let needles = [("k3y", 8), HEX];
        assert_eq!(runs(&needles, "a k3y b"), [run(2, 5, 0)]);
        assert_eq!(runs(&needles, "k3y"), [run(0, 3, 0)]);
        assert_eq!(runs(&needles, "k3 3y"), NO_RUNS);
        assert_eq!(runs(&needles, "k3yk3y"), [run(0, 3, 0), run(3, 6, 0)]);
        // The short needle sets the stride (2): a run of the other is still found.
        assert_eq!(runs(&needles, "-89abcdef-"), [run(1, 9, 1)]);
    }

    #[test]
    fn characters_are_counted_not_bytes() {
        // Cyrillic letters are 2 bytes each: 8 characters are 15 bytes here, and 8 bytes
        // ("ключ") are 4 characters.
        let needles = [("ключ-секрет-42", 8)];
        assert_eq!(runs(&needles, "ключ-сек"), [run(0, 15, 0)]);
        assert_eq!(runs(&needles, "[ключ]"), NO_RUNS);
        assert_eq!(runs(&needles, "кре ключ-се т-42"), NO_RUNS);
        assert_eq!(runs(&needles, "=ключ-секрет-42="), [run(1, 25, 0)]);
        // A run can end inside a character: "т" instead of "р" shares the lead byte, so the
        // run is "ключ-сек" and one byte more.
        let text = "ключ-сект";
        assert_eq!("р".as_bytes()[0], "т".as_bytes()[0]);
        assert_eq!(runs(&needles, text), [run(0, 16, 0)]);
    }

    #[test]
    fn overlapping_needles_each_report_their_runs() {
        let needles = [("abcdefgh-1234", 8), ("defgh-1234-xyz", 8)];
        let text = "abcdefgh-1234-xyz";
        assert_eq!(runs(&needles, text), [run(0, 13, 0), run(3, 17, 1)]);
        assert_eq!(Fragments::new(needles).spans(text.as_bytes()), [(0, 17)]);
        // A needle inside another.
        let needles = [("abcdefgh", 8), ("xxabcdefghxx", 8)];
        assert_eq!(runs(&needles, "-abcdefgh-"), [run(1, 9, 0), run(1, 9, 1)]);
    }

    #[test]
    fn repeated_bytes_are_found_at_every_alignment() {
        let needles = [("aaaaaaaaaa", 8)];
        let found = runs(&needles, "aaaaaaaaaaaa");
        let expected = [
            run(0, 8, 0),
            run(0, 9, 0),
            run(0, 10, 0),
            run(1, 11, 0),
            run(2, 12, 0),
            run(3, 12, 0),
            run(4, 12, 0),
        ];
        assert_eq!(found, expected);
        let fragments = Fragments::new(needles);
        assert_eq!(fragments.spans(b"aaaaaaaaaaaa"), [(0, 12)]);
        assert!(fragments.spans(b"aaaaaaa").is_empty());
    }

    #[test]
    fn touching_runs_are_joined_into_one_span() {
        let fragments = Fragments::new([("abcdefgh", 8)]);
        assert_eq!(fragments.spans(b"abcdefghabcdefgh"), [(0, 16)]);
        assert_eq!(fragments.spans(b"abcdefgh-abcdefgh"), [(0, 8), (9, 17)]);
    }

    #[test]
    fn tiny_needles_and_minimums_follow_the_rules() {
        // Below 2, a minimum is 2.
        assert_eq!(runs(&[("abcdef", 0)], "xaby"), [run(1, 3, 0)]);
        assert_eq!(runs(&[("abcdef", 1)], "xay"), NO_RUNS);
        // Needles of fewer than 2 characters are ignored, and keep their index.
        let needles = [("", 8), ("a", 8), ("é", 8), ("abcdefgh", 8)];
        assert_eq!(runs(&needles, "é a abcdefgh"), [run(5, 13, 3)]);
        let none = Fragments::new(Vec::<(&[u8], usize)>::new());
        assert_eq!(none.find(b"anything at all"), None);
        assert_eq!(Fragments::new([("é", 8)]).find("é é".as_bytes()), None);
    }

    #[test]
    fn debug_output_never_shows_a_needle() {
        let text = format!("{:?}", Fragments::new([("prov-KEY-9f8e7d6c5b4a", 8)]));
        assert_eq!(text, "Fragments { needles: 1, stride: 7, .. }");
    }

    /// Characters that make accidental runs likely, in 1, 2, 3 and 4 bytes.
    const ALPHABET: [char; 10] = ['a', 'b', 'c', '0', '1', '-', 'é', 'ö', '中', '🔑'];

    fn text_of(alphabet_indices: &[usize]) -> String {
        alphabet_indices
            .iter()
            .map(|&index| ALPHABET[index % ALPHABET.len()])
            .collect()
    }

    /// A piece of the generated text: filler characters, or a slice (at any byte offsets)
    /// of a needle.
    #[derive(Clone, Debug)]
    enum Piece {
        Filler(Vec<usize>),
        Planted {
            needle: usize,
            from: usize,
            len: usize,
        },
    }

    fn piece() -> impl Strategy<Value = Piece> {
        prop_oneof![
            prop::collection::vec(0..ALPHABET.len(), 0..12).prop_map(Piece::Filler),
            (0..4usize, 0..40usize, 0..40usize)
                .prop_map(|(needle, from, len)| { Piece::Planted { needle, from, len } }),
        ]
    }

    fn needle() -> impl Strategy<Value = (String, usize)> {
        (prop::collection::vec(0..ALPHABET.len(), 0..24), 0..12usize)
            .prop_map(|(indices, min_chars)| (text_of(&indices), min_chars))
    }

    fn assemble(needles: &[(String, usize)], pieces: &[Piece]) -> Vec<u8> {
        let mut text = Vec::new();
        for piece in pieces {
            match piece {
                Piece::Filler(indices) => text.extend_from_slice(text_of(indices).as_bytes()),
                Piece::Planted { needle, from, len } => {
                    let bytes = needles[needle % needles.len()].0.as_bytes();
                    let from = from % (bytes.len() + 1);
                    let len = len % (bytes.len() - from + 1);
                    text.extend_from_slice(&bytes[from..from + len]);
                }
            }
        }
        text
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn the_fast_scanner_finds_what_the_reference_finds(
            needles in prop::collection::vec(needle(), 1..4),
            pieces in prop::collection::vec(piece(), 0..10),
        ) {
            let text = assemble(&needles, &pieces);
            let needles: Vec<(&[u8], usize)> = needles
                .iter()
                .map(|(needle, min_chars)| (needle.as_bytes(), *min_chars))
                .collect();
            let fragments = Fragments::new(needles.iter().copied());
            let fast: BTreeSet<Run> = fragments.runs(&text).collect();
            let slow = reference::runs(needles.iter().copied(), &text);
            prop_assert_eq!(fast.iter().copied().collect::<Vec<Run>>(), slow.clone());
            prop_assert_eq!(fragments.find(&text).is_some(), !slow.is_empty());
            // Every span is covered by runs, and every run lies in a span.
            let spans = fragments.spans(&text);
            for run in &slow {
                prop_assert!(spans.iter().any(|&(start, end)| start <= run.start && run.end <= end));
            }
            for window in spans.windows(2) {
                prop_assert!(window[0].1 < window[1].0);
            }
        }
    }
}
