//! The README's tables that restate the code, held to it. What goes here: a test that a section
//! of `core/README.md` says what the code does; the catalogue table is generated from the
//! descriptors (`BLESS=1` rewrites it), the error kinds table is checked against `ErrorKind`.

use std::path::PathBuf;

use incus_operations::{Confirmation, ErrorKind};
use similar::TextDiff;

use crate::common::every_descriptor;

const BEGIN: &str = "<!-- catalogue table: generated from the descriptors by `BLESS=1 cargo test -p incus-operations --test integration readme`; do not edit -->\n";
const END: &str = "<!-- end of the catalogue table -->";

fn readme_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("README.md")
}

/// What `confirm` must repeat, as the README says it.
fn confirm(confirmation: Option<Confirmation>) -> &'static str {
    match confirmation {
        None => "—",
        Some(Confirmation::InstanceName) => "the instance name (`web`)",
        Some(Confirmation::InstanceSnapshot) => "`<instance>/<snapshot>` (`web/snap0`)",
        Some(Confirmation::Fingerprint) => "the full 64-character image fingerprint",
    }
}

/// One row per catalogued operation, by name.
fn catalogue_table() -> String {
    let mut table = String::from(
        "| Operation | Title | Scope | `confirm` must repeat | Client evidence |\n|---|---|---|---|---|\n",
    );
    for descriptor in every_descriptor() {
        let evidence: Vec<String> = descriptor
            .requires()
            .iter()
            .map(|requirement| format!("`{requirement}`"))
            .collect();
        table.push_str(&format!(
            "| `{}` | {} | `{}` | {} | {} |\n",
            descriptor.name(),
            descriptor.title(),
            descriptor.scope().as_str(),
            confirm(descriptor.confirmation()),
            evidence.join(", ")
        ));
    }
    table
}

#[test]
fn readme_catalogue_table_is_the_catalogue() {
    let path = readme_path();
    let current = std::fs::read_to_string(&path).expect("the README is readable");
    let (before, rest) = current
        .split_once(BEGIN)
        .expect("the README marks the start of the catalogue table");
    let (_, after) = rest
        .split_once(END)
        .expect("the README marks the end of the catalogue table");
    let expected = format!("{before}{BEGIN}{}{END}{after}", catalogue_table());
    if std::env::var("BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, &expected).expect("the README is writable");
        return;
    }
    if current != expected {
        let diff = TextDiff::from_lines(&current, &expected)
            .unified_diff()
            .context_radius(1)
            .header("README.md", "the catalogue")
            .to_string();
        panic!("the README's catalogue table is not the catalogue:\n{diff}\nrerun with BLESS=1 to rewrite it");
    }
}

#[test]
fn readme_error_kinds_table_lists_the_closed_set_in_order() {
    let readme = std::fs::read_to_string(readme_path()).expect("the README is readable");
    let section = readme
        .split("## Error kinds")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("the README has an Error kinds section");
    let listed: Vec<&str> = section
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|line| line.split_once('`').map(|(kind, _)| kind))
        .collect();
    let kinds: Vec<&str> = ErrorKind::ALL.iter().map(|kind| kind.as_str()).collect();
    assert_eq!(
        listed, kinds,
        "the README's error kinds are ErrorKind::ALL, in order"
    );
}
