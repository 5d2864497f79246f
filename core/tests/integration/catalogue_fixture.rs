//! The pinned catalogue: `fixtures/operations-catalogue.json` holds `describe()` of every operation
//! (exported or not). Any drift fails with a readable diff; `BLESS=1 cargo test -p incus-operations
//! --test integration catalogue_fixture` rewrites the fixture after a deliberate change.

use crate::common;

use std::path::PathBuf;

use serde_json::Value;
use similar::TextDiff;

fn fixture_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/operations-catalogue.json")
}

fn current() -> String {
    let described: Vec<Value> = common::every_descriptor()
        .iter()
        .map(|descriptor| descriptor.describe())
        .collect();
    let mut text = serde_json::to_string_pretty(&described).expect("descriptions serialize");
    text.push('\n');
    text
}

#[test]
fn describe_matches_the_pinned_catalogue() {
    let current = current();
    let path = fixture_path();
    if std::env::var("BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, &current).expect("the fixture is writable");
        return;
    }
    let pinned = std::fs::read_to_string(&path).unwrap_or_default();
    if pinned != current {
        let diff = TextDiff::from_lines(&pinned, &current)
            .unified_diff()
            .context_radius(3)
            .header("pinned fixture", "describe()")
            .to_string();
        panic!(
            "the catalogue drifted from {}:\n{diff}\nIf the change is deliberate, rerun with BLESS=1.",
            path.display()
        );
    }
}

#[test]
fn pinned_catalogue_holds_all_32_operations() {
    let pinned: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(fixture_path()).expect("fixture exists"))
            .expect("fixture is JSON");
    assert_eq!(pinned.len(), 32);
    for entry in &pinned {
        for key in [
            "name",
            "title",
            "description",
            "scope",
            "destructive",
            "confirmation",
            "requires",
            "bounds",
            "input_schema",
            "output_schema",
        ] {
            assert!(entry.get(key).is_some(), "{} lacks {key}", entry["name"]);
        }
    }
}
