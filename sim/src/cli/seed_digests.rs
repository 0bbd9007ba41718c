//! `ward run --seed-digests FILE`: each seed's digests and violated invariants, one line per
//! seed in seed order, so that two campaigns whose digests differ (I11 across campaigns, a
//! crash digest on a loaded machine) name the seeds that ran otherwise: `diff A B`.
//!
//! A line is `SEED<TAB>TRACE<TAB>CRASH<TAB>VIOLATED`: the seed, its trace digest and its
//! crash plan's digest in hexadecimal (`-` without `--crashes`), and the invariants it
//! violated, comma-separated (`-` for none). The file is made before the campaign starts, so
//! a path that cannot be written is a usage error at once, not after hours of seeds.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::campaign::SeedDigest;

/// The file, made (truncated) now, or why it cannot be.
pub fn create(path: &Path) -> Result<File, String> {
    File::create(path).map_err(|error| format!("--seed-digests {}: {error}", path.display()))
}

/// Writes `digests` to `file`, one line each.
pub fn write(file: File, digests: &[SeedDigest]) -> std::io::Result<()> {
    let mut out = BufWriter::new(file);
    for digest in digests {
        writeln!(out, "{}", line(digest))?;
    }
    out.flush()
}

/// One seed's line.
fn line(digest: &SeedDigest) -> String {
    let crash = digest
        .crash
        .map_or_else(|| "-".to_owned(), |crash| format!("{crash:016x}"));
    let violated: Vec<&str> = digest
        .violated
        .iter()
        .map(|invariant| invariant.id())
        .collect();
    let violated = if violated.is_empty() {
        "-".to_owned()
    } else {
        violated.join(",")
    };
    format!(
        "{}\t{:016x}\t{crash}\t{violated}",
        digest.seed, digest.trace
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::Invariant;

    #[test]
    fn a_line_names_the_seed_its_digests_and_what_it_violated() {
        let plain = SeedDigest {
            seed: 7,
            trace: 0xab,
            crash: None,
            violated: Vec::new(),
        };
        assert_eq!(line(&plain), "7\t00000000000000ab\t-\t-");
        let crashed = SeedDigest {
            seed: 12,
            trace: 1,
            crash: Some(0x2638_729b_c034_1864),
            violated: vec![Invariant::I5, Invariant::I19],
        };
        assert_eq!(
            line(&crashed),
            "12\t0000000000000001\t2638729bc0341864\tI5,I19"
        );
    }
}
