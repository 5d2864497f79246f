//! Conformance harness for the Incus operations.
pub mod tama;

mod reference_host;

pub use reference_host::ReferenceHost;
