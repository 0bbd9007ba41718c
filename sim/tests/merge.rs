//! `ward merge`: the shards of a range, run as separate `ward` processes as on separate
//! machines, merge to the summary of the whole range; anything that is not every shard of one
//! campaign is refused with exit 2 and a message naming the file.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};

use common::{folder, merge, repository, spawn_ward, stderr, ward};
use serde_json::Value;
use ward_sim::summary::{SeedRange, Shard, Summary};

fn start(arguments: &[&str]) -> Child {
    spawn_ward(arguments, Stdio::null())
}

fn finish(child: Child) -> Output {
    child.wait_with_output().unwrap()
}

/// The summary: the last line of standard output.
fn summary(output: &Output) -> Value {
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|error| panic!("{error}: {}", stderr(output)))
}

/// Starts `ward run --json` over `seeds` for every shard of `shards` at once (and with `extra`
/// arguments), each as its own process; writes each one's standard output to
/// `folder/shard-K.json` and returns the files, in shard order.
fn run_shards(folder: &Path, seeds: &str, shards: u64, extra: &[&str]) -> Vec<PathBuf> {
    let children: Vec<(PathBuf, Child)> = (1..=shards)
        .map(|shard| {
            let out = folder.join(format!("failures-{shard}"));
            let shard_text = format!("{shard}/{shards}");
            let mut arguments = vec!["run", "--seeds", seeds, "--shard", &shard_text, "--json"];
            arguments.extend(["--jobs", "1", "--out", out.to_str().unwrap()]);
            arguments.extend(extra);
            (
                folder.join(format!("shard-{shard}.json")),
                start(&arguments),
            )
        })
        .collect();
    children
        .into_iter()
        .map(|(file, child)| {
            let output = finish(child);
            assert!(
                matches!(output.status.code(), Some(0 | 1)),
                "{}",
                stderr(&output)
            );
            std::fs::write(&file, &output.stdout).unwrap();
            file
        })
        .collect()
}

/// The fields that must not depend on how a range was split.
const WHOLE_FIELDS: [&str; 13] = [
    "wardVersion",
    "seedRange",
    "shard",
    "bug",
    "rerunEvery",
    "seeds",
    "runs",
    "toolCalls",
    "turns",
    "violations",
    "byInvariant",
    "misbehaviours",
    "traceDigest",
];

#[test]
fn shards_run_as_separate_processes_merge_to_the_whole_run() {
    let folder = folder("whole");
    let whole_run = start(&["run", "--seeds", "0..240", "--json"]);
    let files = run_shards(&folder, "0..240", 3, &[]);
    let whole_output = finish(whole_run);
    assert_eq!(
        whole_output.status.code(),
        Some(0),
        "{}",
        stderr(&whole_output)
    );
    let whole = summary(&whole_output);
    assert_eq!(whole["shard"], serde_json::json!({"index": 1, "count": 1}));
    assert_eq!(
        whole["seedRange"],
        serde_json::json!({"start": 0, "end": 240})
    );
    assert_eq!(whole["bug"], Value::Null);

    let shards: Vec<Value> = files
        .iter()
        .map(|file| {
            let text = std::fs::read_to_string(file).unwrap();
            serde_json::from_str(text.lines().last().unwrap()).unwrap()
        })
        .collect();
    for (index, shard) in shards.iter().enumerate() {
        assert_eq!(shard["shard"]["index"], index + 1);
        assert_eq!(shard["shard"]["count"], 3);
        assert_eq!(shard["seeds"], 80);
        assert_ne!(shard["traceDigest"], whole["traceDigest"]);
    }

    let output = merge(&files);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let merged = summary(&output);
    for field in WHOLE_FIELDS {
        assert_eq!(merged[field], whole[field], "{field}");
    }
    assert_eq!(merged["firstFailure"], Value::Null);
    let longest = shards
        .iter()
        .map(|shard| shard["elapsedMs"].as_u64().unwrap())
        .max();
    assert_eq!(merged["elapsedMs"].as_u64(), longest);
    assert_runs_per_sec_of_the_longest_shard(&merged);
    let table = stderr(&output);
    assert!(table.contains("3 shards side by side"), "{table}");
    assert!(table.contains("all invariants held"), "{table}");
    let digest = whole["traceDigest"].as_str().unwrap();
    assert!(
        table.contains(&format!("trace digest: {digest}")),
        "{table}"
    );

    // The whole run is shard 1 of 1: merged alone, it is itself.
    let whole_file = folder.join("whole.json");
    std::fs::write(&whole_file, &whole_output.stdout).unwrap();
    let alone = summary(&merge(&[whole_file]));
    for field in WHOLE_FIELDS {
        assert_eq!(alone[field], whole[field], "{field}");
    }
    std::fs::remove_dir_all(&folder).unwrap();
}

#[test]
fn with_a_bug_the_merged_first_failure_is_the_lowest_failing_seed_and_replays() {
    // Over 0..120, error-limit-six breaks I4 at seeds 2 (shard 3), 6 (shard 1), 70 (shard 2)
    // and more: the lowest failing seed is not the first file's first failure.
    let folder = folder("bug");
    let bug = ["--bug", "error-limit-six"];
    let whole_out = folder.join("failures-whole");
    let mut arguments = vec!["run", "--seeds", "0..120", "--json", "--jobs", "1"];
    arguments.extend(["--out", whole_out.to_str().unwrap()]);
    arguments.extend(bug);
    let whole_run = start(&arguments);
    let files = run_shards(&folder, "0..120", 3, &bug);
    let whole = summary(&finish(whole_run));

    let failures: Vec<Option<u64>> = files
        .iter()
        .map(|file| {
            let text = std::fs::read_to_string(file).unwrap();
            let shard: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
            shard["firstFailure"]["seed"].as_u64()
        })
        .collect();
    let lowest = failures.iter().flatten().min().copied().unwrap();
    assert!(
        failures.iter().flatten().count() >= 2 && failures[0] != Some(lowest),
        "the test needs failures in two shards, the lowest not in the first: {failures:?}"
    );

    let output = merge(&files);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let merged = summary(&output);
    assert_eq!(merged["firstFailure"]["seed"], lowest);
    // The whole failure but its replay command: the run's names its shrunk file, the merge's
    // the seed.
    let without_replay = |summary: &Value| {
        let mut failure = summary["firstFailure"].clone();
        failure.as_object_mut().unwrap().remove("replay");
        failure
    };
    assert_eq!(without_replay(&merged), without_replay(&whole));
    assert_eq!(merged["firstFailure"]["invariant"], "I4");
    assert_runs_per_sec_of_the_longest_shard(&merged);
    for field in WHOLE_FIELDS {
        assert_eq!(merged[field], whole[field], "{field}");
    }

    let replay = merged["firstFailure"]["replay"].as_str().unwrap();
    assert_eq!(
        replay,
        format!("ward replay {lowest} --bug error-limit-six")
    );
    let text = stderr(&output);
    assert!(text.contains(&format!("replay: {replay}")), "{text}");
    let arguments: Vec<&str> = replay.split(' ').skip(1).collect();
    let replayed = ward(&arguments);
    assert_eq!(replayed.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&replayed.stdout).contains("violated: I4"));
    std::fs::remove_dir_all(&folder).unwrap();
}

/// `runsPerSec` is the whole campaign's runs over the merged (longest) `elapsedMs`.
fn assert_runs_per_sec_of_the_longest_shard(merged: &Value) {
    let runs = merged["runs"].as_u64().unwrap();
    let elapsed = merged["elapsedMs"].as_u64().unwrap();
    assert_eq!(
        merged["runsPerSec"].as_f64(),
        Some(ward_sim::summary::runs_per_sec(runs, elapsed))
    );
}

/// Runs `ward merge FILES` and checks that it exits 2 with a message holding every one of
/// `words`.
fn refused(files: &[&Path], words: &[&str]) -> String {
    let mut arguments = vec!["merge"];
    arguments.extend(files.iter().map(|file| file.to_str().unwrap()));
    let output = ward(&arguments);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{files:?}: {message}");
    assert!(output.stdout.is_empty());
    for word in words {
        assert!(message.contains(word), "{word:?} not in {message}");
    }
    message
}

/// Writes `summary` (a shard's, changed by `change`) to `folder/name`.
fn changed(folder: &Path, name: &str, summary: &Path, change: impl Fn(&mut Value)) -> PathBuf {
    let text = std::fs::read_to_string(summary).unwrap();
    let mut value: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    change(&mut value);
    let file = folder.join(name);
    std::fs::write(&file, value.to_string()).unwrap();
    file
}

#[test]
fn merge_refuses_shards_of_different_campaigns_and_missing_or_repeated_shards() {
    let folder = folder("refusals");
    let shards = run_shards(&folder, "0..40", 2, &[]);
    let (one, two) = (shards[0].as_path(), shards[1].as_path());
    let other = folder.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let wider = run_shards(&other, "0..50", 2, &[]);
    let thirds = folder.join("thirds");
    std::fs::create_dir_all(&thirds).unwrap();
    let thirds = run_shards(&thirds, "0..40", 3, &[]);

    let path = |file: &Path| file.to_str().unwrap().to_owned();
    refused(
        &[one, &wider[1]],
        &[&path(&wider[1]), &path(one), "seeds 0..50 against 0..40"],
    );
    refused(&[one, &thirds[1]], &[&path(&thirds[1]), "shard 2/3"]);
    let buggy = changed(&folder, "buggy.json", two, |summary| {
        summary["bug"] = "sequential-ignored".into();
    });
    refused(&[one, &buggy], &[&path(&buggy), "bug sequential-ignored"]);
    let newer = changed(&folder, "newer.json", two, |summary| {
        summary["wardVersion"] = "99.0.0".into();
    });
    refused(&[one, &newer], &[&path(&newer), "99.0.0"]);
    let rerun = changed(&folder, "rerun.json", two, |summary| {
        summary["rerunEvery"] = 7.into();
    });
    refused(&[one, &rerun], &[&path(&rerun), "rerun every 7"]);

    refused(&[two], &["missing: 1/2 (given: ", &path(two)]);
    refused(&[&thirds[1]], &["missing: 1/3, 3/3"]);
    let copy = folder.join("copy-of-one.json");
    std::fs::copy(one, &copy).unwrap();
    refused(
        &[one, two, &copy],
        &[&path(&copy), &path(one), "shard 1/2 again"],
    );
    refused(&[one, two, two], &[&format!("{}: given twice", path(two))]);
    std::fs::remove_dir_all(&folder).unwrap();
}

#[test]
fn merge_refuses_a_file_that_is_not_a_summary_naming_where() {
    let folder = folder("not-summaries");
    let shards = run_shards(&folder, "0..20", 1, &[]);
    let good = shards[0].as_path();
    let write = |name: &str, text: &str| {
        let file = folder.join(name);
        std::fs::write(&file, text).unwrap();
        file
    };

    let broken = write("broken.json", "ward: progress\n{\"seeds\": 1,\n");
    refused(
        &[good, &broken],
        &[broken.to_str().unwrap(), "line 2 column", "JSON"],
    );
    let pretty = write("pretty.json", "{\n  \"seeds\": 1,\n  \"runs\": ]\n}\n");
    refused(&[&pretty], &["pretty.json", "line 3 column"]);
    let empty = write("empty.json", "\n\n");
    refused(&[&empty], &["empty.json", "empty"]);
    let missing = folder.join("no-such-file.json");
    refused(&[good, &missing], &["no-such-file.json", "cannot read"]);
    let scenario = repository()
        .join("corpus/scenarios")
        .read_dir()
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| {
            path.extension()
                .is_some_and(|extension| extension == "json")
        })
        .unwrap();
    refused(
        &[&scenario],
        &[scenario.to_str().unwrap(), "not a ward summary"],
    );

    let typed = changed(&folder, "typed.json", good, |summary| {
        summary["runs"] = "many".into();
    });
    refused(&[&typed], &["typed.json", "at /runs"]);
    let unknown = changed(&folder, "unknown.json", good, |summary| {
        summary["byInvariant"]["I3"]["armd"] = 1.into();
    });
    refused(&[&unknown], &["unknown.json", "at /byInvariant/I3", "armd"]);
    let short = changed(&folder, "short.json", good, |summary| {
        summary["seeds"] = 19.into();
    });
    refused(&[&short], &["short.json", "at /seeds", "has 20"]);
    let no_such_shard = changed(&folder, "shard.json", good, |summary| {
        summary["shard"] = serde_json::json!({"index": 3, "count": 2});
    });
    refused(&[&no_such_shard], &["shard.json", "at /shard"]);
    let stray = changed(&folder, "stray.json", good, |summary| {
        summary["byInvariant"]["I2"]["firstSeed"] = 20.into();
    });
    refused(&[&stray], &["stray.json", "/byInvariant/I2/firstSeed"]);
    std::fs::remove_dir_all(&folder).unwrap();
}

#[test]
fn a_shard_holds_the_seeds_its_arithmetic_says() {
    for count in 1..=5 {
        for index in 1..=count {
            let shard = Shard { index, count };
            for start in 0..12 {
                for end in start + 1..=24 {
                    let expected = (start..end).filter(|&seed| shard.holds(seed)).count() as u64;
                    assert_eq!(shard.seeds_in(SeedRange { start, end }), expected);
                }
            }
        }
    }
    let top = SeedRange {
        start: u64::MAX - 10,
        end: u64::MAX,
    };
    let shards: u64 = (1..=4)
        .map(|index| Shard { index, count: 4 }.seeds_in(top))
        .sum();
    assert_eq!(shards, 10);
}

#[test]
fn a_summary_is_read_from_the_last_line_of_a_run_s_output() {
    let text = "some line before\n{\"not\": \"this\"}\n";
    let error = Summary::parse(text, "x.json").unwrap_err().to_string();
    assert!(
        error.starts_with("x.json: not a ward summary: at /"),
        "{error}"
    );
    let error = Summary::parse("[1, 2]\n", "y.json")
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("y.json: not a ward summary: at /: "),
        "{error}"
    );
}
