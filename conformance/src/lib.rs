//! Conformance harness for the Incus operations.
pub mod tama;
