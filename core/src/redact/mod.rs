//! Redaction (SPEC §7, R24–R29).
