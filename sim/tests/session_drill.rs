//! The session drill outside the simulator (SPEC §16): a real process runs whole durable
//! sessions of ward's core on a real redb file and is killed with `SIGKILL` at random
//! instants, many times; each time a new process reopens the file and resumes the cut run,
//! until the session's runs have ended. Then I15–I19 are checked on what the processes did,
//! with the crash explorer's checks, against the same plan run without crashes on the
//! simulated disk: the chart and every result are those of the session without crashes (I15,
//! I17; `OUTCOME_UNKNOWN` exactly where an intent was cut), no `code_interpreter` body started
//! twice (I15), every process recovered every record acknowledged before it (I16), and the
//! file, after every kill and at the end, holds no 8 characters of a secret (I18), and the
//! journal is the one of the session without crashes (I19).
//!
//! The child is this test binary itself: with `WARD_SESSION_DRILL` set to `FILE:SEED`, the
//! test `drill_child` opens `FILE`, prints `recovered [...]`, each body start, each request
//! and each acknowledged record (`ack {...}`) as it happens, and `journal`, `chart` and
//! `done` at the end; without it, it returns at once.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use ward_core::chart::{ChartState, SharedChart};
use ward_core::driver::Session;
use ward_core::durable::DurableStore;
use ward_core::fault::FaultSet;
use ward_core::session::{Record, SessionStore, StoreError};
use ward_sim::crash::{
    Acknowledging, BodyStart, Ended, Execution, Observations, Process, Request, SESSION, catalogue,
    explore_once, generate, go_on,
};
use ward_sim::oracle::durable;
use ward_sim::rng::SimRng;

const DRILL_VARIABLE: &str = "WARD_SESSION_DRILL";

/// Plans drilled, and the kills at most per plan.
const PLANS: u64 = 12;
const KILLS_PER_PLAN_MAX: usize = 8;

/// A file store that prints each acknowledged record as soon as its commit returns.
struct Printing {
    store: DurableStore,
}

impl SessionStore for Printing {
    fn journal(&self, session_id: &str) -> Result<Vec<Record>, StoreError> {
        self.store.journal(session_id)
    }

    fn commit(
        &mut self,
        session_id: &str,
        records: &[Record],
        chart: Option<&Arc<ChartState>>,
    ) -> Result<(), StoreError> {
        self.store.commit(session_id, records, chart)?;
        let mut out = std::io::stdout().lock();
        for record in records {
            let _ = writeln!(out, "ack {}", serde_json::to_string(record).unwrap());
        }
        let _ = out.flush();
        Ok(())
    }

    fn chart(&self, session_id: &str) -> Result<Option<ChartState>, StoreError> {
        SessionStore::chart(&self.store, session_id)
    }
}

impl Acknowledging for Printing {
    fn take_acknowledged(&mut self) -> Vec<Record> {
        Vec::new()
    }
}

#[test]
fn drill_child() {
    let Some(drill) = std::env::var_os(DRILL_VARIABLE) else {
        return;
    };
    let drill = drill.to_string_lossy().into_owned();
    let (path, seed) = drill.rsplit_once(':').expect("FILE:SEED");
    let plan = generate(seed.parse().expect("a seed"));
    let store = DurableStore::open(Path::new(path)).expect("the store opens");
    let recovered = store.records(SESSION).expect("the journal reads");
    // A line of its own: the test harness has printed `test drill_child ... ` before it.
    println!();
    println!("recovered {}", serde_json::to_string(&recovered).unwrap());
    let observations = Arc::new(Observations::echoed());
    let registry = catalogue(&observations);
    let mut session = Session::open(SESSION, registry, SharedChart::new(0), Printing { store })
        .expect("the chart reads");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let ended = go_on(
        &plan,
        FaultSet::EMPTY,
        &observations,
        &runtime,
        &mut session,
        &mut Vec::new(),
        // A real file has no failure planned: every store failure is a finding.
        &|| false,
    );
    assert!(
        matches!(ended, Ended::Done),
        "the session went on to its end"
    );
    let journal = session.store().journal(SESSION).unwrap();
    println!("journal {}", serde_json::to_string(&journal).unwrap());
    println!(
        "chart {}",
        serde_json::to_string(&session.chart().snapshot()).unwrap()
    );
    println!("done");
}

/// What one child process printed before it ended or was killed.
#[derive(Default)]
struct Printed {
    process: Process,
    starts: Vec<BodyStart>,
    requests: Vec<Request>,
    journal: Option<Vec<Record>>,
    chart: Option<ChartState>,
    done: bool,
}

/// Reads one printed line. A line that does not parse is the last one of a killed process,
/// cut by the kill: what it would have said was never said.
fn read_line(printed: &mut Printed, number: usize, line: &str) {
    let (kind, json) = line.split_once(' ').unwrap_or((line, ""));
    match kind {
        "recovered" => printed.process.recovered = serde_json::from_str(json).ok(),
        "ack" => printed
            .process
            .acknowledged
            .extend(serde_json::from_str::<Record>(json).ok()),
        "start" => {
            if let Ok(mut start) = serde_json::from_str::<BodyStart>(json) {
                start.process = number;
                printed.starts.push(start);
            }
        }
        "request" => {
            if let Ok(mut request) = serde_json::from_str::<Request>(json) {
                request.process = number;
                printed.requests.push(request);
            }
        }
        "journal" => printed.journal = serde_json::from_str(json).ok(),
        "chart" => printed.chart = serde_json::from_str(json).ok(),
        "done" => printed.done = true,
        _ => {}
    }
}

/// Drills the plan of `seed` on the file at `path`, each kill at a random instant within
/// `span` of the process opening the store; returns the execution and the kills.
fn drill(seed: u64, path: &Path, rng: &mut SimRng, span: Duration) -> (Execution, usize) {
    let _ = std::fs::remove_file(path);
    let mut execution = Execution::default();
    let mut kills = 0;
    for number in 0..=KILLS_PER_PLAN_MAX {
        let mut child = child(seed, path);
        let stdout = child.stdout.take().unwrap();
        let (lines, received) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        let mut printed = Printed::default();
        // The last process is left to finish; the others are killed at a random instant
        // after they opened the store, within about what a whole session takes on a file.
        let killed = number < KILLS_PER_PLAN_MAX;
        if killed {
            for line in received.iter() {
                read_line(&mut printed, number, &line);
                if line.starts_with("recovered ") || printed.done {
                    break;
                }
            }
            let span = u64::try_from(span.as_micros()).unwrap_or(u64::MAX).max(1);
            std::thread::sleep(Duration::from_micros(rng.below(span)));
            let _ = child.kill();
        }
        let status = child.wait().unwrap();
        for line in received.iter() {
            read_line(&mut printed, number, &line);
        }
        let crashed = !printed.done;
        assert!(
            printed.done || killed,
            "plan {seed}: the last process ended with {status} before the session's end"
        );
        kills += usize::from(crashed);
        execution.processes.push(Process {
            crashed,
            ..printed.process
        });
        execution.starts.extend(printed.starts);
        execution.requests.extend(printed.requests);
        // What is at rest after each process: the whole file.
        execution
            .written
            .push(std::fs::read(path).unwrap_or_default());
        if printed.done {
            execution.journal = printed
                .journal
                .expect("the finished child printed its journal");
            execution.chart = printed.chart;
            // What the file holds at the end, read by a process of its own.
            let store = DurableStore::open(path).expect("the file reopens");
            execution.reopened = Some((
                store.records(SESSION).expect("the journal reads"),
                store.chart(SESSION).expect("the chart reads"),
            ));
            break;
        }
    }
    (execution, kills)
}

/// A child process that drills the plan of `seed` on the file at `path`.
fn child(seed: u64, path: &Path) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "drill_child", "--nocapture", "--test-threads=1"])
        .env(DRILL_VARIABLE, format!("{}:{seed}", path.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the child starts")
}

/// How long a whole session of the plan of `seed` takes in a child, from its store's opening
/// to its end.
fn timed(seed: u64, path: &Path) -> Duration {
    let _ = std::fs::remove_file(path);
    let mut child = child(seed, path);
    let mut opened = None;
    let mut done = None;
    for line in BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
    {
        if line.starts_with("recovered ") {
            opened = Some(std::time::Instant::now());
        }
        if line == "done" {
            done = Some(std::time::Instant::now());
        }
    }
    child.wait().unwrap();
    match (opened, done) {
        (Some(opened), Some(done)) => done - opened,
        _ => panic!("plan {seed}: the timed session did not finish"),
    }
}

#[test]
fn sessions_killed_at_random_instants_resume_and_keep_i15_to_i19() {
    if std::env::var_os(DRILL_VARIABLE).is_some() {
        return;
    }
    let directory: PathBuf =
        std::env::temp_dir().join(format!("ward-session-drill-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let path = directory.join("sessions.redb");
    let mut rng = SimRng::new(16);
    let (mut kills, mut resumed, mut records) = (0, 0, 0);
    for seed in 0..PLANS {
        let plan = generate(seed);
        let reference = explore_once(&plan, FaultSet::EMPTY, &[], &mut SimRng::new(seed));
        // How long the session takes on this machine, from the store's opening to its end:
        // the kills are drawn within it (real time only places the kills; no verdict reads it).
        let span = timed(seed, &path);
        let (crashed, killed) = drill(seed, &path, &mut rng, span);
        let verdict = durable::check(&plan, &reference, &crashed);
        assert!(
            verdict.breaches.is_empty(),
            "plan {seed}: {:?}",
            verdict.breaches
        );
        kills += killed;
        resumed += usize::from(verdict.armed[4]);
        records += crashed.journal.len();
    }
    eprintln!(
        "{PLANS} sessions, {kills} kills, {resumed} sessions resumed a cut run, {records} records committed"
    );
    assert!(kills >= PLANS as usize, "only {kills} kills");
    std::fs::remove_dir_all(&directory).unwrap();
}
