//! Anchors: the rare literals that start every pattern rule (R25–R27) and every configured
//! value (R24), found with one SIMD multi-literal search and a second for the anchors that
//! hold a separator.
//!
//! Calibration on the bench machine: Teddy (`aho_corasick::packed`) runs at 11–13 GiB/s on
//! prose when each of its 8 buckets holds literals whose bytes are rare together (a bucket
//! matches the union of its literals' nybbles), at about 2.5 GiB/s when buckets mix common
//! letters, and at half speed past 32 literals (its "fat" variant); a `memmem` per value
//! runs at about 24 GiB/s and `memchr3` at about 30. So:
//!
//! - Teddy gets the anchors that need letters, placed in buckets by hand (Teddy puts a
//!   literal in bucket `id % 8` unless one with the same low nybbles is already placed,
//!   which keeps every case variant of a word in one bucket):
//!
//!   | bucket | literals | rule |
//!   |---|---|---|
//!   | 0 | `rer` in every case (the end of `bearer`) | R25 |
//!   | 1 | `sic` in every case (the end of `basic`) | R25 |
//!   | 2 | `KIA`, `SIA` (`AKIA…`, `ASIA…`) | R26 |
//!   | 3 | `sk-` | R26 |
//!   | 4, 5, 6 | `xox`, `eyJ`, `-BEGIN`, each with one value window | R26, R24 |
//!   | 7 | the first value window | R24 |
//!
//!   A *value window* is the three bytes of a configured value that are rarest in
//!   ordinary text; a hit is verified against the whole value around it. Every occurrence
//!   of a value holds its window at the same offset, so every occurrence is found,
//!   overlapping ones included. Up to four values of at most 256 bytes ride along this way;
//!   with more, or longer, or when no window can be told apart from the other literals,
//!   the values get their own search (`exact`).
//! - A second Teddy search finds the anchors that hold `_`, `\` or `/`: `sk_`, `ghp_` and
//!   its siblings, `b_pat_` (the end of `github_pat_`), `/home/`, `://`, and `rs/` or
//!   `rs\` in any case (the end of a `Users` segment, checked for the `use` before it).
//!   A `memchr3` of those three bytes would stop at each of them, and log lines hold a `/`
//!   every few words. Measured side by side (12-01, `ward redact` of 1 GiB to `/dev/null`,
//!   release build, user time, medians of 5): clean log text 0.45 s against 0.95 s with
//!   `memchr3`, clean prose 0.54 s against 0.60 s. Built with whole-program LTO (the bench
//!   profile) `memchr3` inlines into the loop and the order turns on log text (criterion,
//!   `redact/clean-log`, 30–40 % slower from 64 KiB up); the shipped build is the figure
//!   kept.
//!
//! Case-insensitive words are listed in all their case variants (8 for `rer`);
//! `aho-corasick`'s own `ascii_case_insensitive` would switch off this SIMD path. Hits from
//! both searches are handed on in order of the position of the candidate they announce
//! (at most [`AnchorScanner::back_max`] bytes before the hit), so every rule sees its
//! candidates in order. After a Teddy hit the search restarts one byte later, so
//! overlapping anchors (`sk-sk-`) are all found.

use aho_corasick::packed::{Config, MatchKind, Searcher};
use aho_corasick::{AhoCorasick, AhoCorasickKind};

use super::text::starts_with_ignore_case;
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
    /// A possible occurrence of the configured value with this index (R24), at its start.
    Value(usize),
}

/// The longest literal.
const LITERAL_LEN_MAX: usize = 6;
/// The farthest past a candidate's start that finding its anchor reads (`github_pat_`,
/// found as `b_pat_` and checked for its `github`; other literals end at most 6 bytes in). A
/// configured value's window lies inside the value.
pub(crate) const HIT_REACH_MAX: usize = 11;
/// At most this many values ride along the anchor search.
pub(crate) const WINDOW_VALUES_MAX: usize = 4;
/// Values longer than this get their own search.
const WINDOW_VALUE_LEN_MAX: usize = 256;

/// Every case variant of a word.
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

/// One Teddy literal: its bytes, the anchor it announces and the distance from the
/// candidate's start to the literal.
type Literal = (Vec<u8>, Anchor, usize);

/// How common a byte is in ordinary text (higher is more common), for choosing windows.
fn commonness(byte: u8) -> u32 {
    match byte {
        b' ' => 12,
        b'e' | b't' | b'a' | b'o' | b'i' | b'n' | b's' | b'h' | b'r' => 10,
        b'a'..=b'z' => 8,
        b'.' | b',' | b'\n' => 7,
        b'A'..=b'Z' => 4,
        b'0'..=b'9' => 3,
        0x80..=0xFF => 3,
        _ => 2,
    }
}

/// The rarest three-byte window of `value` that no other literal starts with.
fn window(value: &[u8], taken: &[Vec<u8>]) -> Option<(usize, Vec<u8>)> {
    (0..=value.len().checked_sub(3)?)
        .map(|offset| (offset, value[offset..offset + 3].to_vec()))
        .filter(|(_, window)| !taken.iter().any(|literal| literal.starts_with(window)))
        .min_by_key(|(offset, window)| {
            (
                window.iter().map(|&byte| commonness(byte)).sum::<u32>(),
                *offset,
            )
        })
}

/// The literals in id order (which decides their buckets); `None` when the values cannot
/// ride along.
fn literals(values: &[String]) -> Option<Vec<Literal>> {
    let bearer = case_variants("rer");
    let basic = case_variants("sic");
    let heads: Vec<(Literal, usize)> = vec![
        ((bearer[0].clone().into_bytes(), Anchor::Bearer, 3), 0),
        ((basic[0].clone().into_bytes(), Anchor::Basic, 2), 1),
        ((b"KIA".to_vec(), Anchor::Aws, 1), 2),
        ((b"sk-".to_vec(), Anchor::Sk, 0), 3),
        ((b"xox".to_vec(), Anchor::Slack, 0), 4),
        ((b"eyJ".to_vec(), Anchor::Jwt, 0), 5),
        ((b"-BEGIN".to_vec(), Anchor::PemBegin, 0), 6),
        ((b"SIA".to_vec(), Anchor::Aws, 1), 2),
    ];
    let mut taken: Vec<Vec<u8>> = bearer
        .iter()
        .chain(&basic)
        .map(|word| word.clone().into_bytes())
        .collect();
    taken.extend(heads.iter().map(|((literal, _, _), _)| literal.clone()));
    let mut value_heads = Vec::new();
    for ((index, value), bucket) in values.iter().enumerate().zip([7, 4, 5, 6]) {
        let (offset, literal) = window(value.as_bytes(), &taken)?;
        taken.push(literal.clone());
        value_heads.push(((literal, Anchor::Value(index), offset), bucket));
    }
    let fillers: Vec<Literal> = bearer[1..]
        .iter()
        .map(|variant| (variant.clone().into_bytes(), Anchor::Bearer, 3))
        .chain(
            basic[1..]
                .iter()
                .map(|variant| (variant.clone().into_bytes(), Anchor::Basic, 2)),
        )
        .collect();
    place(heads.into_iter().chain(value_heads).collect(), fillers)
}

/// Orders literals so that each head lands at an id in its bucket; fillers (case variants,
/// whose bucket is already fixed by their word's head) take the other ids.
fn place(mut heads: Vec<(Literal, usize)>, mut fillers: Vec<Literal>) -> Option<Vec<Literal>> {
    const BUCKETS: usize = 8;
    let mut placed: Vec<Literal> = Vec::new();
    while !heads.is_empty() {
        let slot = placed.len() % BUCKETS;
        if let Some(index) = heads.iter().position(|(_, bucket)| *bucket == slot) {
            placed.push(heads.remove(index).0);
        } else {
            // The first two heads open the buckets of the words the fillers vary.
            placed.push(fillers.pop().filter(|_| placed.len() >= 2)?);
        }
    }
    placed.extend(fillers);
    Some(placed)
}

/// The anchor searchers.
#[derive(Clone, Debug)]
pub(crate) struct AnchorScanner {
    /// The anchors that need letters, and the configured values' windows.
    words: Search,
    /// The anchors that hold a separator.
    separators: Search,
    /// The configured values found through windows (empty when they get their own search).
    values: Vec<Vec<u8>>,
    /// Whether the configured values ride along (all of them, or none).
    finds_values: bool,
    back_max: usize,
}

/// One multi-literal search.
#[derive(Clone, Debug)]
struct Search {
    engine: Engine,
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

impl Search {
    fn new(literals: Vec<Literal>) -> Result<Search, aho_corasick::BuildError> {
        debug_assert!(
            literals.len() <= 32,
            "more than 32 literals switch Teddy to its slower fat variant"
        );
        let patterns = literals.iter().map(|(literal, _, _)| literal.as_slice());
        let engine = match Config::new()
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
        Ok(Search { engine, anchors })
    }

    fn back_max(&self) -> usize {
        self.anchors
            .iter()
            .map(|&(_, back)| back)
            .max()
            .unwrap_or(0)
    }

    /// The next literal at or after `from`: its anchor, the distance back to the
    /// candidate's start, and the literal's start.
    fn find(
        &self,
        haystack: &[u8],
        from: usize,
        work: &mut Work,
    ) -> Option<(Anchor, usize, usize)> {
        if from >= haystack.len() {
            return None;
        }
        let found = match &self.engine {
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
        found.map(|(pattern, start)| {
            let (anchor, back) = self.anchors[pattern];
            (anchor, back, start)
        })
    }
}

impl AnchorScanner {
    /// The scanner for the pattern rules and, when they fit, the configured `values`.
    pub(crate) fn new(values: &[String]) -> Result<AnchorScanner, aho_corasick::BuildError> {
        let fits = values.len() <= WINDOW_VALUES_MAX
            && values
                .iter()
                .all(|value| value.len() <= WINDOW_VALUE_LEN_MAX);
        let (literals, finds_values) = match literals(if fits { values } else { &[] }) {
            Some(literals) if fits => (literals, !values.is_empty()),
            _ => (literals(&[]).unwrap_or_default(), false),
        };
        let words = Search::new(literals)?;
        let separators = Search::new(separator_literals())?;
        let back_max = words.back_max().max(separators.back_max());
        let values = if finds_values {
            values
                .iter()
                .map(|value| value.as_bytes().to_vec())
                .collect()
        } else {
            Vec::new()
        };
        Ok(AnchorScanner {
            words,
            separators,
            values,
            finds_values,
            back_max,
        })
    }

    /// Whether the configured values are found by this scanner.
    pub(crate) fn finds_values(&self) -> bool {
        self.finds_values
    }

    /// The configured value with this index (when [`AnchorScanner::finds_values`]).
    pub(crate) fn value(&self, index: usize) -> &[u8] {
        self.values.get(index).map_or(&[], Vec::as_slice)
    }

    /// The longest distance from a candidate's start back to its hit.
    #[cfg(test)]
    fn back_max(&self) -> usize {
        self.back_max
    }

    /// Calls `on_hit(candidate start, anchor, work)` for every anchor in `text`, in order of
    /// the candidate's start.
    ///
    /// Both searches report hits in order of the byte they found, and a candidate starts at
    /// most `back_max` bytes before it; so a hit can be handed on as soon as both searches
    /// have moved more than that past it, and only a few hits wait at a time.
    pub(crate) fn scan(
        &self,
        text: &[u8],
        work: &mut Work,
        mut on_hit: impl FnMut(usize, Anchor, &mut Work),
    ) {
        // Hits wait in batches: appending is cheap, and sorting a nearly sorted batch is
        // about linear. A batch is handed on up to the last candidate that no later hit can
        // precede.
        const BATCH: usize = 64;
        let mut waiting: Vec<(usize, Anchor)> = Vec::new();
        let mut word = self.words.find(text, 0, work);
        let mut separator = self.separators.find(text, 0, work);
        loop {
            let (anchor, back, found_at) = match (word, separator) {
                (None, None) => break,
                (Some(hit), None) => {
                    word = self.words.find(text, hit.2 + 1, work);
                    hit
                }
                (Some(hit), Some(other)) if hit.2 < other.2 => {
                    word = self.words.find(text, hit.2 + 1, work);
                    hit
                }
                (_, Some(hit)) => {
                    separator = self.separators.find(text, hit.2 + 1, work);
                    hit
                }
            };
            if let Some(candidate) = found_at.checked_sub(back)
                && separator_hit_holds(text, candidate, anchor)
            {
                waiting.push((candidate, anchor));
            }
            work.anchor_hits += 1;
            if waiting.len() >= BATCH {
                waiting.sort_by_key(|&(candidate, _)| candidate);
                let ready =
                    waiting.partition_point(|&(candidate, _)| candidate + self.back_max < found_at);
                for (candidate, anchor) in waiting.drain(..ready) {
                    on_hit(candidate, anchor, work);
                }
            }
        }
        waiting.sort_by_key(|&(candidate, _)| candidate);
        for (candidate, anchor) in waiting {
            on_hit(candidate, anchor, work);
        }
    }
}

/// The literals of the anchors that hold a separator (`_`, `\`, `/`), for the second
/// search.
fn separator_literals() -> Vec<Literal> {
    let mut literals: Vec<Literal> = vec![
        (b"sk_".to_vec(), Anchor::Sk, 0),
        (b"/home/".to_vec(), Anchor::Home, 0),
        (b"://".to_vec(), Anchor::SchemeSeparator, 0),
        (b"b_pat_".to_vec(), Anchor::GithubPat, 5),
    ];
    literals.extend(
        [b'p', b'o', b'u', b's', b'r']
            .map(|kind| (vec![b'g', b'h', kind, b'_'], Anchor::GithubShort, 0)),
    );
    for separator in [b'/', b'\\'] {
        literals.extend(case_variants("rs").into_iter().map(|variant| {
            let mut literal = variant.into_bytes();
            literal.push(separator);
            (literal, Anchor::UsersSegment, 0)
        }));
    }
    literals
}

/// Whether a separator literal's hit at `candidate` announces its anchor: `github_pat_`
/// needs its `github`, a `Users` segment its `use`.
fn separator_hit_holds(text: &[u8], candidate: usize, anchor: Anchor) -> bool {
    match anchor {
        Anchor::GithubPat => text[candidate..].starts_with(b"github_pat_"),
        Anchor::UsersSegment => {
            candidate >= 3 && starts_with_ignore_case(text, candidate - 3, b"use")
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits_with(values: &[&str], text: &[u8]) -> Vec<(usize, Anchor)> {
        let values: Vec<String> = values.iter().map(|value| value.to_string()).collect();
        let mut found = Vec::new();
        let scanner = AnchorScanner::new(&values).expect("anchors build");
        scanner.scan(text, &mut Work::default(), |position, anchor, _| {
            found.push((position, anchor))
        });
        found
    }

    fn hits(text: &[u8]) -> Vec<(usize, Anchor)> {
        hits_with(&[], text)
    }

    #[test]
    fn literals_fit_slim_teddy_and_cover_every_case() {
        let values: Vec<String> = [
            "prov-3f9a1c7e5b2d8046a1c3",
            "srch-7d41b09e62c5f8a3",
            "aaaaaaaa",
            "xoxoxoxo",
        ]
        .map(String::from)
        .to_vec();
        for count in 0..=WINDOW_VALUES_MAX {
            let literals = literals(&values[..count]).expect("values fit");
            assert_eq!(literals.len(), 22 + count);
            let mut unique: Vec<_> = literals
                .iter()
                .map(|(literal, _, _)| literal.clone())
                .collect();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), literals.len());
        }
        let scanner = AnchorScanner::new(&values).expect("builds");
        assert!(scanner.finds_values());
        // `b_pat_` is found 5 bytes after the start of `github_pat_`, the farthest of the
        // fixed literals (`rer` is 3 after `bearer`'s).
        assert_eq!(AnchorScanner::new(&[]).expect("builds").back_max(), 5);
        // Five values, or a value longer than 256 bytes, get their own search.
        let five: Vec<String> = (0..5)
            .map(|index| format!("value-number-{index}"))
            .collect();
        assert!(!AnchorScanner::new(&five).expect("builds").finds_values());
        assert!(
            !AnchorScanner::new(&["x".repeat(300)])
                .expect("builds")
                .finds_values()
        );
    }

    #[test]
    fn windows_avoid_the_other_literals() {
        let taken = vec![b"sk-".to_vec(), b"-BEGIN".to_vec()];
        assert_eq!(window(b"sk-sk-sk-", &taken), Some((1, b"k-s".to_vec())));
        assert_eq!(window(b"-BE-BE-BE", &taken), Some((1, b"BE-".to_vec())));
        assert_eq!(window(b"zzzz", &[b"zzz".to_vec()]), None);
    }

    #[test]
    fn finds_overlapping_anchors_in_any_case_in_order() {
        assert_eq!(hits(b"sk-sk_"), [(0, Anchor::Sk), (3, Anchor::Sk)]);
        assert_eq!(hits(b"x BeArEr y"), [(2, Anchor::Bearer)]);
        assert_eq!(hits(b"bASIC"), [(0, Anchor::Basic)]);
        assert_eq!(hits(b"C:\\USERS\\"), [(6, Anchor::UsersSegment)]);
        assert_eq!(
            hits(b"users/home/ x://"),
            [
                (3, Anchor::UsersSegment),
                (5, Anchor::Home),
                (13, Anchor::SchemeSeparator)
            ]
        );
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
        assert!(hits(b"plain words about charts, risks and users, and/or more").is_empty());
        // A separator literal needs the rest of its word: `users` before `rs/`, `github`
        // before `b_pat_`.
        assert!(hits(b"errs/ hers\\ xb_pat_ gh_ ghx_ Sk_ :/ /hom/").is_empty());
        assert_eq!(hits(b"uSeRs/"), [(3, Anchor::UsersSegment)]);
    }

    /// Every anchor of `text`, read position by position without any search: each word
    /// literal (values' windows included) wherever it occurs, and at each `_`, `\` or `/`
    /// the anchors it ends or starts.
    fn reference_hits(values: &[String], text: &[u8]) -> Vec<(usize, Anchor)> {
        let words = literals(values).expect("values fit");
        let mut found = Vec::new();
        for index in 0..text.len() {
            for (literal, anchor, back) in &words {
                if text[index..].starts_with(literal) && index >= *back {
                    found.push((index - back, *anchor));
                }
            }
            let at = |offset: usize, word: &[u8]| {
                index >= offset && text[index - offset..].starts_with(word)
            };
            match text[index] {
                b'_' if at(2, b"sk") => found.push((index - 2, Anchor::Sk)),
                b'_' if at(3, b"gh") && b"pousr".contains(&text[index - 1]) => {
                    found.push((index - 3, Anchor::GithubShort))
                }
                b'_' if at(6, b"github_pat_") => found.push((index - 6, Anchor::GithubPat)),
                b'/' | b'\\' => {
                    if index >= 5 && text[index - 5..index].eq_ignore_ascii_case(b"users") {
                        found.push((index - 2, Anchor::UsersSegment));
                    }
                    if text[index..].starts_with(b"/home/") {
                        found.push((index, Anchor::Home));
                    }
                    if at(1, b"://") {
                        found.push((index - 1, Anchor::SchemeSeparator));
                    }
                }
                _ => {}
            }
        }
        found
    }

    fn by_position(mut hits: Vec<(usize, Anchor)>) -> Vec<(usize, Anchor)> {
        hits.sort_by_key(|&(position, anchor)| (position, format!("{anchor:?}")));
        hits
    }

    proptest::proptest! {
        /// Both searches together hand on exactly the anchors of the reference, in order of
        /// the candidates' starts, on text made of the anchors' own bytes.
        #[test]
        fn scan_finds_exactly_the_reference_anchors_in_order(
            pieces in proptest::collection::vec(
                proptest::sample::select(vec![
                    "_", "\\", "/", ":", "//", "users", "Users", "USERS", "uSeRs", "rs", "u",
                    "home", "/home/", "github", "_pat_", "b_pat", "gh", "p", "o", "r", "sk",
                    "sk-", "AKIA", "ASIA", "KIA", "xox", "eyJ", "-BEGIN", "bearer", "BeArEr",
                    "basic", "rer", "sic", " ", "a", "0", "://", "home_pat", "sk-users/x",
                ]),
                0..120,
            ),
            with_values in proptest::bool::ANY,
        ) {
            let text = pieces.concat().into_bytes();
            let values: Vec<String> = if with_values {
                vec!["sk-users/x".to_string(), "home_pat".to_string()]
            } else {
                Vec::new()
            };
            let scanner = AnchorScanner::new(&values).expect("builds");
            proptest::prop_assert!(scanner.finds_values() == with_values);
            let mut found = Vec::new();
            scanner.scan(&text, &mut Work::default(), |position, anchor, _| {
                found.push((position, anchor))
            });
            proptest::prop_assert!(found.windows(2).all(|pair| pair[0].0 <= pair[1].0));
            proptest::prop_assert_eq!(by_position(found), by_position(reference_hits(&values, &text)));
        }
    }

    #[test]
    fn values_are_found_at_every_occurrence() {
        let found = hits_with(
            &["prov-3f9a1c7e5b2d8046a1c3"],
            b"a prov-3f9a1c7e5b2d8046a1c3 b prov-",
        );
        assert_eq!(found, [(2, Anchor::Value(0))]);
        let overlapping = hits_with(&["aaaaaaaa"], b"aaaaaaaaaa");
        assert_eq!(overlapping.len(), 8);
    }
}
