//! The core crate's integration tests, in one binary (one link instead of eleven). Each module is
//! one former test binary, and keeps its test names.

mod catalogue;
mod catalogue_fixture;
mod client_connect;
mod common;
mod profile;
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
