//! The table `ward run` and `ward merge` print on standard error, and their exit status.

use std::process::ExitCode;

use crate::oracle::Invariant;
use crate::summary::{CrashSummary, Summary};

/// Prints a campaign's table (`how` says how it ran), then its summary as one JSON line with
/// `json`; the exit status: 1 when a seed failed, else 0 (SPEC §12, for `run` and `merge`).
pub fn report_summary(summary: &Summary, how: &str, json: bool) -> ExitCode {
    print_summary(summary, how);
    if json {
        say!("{}", summary.to_json_line());
    }
    if summary.violations > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// A rate as a person reads it: whole from ten up, with tenths below (a real runtime behind
/// an adapter may run less than one run a second, which `0` would hide).
fn rate(per_sec: f64) -> String {
    if per_sec < 10.0 {
        format!("{per_sec:.1}")
    } else {
        format!("{per_sec:.0}")
    }
}

/// Prints a summary as the table `ward run` and `ward merge` show on standard error; `how`
/// closes the first line (`2 jobs`, `4 shards side by side`). A row per entry of
/// `byInvariant`: the protocol (P6), I1–I14, and I15–I19 when crashes ran (armed and violated
/// counting plans there, not runs).
pub fn print_summary(summary: &Summary, how: &str) {
    tell!(
        "ward: {} seeds, {} runs, {} tool calls, {} provider turns in {:.1} s ({} runs/s, {how})",
        summary.seeds,
        summary.runs,
        summary.tool_calls,
        summary.turns,
        summary.elapsed_ms as f64 / 1000.0,
        rate(summary.runs_per_sec)
    );
    if let Some(runtime) = &summary.runtime {
        tell!(
            "runtime: {} {} (adapter `{}`), claiming {} rules",
            runtime.name,
            runtime.version,
            runtime.command,
            runtime.claims.len()
        );
    }
    if let Some(crashes) = &summary.crashes {
        print_crashes(crashes);
    }
    tell!("{:9} {:>10} {:>9}", "invariant", "armed", "violated");
    for invariant in Invariant::ALL {
        if let Some(counts) = summary.by_invariant.get(invariant.id()) {
            print_row(summary, invariant, counts);
        }
    }
    let exact = summary.exact;
    let share = |part: u64, whole: u64| 100.0 * part as f64 / whole.max(1) as f64;
    tell!(
        "exact: the runtime matched {} of {} input error lists ({:.1}%; {} predicted) and {} of {} guarded records ({:.1}%; {} predicted)",
        exact.input_errors_matched,
        exact.input_errors,
        share(exact.input_errors_matched, exact.input_errors),
        exact.input_errors_predicted,
        exact.guarded_records_matched,
        exact.guarded_records,
        share(exact.guarded_records_matched, exact.guarded_records),
        exact.guarded_records_predicted
    );
    tell!("trace digest: {:016x}", summary.trace_digest);
    if let Some(crashes) = &summary.crashes {
        tell!("crash digest: {:016x}", crashes.digest);
    }
    if summary.violations == 0 {
        tell!("all invariants held");
    } else {
        tell!("{} seeds violated an invariant", summary.violations);
    }
}

/// One row of the table.
fn print_row(summary: &Summary, invariant: Invariant, counts: &crate::summary::InvariantCounts) {
    let (whole, unit) = match (&summary.crashes, invariant.is_durable()) {
        (Some(crashes), true) => (crashes.plans, "plans"),
        _ => (summary.runs, "runs"),
    };
    let share = 100.0 * counts.armed as f64 / whole.max(1) as f64;
    let id = invariant.id();
    if !counts.claimed {
        tell!(
            "{id:9} {:>10} {:>9}   not claimed: {} {unit} broke it (rests on {})",
            counts.armed,
            "-",
            counts.not_claimed,
            invariant.rules().join(", ")
        );
        return;
    }
    let what = if invariant == Invariant::P6 {
        " (the protocol)"
    } else {
        ""
    };
    tell!(
        "{id:9} {:>10} {:>9}   ({share:.1}% of {unit} armed){what}",
        counts.armed,
        counts.violated
    );
}

/// The crash explorer's counts (`--crashes`).
fn print_crashes(crashes: &CrashSummary) {
    let kinds: Vec<String> = (crashes.crashes.iter())
        .filter(|(_, count)| **count > 0)
        .map(|(kind, count)| format!("{count} {kind}"))
        .collect();
    tell!(
        "crashes: {} plans, {} processes; {} planned, of which {}; {} OUTCOME_UNKNOWN results",
        crashes.plans,
        crashes.processes,
        crashes.planned,
        kinds.join(", "),
        crashes.outcome_unknown
    );
    if !crashes.profile.is_empty() {
        tell!("durability profile (crash point: what recovery did):");
    }
    for (point, recoveries) in &crashes.profile {
        let said: Vec<String> = (recoveries.iter())
            .map(|(recovery, count)| format!("{recovery} {count}"))
            .collect();
        tell!("  {point}: {}", said.join(", "));
    }
}

#[cfg(test)]
mod tests {
    use super::rate;

    #[test]
    fn a_rate_below_ten_keeps_its_tenths() {
        assert_eq!(rate(0.46), "0.5");
        assert_eq!(rate(9.94), "9.9");
        assert_eq!(rate(10.0), "10");
        assert_eq!(rate(2794.4), "2794");
    }
}
