//! Differential mode: what counts as a difference in shape.
use real_incus::shape_differences;
use serde_json::json;

#[test]
fn same_shape_with_different_values_is_no_difference() {
    let real = json!({"item": {"name": "c1", "created_at": "2026-11-30T12:00:00Z"}, "etag": "abc"});
    let fake =
        json!({"item": {"name": "other", "created_at": "2020-01-01T00:00:00Z"}, "etag": "def"});
    assert!(shape_differences(&real, &fake).is_empty());
}

#[test]
fn error_kind_and_http_status_are_compared() {
    let real = json!({"error": {"kind": "native", "message": "x", "http_status": 404}});
    let fake = json!({"error": {"kind": "native", "message": "y", "http_status": 400}});
    assert_eq!(
        shape_differences(&real, &fake),
        ["error.http_status: real 404 vs fake 400"]
    );
    let ok = json!({"items": [], "count": 0, "truncated": false});
    assert_eq!(
        shape_differences(&real, &ok),
        ["real gave error \"native\", fake succeeded"]
    );
}

#[test]
fn mutation_status_missing_keys_and_types_are_compared() {
    let real = json!({"status": "failed", "operation_id": "x", "operation": {"id": "x", "err": "boom"}, "waited_seconds": 1});
    let fake = json!({"status": "completed", "operation_id": "y", "operation": {"id": "y"}, "waited_seconds": "1"});
    let diffs = shape_differences(&real, &fake);
    assert!(
        diffs.contains(&"/status: real \"failed\" vs fake \"completed\"".to_owned()),
        "{diffs:?}"
    );
    assert!(
        diffs.contains(&"/operation: keys only on the real daemon: err".to_owned()),
        "{diffs:?}"
    );
    assert!(
        diffs.contains(&"/waited_seconds: real integer vs fake string".to_owned()),
        "{diffs:?}"
    );
}

#[test]
fn first_list_items_are_compared_key_by_key() {
    let real = json!({"items": [{"name": "a", "used_by": []}], "count": 1, "truncated": false});
    let fake = json!({"items": [{"name": "a"}], "count": 1, "truncated": false});
    assert_eq!(
        shape_differences(&real, &fake),
        ["/items/0: keys only on the real daemon: used_by"]
    );
}
