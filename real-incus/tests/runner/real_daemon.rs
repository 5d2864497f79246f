//! The scenario engine's real-Incus target against a real daemon. It needs one, so it is
//! ignored (and reported as such) unless asked for: `ci/real-incus.sh` runs it with
//! `--ignored` once a daemon answers on `INCUS_SOCKET` (default the system socket).

use incus_conformance::scenario::load;
use incus_conformance::scenario::run::run;
use incus_conformance::scenario::target::HostTarget;
use incus_conformance::ReferenceHost;
use incus_operations::Connection;

/// Read-only portable scenarios: they change nothing on the daemon.
const READ_ONLY: &[&str] = &[
    "server_get_reports_trusted",
    "server_get_needs_read_scope",
    "project_get_unknown_is_native_404",
    "deferred_operation_is_unknown",
];

#[tokio::test]
#[ignore = "needs a real Incus daemon on INCUS_SOCKET or /var/lib/incus/unix.socket; ci/real-incus.sh runs it with --ignored"]
async fn read_only_portable_scenarios_pass_on_the_real_daemon() {
    let socket =
        std::env::var("INCUS_SOCKET").unwrap_or_else(|_| real_incus::DEFAULT_SOCKET.to_owned());
    let target = HostTarget::new(ReferenceHost::new(Connection::unix(socket)), ());
    let files = load::builtin();
    for name in READ_ONLY {
        let file = files
            .iter()
            .find(|f| f.stem == *name)
            .unwrap_or_else(|| panic!("no built-in scenario {name}"));
        let scenario = file.scenario.as_ref().expect("the scenario loads");
        assert!(scenario.portable(), "{name} is not portable");
        if let Err(failure) = run(scenario, &target).await.verdict() {
            panic!("{failure}");
        }
    }
}
