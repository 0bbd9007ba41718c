//! What a rule sees while it verifies a candidate: the text and the configured values'
//! spans (R24), so that a pattern next to a configured value behaves as it will next to the
//! value's placeholder.
//!
//! The left-boundary checks of R25 and R26 ("not preceded by a letter or digit") treat a
//! character inside a configured value's span as a boundary: in the output that character
//! is the `]` of `[REDACTED]`. Without this, `<value>sk-…` would keep its key (the `sk-` is
//! preceded by the value's last letter), and redacting the output again would find it.
//! Only configured values need this: every pattern rule ends before a character that is not
//! a letter or digit, or runs over every letter and digit that follows it.

use super::text::is_alphanumeric;

/// How far [`Context::boundary_before`] reads back.
pub(crate) const BOUNDARY_LOOK_BEHIND: usize = 1;

/// The text under scan and the configured values found in it.
pub(crate) struct Context<'t> {
    /// The text (the R28 view of the input).
    pub(crate) text: &'t [u8],
    /// The end of the configured values found so far, at most. Candidates are verified in
    /// order of their start and every value that starts before a candidate has been found
    /// by then, so a byte before the candidate lies inside a value exactly when it lies
    /// before this end.
    pub(crate) values_end: usize,
}

impl Context<'_> {
    /// Whether a token may start at `position`: at the start of the text, after a character
    /// that is not an ASCII letter or digit, or right after (or inside) a configured value.
    #[inline]
    pub(crate) fn boundary_before(&self, position: usize) -> bool {
        match position
            .checked_sub(1)
            .and_then(|before| self.text.get(before))
        {
            None => true,
            Some(&byte) if !is_alphanumeric(byte) => true,
            Some(_) => position - 1 < self.values_end,
        }
    }
}
