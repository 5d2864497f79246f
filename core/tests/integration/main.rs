//! The core crate's integration tests, in one binary (one link instead of eleven). What goes
//! here: a promise of the crate seen through its public API (`run()`, the client, the catalogue,
//! the profile document), against a fake Incus where it needs a backend, one module per concern;
//! a test of one module's own code goes in that module's `tests`.

mod catalogue;
mod catalogue_fixture;
mod client_connect;
mod common;
mod profile;
mod readme;
mod run_cancel;
mod run_checks;
mod run_exec;
mod run_https;
mod run_inspect;
mod run_mutate;
mod run_secrets;
mod run_support;
mod run_update;
mod run_writes;
