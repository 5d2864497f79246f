//! The crate map in `lib.rs`'s docs is the layering the code keeps: read the floors from that
//! table, then every `crate::` path in the sources (comments and test modules aside) must name a
//! module below the file's own. The README stays a front door whose examples all run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The modules of the map in order, top-down (`lib` first), each with its floor.
fn map(lib: &str) -> Vec<(u32, String)> {
    let mut order = Vec::new();
    for line in lib.lines() {
        let Some(row) = line.strip_prefix("//! | ") else {
            continue;
        };
        let mut cells = row.split(" | ");
        let Some(floor) = cells.next().and_then(|f| f.trim().parse::<u32>().ok()) else {
            continue;
        };
        let modules = cells.next().unwrap_or_default();
        for name in modules.split(',') {
            let name = name.trim();
            let Some(name) = name.strip_prefix('`') else {
                continue;
            };
            let name = name.split('`').next().unwrap_or_default();
            order.push((floor, name.to_string()));
        }
    }
    order
}

/// The source without comments and without `#[cfg(test)]` modules.
fn code(text: &str) -> String {
    let text: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    match text.find("#[cfg(test)]\nmod ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// The leading identifier of a path.
fn head(path: &str) -> String {
    path.trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The top-level modules a source names through `crate::` (plain paths and `use crate::{..}`).
fn used(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        let Some(tree) = rest.strip_prefix('{') else {
            names.push(head(rest));
            continue;
        };
        let (mut depth, mut part) = (0, String::new());
        for c in tree.chars() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    names.push(head(&std::mem::take(&mut part)));
                    continue;
                }
                _ => {}
            }
            part.push(c);
        }
        names.push(head(&part));
    }
    names.retain(|n| !n.is_empty());
    names
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir)
        .expect("reading the sources")
        .flatten()
    {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_module_uses_only_modules_below_it_in_the_crate_map() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("reading lib.rs");
    let order = map(&lib);
    let rank: BTreeMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, (_, name))| (name.as_str(), i))
        .collect();
    let declared: Vec<&str> = lib
        .lines()
        .filter_map(|l| {
            l.strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("mod "))?
                .strip_suffix(';')
        })
        .collect();
    let mut missing: Vec<&str> = declared
        .iter()
        .copied()
        .filter(|m| !rank.contains_key(m))
        .collect();
    missing.extend(
        rank.keys()
            .copied()
            .filter(|m| *m != "lib" && !declared.contains(m)),
    );
    assert!(
        missing.is_empty(),
        "modules declared in lib.rs and in the crate map differ: {missing:?}"
    );
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut upward = Vec::new();
    for file in files {
        let relative = file.strip_prefix(&src).expect("under src");
        let first = relative
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .unwrap_or_default();
        let own = first.trim_end_matches(".rs");
        if own == "main" || relative.file_name().is_some_and(|f| f == "tests.rs") {
            continue;
        }
        let Some(&own_rank) = rank.get(own) else {
            panic!("{} is in no floor of the crate map", relative.display());
        };
        let text = std::fs::read_to_string(&file).expect("reading a source");
        for name in used(&code(&text)) {
            let name = if rank.contains_key(name.as_str()) {
                name
            } else {
                // An item of the crate root.
                "lib".to_string()
            };
            if name != own && rank[name.as_str()] < own_rank {
                upward.push(format!("{} uses {name}", relative.display()));
            }
        }
    }
    upward.sort();
    upward.dedup();
    assert!(
        upward.is_empty(),
        "modules that use a module above them in the crate map:\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_readme_is_a_front_door_of_at_most_300_lines_and_its_examples_run() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("reading README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines; detail goes to the files it lists"
    );
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).expect("reading lib.rs");
    for doc in ["README.md", "CLUSTER.md"] {
        let text = std::fs::read_to_string(root.join(doc)).expect("reading a doc");
        assert!(
            !text.contains("no_run") && !text.contains("rust,ignore"),
            "{doc} has an example that is not run"
        );
        assert!(
            lib.contains(&format!("#[doc = include_str!(\"../{doc}\")]")),
            "{doc}'s examples are not doctests of lib.rs"
        );
    }
}

#[test]
fn the_go_behaviour_the_fake_imitates_lives_in_the_go_module_only() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let strays: Vec<String> = files
        .iter()
        .filter(|f| !f.starts_with(src.join("go")))
        .filter(|f| {
            let text = std::fs::read_to_string(f).expect("reading a source");
            text.contains("fn go_")
        })
        .map(|f| f.strip_prefix(&src).unwrap().display().to_string())
        .collect();
    assert!(
        strays.is_empty(),
        "go_* functions outside src/go (one file per Go package there): {strays:?}"
    );
}
