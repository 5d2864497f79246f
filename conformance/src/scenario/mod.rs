//! The scenario engine: data files that describe calls and what each must return (format
//! documented in `scenarios/README.md`), run on two backends with one matcher.
//!
//! - [`format`](mod@format): the file format, also built in code ([`format::Expect::success`], ...);
//! - [`load`]: the built-in files (embedded at build time), a directory, validation;
//! - [`run`]: runs a scenario against a [`target::Target`] and returns a [`run::Transcript`];
//! - [`matcher`]: what a result must be, the one judge of every expectation;
//! - [`target`]: the target trait and the real-Incus backend ([`target::HostTarget`]);
//! - [`fake`]: the fake backend, an embedded fake Incus per target ([`fake::HostTargets`]);
//! - [`journal`]: fake-only expectations on the requests a step sent;
//! - [`host`]: the host a trial needs, as data, and the Rust host that follows it.
//!
//! The conformance run turns each file into a trial `scenario::<file-stem>`; the acceptance
//! runner (`real-incus`) runs the portable ones against a real Incus through the same engine.

pub mod fake;
pub mod format;
pub mod host;
pub mod journal;
pub mod load;
pub mod matcher;
pub mod run;
pub mod target;
