//! Every package of the workspace resolves its registry dependencies with the features a workspace
//! build uses, so that building one package alone compiles nothing that another build compiled.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// `cargo tree` for `selection` (`--workspace` or `-p NAME`) over `edges` (`normal,build` as a
/// build resolves features, `normal,build,dev` as a test build does): each registry package with
/// its resolved features, one line each.
fn resolved(edges: &str, selection: &[&str]) -> BTreeSet<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .current_dir(&root)
        .args(["tree", "--offline", "--locked", "-e", edges])
        .args(["--prefix", "none", "-f", "{p} [{f}]"])
        .args(selection)
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "cargo tree {selection:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        // Registry packages only: the workspace's own are named with their path.
        .filter(|line| !line.contains(" (/") && !line.contains(" (proc-macro)"))
        .map(|line| line.trim_end_matches(" (*)").to_owned())
        .collect()
}

#[test]
fn every_package_resolves_shared_dependencies_as_the_workspace_does() {
    let metadata = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .args([
            "metadata",
            "--offline",
            "--no-deps",
            "--format-version",
            "1",
        ])
        .output()
        .expect("cargo metadata runs");
    let metadata: serde_json::Value =
        serde_json::from_slice(&metadata.stdout).expect("cargo metadata prints JSON");
    let packages: Vec<String> = metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter_map(|p| p["name"].as_str().map(str::to_owned))
        // This crate is never built alone: it only joins the others' builds.
        .filter(|name| name != env!("CARGO_PKG_NAME"))
        .collect();
    assert!(packages.len() >= 5, "{packages:?}");
    let mut differing = Vec::new();
    // `normal` alone first: with build edges, a crate that is also a build dependency is listed
    // twice (target and host), and a package's target-side resolution could match the workspace's
    // host-side one and pass unseen (fake-incus's serde_json without `float_roundtrip` did).
    for edges in ["normal", "normal,build", "normal,build,dev"] {
        let workspace = resolved(edges, &["--workspace"]);
        for package in &packages {
            for line in resolved(edges, &["-p", package]).difference(&workspace) {
                differing.push(format!("{package} ({edges}): {line}"));
            }
        }
    }
    assert!(
        differing.is_empty(),
        "resolved with other features than the workspace's (add the dependency and its features to \
         workspace-hack/Cargo.toml):\n{}",
        differing.join("\n")
    );
}
