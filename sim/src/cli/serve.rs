//! `ward serve [--bug NAME] [--store DIR]`: ward's own core behind the protocol, on standard
//! input and output (SPEC §15 P5; `PROTOCOL.md`). `ward run --runtime 'ward serve'` checks it
//! as it would check any runtime's adapter.
//!
//! With `--store DIR` its sessions live in a redb file, `ward.redb`, in the directory each
//! `reset` gives (`storeDir`, P8), or in `DIR` when a reset gives none: it announces the
//! store in `ready.durable`, claims R30–R35, and after a crash takes up the run the crash cut
//! on `recover` (SPEC §16, §17, P12). At `crash` it closes its database file under redb and
//! drops everything: nothing reaches the file after the crash, as after a kill.
//!
//! A line that is not a message of the protocol, or a message out of turn, ends the process
//! with exit code 2 and the reason on standard error: ward's side reports it as a violation.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use ward_core::fault::{Fault, FaultSet};

use crate::host::core::CoreHost;
use crate::host::spin::Awake;
use crate::protocol::at;

/// Arguments of `ward serve`.
#[derive(Args, Debug, Clone, Default)]
pub struct ServeArgs {
    /// Switch on a seeded bug of the catalogue in every run (`ward bugs` lists them).
    #[arg(long, value_parser = super::run::parse_bug)]
    pub bug: Option<Fault>,
    /// Keep sessions in a redb file under this directory (or the one each reset gives).
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
}

pub use crate::host::core::STORE_FILE;

/// The core `ward serve` speaks for: in memory, or durable in a redb file.
fn host(args: &ServeArgs) -> Result<CoreHost, String> {
    let faults: FaultSet = args.bug.into_iter().collect();
    let Some(base) = args.store.clone() else {
        if args.bug.is_some_and(super::run::durable_bug) {
            return Err("a bug of durable sessions needs --store DIR".to_owned());
        }
        return CoreHost::new(faults).map_err(|error| error.to_string());
    };
    CoreHost::on_files(faults, base).map_err(|error| error.to_string())
}

/// Serves until standard input ends.
pub fn run(args: &ServeArgs) -> ExitCode {
    let mut host = match host(args) {
        Ok(host) => host,
        Err(error) => {
            eprintln!("ward serve: {error}");
            return ExitCode::from(2);
        }
    };
    // Wider than standard input's own buffer, which a read of this size passes by: every
    // byte is read after the wait of `Awake`, never from a buffer it cannot see.
    let stdin = std::io::BufReader::with_capacity(1 << 16, Awake::new(std::io::stdin()));
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    for (number, line) in stdin.lines().enumerate() {
        let line = match line {
            Ok(line) => line,
            Err(error) => {
                eprintln!("ward serve: line {}: {error}", number + 1);
                return ExitCode::from(2);
            }
        };
        let (message, at_ms) = match at::decode(&line) {
            Ok(decoded) => decoded,
            Err(error) => {
                eprintln!(
                    "ward serve: line {}: not a message of the protocol: {error}",
                    number + 1
                );
                return ExitCode::from(2);
            }
        };
        let answer = match host.handle_at(message, at_ms) {
            Ok(answer) => answer,
            Err(error) => {
                eprintln!("ward serve: line {}: {error}", number + 1);
                return ExitCode::from(2);
            }
        };
        for message in answer {
            // Every message of the protocol serialises; a failure here is the pipe's.
            let written = serde_json::to_writer(&mut stdout, &message)
                .map_err(std::io::Error::other)
                .and_then(|()| stdout.write_all(b"\n"));
            if written.is_err() {
                return ExitCode::from(1);
            }
        }
        if stdout.flush().is_err() {
            return ExitCode::from(1);
        }
    }
    ExitCode::SUCCESS
}
