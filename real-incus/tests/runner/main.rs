//! The acceptance runner's integration tests, one module per concern, linked into one binary.
//! What goes here: the runner through its public library API and its binary (the command line,
//! the report, cleanup against a fake); a test that needs a real daemon or cluster is ignored with
//! its reason, and run by the CI script that brings one up.

mod cleanup_against_fake;
mod cleanup_planner;
mod cluster;
mod command_line;
mod real_daemon;
mod report_rendering;
mod shape_comparison;
