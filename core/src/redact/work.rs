//! The work counter behind R29 (f): the redactor's work is linear in its input.
//!
//! Every loop of the redactor that can run more than a constant number of times reports
//! what it did here, so a test can feed adversarial inputs (`sk-sk-sk-…`, `Bearer Bearer …`,
//! `-----BEGIN` without an END, `://u:` without `@`, `eyJ.` repeated, …) of growing size and
//! assert that [`Work::total`] grows in proportion, without ever timing anything.

/// Counts of the steps one redaction took.
///
/// ```
/// use ward_core::redact::Redactor;
///
/// let redactor = Redactor::new(Vec::<String>::new())?;
/// let small = redactor.redact_report("sk-".repeat(1_000).as_bytes()).work.total();
/// let large = redactor.redact_report("sk-".repeat(4_000).as_bytes()).work.total();
/// assert!(large <= 5 * small);
/// # Ok::<(), ward_core::redact::RedactError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Bytes handed to the SIMD searchers (anchors and configured values).
    pub searched_bytes: u64,
    /// Possible invisible-character lead bytes examined (R28).
    pub lead_bytes: u64,
    /// Anchor occurrences handed to a rule for verification.
    pub anchor_hits: u64,
    /// Bytes read while verifying candidates.
    pub verified_bytes: u64,
    /// Occurrences of configured values reported by the value searcher.
    pub value_matches: u64,
    /// Candidate spans produced, before merging.
    pub candidates: u64,
}

impl Work {
    /// Adds another redaction's counts to these.
    pub fn add(&mut self, other: &Work) {
        self.searched_bytes += other.searched_bytes;
        self.lead_bytes += other.lead_bytes;
        self.anchor_hits += other.anchor_hits;
        self.verified_bytes += other.verified_bytes;
        self.value_matches += other.value_matches;
        self.candidates += other.candidates;
    }

    /// The sum of every counter.
    pub fn total(&self) -> u64 {
        self.searched_bytes
            + self.lead_bytes
            + self.anchor_hits
            + self.verified_bytes
            + self.value_matches
            + self.candidates
    }
}
