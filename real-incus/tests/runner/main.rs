//! The acceptance runner's integration tests, one module per concern, linked into one binary.

mod cleanup_against_fake;
mod cleanup_planner;
mod cluster;
mod command_line;
mod real_daemon;
mod report_rendering;
mod shape_comparison;
