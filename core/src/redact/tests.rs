//! Examples for every rule.
