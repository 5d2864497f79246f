//! The Go behaviour the daemon shows through its API, imitated in one place: each file is one
//! Go package of the standard library, and says which of its behaviours the fake reproduces.
//!
//! | file | Go package | what shows through |
//! |---|---|---|
//! | [`encoding_json`] | `encoding/json` | how request bodies are read (U+FFFD for bad strings, syntax errors' words) and how ETags' JSON is escaped |
//! | [`encoding_base64`] | `encoding/base64` | a certificate that is not base64 |
//! | [`fmt`] | `fmt` | snapshot names: the index `Sscanf` reads back, 6.0's volume `Sprintf` |
//! | [`net_http`] | `net/http` | what the server answers before any handler: plain-text refusals, a request head that does not parse |
//! | [`os`] | `os` | a failed SFTP call's `*PathError` and `*LinkError` |
//! | [`time`] | `time` | durations and times written into texts, times read back from them, a `date` layout |
//!
//! Nothing here knows the fake: these are plain functions of plain values, tested against what
//! Go writes.

pub(crate) mod encoding_base64;
pub(crate) mod encoding_json;
pub(crate) mod fmt;
pub(crate) mod net_http;
pub(crate) mod os;
pub(crate) mod time;
