//! `fake-incus`: serve a fake Incus daemon.
fn main() {}
