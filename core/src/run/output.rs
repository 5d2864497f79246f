//! The 256 KiB bound on a result's JSON, applied in one linear pass.
//!
//! A list result keeps the longest prefix of its items that fits: each item's serialized size is
//! measured once, the envelope once, and items are dropped from the end. A list whose first item
//! alone does not fit, and any other result over the bound, fails with `output_limit`.
use serde_json::{json, Value};

use super::redact::{self, Reader};
use super::results::RunError;
use crate::catalogue::Native;
pub(crate) use crate::client::json_len;

/// The bound on a result's compact JSON, in bytes.
pub(crate) const OUTPUT_BYTES: usize = 256 * 1024;

/// What an executor produced, before the output bound.
#[derive(Debug)]
pub(crate) enum Success {
    /// A list result, cut to the bound by dropping items from the end.
    List(Listing),
    /// Any other result, kept whole or refused.
    Object(Value),
}

/// The result of `native`, with what `reader` may not see redacted, within the 256 KiB bound.
pub(crate) fn finish(
    native: Native,
    reader: &Reader,
    mut success: Success,
) -> Result<Value, RunError> {
    match &mut success {
        Success::List(listing) => listing.redact_items(|item| redact::item(native, reader, item)),
        Success::Object(result) => redact::object(native, reader, result),
    }
    match success {
        Success::List(listing) => listing.into_result(OUTPUT_BYTES),
        Success::Object(result) => bounded(result, OUTPUT_BYTES),
    }
}

impl Success {
    /// The native objects of the result: a list's items, or a read's `item`.
    pub(crate) fn objects(&self) -> Vec<&Value> {
        match self {
            Success::List(listing) => listing.items.iter().collect(),
            Success::Object(result) => result.get("item").into_iter().collect(),
        }
    }
}

/// A list read from Incus, already cut to the caller's `limit`.
#[derive(Debug)]
pub(crate) struct Listing {
    /// Items in native order.
    items: Vec<Value>,
    /// Each item's compact JSON length, measured once when it was read.
    sizes: Vec<usize>,
    /// The native total.
    count: usize,
    /// Whether items were left out already (by `limit`).
    truncated: bool,
}

impl Listing {
    /// The first `limit` of the native items (each with its measured size), with the native
    /// total.
    pub(crate) fn first(items: Vec<(Value, usize)>, limit: usize) -> Listing {
        let count = items.len();
        let (items, sizes): (Vec<Value>, Vec<usize>) = items.into_iter().take(limit).unzip();
        Listing {
            truncated: items.len() < count,
            items,
            sizes,
            count,
        }
    }

    /// Applies `change` to every item, measuring again the items it changed (it returns whether
    /// it did).
    pub(crate) fn redact_items(&mut self, change: impl Fn(&mut Value) -> bool) {
        for (item, size) in self.items.iter_mut().zip(self.sizes.iter_mut()) {
            if change(item) {
                *size = json_len(item);
            }
        }
    }

    /// The `{"items", "count", "truncated"}` result, within `bound` bytes.
    pub(crate) fn into_result(self, bound: usize) -> Result<Value, RunError> {
        let Listing {
            mut items,
            sizes,
            count,
            truncated,
        } = self;
        let total: usize = sizes.iter().sum::<usize>() + sizes.len().saturating_sub(1);
        if envelope_len(count, truncated) + total <= bound {
            return Ok(envelope(items, count, truncated));
        }
        let room = bound.saturating_sub(envelope_len(count, true));
        // At least one item goes: the whole list did not fit as it was.
        let kept = fitting_prefix(&sizes, room).min(sizes.len().saturating_sub(1));
        if kept == 0 {
            return Err(RunError::OutputLimit {
                limit: bound,
                single: false,
            });
        }
        items.truncate(kept);
        Ok(envelope(items, count, true))
    }
}

/// How many leading items fit in `room` bytes, with the commas between them.
fn fitting_prefix(sizes: &[usize], room: usize) -> usize {
    let mut used = 0;
    for (kept, size) in sizes.iter().enumerate() {
        let needed = used + size + usize::from(kept > 0);
        if needed > room {
            return kept;
        }
        used = needed;
    }
    sizes.len()
}

fn envelope(items: Vec<Value>, count: usize, truncated: bool) -> Value {
    json!({"items": items, "count": count, "truncated": truncated})
}

fn envelope_len(count: usize, truncated: bool) -> usize {
    json_len(&envelope(Vec::new(), count, truncated))
}

/// Any other result must fit the bound as a whole.
pub(crate) fn bounded(result: Value, bound: usize) -> Result<Value, RunError> {
    if json_len(&result) > bound {
        return Err(RunError::OutputLimit {
            limit: bound,
            single: true,
        });
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (the 256 KiB bound on a result's JSON,
    //! applied in one linear pass); a promise of the whole `run()` or of the client against a fake
    //! Incus, seen through the public API, goes in `tests/integration`.

    use super::*;

    fn item(len: usize) -> Value {
        // `"xxx"` is len + 2 bytes.
        json!("x".repeat(len - 2))
    }

    fn measured(items: Vec<Value>) -> Vec<(Value, usize)> {
        items
            .into_iter()
            .map(|item| {
                let size = json_len(&item);
                (item, size)
            })
            .collect()
    }

    #[test]
    fn a_list_within_the_bound_is_unchanged() {
        let listing = Listing::first(measured(vec![item(10), item(10)]), 100);
        let result = listing.into_result(1000).unwrap();
        assert_eq!(result["count"], 2);
        assert_eq!(result["truncated"], false);
        assert_eq!(result["items"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn a_list_at_exactly_the_bound_is_kept_whole() {
        let items = vec![item(100), item(100), item(100)];
        let whole = json_len(&envelope(items.clone(), 3, false));
        let result = Listing::first(measured(items), 100)
            .into_result(whole)
            .unwrap();
        assert_eq!(result["items"].as_array().unwrap().len(), 3);
        assert_eq!(json_len(&result), whole);
    }

    #[test]
    fn a_list_over_the_bound_drops_items_from_the_end() {
        let items: Vec<Value> = (0..10)
            .map(|i| json!({"n": i, "pad": "y".repeat(50)}))
            .collect();
        let whole = json_len(&envelope(items.clone(), 10, false));
        let result = Listing::first(measured(items), 100)
            .into_result(whole - 1)
            .unwrap();
        let kept = result["items"].as_array().unwrap();
        assert_eq!(kept.len(), 9);
        assert_eq!(kept[8]["n"], 8);
        assert_eq!(result["count"], 10);
        assert_eq!(result["truncated"], true);
        assert!(json_len(&result) < whole);
    }

    #[test]
    fn a_single_item_alone_over_the_bound_is_output_limit() {
        let result = Listing::first(measured(vec![item(500), item(10)]), 100).into_result(400);
        let error = result.unwrap_err();
        assert_eq!(
            error,
            RunError::OutputLimit {
                limit: 400,
                single: false
            }
        );
        assert!(error.to_string().contains("list item"), "{error}");
    }

    #[test]
    fn a_single_object_over_the_bound_says_object_not_list_items() {
        let error = bounded(json!({"item": item(500)}), 400).unwrap_err();
        assert_eq!(
            error,
            RunError::OutputLimit {
                limit: 400,
                single: true
            }
        );
        let message = error.to_string();
        assert!(
            message.contains("object") && !message.contains("list"),
            "{message}"
        );
    }

    #[test]
    fn limit_keeps_the_native_total() {
        let listing = Listing::first(measured((0..7).map(|i| json!(i)).collect()), 5);
        assert_eq!(
            (listing.items.len(), listing.count, listing.truncated),
            (5, 7, true)
        );
    }
}
