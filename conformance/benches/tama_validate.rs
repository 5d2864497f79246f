//! Times the tama-operations/1 validator on a 4 MiB document with 1024 operations.
//!
//! `cargo bench -p incus-conformance --bench tama_validate` prints the best and median of a
//! few runs of `validate_bytes` (parse included) and of `validate` (already parsed), and the
//! time `Dex::install` takes to compile every schema of the same document.

#[path = "../tests/tama/support.rs"]
mod tama_support;

use std::time::{Duration, Instant};

use incus_conformance::tama;

const RUNS: usize = 7;

fn main() {
    // `cargo test --benches` runs this too; one quick run is enough there.
    let runs = if std::env::args().any(|a| a == "--bench") {
        RUNS
    } else {
        1
    };
    let document = tama_support::large_document(4 * 1024 * 1024);
    let bytes = serde_json::to_vec(&document).expect("serializes");
    let operations = document["paths"].as_object().map_or(0, |p| p.len());

    let from_bytes = time(runs, || {
        let report = tama::validate_bytes(&bytes);
        assert!(report.is_valid(), "{:?}", report.violations().first());
    });
    let from_value = time(runs, || {
        let report = tama::validate(&document);
        assert!(report.is_valid(), "{:?}", report.violations().first());
    });
    // Installing compiles every operation's schemas (each with the 64 components it reaches).
    let install = time(1, || {
        let mut dex = tama::Dex::new();
        let executor = |_id: String, input: serde_json::Value| async move { Ok(input) };
        dex.install(document.clone(), executor).expect("installs");
    });
    println!(
        "tama validate: {} bytes, {operations} operations, {runs} runs\n  \
         validate_bytes: best {:?}, median {:?}\n  validate:       best {:?}, median {:?}\n  \
         Dex::install (compiles all schemas), 1 run: {:?}",
        bytes.len(),
        from_bytes.0,
        from_bytes.1,
        from_value.0,
        from_value.1,
        install.0
    );
}

/// Best and median wall time of `runs` calls.
fn time(runs: usize, mut run: impl FnMut()) -> (Duration, Duration) {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed()
        })
        .collect();
    times.sort();
    (times[0], times[times.len() / 2])
}
