//! The agent-facing Incus operations.
//!
//! A fixed catalogue of 32 bounded operations (`incus_<resource>_<verb>`), each defined once with its
//! JSON Schemas (2020-12), scope, destructive confirmation rule, bounds and the client evidence it needs.
//! Only operations whose evidence is complete are exported by [`all`]; the others are listed by
//! [`unavailable`] with what is missing. [`tama_document`] publishes the exported operations as a
//! `tama-operations/1` profile document.
//!
//! ```
//! // Every exported operation is described by the same data the pinned fixture holds.
//! for descriptor in incus_operations::all() {
//!     let described = incus_operations::describe(descriptor.name()).expect("exported");
//!     assert_eq!(described["name"], descriptor.name());
//! }
//! // Operations whose client evidence is incomplete are listed with what they lack.
//! for entry in incus_operations::unavailable() {
//!     println!("{}: {}", entry.name(), entry.reason());
//! }
//! ```

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

// One module per concern; add new ones to this list.
mod catalogue;
mod client;
mod error;
mod evidence;
mod host;
mod profile;
mod run;

pub use catalogue::{
    all, describe, fetch, unavailable, Bounds, Confirmation, Descriptor, Scope, Unavailable,
    UnavailableReason,
};
pub use client::{
    tls_client_config, Client, ClientError, Connection, ConnectionBuilder, ConnectionError,
    Endpoint, DEFAULT_MAX_STREAM_BYTES, DEFAULT_STREAM_TIMEOUT, DEFAULT_TIMEOUT,
};
pub use error::ErrorKind;
pub use evidence::MissingRequirement;
pub use host::{Binding, BindingContext, DynHost, Host, HostError, ImageRemote, RestrictedItem};
pub use profile::{tama_document, tama_document_all};
pub use run::{run, RunOptions, DEFAULT_CALLBACK_TIMEOUT, DEFAULT_CALL_TIMEOUT, REDACTED};
