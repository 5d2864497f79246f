//! Inspection: native lists and single objects, passed through unchanged.
//!
//! Lists keep native order, report the native total as `count`, and keep the first `limit` items
//! (100 by default, at most 500); the output bound may drop more from the end.
//! `incus_operation_list` is the native status-keyed map flattened in native order (by the client).
use serde_json::json;

use super::output::{Listing, Success};
use super::results::{read_error, RunError};
use crate::client::{ClientError, ListItem, Single};

/// A list result: `{"items", "count", "truncated"}`, the first `limit` native items.
pub(crate) fn list(
    items: Result<Vec<ListItem>, ClientError>,
    limit: u64,
) -> Result<Success, RunError> {
    let items = items.map_err(read_error)?;
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let measured = items
        .into_iter()
        .map(|item| (item.value, item.json_len))
        .collect();
    Ok(Success::List(Listing::first(measured, limit)))
}

/// A single-object result: `{"item"}`.
pub(crate) fn item(single: Result<Single, ClientError>) -> Result<Success, RunError> {
    let single = single.map_err(read_error)?;
    Ok(Success::Object(json!({ "item": single.value })))
}

/// A single object with its native ETag: `{"item", "etag"}` (`incus_instance_get`).
pub(crate) fn item_with_etag(single: Result<Single, ClientError>) -> Result<Success, RunError> {
    let single = single.map_err(read_error)?;
    Ok(Success::Object(
        json!({"item": single.value, "etag": single.etag}),
    ))
}
