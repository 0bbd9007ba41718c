//! Shared inputs for the ward benches.
