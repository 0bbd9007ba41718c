//! The fragment scanner (`ward-fragments`) beside its plain reference version and beside the
//! obvious library alternative, an Aho-Corasick automaton over every 8-byte window of the
//! needles, in one run: clean prose (1 KiB, 64 KiB), a 256 KiB oversized argument, and 64 KiB
//! of prose with a fragment planted every ~1 KiB. Three needles of 21–29 characters,
//! threshold 8, as a run with two or three configured secrets has. Every search returns the
//! merged spans; the three agree on these (ASCII) inputs, which is checked before measuring.
//! On clean inputs, finding the first fragment (what the guard asks of most text) is also
//! measured beside the automaton's `is_match`.
//!
//! Building is its own group: a scanner is built per agent run (the guard and the I8 oracle
//! each build one), so its construction counts as much as a short search.
//!
//! ```text
//! cargo bench -p ward-benches --bench fragments -- --warm-up-time 1 --measurement-time 3
//! ```

use std::collections::BTreeSet;
use std::hint::black_box;

use aho_corasick::AhoCorasick;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ward_benches::{SECRETS, prose};
use ward_fragments::{Fragments, reference};

/// The needles: the two secrets of the redaction benches and a third, each counting from 8
/// characters.
const NEEDLES: [(&str, usize); 3] = [
    (SECRETS[0], WINDOW_CHARS),
    (SECRETS[1], WINDOW_CHARS),
    ("sk-ant-api03-Qx7vT2mLp9ZrW4kB", WINDOW_CHARS),
];

/// The characters of the shortest fragment that counts.
const WINDOW_CHARS: usize = 8;

/// The size of the oversized argument: R3's limit.
const ARGUMENT_BYTES: usize = 256 << 10;

/// criterion's default number of samples, kept for all but the reference on large inputs.
const SAMPLES: usize = 100;

/// The distance between two planted fragments.
const PLANTED_SPACING: usize = 1 << 10;

/// The alternative: every 8-byte window of the needles in one automaton, searched with
/// overlapping matches, the matched windows merged into spans. On ASCII text this finds what
/// the scanner finds (a run of 8 or more bytes is the union of its 8-byte windows).
struct Windows {
    automaton: AhoCorasick,
}

impl Windows {
    fn new() -> Windows {
        let windows: BTreeSet<&[u8]> = NEEDLES
            .iter()
            .flat_map(|(needle, _)| needle.as_bytes().windows(WINDOW_CHARS))
            .collect();
        Windows {
            automaton: AhoCorasick::new(windows).expect("the windows make an automaton"),
        }
    }

    fn spans(&self, text: &[u8]) -> Vec<(usize, usize)> {
        merge(
            self.automaton
                .find_overlapping_iter(text)
                .map(|found| (found.start(), found.end()))
                .collect(),
        )
    }
}

/// The reference version's runs, merged as [`Fragments::spans`] merges them.
fn reference_spans(text: &[u8]) -> Vec<(usize, usize)> {
    merge(
        reference::runs(NEEDLES, text)
            .into_iter()
            .map(|run| (run.start, run.end))
            .collect(),
    )
}

/// `spans` sorted, with overlapping or touching spans joined.
fn merge(mut spans: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
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

/// A tiny fixed generator (SplitMix64), so the input never changes with a dependency.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A 256 KiB argument a model might send: a table of dates, prices and volumes, all digits
/// and punctuation (which the needles' digits make the scanner's table hit often).
fn oversized_argument() -> String {
    let mut state = 0x0A26_u64;
    let mut text = String::from(r#"{"symbol":"600519","rows":["#);
    while text.len() < ARGUMENT_BYTES {
        let day = next(&mut state) % 28 + 1;
        let price = next(&mut state) % 200_000;
        let volume = next(&mut state) % 10_000_000;
        text.push_str(&format!(
            r#"["2025-06-{day:02}",{}.{:02},{volume}],"#,
            price / 100,
            price % 100
        ));
    }
    text.truncate(ARGUMENT_BYTES - 3);
    text.push_str("]}\n");
    text
}

/// 64 KiB of prose with a 12-character fragment of a needle every ~1 KiB.
fn planted() -> String {
    let prose = prose(64 << 10);
    let mut text = String::with_capacity(prose.len() + prose.len() / 64);
    for (index, chunk) in prose.as_bytes().chunks(PLANTED_SPACING).enumerate() {
        // The prose is ASCII, so any chunk is text.
        text.push_str(std::str::from_utf8(chunk).expect("ASCII prose"));
        let needle = NEEDLES[index % NEEDLES.len()].0;
        let from = (index * 5) % (needle.len() - 12);
        text.push(' ');
        text.push_str(&needle[from..from + 12]);
        text.push(' ');
    }
    text
}

fn search(criterion: &mut Criterion) {
    let fragments = Fragments::new(NEEDLES);
    let windows = Windows::new();
    let inputs = [
        ("clean-prose", "1KiB", prose(1 << 10)),
        ("clean-prose", "64KiB", prose(64 << 10)),
        ("argument", "256KiB", oversized_argument()),
        ("planted", "64KiB", planted()),
    ];
    for (group_name, label, text) in &inputs {
        let text = text.as_bytes();
        let spans = fragments.spans(text);
        assert_eq!(spans, reference_spans(text), "{group_name} {label}");
        assert_eq!(spans, windows.spans(text), "{group_name} {label}");
        if *group_name == "planted" {
            assert_eq!(spans.len(), (64 << 10) / PLANTED_SPACING);
        }
        let mut group = criterion.benchmark_group(format!("fragments/{group_name}"));
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(BenchmarkId::new("fast", label), text, |bencher, text| {
            bencher.iter(|| fragments.spans(black_box(text)).len())
        });
        // The reference takes tens of milliseconds on the large inputs: fewer samples.
        if text.len() >= 64 << 10 {
            group.sample_size(10);
        }
        group.bench_with_input(
            BenchmarkId::new("reference", label),
            text,
            |bencher, text| bencher.iter(|| reference_spans(black_box(text)).len()),
        );
        group.sample_size(SAMPLES);
        group.bench_with_input(
            BenchmarkId::new("aho-corasick", label),
            text,
            |bencher, text| bencher.iter(|| windows.spans(black_box(text)).len()),
        );
        // On clean text the guard only asks whether there is any fragment: the first run
        // beside the automaton's first window (a plain, non-overlapping search).
        if spans.is_empty() {
            group.bench_with_input(
                BenchmarkId::new("fast-find", label),
                text,
                |bencher, text| bencher.iter(|| fragments.find(black_box(text)).is_some()),
            );
            group.bench_with_input(
                BenchmarkId::new("aho-corasick-find", label),
                text,
                |bencher, text| bencher.iter(|| windows.automaton.is_match(black_box(text))),
            );
        }
        group.finish();
    }
}

fn build(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("fragments/build");
    group.bench_function("fast", |bencher| {
        bencher.iter(|| Fragments::new(black_box(NEEDLES)))
    });
    group.bench_function("aho-corasick", |bencher| bencher.iter(Windows::new));
    group.finish();
}

criterion_group!(benches, build, search);
criterion_main!(benches);
