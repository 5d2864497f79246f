//! The crate graph is the README's layer diagram: no package's normal (or build) dependencies
//! include a package drawn above it in "How the code is laid out", and every package is drawn.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The diagram's rows, top-down: each row's first column lists its crates, by package name or by
/// path (`conformance/consumer`), an optional `(path/)` after a name; `a -> b` in a row draws `a`
/// above `b`, `a, b` draws them side by side. Returns each name with its height (0 is the top).
fn drawn_layers(readme: &str) -> BTreeMap<String, usize> {
    let section = readme
        .split("## How the code is laid out")
        .nth(1)
        .expect("README has a section \"How the code is laid out\"");
    let diagram = section
        .split("```text")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the section draws its layers in a ```text block");
    let mut layers = BTreeMap::new();
    let mut height = 0;
    for row in diagram.lines().filter(|line| !line.trim().is_empty()) {
        let crates = row.split("  ").next().unwrap_or_default().trim();
        for level in crates.split(" -> ") {
            for name in level.split(',') {
                let name = name.split(" (").next().unwrap_or_default().trim();
                assert!(!name.is_empty(), "an empty crate name in the row {row:?}");
                layers.insert(name.to_owned(), height);
            }
            height += 1;
        }
    }
    layers
}

#[test]
fn no_crate_depends_on_a_crate_drawn_above_it() {
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
        .current_dir(root())
        .args([
            "metadata",
            "--offline",
            "--no-deps",
            "--format-version",
            "1",
        ])
        .output()
        .expect("cargo metadata runs");
    assert!(output.status.success(), "cargo metadata failed");
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let workspace_root = PathBuf::from(metadata["workspace_root"].as_str().expect("root"));
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let drawn = drawn_layers(&readme);

    let packages = metadata["packages"].as_array().expect("packages");
    // Each package's height: drawn by its name, or by the path of its directory.
    let mut height = BTreeMap::new();
    let mut undrawn = Vec::new();
    for package in packages {
        let name = package["name"].as_str().expect("name");
        // This crate has no code: every package depends on it to unify features (see lib.rs).
        if name == env!("CARGO_PKG_NAME") {
            continue;
        }
        let manifest = Path::new(package["manifest_path"].as_str().expect("manifest"));
        let directory = manifest
            .parent()
            .and_then(|dir| dir.strip_prefix(&workspace_root).ok())
            .map(|dir| dir.to_string_lossy().replace('\\', "/"))
            .unwrap_or_default();
        match drawn.get(name).or_else(|| drawn.get(&directory)) {
            Some(level) => {
                height.insert(name.to_owned(), *level);
            }
            None => undrawn.push(format!("{name} ({directory}/)")),
        }
    }
    assert!(
        undrawn.is_empty(),
        "packages missing from the README's layer diagram: {undrawn:?}"
    );
    assert!(height.len() >= 6, "{height:?}");

    let mut upward = Vec::new();
    for package in packages {
        let name = package["name"].as_str().expect("name");
        let Some(own) = height.get(name) else {
            continue;
        };
        for dependency in package["dependencies"].as_array().expect("dependencies") {
            if dependency["kind"].as_str() == Some("dev") {
                continue;
            }
            let target = dependency["name"].as_str().expect("dependency name");
            if let Some(theirs) = height.get(target) {
                if theirs <= own {
                    upward.push(format!(
                        "{name} depends on {target}, which is drawn {}",
                        if theirs == own {
                            "beside it"
                        } else {
                            "above it"
                        }
                    ));
                }
            }
        }
    }
    assert!(
        upward.is_empty(),
        "the crate graph contradicts the README's layers (move what both share into a crate \
         below both, or redraw the layers):\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_layer_diagram_is_read_as_drawn() {
    let layers = drawn_layers(
        "## How the code is laid out\n```text\na, b/c   top\nd (d/)   middle, with -> arrows\ne -> f   bottom\n```\n",
    );
    let expected: BTreeMap<String, usize> = [("a", 0), ("b/c", 0), ("d", 1), ("e", 2), ("f", 3)]
        .into_iter()
        .map(|(name, level)| (name.to_owned(), level))
        .collect();
    assert_eq!(layers, expected);
}
