//! Start-to-ready time of a fake Incus with both listeners and fresh certificates.
//!
//! `cargo bench -p fake-incus --bench startup` prints the median of 51 starts.

use std::time::{Duration, Instant};

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut samples: Vec<Duration> = runtime.block_on(async {
        let mut samples = Vec::new();
        for _ in 0..51 {
            let started = Instant::now();
            let fake = fake_incus::FakeIncus::builder()
                .https(true)
                .start()
                .await
                .expect("start");
            samples.push(started.elapsed());
            drop(fake);
        }
        samples
    });
    samples.sort();
    let median = samples[samples.len() / 2];
    println!(
        "fake-incus start-to-ready (unix + https, certificates generated): median {:.2} ms, min {:.2} ms, max {:.2} ms over {} starts",
        median.as_secs_f64() * 1e3,
        samples[0].as_secs_f64() * 1e3,
        samples[samples.len() - 1].as_secs_f64() * 1e3,
        samples.len()
    );
}
