//! The real-Incus acceptance runner behind `real-incus-acceptance`.
//!
//! It runs every operation of the `incus-operations` core for real against an Incus daemon, in an
//! isolated project of its own that it removes at the end, and writes a Markdown and a JSON report.
//! It only acts after an explicit opt-in ([`Cli::opted_in`]).
//!
//! The library surface exists for the binary and its tests: the command line ([`Cli`]), the entry
//! point ([`main`]), the report ([`report`]) and the pure cleanup planner ([`cleanup`]).
//!
//! # How the code is laid out
//!
//! The modules, top-down; a module uses only modules listed after it, never one above it:
//!
//! | module | what it does |
//! |---|---|
//! | `acceptance` | the run: discovery, setup, the plan, the scenarios, the report, cleanup |
//! | [`member_down`] | on a real cluster: the cluster scenarios (`scenarios/cluster/`), a member taken down and brought back |
//! | `safety` | the core's value rules on the daemon: the refused inputs of `conformance/data/safety-values.json` through a read-only relay, the benign ones applied, read back, snapshotted and restored |
//! | `portable` | the portable scenarios (`scenarios/`, the lifecycle among them) on the daemon with the runner's variables, and on the fake in differential mode |
//! | `compare` | the differential run of the plan against the fake |
//! | `sandbox` | the acceptance project, its root disk and test image |
//! | `plan` | what data cannot say: the workload, a small-stream exec, a running exec probed, a mutation outlasting its wait, the image remote |
//! | `recorder` | checks judged by the scenario engine's matcher, recorded for the report |
//! | `relay` | the read-only relay the refused inputs go through: notes every request, forwards only plain `GET`s |
//! | `extensions` | the API extensions the checks rely on, listed in the report (one the server lacks is an error) |
//! | [`report`], [`cleanup`] | the Markdown and JSON report; the cleanup planner and its run |
//! | `targets`, `admin`, [`cluster`] | the core bound to the daemon; the admin client for setup; the cluster's members and answers |
//! | `cli`, `endpoint`, `image`, `shape` | flags, the daemon's address, the test image, result shapes compared |
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
mod extensions;
mod image;
pub mod member_down;
mod plan;
mod portable;
mod recorder;
mod relay;
pub mod report;
mod safety;
mod sandbox;
mod shape;
mod targets;

pub use acceptance::main;
pub use cli::{Cli, OPT_IN_REFUSAL};
pub use endpoint::{EndpointError, DEFAULT_SOCKET};
pub use shape::shape_differences;
