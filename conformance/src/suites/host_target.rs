//! The fake backend's host targets, where the suites that build their own hosts import them, and
//! the one way a suite gets a host that behaves as it needs.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use incus_operations::Endpoint;

pub(crate) use crate::scenario::fake::{HostFactory, HostTargets};
use crate::scenario::host::{ConnectionLimits, HostBehaviour, HostLog, ScriptedHost};
use crate::scenario::target::TargetFactory;

/// Targets whose host behaves as `host`, on a connection bounded by `limits`: the run's own
/// backend when it takes its host as data (an adapter over the wire), otherwise the core with a
/// [`ScriptedHost`] in this process, whose callback log comes back too (the wire carries only
/// results, so over the wire there is no log).
pub(crate) fn scripted(
    main: &Arc<dyn TargetFactory>,
    host: HostBehaviour,
    limits: ConnectionLimits,
) -> (Arc<dyn TargetFactory>, Option<Arc<Mutex<HostLog>>>) {
    if let Some(wire) = main.with_host(&host, &limits) {
        return (wire, None);
    }
    let log = Arc::new(Mutex::new(HostLog::default()));
    let shared = Arc::clone(&log);
    let callback_timeout = host.callback_timeout_ms.map(Duration::from_millis);
    let hosts: HostFactory<ScriptedHost> = Arc::new(move |connection| {
        let host = ScriptedHost::new(connection, host.clone(), Arc::clone(&shared));
        (host, ())
    });
    let mut targets = HostTargets::new(hosts).connection(Arc::new(move |socket| {
        limits.connection(Endpoint::unix(socket))
    }));
    if let Some(bound) = callback_timeout {
        targets = targets.callback_timeout(bound);
    }
    (Arc::new(targets), Some(log))
}
