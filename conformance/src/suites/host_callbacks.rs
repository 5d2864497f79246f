//! Host callbacks and the check order: a host whose callbacks fail, panic, hang or refuse
//! denies the call before any backend request, and the callbacks run in the spec's order,
//! after the local checks and before discovery.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::host_target::scripted;
use super::session::Session;
use crate::runner::Check;
use crate::scenario::format::FakeSetup;
use crate::scenario::host::{
    Answer, BindingBehaviour, CallbackBehaviour, ConnectionLimits, HostBehaviour, HostLog,
    RemoteSpec, RestrictedBehaviour,
};
use crate::scenario::target::TargetFactory;

/// The callback log of an in-process host; `None` over the wire, which carries only results.
type Log = Option<Arc<Mutex<HostLog>>>;

/// The bound on callbacks in these checks (the default 5 s would make a hang slow to observe).
const CALLBACK_BOUND_MS: u64 = 300;

/// The reference host's behaviour with the short callback bound and the `images` remote.
fn script() -> HostBehaviour {
    HostBehaviour {
        image_remotes: [(
            "images".to_owned(),
            RemoteSpec {
                server: "https://images.example.invalid".into(),
                protocol: "simplestreams".into(),
            },
        )]
        .into(),
        callback_timeout_ms: Some(CALLBACK_BOUND_MS),
        ..HostBehaviour::default()
    }
}

fn answering(answer: Answer) -> CallbackBehaviour {
    CallbackBehaviour { answer }
}

fn check(
    factory: &Arc<dyn TargetFactory>,
    name: &str,
    script: HostBehaviour,
    body: impl FnOnce(&Session, &Log) -> Result<(), String> + Send + 'static,
) -> Check {
    check_with(factory, name, script, FakeSetup::default(), body)
}

fn check_with(
    factory: &Arc<dyn TargetFactory>,
    name: &str,
    script: HostBehaviour,
    setup: FakeSetup,
    body: impl FnOnce(&Session, &Log) -> Result<(), String> + Send + 'static,
) -> Check {
    let main = Arc::clone(factory);
    Check::new(name, move || {
        let (factory, log) = scripted(&main, script, ConnectionLimits::default());
        let session = Session::start(&factory, &setup)?;
        body(&session, &log)
    })
}

/// The callbacks ran as `expected` (checked in-process only: the wire carries no callback log).
fn ran_as(log: &Log, expected: &[&str], why: &str) -> Result<(), String> {
    match log {
        Some(log) => {
            let seen = log.lock().unwrap_or_else(|p| p.into_inner()).calls.clone();
            if seen == expected {
                Ok(())
            } else {
                Err(format!("callbacks ran as {seen:?}: {why}"))
            }
        }
        None => Ok(()),
    }
}

/// What `authorize` was last given (in-process only).
fn authorized_input(log: &Log) -> Option<Value> {
    log.as_ref().and_then(|log| {
        log.lock()
            .unwrap_or_else(|p| p.into_inner())
            .authorized_input
            .clone()
    })
}

fn read() -> Vec<String> {
    vec!["incus.read".into()]
}

fn write() -> Vec<String> {
    vec!["incus.write".into()]
}

/// Every check of this suite: the main job runs them with a scripted host in this process, an
/// adapter run sends the host's behaviour over the wire (the callback order is then not seen).
pub(crate) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    let mut checks = Vec::new();
    for (word, answer) in [
        ("fails", Answer::Fail),
        ("refuses", Answer::Deny),
        ("panics", Answer::Crash),
        ("hangs", Answer::Hang),
    ] {
        let host = HostBehaviour {
            binding: BindingBehaviour {
                answer,
                project: None,
            },
            ..script()
        };
        checks.push(check(
            factory,
            &format!("binding::callback_failure_denies::binding_{word}"),
            host,
            |session, _| {
                session
                    .call("incus_instance_list", &read(), json!({}))
                    .refused_before_backend("binding_denied")
            },
        ));
        let host = HostBehaviour {
            authorize: answering(answer),
            ..script()
        };
        checks.push(check(
            factory,
            &format!("authorization::callback_failure_denies::authorize_{word}"),
            host,
            |session, log| {
                session
                    .call("incus_instance_list", &read(), json!({}))
                    .refused_before_backend("unauthorized")?;
                ran_as(
                    log,
                    &["binding", "authorize"],
                    "expected binding then authorize",
                )
            },
        ));
        if answer != Answer::Deny {
            let host = HostBehaviour {
                image_remote: answering(answer),
                ..script()
            };
            checks.push(check(factory, &format!("image_remote::host_approved::image_remote_{word}_is_unknown_remote"), host, |session, _| {
                let input = json!({"name": "web", "source": {"type": "image", "alias": "alpine", "remote": "images"}});
                session.call("incus_instance_create", &write(), input).refused_before_backend("unknown_remote")
            }));
        }
        let host = HostBehaviour {
            allow_restricted: RestrictedBehaviour { answer, only: None },
            ..script()
        };
        checks.push(check(
            factory,
            &format!("restricted_input::allow_callback::allow_restricted_{word}_denies"),
            host,
            |session, log| {
                let input = json!({"name": "web", "config": {"security.privileged": "true"}});
                session
                    .call("incus_instance_update", &write(), input)
                    .refused_before_backend("restricted_input")?;
                ran_as(
                    log,
                    &["allow_restricted"],
                    "restricted input comes before binding",
                )
            },
        ));
    }
    let allowing = HostBehaviour {
        allow_restricted: RestrictedBehaviour {
            answer: Answer::Allow,
            only: None,
        },
        ..script()
    };
    checks.push(check(factory, "restricted_input::allow_callback::allowed_restricted_input_runs", allowing, |session, _| {
        let create = json!({"name": "web", "source": {"type": "image", "alias": "busybox"}, "config": {"security.privileged": "true"}});
        let called = session.call("incus_instance_create", &write(), create);
        if called.result.get("status") != Some(&json!("completed")) {
            return Err(called.failure("restricted input allowed by the host did not run"));
        }
        called.schema_valid()
    }));
    // Over the wire every callback refuses, so that a callback run before the local checks
    // would show in the result; in-process the log must also be empty.
    let refusing = HostBehaviour {
        binding: BindingBehaviour {
            answer: Answer::Deny,
            project: None,
        },
        authorize: answering(Answer::Deny),
        image_remote: answering(Answer::Deny),
        ..script()
    };
    checks.push(check(
        factory,
        "check_order::sequence::local_checks_come_before_every_callback",
        refusing,
        |session, log| {
            session
                .call(
                    "incus_instance_delete",
                    &["incus.read".into()],
                    json!({"name": "web"}),
                )
                .refused_before_backend("scope_missing")?;
            session
                .call(
                    "incus_instance_delete",
                    &["incus.delete".into()],
                    json!({"name": 1}),
                )
                .refused_before_backend("invalid_input")?;
            session
                .call(
                    "incus_instance_delete",
                    &["incus.delete".into()],
                    json!({"name": "web", "confirm": "yes"}),
                )
                .refused_before_backend("confirmation_mismatch")?;
            ran_as(log, &[], "callbacks ran before the local checks refused")
        },
    ));
    checks.push(check(factory, "check_order::sequence::binding_authorize_image_remote_then_discovery", script(), |session, log| {
        let input = json!({"name": "web", "source": {"type": "image", "alias": "alpine", "remote": "images"}});
        let called = session.call("incus_instance_create", &write(), input);
        ran_as(log, &["binding", "authorize", "image_remote"], "expected binding, authorize, image_remote").map_err(|e| called.failure(&e))?;
        match called.requests.as_deref() {
            Some([first, ..]) if first.method == "GET" && first.path == "/1.0" => Ok(()),
            other => Err(called.failure(&format!("discovery (GET /1.0) must be the first backend request, got {other:?}"))),
        }
    }));
    for (word, fault) in [
        (
            "error",
            json!({"kind": "error", "status": 500, "message": "down"}),
        ),
        ("garbage", json!({"kind": "garbage_body"})),
    ] {
        let setup = FakeSetup {
            seed: None,
            faults: vec![json!({"method": "GET", "path": "/1.0", "fault": fault})],
        };
        checks.push(check_with(
            factory,
            &format!("discovery::after_authorization::discovery_{word}_is_discovery_failed"),
            script(),
            setup,
            |session, log| {
                let called = session.call("incus_instance_list", &read(), json!({}));
                called.error_is("discovery_failed")?;
                ran_as(
                    log,
                    &["binding", "authorize"],
                    "discovery comes after authorization",
                )
                .map_err(|e| called.failure(&e))
            },
        ));
    }
    let team = FakeSetup {
        seed: Some(json!({"projects": [{"name": "default"}, {"name": "team"}]})),
        faults: vec![],
    };
    let in_team = HostBehaviour {
        binding: BindingBehaviour {
            answer: Answer::Allow,
            project: Some("team".into()),
        },
        ..script()
    };
    checks.push(check_with(
        factory,
        "authorization::project_after_authorization::the_binding_project_is_authorized_then_used",
        in_team,
        team,
        |session, log| {
            let called = session.call("incus_instance_list", &read(), json!({}));
            if log.is_some() {
                let input = authorized_input(log);
                if input.as_ref().and_then(|i| i.get("project")) != Some(&json!("team")) {
                    return Err(
                        called.failure(&format!("authorize saw {input:?}, not project team"))
                    );
                }
            }
            let listed = called.requests.iter().flatten().any(|r| {
                r.path == "/1.0/instances"
                    && r.query
                        .as_deref()
                        .is_some_and(|q| q.contains("project=team"))
            });
            if listed {
                Ok(())
            } else {
                Err(called.failure("the native list did not run in the authorized project team"))
            }
        },
    ));
    checks.push(check(
        factory,
        "authorization::validated_input::authorize_sees_normalized_input",
        script(),
        |session, log| {
            session.call("incus_instance_list", &read(), json!({}));
            let input = authorized_input(log).ok_or("authorize was not called")?;
            if input.get("project") != Some(&json!("default")) {
                return Err(format!(
                    "authorize saw {input}: the native project must be filled in"
                ));
            }
            Ok(())
        },
    )
    .in_process_only(
        "reads the input the host's authorize callback was given; the wire carries only the result (the callback order checks of the other host trials are likewise in-process only)",
    ));
    checks
}
