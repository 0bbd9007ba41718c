//! The crash drill outside the simulator (SPEC §16): a real process commits to a real redb
//! file and is killed with `SIGKILL` at random instants, many times; after each kill the
//! store is reopened and checked, and a new process goes on from what it holds.
//!
//! The child commits record `n` and the chart whose `next_id` is `n + 1` in one transaction
//! (`commit_records`, R31), then prints `ack n`. After a kill the journal must hold every
//! acknowledged record and at most one more (the commit the kill cut may have reached the
//! file whole: a killed process loses nothing it handed to the operating system): nothing
//! acknowledged is lost (I16); each record is the one written at its place, once (I15: no
//! write applied twice); and the chart is the one committed with the last record, never an
//! earlier or a later one (R31). A kill keeps what the process handed to the kernel, so the
//! drill shows recovery from a commit cut part way, not from a power loss: that is the
//! simulated disk's (`sim/tests/durable_store.rs`).
//!
//! This test runs itself as the child: with `WARD_CRASH_DRILL_STORE` set, the test
//! `drill_child` commits until it is killed; without it, it returns at once.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use ward_core::chart::SharedChart;
use ward_core::durable::{DurableStore, Record};
use ward_core::session::Message;
use ward_sim::rng::SimRng;

const STORE_VARIABLE: &str = "WARD_CRASH_DRILL_STORE";
const SESSION: &str = "drill";
/// Kills in one drill.
const KILLS: usize = 40;

fn record(number: usize) -> Record {
    Record::Message {
        message: Arc::new(Message::User {
            text: format!("drill record {number}"),
        }),
    }
}

#[test]
fn drill_child() {
    let Some(path) = std::env::var_os(STORE_VARIABLE) else {
        return;
    };
    let mut store = DurableStore::open(Path::new(&path)).expect("the store opens");
    let mut next = store.records(SESSION).expect("the journal reads").len();
    let mut chart = SharedChart::new(0).snapshot();
    loop {
        chart.next_id = next as u64 + 1;
        store
            .commit_records(SESSION, &[record(next)], Some(&chart))
            .expect("the commit");
        println!("ack {next}");
        next += 1;
    }
}

/// Checks the store after a kill; returns how many records it holds.
fn check(path: &Path, acknowledged: Option<usize>, kill: usize) -> usize {
    let store = DurableStore::open(path)
        .unwrap_or_else(|error| panic!("kill {kill}: reopening refused: {error}"));
    let records = store
        .records(SESSION)
        .unwrap_or_else(|error| panic!("kill {kill}: {error}"));
    for (number, found) in records.iter().enumerate() {
        assert_eq!(*found, record(number), "kill {kill}: record {number}");
    }
    let least = acknowledged.map_or(0, |last| last + 1);
    assert!(
        (least..=least + 1).contains(&records.len()),
        "kill {kill}: {} records after {acknowledged:?} was acknowledged",
        records.len()
    );
    let chart = store
        .chart(SESSION)
        .unwrap_or_else(|error| panic!("kill {kill}: {error}"));
    let chart_id = chart.map_or(0, |chart| chart.next_id);
    assert_eq!(
        chart_id,
        records.len() as u64,
        "kill {kill}: the chart is not the one committed with the last record"
    );
    records.len()
}

#[test]
fn a_store_killed_at_random_instants_keeps_every_acknowledged_commit() {
    if std::env::var_os(STORE_VARIABLE).is_some() {
        return;
    }
    let directory: PathBuf =
        std::env::temp_dir().join(format!("ward-crash-drill-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let path = directory.join("drill.redb");
    let _ = std::fs::remove_file(&path);
    let mut rng = SimRng::new(29);
    let mut held = 0;
    let mut unacknowledged_kept = 0;
    for kill in 0..KILLS {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "drill_child", "--nocapture", "--test-threads=1"])
            .env(STORE_VARIABLE, &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the child starts");
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        // Kill after a number of acknowledgements the seed picks, and a moment more.
        let wait_for = rng.below(12) as usize;
        let mut acknowledged = None;
        let mut seen = 0;
        while seen < wait_for {
            let Some(Ok(line)) = lines.next() else { break };
            if let Some(number) = line.strip_prefix("ack ") {
                acknowledged = Some(number.parse::<usize>().unwrap());
                seen += 1;
            }
        }
        std::thread::sleep(Duration::from_micros(rng.below(3000)));
        child.kill().expect("SIGKILL");
        // Acknowledgements printed before the kill count too.
        for line in lines.map_while(Result::ok) {
            if let Some(number) = line.strip_prefix("ack ") {
                acknowledged = Some(number.parse::<usize>().unwrap());
            }
        }
        child.wait().unwrap();
        if let Some(last) = acknowledged {
            assert!(
                last + 1 >= held,
                "kill {kill}: acknowledged {last} below {held}"
            );
        }
        let floor = acknowledged.or(held.checked_sub(1));
        held = check(&path, floor, kill);
        unacknowledged_kept += usize::from(held > floor.map_or(0, |last| last + 1));
    }
    eprintln!(
        "{KILLS} kills, {held} records committed, {unacknowledged_kept} kills kept the commit \
         they cut"
    );
    assert!(held > KILLS, "only {held} records over {KILLS} kills");
    std::fs::remove_dir_all(&directory).unwrap();
}
