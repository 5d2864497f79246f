//! The fake's own tests, in one binary (one link instead of five): each module is the former
//! test file of that name, and its tests keep their names under the module path
//! (`exec::exec_operation_lists_fds_with_64_hex_secrets`).

mod capture;
mod cluster;
mod common;
mod config;
mod exec;
mod faults;
mod https;
mod layers;
mod listeners;
mod named_snapshots;
mod persistence;
mod protocol;
mod serve;
#[path = "../tarball/mod.rs"]
mod tarball;
mod tokens;
mod verification;
mod writable;
