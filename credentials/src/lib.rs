//! What both ends of an Incus connection share about credentials.
//!
//! An Incus client and a simulator of Incus agree on two things that concern secrets: which values
//! in the daemon's answers are credentials (so that neither hands one on), and how a client trusts
//! the daemon over mutual TLS. This crate defines both, once; `incus-operations` and `fake-incus`
//! use it, and it uses neither.
//!
//! # How the code is laid out
//!
//! | module | what it does |
//! |---|---|
//! | [`redact`] | which values of Incus's answers are credentials, and their replacement by [`REDACTED`](redact::REDACTED): server and network configuration, operation metadata |
//! | [`tls`] | the rustls client configuration for mutual TLS with a pinned server certificate, and its [`Error`](tls::Error) |
//!
//! The two modules are independent. A new kind of credential (a new key of a new Incus line, a new
//! secret in operation metadata) is added to [`redact`]'s lists, with the Incus source file it was
//! read from, and a test.
//!
//! ```
//! use incus_credentials::redact::{self, REDACTED};
//!
//! // A trust token's operation: its secret goes, the rest stays.
//! let mut token = serde_json::json!({"class": "token", "metadata": {
//!     "secret": "8fffd4c5", "fingerprint": "018c2fbf",
//! }});
//! assert!(redact::operation(&mut token));
//! assert_eq!(token["metadata"]["secret"], REDACTED);
//! assert_eq!(token["metadata"]["fingerprint"], "018c2fbf");
//! ```

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

pub mod redact;
pub mod tls;
