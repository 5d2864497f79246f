//! Serialized sizes: the whole document (4 MiB, 1024 operations) and, per schema, the schema
//! with the components it references (256 KiB).

use std::io;

use serde_json::Value;

use super::Sink;
use crate::tama::pointer::Pointer;

/// At most 4 MiB per serialized document.
pub(crate) const MAX_DOCUMENT_BYTES: usize = 4 * 1024 * 1024;
/// At most 256 KiB per request or response schema with the components it references.
pub(crate) const MAX_SCHEMA_BYTES: usize = 256 * 1024;
/// At most 16 KiB of other `x-` extensions per operation.
pub(crate) const MAX_EXTENSION_BYTES: usize = 16 * 1024;

/// Counts bytes written without keeping them.
struct Counter(usize);

impl io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Length of the compact `serde_json` serialization of `value`.
pub(crate) fn serialized_len<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    let mut counter = Counter(0);
    // Writing into a counter cannot fail, and a `Value` always serializes.
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        Err(_) => usize::MAX,
    }
}

/// The 4 MiB rule: on the raw bytes when known, else on the compact serialization.
pub(crate) fn check_document(document: &Value, raw_len: Option<usize>, sink: &mut Sink) {
    let (len, how) = match raw_len {
        Some(len) => (len, "as given"),
        None => (serialized_len(document), "serialized compactly"),
    };
    if len > MAX_DOCUMENT_BYTES {
        sink.report(
            &Pointer::root(),
            "document.size",
            format!("the document is {len} bytes {how}; at most {MAX_DOCUMENT_BYTES} are allowed"),
        );
    }
}
