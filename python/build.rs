//! The wheel's `fake-incus` is `fake-incus/src/main.rs` compiled in this package, and its command
//! line takes its name and description from the package (`#[command(version, about)]`): both are
//! set to `fake-incus`'s own, so that `fake-incus --version` and `--help` read the same from the
//! wheel as from `cargo install --path fake-incus`. (`incus-conformance` names itself.)

use std::path::Path;

fn main() {
    let manifest = Path::new("../fake-incus/Cargo.toml");
    println!("cargo:rerun-if-changed={}", manifest.display());
    let text = std::fs::read_to_string(manifest).expect("../fake-incus/Cargo.toml is readable");
    let description = text
        .lines()
        .find_map(|line| line.strip_prefix("description = \""))
        .and_then(|rest| rest.strip_suffix('"'))
        .expect("fake-incus/Cargo.toml has a one-line description");
    println!("cargo:rustc-env=CARGO_PKG_NAME=fake-incus");
    println!("cargo:rustc-env=CARGO_PKG_DESCRIPTION={description}");
}
