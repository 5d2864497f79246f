//! Timeouts: every native request is bounded by the connection's timeout, the effective wait is
//! min(wait_seconds, floor(timeout / 1000) - 1), the exec duration is capped at stream_timeout
//! minus the 5 s kill grace, and the exec stream total is half of max_stream_bytes when smaller
//! than 64 MiB. These checks use the reference host on a connection with short bounds.

use std::sync::Arc;
use std::time::Duration;

use incus_operations::{Connection, Endpoint};
use serde_json::{json, Value};

use super::exec_output::start_instance;
use super::host_target::{HostFactory, HostTargets};
use super::session::Session;
use crate::runner::Check;
use crate::scenario::format::FakeSetup;
use crate::scenario::target::TargetFactory;
use crate::ReferenceHost;

/// The short connection: 3 s per request, 6 s streams (1 s exec cap), 1 MiB stream budget.
const TIMEOUT: Duration = Duration::from_secs(3);
const STREAM_TIMEOUT: Duration = Duration::from_secs(6);
const MAX_STREAM_BYTES: u64 = 1024 * 1024;

fn short_connection() -> Arc<dyn TargetFactory> {
    let hosts: HostFactory<ReferenceHost> =
        Arc::new(|connection| (ReferenceHost::new(connection), ()));
    let targets = HostTargets::new(hosts).connection(Arc::new(|socket| {
        Connection::builder(Endpoint::unix(socket))
            .timeout(TIMEOUT)
            .stream_timeout(STREAM_TIMEOUT)
            .max_stream_bytes(MAX_STREAM_BYTES)
            .build()
            .map_err(|e| format!("cannot build the short connection: {e}"))
    }));
    Arc::new(targets)
}

fn check(
    name: &str,
    faults: Vec<Value>,
    body: impl FnOnce(&Session) -> Result<(), String> + Send + 'static,
) -> Check {
    Check::new(name, move || {
        let session = Session::start(&short_connection(), &FakeSetup { seed: None, faults })?;
        body(&session)
    })
}

fn expect(called: &super::session::Called, pointer: &str, value: Value) -> Result<(), String> {
    if called.result.pointer(pointer) == Some(&value) {
        called.schema_valid()
    } else {
        Err(called.failure(&format!("expected {pointer} = {value}")))
    }
}

/// The timeout checks (main job only: they configure the reference host's connection).
pub(crate) fn checks() -> Vec<Check> {
    let never_finish = json!({"method": "POST", "path": "/1.0/instances", "which": {"nth": 1}, "fault": {"kind": "operation_never_finish"}});
    let create =
        json!({"name": "web", "source": {"type": "image", "alias": "busybox"}, "wait_seconds": 60});
    let write = vec!["incus.write".to_owned()];
    let read = vec!["incus.read".to_owned()];
    let exec = vec!["incus.exec".to_owned()];
    vec![
        check(
            "timeouts::effective_wait::wait_is_capped_by_the_connection_timeout",
            vec![never_finish],
            {
                let (create, write) = (create.clone(), write.clone());
                move |session| {
                    let called = session.call("incus_instance_create", &write, create);
                    expect(&called, "/status", json!("running"))?;
                    expect(&called, "/waited_seconds", json!(2))
                }
            },
        ),
        check(
            "timeouts::request_bound::stalled_read_is_a_timeout",
            vec![json!({"method": "GET", "path": "/1.0/instances", "fault": {"kind": "stall"}})],
            {
                let read = read.clone();
                move |session| {
                    session
                        .call("incus_instance_list", &read, json!({}))
                        .error_is("timeout")
                }
            },
        ),
        check(
            "mutation::statuses::stalled_mutation_is_uncertain",
            vec![json!({"method": "POST", "path": "/1.0/instances", "fault": {"kind": "stall"}})],
            {
                let (create, write) = (create.clone(), write.clone());
                move |session| {
                    expect(
                        &session.call("incus_instance_create", &write, create),
                        "/status",
                        json!("uncertain"),
                    )
                }
            },
        ),
        check(
            "timeouts::exec_duration_cap::exec_duration_is_capped_by_the_stream_timeout",
            vec![],
            {
                let exec = exec.clone();
                move |session| {
                    start_instance(session)?;
                    let called = session.call(
                        "incus_instance_exec",
                        &exec,
                        json!({"name": "web", "command": ["fake-hang"], "timeout_seconds": 300}),
                    );
                    expect(&called, "/timeout_seconds", json!(1))?;
                    expect(&called, "/status", json!("timed_out"))
                }
            },
        ),
        check(
            "exec::stream_total::half_of_max_stream_bytes_bounds_the_streams",
            vec![],
            move |session| {
                start_instance(session)?;
                let called = session.call(
                    "incus_instance_exec",
                    &exec,
                    json!({"name": "web", "command": ["fake-flood", "stdout", "forever"]}),
                );
                expect(&called, "/status", json!("output_limited"))?;
                match called
                    .result
                    .pointer("/stdout/bytes")
                    .and_then(Value::as_u64)
                {
                    Some(bytes) if bytes >= MAX_STREAM_BYTES / 2 => Ok(()),
                    other => Err(called.failure(&format!(
                        "stdout.bytes is {other:?}, expected at least {}",
                        MAX_STREAM_BYTES / 2
                    ))),
                }
            },
        ),
    ]
}
