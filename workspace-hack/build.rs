//! A build script, so that cargo resolves the crate's `[build-dependencies]` with the host side.
fn main() {}
