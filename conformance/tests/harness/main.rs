//! The harness's integration tests (host certification through the public API, the command
//! line), linked into one binary.

mod certify;
mod cli;
