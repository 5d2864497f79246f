//! The real-Incus acceptance runner behind `real-incus-acceptance`.
//!
//! It runs every operation of the `incus-operations` core for real against an Incus daemon, in an
//! isolated project of its own that it removes at the end, and writes a Markdown and a JSON report.
//! It only acts after an explicit opt-in ([`Cli::opted_in`]).
//!
//! The library surface exists for the binary and its tests: the command line ([`Cli`]), the entry
//! point ([`main`]), the report ([`report`]) and the pure cleanup planner ([`cleanup`]).
//!
//! ```
//! use real_incus::cleanup::{is_acceptance_project, plan_cleanup, ProjectContents};
//! let plan = plan_cleanup(&[ProjectContents { project: "ioacc-abcdefgh12".into(), ..Default::default() }]);
//! assert_eq!(plan.len(), 1); // just the project deletion
//! assert!(!is_acceptance_project("default"));
//! ```

mod acceptance;
mod admin;
pub mod cleanup;
mod cli;
pub mod cluster;
mod compare;
mod endpoint;
mod image;
pub mod member_down;
mod plan;
mod portable;
mod recorder;
pub mod report;
mod sandbox;
mod shape;
mod targets;

pub use acceptance::main;
pub use cli::{Cli, OPT_IN_REFUSAL};
pub use endpoint::{EndpointError, DEFAULT_SOCKET};
pub use shape::shape_differences;
