//! The fake's own tests, in one binary (one link instead of five): each module is the former
//! test file of that name, and its tests keep their names under the module path
//! (`exec::exec_operation_lists_fds_with_64_hex_secrets`).

mod backup_budget;
mod capture;
mod cluster;
mod cluster_leader;
mod cluster_moves;
mod common;
mod config;
mod console;
mod coverage;
mod durable_writes;
mod endpoints_7_0;
mod exec;
mod faults;
mod https;
mod image_deletes;
mod instances;
mod last_differences;
mod layers;
mod line_differences;
mod lines;
mod listeners;
mod named_snapshots;
mod persistence;
mod protocol;
mod publish_compression;
mod record_replay;
mod refusals;
mod resources;
mod serve;
mod sftp_extensions;
mod sftp_path_errors;
mod snapshot_patterns;
#[path = "../tarball/mod.rs"]
mod tarball;
mod tokens;
mod trust_restart;
mod verification;
mod volume_backups;
mod volume_moves;
mod volume_snapshots;
mod writable;
