//! The agent-facing Incus operations.
//!
//! A fixed catalogue of 32 bounded operations (`incus_<resource>_<verb>`), each defined once with its
//! JSON Schemas (2020-12), scope, destructive confirmation rule, bounds and the client evidence it needs.
//! Only operations whose evidence is complete are exported by [`all`]; the others are listed by
//! [`not_exported`] with what is missing. [`tama_document`] publishes the exported operations as a
//! `tama-operations/1` profile document.
//!
//! # How the code is laid out
//!
//! The modules, top-down; a module uses only modules listed after it, never one above it:
//!
//! | module | what it does |
//! |---|---|
//! | `profile` | the `tama-operations/1` document of the exported operations, from the catalogue |
//! | `run` | `run()`: the export gate and the call's bound (`pipeline`), every check in order, the input parsed once into its typed form (`checks`, with the write rules of `writes`), the host callbacks under their bound, the typed inputs (`input`), each operation's typed input and the one dispatch from it to its client request (`native`), the executors (`inspect`, `mutate`, `update`, `cancel`, `exec`) and the result shapes (`output`, `results`, `redact`, with its `reader`: the caller's exec scope and the projects the host lets it see) |
//! | `host` | the [`Host`] trait a host implements and what its callbacks return ([`Binding`], [`ImageRemote`], [`RestrictedItem`]); [`AllowAll`], the example host |
//! | `client` | the Incus client: connection and TLS, three transport helpers (`query`), one file per resource, exec over websockets |
//! | `catalogue` | the 32 descriptors, one file per resource: name, schemas, scope, confirmation, bounds, evidence and the native call (`Native`) |
//! | `evidence` | which client requirements have evidence (the gate behind [`all`]) |
//! | `error` | [`ErrorKind`], the closed set of error kinds |
//!
//! Adding an operation touches its catalogue entry (`catalogue/<resource>.rs`, with its `Native`
//! variant), its client method (`client/<resource>.rs`, with its evidence), its `Native` arm in
//! `run/native.rs` (its typed input and its dispatch), the pinned fixture
//! (`tests/fixtures/operations-catalogue.json`, re-blessed) and its step in
//! `scenarios/lifecycle.json`: the README's "Adding an operation" says why nothing else.
//!
//! ```
//! // Every exported operation is described by the same data the pinned fixture holds.
//! for descriptor in incus_operations::all() {
//!     let described = incus_operations::describe(descriptor.name()).expect("exported");
//!     assert_eq!(described["name"], descriptor.name());
//! }
//! // Operations whose client evidence is incomplete are listed with what they lack.
//! for entry in incus_operations::not_exported() {
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
    all, describe, fetch, not_exported, Bounds, Confirmation, Descriptor, NotExported,
    NotExportedReason, Scope,
};
pub use client::{
    tls_client_config, Client, ClientError, Connection, ConnectionBuilder, ConnectionError,
    Endpoint, DEFAULT_MAX_STREAM_BYTES, DEFAULT_STREAM_TIMEOUT, DEFAULT_TIMEOUT,
};
pub use error::ErrorKind;
pub use evidence::MissingRequirement;
pub use host::{
    AllowAll, Binding, BindingContext, DynHost, Host, HostError, ImageRemote, RestrictedItem,
};
pub use profile::{tama_document, tama_document_all};
pub use run::{
    redact_network_credentials, redact_server_credentials, run, RunOptions,
    DEFAULT_CALLBACK_TIMEOUT, DEFAULT_CALL_TIMEOUT, REDACTED,
};
