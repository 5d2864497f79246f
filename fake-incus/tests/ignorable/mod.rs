//! Trials that a machine without the official client or a real daemon reports as ignored with
//! the reason, never as passed (shared by the test binaries that need one).

/// Runs each async trial on its own runtime; a trial that cannot run here is reported as ignored
/// with its reason (libtest-mimic), never as passed.
pub(crate) fn trial<F, Fut>(name: &str, body: F) -> libtest_mimic::Trial
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = libtest_mimic::Completion>,
{
    libtest_mimic::Trial::ignorable_test(name, move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| format!("tokio runtime: {e}"))?;
        Ok(runtime.block_on(body()))
    })
}
