//! A scriptable Incus simulator.

mod exec;
