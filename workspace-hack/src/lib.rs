//! One feature set for the dependencies that the workspace's packages share.
//!
//! Cargo resolves a dependency's features per build: `cargo build -p real-incus` alone turned on
//! fewer features of `tokio`, `serde`, `getrandom` and `regex-automata` than a workspace build, so
//! it compiled those crates, and everything above them (hyper, rustls, jsonschema, ...), a second
//! time. Every package depends on this crate, whose dependencies carry the union of the features,
//! so each build of one package reuses what any other built. This is what `cargo hakari` keeps;
//! the crate has no code of its own and is not published.
//!
//! The test `every_package_resolves_shared_dependencies_as_the_workspace_does` (in
//! `tests/workspace/features.rs`) fails when a package's own resolution differs from the workspace's, naming
//! the dependency to add here.
