//! The harness's integration tests, linked into one binary: here go the tests that drive the
//! harness from outside (host certification through the public API, the command line, the wire
//! protocol through the built binary and its reference adapter).

mod adapter;
mod certify;
mod cli;
