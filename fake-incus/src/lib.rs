//! A scriptable Incus simulator.
