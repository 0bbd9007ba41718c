//! P2 with the run's course: a breach rests on the rules the run needed. I6 rests on R20 (the
//! stop) only for a batch a stop touched, so a runtime that claims every rule but R20 is still
//! judged on the runs it completes. The runtime is `ward serve` with a seeded bug, its `ready`
//! rewritten on the way out so that it claims no R20.

mod common;

use common::{folder, last_line, ward};

/// The I6 counts (`violated`, `notClaimed`) of seeds 0..120 against `ward serve --bug bug`,
/// claiming R20 or not.
fn i6_counts(bug: &str, claims_r20: bool) -> (u64, u64) {
    let serve = format!("'{}' serve --bug {bug}", env!("CARGO_BIN_EXE_ward"));
    let command = if claims_r20 {
        serve
    } else {
        format!(r#"{serve} | sed -u 's/"R20",//'"#)
    };
    let out = folder(&format!("{bug}-{claims_r20}"));
    let output = ward(&[
        "run",
        "--runtime",
        &command,
        "--bug",
        bug,
        "--seeds",
        "0..120",
        "--jobs",
        "1",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    let summary = last_line(&String::from_utf8_lossy(&output.stdout));
    let i6 = &summary["byInvariant"]["I6"];
    let count = |field: &str| i6[field].as_u64().unwrap_or(0);
    (count("violated"), count("notClaimed"))
}

#[test]
fn results_out_of_order_in_a_completed_run_break_i6_without_r20() {
    let (claimed, _) = i6_counts("results-completion-order", true);
    let (violated, not_claimed) = i6_counts("results-completion-order", false);
    assert!(claimed > 0, "the bug breaks I6: {claimed}");
    assert!(
        violated > 0,
        "completed runs are judged without R20: {violated}"
    );
    assert!(not_claimed > 0, "stopped runs rest on R20: {not_claimed}");
    assert_eq!(violated + not_claimed, claimed);
}

#[test]
fn a_result_a_cancel_dropped_rests_on_r20() {
    let (claimed, _) = i6_counts("drop-result-on-cancel", true);
    let (violated, not_claimed) = i6_counts("drop-result-on-cancel", false);
    assert!(claimed > 0, "the bug breaks I6: {claimed}");
    assert_eq!(violated, 0, "every breach follows a cancel");
    assert_eq!(not_claimed, claimed);
}
