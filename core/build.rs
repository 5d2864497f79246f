//! Reads the evidence files at compile time (filled in by the evidence gate).
fn main() {
    println!("cargo:rerun-if-changed=evidence");
}
