//! Conformance harness for the Incus operations.
