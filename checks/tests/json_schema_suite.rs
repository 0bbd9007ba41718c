//! R8a: every draft-7 and draft-2020-12 case of the official JSON Schema Test Suite
//! (`corpus/json-schema-test-suite/`, vendored with its licence) through ward's validator.
//!
//! For each group the schema compiles (`ToolSchema::compile_as`, draft 7 for the draft-7
//! files, whose schemas carry no `$schema`), unless it needs a remote document, which must be
//! refused with an error naming it. For each case: no panic, the suite's verdict, and for an
//! invalid input 1–5 errors whose paths resolve in the input and whose messages state a rule
//! taken from the schema (`check_schema_input`; a generic "does not match" fails it). The
//! totals are printed (`cargo test -p ward-checks --test json_schema_suite -- --nocapture`).
//!
//! `optional/format/` is held to ward's own verdict (its messages, paths and order) and
//! counted where that verdict is not the suite's, but not required to agree: whether `format` asserts is
//! optional in both drafts (in 2020-12 it is an annotation unless the format-assertion
//! vocabulary is on), and ward keeps `jsonschema`'s default (assertion in draft 7, annotation
//! in 2020-12; no IDN support, so draft 7's `idn-hostname` and `idn-email` pass anything).
//! Every other case, `optional/` included, must pass.

use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use serde_json::Value;
use ward_checks::check_schema_input;
use ward_core::validation::{Draft, ToolSchema};

/// Where remote documents of the suite live; ward never fetches them.
const REMOTE: &str = "http://localhost:1234/";

fn suite() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/json-schema-test-suite/tests")
}

/// Every `.json` file under `folder`, in name order.
fn files(folder: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut entries: Vec<PathBuf> = fs::read_dir(folder)
        .unwrap_or_else(|error| panic!("{}: {error}", folder.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            found.extend(files(&path));
        } else if path
            .extension()
            .is_some_and(|extension| extension == "json")
        {
            found.push(path);
        }
    }
    found
}

#[derive(Default, Debug)]
struct Totals {
    groups: usize,
    cases: usize,
    agreements: usize,
    invalid_cases: usize,
    panics: usize,
    remote_refusals: usize,
    failures: Vec<String>,
    /// Cases of `optional/format/`, and how many of them disagree.
    format_cases: usize,
    format_disagreements: usize,
}

fn run_draft(folder: &str, draft: Draft, totals: &mut Totals) {
    for path in files(&suite().join(folder)) {
        let name = path
            .strip_prefix(suite())
            .unwrap_or(&path)
            .display()
            .to_string();
        let text = fs::read_to_string(&path).expect("a suite file");
        let groups: Vec<Value> = serde_json::from_str(&text).expect("a suite file is JSON");
        for group in &groups {
            totals.groups += 1;
            let description = group["description"].as_str().unwrap_or("");
            let schema = &group["schema"];
            let schema_text = schema.to_string();
            let compiled = catch_unwind(|| ToolSchema::compile_as(schema, draft));
            let compiled = match compiled {
                Err(_) => {
                    totals.panics += 1;
                    totals
                        .failures
                        .push(format!("{name}: {description}: compile panicked"));
                    continue;
                }
                Ok(Err(error)) => {
                    let names_the_document = error.reason.contains(REMOTE)
                        && error.reason.contains("ward never fetches documents");
                    if schema_text.contains(REMOTE) && names_the_document {
                        totals.remote_refusals += 1;
                    } else {
                        totals
                            .failures
                            .push(format!("{name}: {description}: refused: {error}"));
                    }
                    continue;
                }
                Ok(Ok(compiled)) => compiled,
            };
            let format_only = name.contains("optional/format/");
            for case in group["tests"].as_array().into_iter().flatten() {
                let label = format!(
                    "{name}: {description}: {}",
                    case["description"].as_str().unwrap_or("")
                );
                let data = &case["data"];
                let valid = case["valid"].as_bool().expect("a verdict");
                // A format case is held to ward's own verdict (messages, paths, order) and
                // only counted when that verdict is not the suite's.
                let expected = if format_only {
                    totals.format_cases += 1;
                    let verdict = catch_unwind(AssertUnwindSafe(|| compiled.is_valid(data)));
                    let Ok(verdict) = verdict else {
                        totals.panics += 1;
                        totals.failures.push(format!("{label}: panicked"));
                        continue;
                    };
                    totals.format_disagreements += usize::from(verdict != valid);
                    verdict
                } else {
                    totals.cases += 1;
                    totals.invalid_cases += usize::from(!valid);
                    valid
                };
                let outcome = catch_unwind(AssertUnwindSafe(|| {
                    check_schema_input(description, &schema_text, &compiled, data, expected)
                }));
                match outcome {
                    Ok(Ok(())) => totals.agreements += usize::from(!format_only),
                    Ok(Err(failure)) => totals.failures.push(format!("{label}: {failure}")),
                    Err(_) => {
                        totals.panics += 1;
                        totals.failures.push(format!("{label}: panicked"));
                    }
                }
            }
        }
    }
}

#[test]
fn every_case_of_the_json_schema_test_suite() {
    let mut totals = Totals::default();
    run_draft("draft7", Draft::Draft7, &mut totals);
    run_draft("draft2020-12", Draft::Draft202012, &mut totals);
    println!(
        "JSON Schema Test Suite: {} groups, {} cases ({} invalid), {} agree, {} panics, \
         {} groups refused for a remote document, {} failures; optional/format: {} cases, \
         {} expect a format assertion ward does not make",
        totals.groups,
        totals.cases,
        totals.invalid_cases,
        totals.agreements,
        totals.panics,
        totals.remote_refusals,
        totals.failures.len(),
        totals.format_cases,
        totals.format_disagreements,
    );
    assert!(totals.cases > 2000, "the suite is missing: {totals:?}");
    assert!(
        totals.failures.is_empty(),
        "{} failures:\n{}",
        totals.failures.len(),
        totals.failures.join("\n")
    );
}
