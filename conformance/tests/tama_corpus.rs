//! The tama-operations/1 validator corpus: one trial per file.
//!
//! - `tests/tama/valid/*.json` must validate clean (many sit exactly at a limit).
//! - `tests/tama/invalid/<rule-id>/<name>.json` must give exactly the violations listed in
//!   `<name>.expect.json` (`[{"pointer", "rule"}]`); each breaks only the rule it is filed under.
//! - Limits too large for files (4 MiB, 1024 operations, 256 KiB schemas, 16 KiB extensions)
//!   are built in code, at the limit (valid) and one past it (invalid).
//! - Every rule id in `RULES` has at least one invalid case.
//! - `Dex::install` accepts exactly the files whose parsed value the validator accepts.

#[path = "tama/support.rs"]
mod tama_support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use incus_conformance::tama::{self, Dex, RULES};
use libtest_mimic::{Arguments, Failed, Trial};
use serde_json::{json, Value};
use tama_support::{corpus, padded_to, spec_example, with_operations};

type Expected = BTreeSet<(String, String)>;

fn main() {
    let args = Arguments::from_args();
    let mut trials = valid_trials();
    let invalid = invalid_trials();
    let mut covered: BTreeSet<String> = invalid.iter().map(|(rule, _)| rule.clone()).collect();
    trials.extend(invalid.into_iter().map(|(_, trial)| trial));
    for (rule, trial) in limit_trials() {
        covered.insert(rule.to_owned());
        trials.push(trial);
    }
    trials.push(Trial::test(
        "every_rule_has_a_document_that_breaks_it",
        move || {
            // `schema.compile` comes only from `Dex::install` (see `RULES`); the proptest
            // checks that install accepts exactly what the validator accepts.
            let missing: Vec<_> = RULES
                .iter()
                .filter(|rule| !covered.contains(**rule) && **rule != "schema.compile")
                .collect();
            if missing.is_empty() {
                Ok(())
            } else {
                Err(format!("rules without an invalid case: {missing:?}").into())
            }
        },
    ));
    trials.sort_by(|a, b| a.name().cmp(b.name()));
    libtest_mimic::run(&args, trials).exit();
}

fn files_in(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.to_string_lossy().ends_with(suffix))
        .collect();
    files.sort();
    files
}

fn stem(path: &Path) -> String {
    let name = path.file_name().expect("file name").to_string_lossy();
    name.trim_end_matches(".json").to_owned()
}

fn valid_trials() -> Vec<Trial> {
    files_in(&corpus().join("valid"), ".json")
        .into_iter()
        .map(|path| {
            Trial::test(format!("valid::{}", stem(&path)), move || {
                let bytes = std::fs::read(&path)?;
                expect_violations(&tama::validate_bytes(&bytes), &Expected::new())?;
                expect_install_agrees(&bytes)
            })
        })
        .collect()
}

fn invalid_trials() -> Vec<(String, Trial)> {
    let mut trials = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(corpus().join("invalid"))
        .expect("invalid corpus")
        .map(|entry| entry.expect("directory entry").path())
        .collect();
    dirs.sort();
    for dir in dirs {
        let rule = dir
            .file_name()
            .expect("rule dir")
            .to_string_lossy()
            .into_owned();
        for path in files_in(&dir, ".json")
            .into_iter()
            .filter(|p| !p.to_string_lossy().ends_with(".expect.json"))
        {
            let name = format!("invalid::{rule}::{}", stem(&path));
            let known = RULES.contains(&rule.as_str());
            trials.push((
                rule.clone(),
                Trial::test(name, move || {
                    if !known {
                        return Err("the directory is not named after a rule id".into());
                    }
                    let expected = read_expected(&path.with_extension("expect.json"))?;
                    let bytes = std::fs::read(&path)?;
                    expect_violations(&tama::validate_bytes(&bytes), &expected)?;
                    expect_install_agrees(&bytes)
                }),
            ));
        }
    }
    trials
}

fn read_expected(path: &Path) -> Result<Expected, Failed> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let entries: Vec<Value> = serde_json::from_slice(&bytes)?;
    Ok(entries
        .iter()
        .map(|e| {
            let field = |name: &str| e[name].as_str().unwrap_or_default().to_owned();
            (field("pointer"), field("rule"))
        })
        .collect())
}

fn expect_violations(report: &tama::Report, expected: &Expected) -> Result<(), Failed> {
    let found: Expected = report
        .violations()
        .iter()
        .map(|v| (v.pointer.clone(), v.rule.to_owned()))
        .collect();
    if &found == expected {
        Ok(())
    } else {
        Err(format!("expected {expected:#?}\nfound {:#?}", report.violations()).into())
    }
}

/// The dispatcher installs exactly the parsed documents that the validator accepts (a parsed
/// value has lost what only the bytes show, such as repeated member names).
fn expect_install_agrees(bytes: &[u8]) -> Result<(), Failed> {
    let Ok(document) = serde_json::from_slice::<Value>(bytes) else {
        return Ok(());
    };
    let valid = tama::validate(&document).is_valid();
    let installed = Dex::new().install(document, |_id: String, input: Value| async move {
        Ok::<Value, Value>(input)
    });
    match (installed, valid) {
        (Ok(()), true) | (Err(_), false) => Ok(()),
        (Ok(()), false) => Err("Dex::install accepted a document the validator refuses".into()),
        (Err(error), true) => Err(format!("Dex::install refused a valid document: {error}").into()),
    }
}

fn check(
    rule: &'static str,
    name: &str,
    build: impl FnOnce() -> (Value, Expected) + Send + 'static,
) -> (&'static str, Trial) {
    let kind = if name.starts_with("at_") {
        "valid"
    } else {
        "invalid"
    };
    let trial = Trial::test(format!("{kind}::{rule}::{name}"), move || {
        let (document, expected) = build();
        let bytes = serde_json::to_vec(&document)?;
        expect_violations(&tama::validate_bytes(&bytes), &expected)?;
        expect_violations(&tama::validate(&document), &expected)
    });
    (rule, trial)
}

fn one(pointer: &str, rule: &str) -> Expected {
    [(pointer.to_owned(), rule.to_owned())]
        .into_iter()
        .collect()
}

const OP: &str = "/paths/~1operations~1incus_image_delete/post";
const MIB4: usize = 4 * 1024 * 1024;

fn limit_trials() -> Vec<(&'static str, Trial)> {
    vec![
        check(
            "document.depth",
            "at_the_deepest_nesting_serde_json_parses",
            || {
                let mut document = spec_example();
                document["x-deep"] = nested(126);
                let bytes = serde_json::to_vec(&document).expect("serializes");
                let parsed: Value = serde_json::from_slice(&bytes).expect("serde_json parses it");
                (parsed, Expected::new())
            },
        ),
        (
            "document.depth",
            Trial::test(
                "invalid::document.depth::a_value_nested_2000_levels",
                || {
                    // Only a `Value` built in code can be this deep: bytes stop at 128 levels.
                    let mut document = spec_example();
                    document["x-deep"] = nested(2000);
                    expect_violations(&tama::validate(&document), &one("", "document.depth"))?;
                    let mut dex = incus_conformance::tama::Dex::new();
                    let executor =
                        |_id: String, input: Value| async move { Ok::<Value, Value>(input) };
                    match dex.install(document, executor) {
                        Err(incus_conformance::tama::InstallError::Invalid { violations })
                            if violations[0].rule == "document.depth" =>
                        {
                            Ok(())
                        }
                        other => {
                            Err(format!("install should refuse the depth, got {other:?}").into())
                        }
                    }
                },
            ),
        ),
        check("document.size", "at_exactly_4_mib", || {
            (padded_to(spec_example(), MIB4), Expected::new())
        }),
        check("document.size", "one_byte_over_4_mib", || {
            (
                padded_to(spec_example(), MIB4 + 1),
                one("", "document.size"),
            )
        }),
        check(
            "document.operations.count",
            "at_exactly_1024_operations",
            || (with_operations(1024), Expected::new()),
        ),
        check("document.operations.count", "1025_operations", || {
            (
                with_operations(1025),
                one("/paths", "document.operations.count"),
            )
        }),
        check("schema.size", "at_exactly_256_kib_with_components", || {
            (sized_schema(256 * 1024), Expected::new())
        }),
        check(
            "schema.size",
            "one_byte_over_256_kib_with_components",
            || {
                let pointer = format!("{OP}/responses/200/content/application~1json/schema");
                (sized_schema(256 * 1024 + 1), one(&pointer, "schema.size"))
            },
        ),
        check("operation.extensions.size", "at_exactly_16_kib", || {
            (sized_extensions(16 * 1024), Expected::new())
        }),
        check("operation.extensions.size", "one_byte_over_16_kib", || {
            (
                sized_extensions(16 * 1024 + 1),
                one(OP, "operation.extensions.size"),
            )
        }),
        check("document.size", "at_4_mib_minus_2_bytes_compact", || {
            // Compactly 4 MiB minus 2 bytes; the trial checks the compact form and the bytes
            // (which are the compact form); the pretty form is checked below.
            (padded_to(spec_example(), MIB4 - 2), Expected::new())
        }),
        (
            "document.size",
            Trial::test(
                "invalid::document.size::pretty_printed_bytes_over_4_mib",
                || {
                    let document = padded_to(spec_example(), MIB4 - 2);
                    let pretty = serde_json::to_vec_pretty(&document)?;
                    expect_violations(&tama::validate_bytes(&pretty), &one("", "document.size"))?;
                    expect_violations(&tama::validate(&document), &Expected::new())
                },
            ),
        ),
    ]
}

/// `levels` arrays nested in one another, built without recursion.
fn nested(levels: usize) -> Value {
    let mut value = json!([]);
    for _ in 1..levels {
        value = Value::Array(vec![value]);
    }
    value
}

/// The example with a `"200"` schema that, with the cyclic component it references (counted
/// once), serializes to exactly `len` bytes.
fn sized_schema(len: usize) -> Value {
    let mut document = spec_example();
    let schema = &mut document["paths"]["/operations/incus_image_delete"]["post"]["responses"]
        ["200"]["content"]["application/json"]["schema"];
    schema["properties"]["big"] = json!({"$ref": "#/components/schemas/Big"});
    let schema_len = serde_json::to_vec(schema).expect("serializes").len();
    let component = |description: String| json!({"type": "object", "description": description, "properties": {"again": {"$ref": "#/components/schemas/Big"}}});
    let base = serde_json::to_vec(&component(String::new()))
        .expect("serializes")
        .len();
    let padding = len - schema_len - base;
    document["components"] = json!({"schemas": {"Big": component("b".repeat(padding)), "Unused": component("u".repeat(len))}});
    document
}

/// The example with other `x-` extensions that serialize, as one object, to exactly `len` bytes.
fn sized_extensions(len: usize) -> Value {
    let mut document = spec_example();
    let extensions =
        json!({"x-opsmaru-requires": ["DeleteImage", "GetOperationWait"], "x-opsmaru-blob": ""});
    let base = serde_json::to_vec(&extensions).expect("serializes").len();
    let post = &mut document["paths"]["/operations/incus_image_delete"]["post"];
    post["x-opsmaru-blob"] = json!("x".repeat(len - base));
    document
}
