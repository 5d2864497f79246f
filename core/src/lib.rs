//! The agent-facing Incus operations.
