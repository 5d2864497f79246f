//! Inspection bounds: lists of any length and item size keep native order, report the native
//! total and truncation, respect `limit` (100 by default, at most 500) and the 256 KiB output
//! bound by dropping items from the end; a single item alone over the bound is output_limit.

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{json, Value};

use super::property;
use super::session::Session;
use crate::runner::Check;
use crate::scenario::format::FakeSetup;
use crate::scenario::target::TargetFactory;

/// The output bound in bytes of JSON.
const OUTPUT_BOUND: usize = 256 * 1024;

/// A seeded list: `count` instances with descriptions of `size` bytes, listed with `limit`.
#[derive(Debug, Clone)]
struct Case {
    count: usize,
    size: usize,
    limit: Option<usize>,
}

fn case() -> impl Strategy<Value = Case> {
    let count = prop_oneof![0..5usize, Just(99), Just(100), Just(101), 400..=520usize];
    let size = prop_oneof![0..64usize, Just(2_000), 3_000..=9_000usize];
    let limit = prop::option::of(prop_oneof![1..=3usize, Just(100), Just(499), Just(500)]);
    (count, size, limit).prop_map(|(count, size, limit)| Case { count, size, limit })
}

fn name(index: usize) -> String {
    format!("i{index:04}")
}

/// The fake's setup for a case: its instances seeded, no fault.
fn setup(case: &Case) -> FakeSetup {
    let instances: Vec<Value> = (0..case.count)
        .map(|i| json!({"name": name(i), "description": "d".repeat(case.size)}))
        .collect();
    FakeSetup {
        seed: Some(json!({"instances": instances})),
        faults: vec![],
    }
}

/// A session on a fresh fake seeded for the case.
fn seeded(factory: &Arc<dyn TargetFactory>, case: &Case) -> Result<Session, String> {
    Session::start(factory, &setup(case))
}

/// Seeds of the extreme cases, for the test that the fake accepts them.
#[cfg(test)]
pub(crate) fn setups() -> Vec<FakeSetup> {
    [(0, 0), (520, 9_000), (1, OUTPUT_BOUND + 1)]
        .into_iter()
        .map(|(count, size)| {
            setup(&Case {
                count,
                size,
                limit: None,
            })
        })
        .collect()
}

/// The list property and the single-item bound.
pub(crate) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    let trial = "inspection::truncation::lists_of_any_length_and_item_size".to_owned();
    let name_for_seed = trial.clone();
    let list_factory = Arc::clone(factory);
    let list = Check::new(trial, move || {
        property::check(&name_for_seed, case(), |case| {
            list_case(&list_factory, &case)
        })
    });
    let single = with_single_item(factory);
    vec![list, single, output_bound(factory), exact_bound(factory)]
}

fn list_case(factory: &Arc<dyn TargetFactory>, case: &Case) -> Result<(), String> {
    let session = seeded(factory, case)?;
    let mut input = json!({});
    if let Some(limit) = case.limit {
        input["limit"] = json!(limit);
    }
    let called = session.call("incus_instance_list", &["incus.read".to_owned()], input);
    let fail = |problem: String| Err(called.failure(&format!("{case:?}: {problem}")));
    let result = &called.result;
    let Some(items) = result.get("items").and_then(Value::as_array) else {
        return fail("no items".into());
    };
    let size = serde_json::to_vec(result)
        .map(|v| v.len())
        .unwrap_or(usize::MAX);
    if size > OUTPUT_BOUND {
        return fail(format!("the result is {size} bytes, over {OUTPUT_BOUND}"));
    }
    let limit = case.limit.unwrap_or(100);
    if items.len() > limit.min(case.count) {
        return fail(format!(
            "{} items, more than min(limit, count)",
            items.len()
        ));
    }
    if items.len() < limit.min(case.count) && size + item_room(case) <= OUTPUT_BOUND {
        return fail(format!(
            "{} items although one more would have fit",
            items.len()
        ));
    }
    for (index, item) in items.iter().enumerate() {
        if item.get("name") != Some(&json!(name(index))) {
            return fail(format!(
                "item {index} is not {} (native order, dropped from the end)",
                name(index)
            ));
        }
    }
    if result.get("count") != Some(&json!(case.count)) {
        return fail("count is not the native total".into());
    }
    if result.get("truncated") != Some(&json!(items.len() < case.count)) {
        return fail("truncated does not say whether items were left out".into());
    }
    called.schema_valid()
}

/// An upper bound on the serialized size of one more item of this case.
fn item_room(case: &Case) -> usize {
    case.size + 4096
}

fn with_single_item(factory: &Arc<dyn TargetFactory>) -> Check {
    let trial = "inspection::truncation::single_item_over_the_bound_is_output_limit";
    let factory = Arc::clone(factory);
    Check::new(trial, move || {
        let case = Case {
            count: 1,
            size: OUTPUT_BOUND + 1,
            limit: None,
        };
        let session = seeded(&factory, &case)?;
        let read = ["incus.read".to_owned()];
        session
            .call("incus_instance_get", &read, json!({"name": name(0)}))
            .error_is("output_limit")?;
        // A list whose first item alone is over the bound cannot drop its way under it.
        session
            .call("incus_instance_list", &read, json!({}))
            .error_is("output_limit")
    })
}

/// The largest list the bounds allow (500 items of about 9 KiB) stays within 256 KiB of JSON.
fn output_bound(factory: &Arc<dyn TargetFactory>) -> Check {
    let factory = Arc::clone(factory);
    Check::new(
        "inspection::output_bound::the_largest_list_stays_within_256_kib",
        move || {
            let case = Case {
                count: 520,
                size: 9_000,
                limit: Some(500),
            };
            let session = seeded(&factory, &case)?;
            let input = json!({"limit": 500});
            let called = session.call("incus_instance_list", &["incus.read".to_owned()], input);
            let size = serde_json::to_vec(&called.result).map_or(usize::MAX, |v| v.len());
            if size > OUTPUT_BOUND {
                return Err(called.failure(&format!("the result is {size} bytes")));
            }
            if called.result.get("truncated") != Some(&json!(true)) {
                return Err(called.failure("items were dropped but truncated is not true"));
            }
            called.schema_valid()
        },
    )
}

/// A list of exactly 256 KiB of JSON is kept whole; one byte more drops its last item.
///
/// Items of about 1 KiB are measured from the fake's own answers; then the description of the
/// last item of a `limit`ed list is grown until the result is exactly the bound, and then by one
/// byte more.
fn exact_bound(factory: &Arc<dyn TargetFactory>) -> Check {
    let factory = Arc::clone(factory);
    Check::new(
        "inspection::output_bound::one_byte_over_256_kib_drops_the_last_item",
        move || {
            let case = Case {
                count: 500,
                size: 600,
                limit: None,
            };
            let session = seeded(&factory, &case)?;
            let read = ["incus.read".to_owned()];
            let list =
                |limit: usize| session.call("incus_instance_list", &read, json!({"limit": limit}));
            let kept = list(500)
                .result
                .get("items")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            if !(3..case.count).contains(&kept) {
                return Err(format!(
                    "expected the bound to cut {} items of {} description bytes, {kept} were kept",
                    case.count, case.size
                ));
            }
            // One item fewer than fits leaves room to grow the last one to the exact bound.
            let limit = kept - 1;
            let room = OUTPUT_BOUND.saturating_sub(json_size(&list(limit).result));
            let grow = |extra: usize| {
                let input = json!({"name": name(limit - 1), "description": "d".repeat(case.size + room + extra)});
                let called =
                    session.call("incus_instance_update", &["incus.write".to_owned()], input);
                match called.result.get("status") {
                    Some(status) if status == "completed" => Ok(()),
                    _ => Err(called.failure("growing the last item failed")),
                }
            };
            grow(0)?;
            let exact = list(limit);
            let items = |called: &super::session::Called| {
                called
                    .result
                    .get("items")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len)
            };
            if json_size(&exact.result) != OUTPUT_BOUND || items(&exact) != limit {
                return Err(exact.failure(&format!(
                    "expected all {limit} items in exactly {OUTPUT_BOUND} bytes, got {} items in {} bytes",
                    items(&exact),
                    json_size(&exact.result)
                )));
            }
            grow(1)?;
            let over = list(limit);
            if items(&over) != limit - 1 || over.result.get("truncated") != Some(&json!(true)) {
                return Err(over.failure(&format!(
                    "one byte over the bound must drop the last item: expected {} items, got {}",
                    limit - 1,
                    items(&over)
                )));
            }
            over.schema_valid()
        },
    )
}

fn json_size(value: &Value) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX, |v| v.len())
}
