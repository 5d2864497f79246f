//! Certify an implementation in any language: the suites over the wire protocol
//! `incus-operations-adapter/1`.
//!
//! - [`protocol`]: the messages (one JSON Schema each in `conformance/adapter-protocol/`);
//! - [`transport`]: the adapter's standard input and output, or HTTP;
//! - [`targets`]: the suites' wire backend ([`targets::WireTargets`]);
//! - [`reference`](mod@reference): the reference adapter, the core itself behind the protocol.

pub mod protocol;
pub mod reference;
pub mod targets;
pub mod transport;

#[cfg(test)]
mod tests;
