//! Anchors: the rare literals that start every pattern rule (R25–R27), found in one SIMD
//! multi-literal search.
//!
//! Case-insensitive keywords (`Bearer`, `Basic`, `Users`) defeat the usual fast paths:
//! `aho-corasick`'s `ascii_case_insensitive` switches off its SIMD prefilter, and listing
//! every case variant of `bearer` takes 64 literals. So the scanner lower-cases the input
//! one chunk at a time into a small buffer (a loop the compiler vectorises) and runs one
//! Teddy searcher (`aho_corasick::packed`) with lower-case anchors over it. Case-sensitive
//! rules (`sk-`, `eyJ`, `AKIA`) then see a few extra hits (`SK-`, `EYJ`) that their exact
//! verification on the original bytes rejects. Folding keeps byte offsets, so a hit in the
//! buffer is a position in the text.
//!
//! Chunks overlap by the longest anchor minus one byte, and a hit is reported only by the
//! chunk that owns its first byte, so a match across a chunk boundary is found exactly once.
//! After each hit the search restarts one byte later, so anchors that overlap one another
//! (`sk-sk-`) are all reported, in position order.

use aho_corasick::packed::{Config, MatchKind, Searcher};
use aho_corasick::{AhoCorasick, AhoCorasickKind};

use super::work::Work;

/// The literal that a hit found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Anchor {
    /// `bearer`, any case (R25).
    Bearer,
    /// `basic`, any case (R25).
    Basic,
    /// `sk-` or `sk_` (R26).
    Sk,
    /// `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` (R26).
    GithubShort,
    /// `github_pat_` (R26).
    GithubPat,
    /// `akia` or `asia`, any case (R26).
    Aws,
    /// `xox` (R26).
    Slack,
    /// `eyj` (R26).
    Jwt,
    /// `begin` (R26, PEM).
    PemBegin,
    /// `://` (R26, URL userinfo).
    SchemeSeparator,
    /// `rs\` or `rs/`: the end of a `Users` path segment (R27).
    UsersSegment,
    /// `/home/` (R27).
    Home,
}

/// The anchors, lower case, each with the rule family it starts.
const ANCHORS: &[(&[u8], Anchor)] = &[
    (b"bearer", Anchor::Bearer),
    (b"basic", Anchor::Basic),
    (b"sk-", Anchor::Sk),
    (b"sk_", Anchor::Sk),
    (b"ghp_", Anchor::GithubShort),
    (b"gho_", Anchor::GithubShort),
    (b"ghu_", Anchor::GithubShort),
    (b"ghs_", Anchor::GithubShort),
    (b"ghr_", Anchor::GithubShort),
    (b"github_pat_", Anchor::GithubPat),
    (b"akia", Anchor::Aws),
    (b"asia", Anchor::Aws),
    (b"xox", Anchor::Slack),
    (b"eyj", Anchor::Jwt),
    (b"begin", Anchor::PemBegin),
    (b"://", Anchor::SchemeSeparator),
    (b"rs\\", Anchor::UsersSegment),
    (b"rs/", Anchor::UsersSegment),
    (b"/home/", Anchor::Home),
];

/// The bytes each chunk is lower-cased into. Small enough to stay in the L1/L2 cache.
const CHUNK_LEN: usize = 16 * 1024;

/// The searcher over lower-cased chunks.
#[derive(Clone, Debug)]
pub(crate) struct AnchorScanner {
    searcher: Engine,
    overlap: usize,
}

#[derive(Clone, Debug)]
enum Engine {
    /// Teddy, where the CPU has the vector instructions it needs.
    Packed(Searcher),
    /// An Aho-Corasick automaton elsewhere (same results, slower).
    Automaton(AhoCorasick),
}

impl AnchorScanner {
    pub(crate) fn new() -> Result<AnchorScanner, aho_corasick::BuildError> {
        let literals = ANCHORS.iter().map(|(literal, _)| *literal);
        let searcher = match Config::new()
            .match_kind(MatchKind::LeftmostFirst)
            .builder()
            .extend(literals.clone())
            .build()
        {
            Some(searcher) => Engine::Packed(searcher),
            None => Engine::Automaton(
                AhoCorasick::builder()
                    .match_kind(aho_corasick::MatchKind::LeftmostFirst)
                    .kind(Some(AhoCorasickKind::DFA))
                    .build(literals)?,
            ),
        };
        let longest = ANCHORS
            .iter()
            .map(|(literal, _)| literal.len())
            .max()
            .unwrap_or(1);
        Ok(AnchorScanner {
            searcher,
            overlap: longest - 1,
        })
    }

    /// Calls `on_hit(anchor, position)` for every anchor occurrence in `text`, in position
    /// order (case-insensitively; the caller verifies).
    pub(crate) fn scan(
        &self,
        text: &[u8],
        work: &mut Work,
        mut on_hit: impl FnMut(Anchor, usize, &mut Work),
    ) {
        let mut buffer = [0u8; CHUNK_LEN + 16];
        let mut chunk_start = 0;
        while chunk_start < text.len() {
            let owned_end = text.len().min(chunk_start + CHUNK_LEN);
            let window_end = text.len().min(owned_end + self.overlap);
            let window = &text[chunk_start..window_end];
            let folded = &mut buffer[..window.len()];
            lower_case_into(window, folded);
            let folded = &*folded;
            let owned_len = owned_end - chunk_start;
            let mut from = 0;
            while from < owned_len {
                let Some((pattern, start, end)) = self.find(folded, from) else {
                    work.searched_bytes += (folded.len() - from) as u64;
                    break;
                };
                work.searched_bytes += (end - from) as u64;
                if start >= owned_len {
                    break;
                }
                work.anchor_hits += 1;
                on_hit(ANCHORS[pattern].1, chunk_start + start, work);
                from = start + 1;
            }
            chunk_start = owned_end;
        }
    }

    fn find(&self, haystack: &[u8], from: usize) -> Option<(usize, usize, usize)> {
        match &self.searcher {
            Engine::Packed(searcher) => searcher
                .find_in(haystack, aho_corasick::Span::from(from..haystack.len()))
                .map(|found| (found.pattern().as_usize(), found.start(), found.end())),
            Engine::Automaton(automaton) => automaton
                .find(aho_corasick::Input::new(haystack).range(from..))
                .map(|found| (found.pattern().as_usize(), found.start(), found.end())),
        }
    }
}

/// Lower-cases ASCII letters of `source` into `target` (same length). Written without
/// branches so that the compiler turns it into vector code.
#[inline]
fn lower_case_into(source: &[u8], target: &mut [u8]) {
    for (target, &byte) in target.iter_mut().zip(source) {
        let is_upper = byte.wrapping_sub(b'A') < 26;
        *target = byte | (u8::from(is_upper) << 5);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(text: &[u8]) -> Vec<(Anchor, usize)> {
        let scanner = AnchorScanner::new().expect("anchors build");
        let mut found = Vec::new();
        scanner.scan(text, &mut Work::default(), |anchor, position, _| {
            found.push((anchor, position))
        });
        found
    }

    #[test]
    fn finds_overlapping_anchors_in_any_case() {
        assert_eq!(hits(b"sk-sk-"), [(Anchor::Sk, 0), (Anchor::Sk, 3)]);
        assert_eq!(hits(b"x BeArEr y"), [(Anchor::Bearer, 2)]);
        assert_eq!(hits(b"C:\\USERS\\"), [(Anchor::UsersSegment, 6)]);
        assert!(hits(b"plain words about charts").is_empty());
    }

    #[test]
    fn finds_each_anchor_across_chunk_boundaries_once() {
        for offset in CHUNK_LEN - 12..CHUNK_LEN + 2 {
            let mut text = vec![b'.'; CHUNK_LEN * 2];
            text[offset..offset + 11].copy_from_slice(b"github_pat_");
            let found = hits(&text);
            assert_eq!(found, [(Anchor::GithubPat, offset)], "offset {offset}");
        }
    }
}
