//! The agent-facing Incus operations.

mod client;

pub use client::{
    Client, ClientError, Connection, ConnectionBuilder, ConnectionError, Endpoint,
    DEFAULT_MAX_STREAM_BYTES, DEFAULT_STREAM_TIMEOUT, DEFAULT_TIMEOUT,
};
