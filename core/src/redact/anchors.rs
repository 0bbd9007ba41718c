//! Anchors: the rare literals that start every pattern rule (R25–R27), found with one SIMD
//! multi-literal search and one `memchr`.
//!
//! Calibration on the bench machine: Teddy (`aho_corasick::packed`) runs at over 10 GiB/s
//! on prose when each of its 8 buckets holds literals whose bytes are rare together, and
//! at about 2.5 GiB/s when the buckets mix common letters (a bucket matches the union of
//! its literals' nybbles). So the anchors are chosen for rarity and placed in buckets by
//! hand (Teddy puts a literal in bucket `id % 8` unless a literal with the same low nybbles
//! is already placed, which keeps every case variant of a word in one bucket):
//!
//! | bucket | literals | rule |
//! |---|---|---|
//! | 0 | `rer` in every case (the end of `bearer`) | R25 |
//! | 1 | `sic` in every case (the end of `basic`) | R25 |
//! | 2 | `KIA`, `SIA` (`AKIA…`, `ASIA…`) | R26 |
//! | 3 | `sk-` | R26 |
//! | 4 | `rs\`, `rs/` in every case (the end of a `Users` segment) | R27 |
//! | 5 | `xox`, `eyJ` | R26 |
//! | 6 | `://`, `/home/` | R26, R27 |
//! | 7 | `-BEGIN` | R26 |
//!
//! Case-insensitive words are listed in all their case variants (8 for `rer`), which
//! share one bucket; `aho-corasick`'s own `ascii_case_insensitive` would switch off this
//! SIMD path. The tokens that start with an underscore-bearing prefix (`sk_`, `ghp_` and its
//! siblings, `github_pat_`) come from a `memchr` for `_`, rare in prose, instead of seven
//! more literals. Hits from both searches are sorted by the position of the candidate they
//! announce (at most 3 bytes before the literal), so every rule sees its candidates in
//! order. After a Teddy hit the search restarts one byte later, so overlapping anchors
//! (`sk-sk-`) are all found.

use aho_corasick::packed::{Config, MatchKind, Searcher};
use aho_corasick::{AhoCorasick, AhoCorasickKind};
use memchr::memchr_iter;

use super::text::starts_with;
use super::work::Work;

/// The candidate a hit announces; its position is where the candidate starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Anchor {
    /// `Bearer`, any case (R25), at the scheme word.
    Bearer,
    /// `Basic`, any case (R25), at the scheme word.
    Basic,
    /// `sk-` or `sk_` (R26).
    Sk,
    /// `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` (R26).
    GithubShort,
    /// `github_pat_` (R26).
    GithubPat,
    /// `AKIA` or `ASIA` (R26), at the `A`.
    Aws,
    /// `xox` (R26).
    Slack,
    /// `eyJ` (R26).
    Jwt,
    /// `-BEGIN` (R26, PEM), at the `-` before `BEGIN`.
    PemBegin,
    /// `://` (R26, URL userinfo).
    SchemeSeparator,
    /// `rs\` or `rs/`: the end of a `Users` segment (R27), at the `r`.
    UsersSegment,
    /// `/home/` (R27).
    Home,
}

/// Every case variant of a three-letter word.
fn case_variants(word: &str) -> Vec<String> {
    let bytes = word.as_bytes();
    (0..1u32 << bytes.len())
        .map(|mask| {
            bytes
                .iter()
                .enumerate()
                .map(|(index, &byte)| {
                    char::from(if mask & (1 << index) != 0 {
                        byte.to_ascii_uppercase()
                    } else {
                        byte
                    })
                })
                .collect()
        })
        .collect()
}

/// The longest distance from a candidate's start to the byte its hit was found at (the `_`
/// of `github_pat_`).
const BACK_MAX: usize = 6;
/// The longest literal.
const LITERAL_LEN_MAX: usize = 6;

/// The literals in id order (which decides their buckets), each with its anchor and the
/// distance from the candidate's start to the literal.
fn literals() -> Vec<(String, Anchor, usize)> {
    let bearer = case_variants("rer");
    let basic = case_variants("sic");
    let users_backslash = case_variants("rs")
        .into_iter()
        .map(|variant| format!("{variant}\\"))
        .collect::<Vec<_>>();
    let users_slash = case_variants("rs")
        .into_iter()
        .map(|variant| format!("{variant}/"))
        .collect::<Vec<_>>();
    let mut literals: Vec<(String, Anchor, usize)> = vec![
        // Ids 0–7 open the eight buckets.
        (bearer[0].clone(), Anchor::Bearer, 3),
        (basic[0].clone(), Anchor::Basic, 2),
        ("KIA".into(), Anchor::Aws, 1),
        ("sk-".into(), Anchor::Sk, 0),
        (users_backslash[0].clone(), Anchor::UsersSegment, 0),
        ("xox".into(), Anchor::Slack, 0),
        ("://".into(), Anchor::SchemeSeparator, 0),
        ("-BEGIN".into(), Anchor::PemBegin, 0),
        // Ids 8, 9 and 11 hold case variants (which join their word's bucket whatever their
        // id) so that ids 10, 12, 13 and 14 land in buckets 2, 4, 5 and 6.
        (bearer[1].clone(), Anchor::Bearer, 3),
        (basic[1].clone(), Anchor::Basic, 2),
        ("SIA".into(), Anchor::Aws, 1),
        (bearer[2].clone(), Anchor::Bearer, 3),
        (users_slash[0].clone(), Anchor::UsersSegment, 0),
        ("eyJ".into(), Anchor::Jwt, 0),
        ("/home/".into(), Anchor::Home, 0),
    ];
    literals.extend(
        bearer[3..]
            .iter()
            .map(|variant| (variant.clone(), Anchor::Bearer, 3)),
    );
    literals.extend(
        basic[2..]
            .iter()
            .map(|variant| (variant.clone(), Anchor::Basic, 2)),
    );
    literals.extend(
        users_backslash[1..]
            .iter()
            .map(|variant| (variant.clone(), Anchor::UsersSegment, 0)),
    );
    literals.extend(
        users_slash[1..]
            .iter()
            .map(|variant| (variant.clone(), Anchor::UsersSegment, 0)),
    );
    literals
}

/// The anchor searchers.
#[derive(Clone, Debug)]
pub(crate) struct AnchorScanner {
    searcher: Engine,
    /// Per literal id: the anchor and the distance back to the candidate's start.
    anchors: Vec<(Anchor, usize)>,
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
        let literals = literals();
        debug_assert!(
            literals.len() <= 32,
            "more than 32 literals switch Teddy to its slower fat variant"
        );
        let patterns = literals.iter().map(|(literal, _, _)| literal.as_bytes());
        let searcher = match Config::new()
            .match_kind(MatchKind::LeftmostFirst)
            .builder()
            .extend(patterns.clone())
            .build()
        {
            Some(searcher) => Engine::Packed(searcher),
            None => Engine::Automaton(
                AhoCorasick::builder()
                    .match_kind(aho_corasick::MatchKind::LeftmostFirst)
                    .kind(Some(AhoCorasickKind::DFA))
                    .build(patterns)?,
            ),
        };
        let anchors = literals
            .into_iter()
            .map(|(_, anchor, back)| (anchor, back))
            .collect();
        Ok(AnchorScanner { searcher, anchors })
    }

    /// Calls `on_hit(candidate start, anchor, work)` for every anchor in `text`, in order of
    /// the candidate's start.
    ///
    /// Both searches report hits in order of the literal, and a candidate starts at most
    /// [`BACK_MAX`] bytes before its literal; so a hit can be handed on as soon as both
    /// searches have moved more than that past it, and only a few hits wait at a time.
    pub(crate) fn scan(
        &self,
        text: &[u8],
        work: &mut Work,
        mut on_hit: impl FnMut(usize, Anchor, &mut Work),
    ) {
        let mut waiting: Vec<(usize, Anchor)> = Vec::new();
        let mut teddy = self.find(text, 0, work);
        let mut underscores = memchr_iter(b'_', text).peekable();
        work.searched_bytes += text.len() as u64;
        loop {
            let underscore = underscores.peek().copied();
            let (literal_start, hit) = match (teddy, underscore) {
                (None, None) => break,
                (Some((pattern, start)), underscore)
                    if underscore.is_none_or(|position| start < position) =>
                {
                    teddy = self.find(text, start + 1, work);
                    let (anchor, back) = self.anchors[pattern];
                    (
                        start,
                        start.checked_sub(back).map(|candidate| (candidate, anchor)),
                    )
                }
                (_, Some(position)) => {
                    underscores.next();
                    (position, underscore_anchor(text, position))
                }
                (_, None) => break,
            };
            work.anchor_hits += 1;
            if let Some(hit) = hit {
                let at = waiting.partition_point(|&(candidate, _)| candidate <= hit.0);
                waiting.insert(at, hit);
            }
            let ready =
                waiting.partition_point(|&(candidate, _)| candidate + BACK_MAX < literal_start);
            for (candidate, anchor) in waiting.drain(..ready) {
                on_hit(candidate, anchor, work);
            }
        }
        for (candidate, anchor) in waiting {
            on_hit(candidate, anchor, work);
        }
    }

    /// The next literal at or after `from`: its id and start.
    fn find(&self, haystack: &[u8], from: usize, work: &mut Work) -> Option<(usize, usize)> {
        if from >= haystack.len() {
            return None;
        }
        let found = match &self.searcher {
            Engine::Packed(searcher) => searcher
                .find_in(haystack, aho_corasick::Span::from(from..haystack.len()))
                .map(|found| (found.pattern().as_usize(), found.start())),
            Engine::Automaton(automaton) => automaton
                .find(aho_corasick::Input::new(haystack).range(from..))
                .map(|found| (found.pattern().as_usize(), found.start())),
        };
        // Each search reads from `from` to the hit (plus its literal), or to the end.
        work.searched_bytes += found
            .map_or(haystack.len(), |(_, start)| start + LITERAL_LEN_MAX)
            .saturating_sub(from) as u64;
        found
    }
}

/// The candidate an underscore at `index` ends the prefix of, if any.
fn underscore_anchor(text: &[u8], index: usize) -> Option<(usize, Anchor)> {
    if index >= 2 && &text[index - 2..index] == b"sk" {
        return Some((index - 2, Anchor::Sk));
    }
    if index >= 3
        && &text[index - 3..index - 1] == b"gh"
        && matches!(text[index - 1], b'p' | b'o' | b'u' | b's' | b'r')
    {
        return Some((index - 3, Anchor::GithubShort));
    }
    if index >= 6 && starts_with(text, index - 6, b"github_pat_") {
        return Some((index - 6, Anchor::GithubPat));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(text: &[u8]) -> Vec<(usize, Anchor)> {
        let mut found = Vec::new();
        let scanner = AnchorScanner::new().expect("anchors build");
        scanner.scan(text, &mut Work::default(), |position, anchor, _| {
            found.push((position, anchor))
        });
        found
    }

    #[test]
    fn literals_fit_slim_teddy_and_cover_every_case() {
        let literals = literals();
        assert_eq!(literals.len(), 32);
        assert!(
            literals
                .iter()
                .all(|(literal, _, back)| *back <= BACK_MAX && literal.len() <= LITERAL_LEN_MAX)
        );
        let mut unique: Vec<_> = literals
            .iter()
            .map(|(literal, _, _)| literal.clone())
            .collect();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 32);
    }

    #[test]
    fn finds_overlapping_anchors_in_any_case_in_order() {
        assert_eq!(hits(b"sk-sk_"), [(0, Anchor::Sk), (3, Anchor::Sk)]);
        assert_eq!(hits(b"x BeArEr y"), [(2, Anchor::Bearer)]);
        assert_eq!(hits(b"bASIC"), [(0, Anchor::Basic)]);
        assert_eq!(hits(b"C:\\USERS\\"), [(6, Anchor::UsersSegment)]);
        assert_eq!(
            hits(b"ghp_ github_pat_x AKIA -----BEGIN"),
            [
                (0, Anchor::GithubShort),
                (5, Anchor::GithubPat),
                (18, Anchor::Aws),
                (27, Anchor::PemBegin)
            ]
        );
        assert_eq!(hits(b"rer"), []);
        assert!(hits(b"plain words about charts, risks and users").is_empty());
    }
}
