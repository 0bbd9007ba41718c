//! The `ward` command.
fn main() {}
