//! `ward merge FILE... [--json]`: combines the summaries that `ward run --shard K/N --json`
//! printed for every shard of one campaign into the whole campaign's summary (SPEC §12, §13;
//! the rules are in [`crate::summary`]).
//!
//! Like `ward run`, it shows the table of counts on standard error and, with `--json`, prints
//! the summary as one JSON object on standard output, in the format of `ward run --json`
//! (shard 1/1). A file may hold the whole output of `ward run --json` (its last line is the
//! summary). Exit 0 when every invariant held, 1 on a violation (the lowest failing seed and
//! the command that replays it are shown), 2 on bad input: a file that is not a summary, or
//! summaries that are not every shard of one campaign, with a message naming the file.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::summary::{self, ShardFile, Summary};

/// Arguments of `ward merge`.
#[derive(Args, Debug, Clone)]
pub struct MergeArgs {
    /// The shards' summaries: files holding the output of `ward run --shard K/N --json`.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Print the merged summary as one JSON object, last.
    #[arg(long)]
    pub json: bool,
}

/// Merges.
pub fn run(args: &MergeArgs) -> ExitCode {
    let mut files = Vec::with_capacity(args.files.len());
    for path in &args.files {
        match Summary::read(path) {
            Ok(summary) => files.push(ShardFile {
                path: path.display().to_string(),
                summary,
            }),
            Err(error) => return super::usage_error(error),
        }
    }
    let merged = match summary::merge(&files) {
        Ok(merged) => merged,
        Err(error) => return super::usage_error(error),
    };
    let whole = &merged.summary;
    if let (Some(failure), Some(index)) = (&whole.first_failure, merged.first_failure_from) {
        let source = &files[index];
        tell!(
            "first failure: seed {} (shard {}, {}): {}: {}",
            failure.seed,
            source.summary.shard,
            source.path,
            failure.invariant,
            failure.explanation
        );
        let shrunk = source
            .summary
            .first_failure
            .as_ref()
            .and_then(|failure| failure.replay.as_deref());
        if let Some(shrunk) = shrunk {
            tell!("shrunk where shard {} ran: {shrunk}", source.summary.shard);
        }
        if let Some(replay) = &failure.replay {
            tell!("replay: {replay}");
        }
    }
    let shards = files.len();
    let how = if shards == 1 {
        "1 shard".to_owned()
    } else {
        format!("{shards} shards side by side")
    };
    tell!(
        "ward merge: seeds {}{}",
        whole.seed_range,
        whole
            .bug
            .as_deref()
            .map(|bug| format!(", bug {bug}"))
            .unwrap_or_default()
    );
    super::table::report_summary(whole, &how, args.json)
}
