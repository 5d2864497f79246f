//! The wheel's `fake-incus` is `fake-incus/src/main.rs` compiled in this package, and its `--help`
//! shows the compiling package's description (`#[command(about)]`): this package's must be
//! fake-incus's own, word for word, and the build fails when they differ. (Setting it through
//! `cargo:rustc-env` instead made cargo compile the program again on every build.)

use std::path::Path;

fn description(manifest: &Path) -> String {
    println!("cargo:rerun-if-changed={}", manifest.display());
    let text = std::fs::read_to_string(manifest).expect("the manifest is readable");
    text.lines()
        .find_map(|line| line.strip_prefix("description = "))
        .map(str::to_owned)
        .expect("the manifest has a one-line description")
}

fn main() {
    let fake = description(Path::new("../fake-incus/Cargo.toml"));
    let wheel = description(Path::new("Cargo.toml"));
    assert!(
        fake == wheel,
        "python/Cargo.toml's description must be fake-incus/Cargo.toml's, which `fake-incus --help` \
         shows: copy {fake} into python/Cargo.toml"
    );
}
