//! Conformance harness for the Incus operations.

mod reference_host;

pub use reference_host::ReferenceHost;
