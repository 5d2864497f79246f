//! Host callbacks and the check order: a host whose callbacks fail, panic, hang or refuse
//! denies the call before any backend request, and the callbacks run in the spec's order,
//! after the local checks and before discovery.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use incus_operations::{
    Binding, BindingContext, Connection, Host, HostError, ImageRemote, RestrictedItem,
};
use serde_json::{json, Value};

use super::host_target::{HostFactory, HostTargets};
use super::session::Session;
use crate::runner::Check;
use crate::scenario::format::FakeSetup;
use crate::scenario::target::TargetFactory;

/// How a scripted callback behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Behaviour {
    /// Allows (binding: the fake's connection; image remote: a remote).
    Allow,
    /// Refuses (`HostError::Denied`; `false` for allow_restricted).
    Deny,
    /// Fails (`HostError::Failed`).
    Fail,
    /// Panics.
    Panic,
    /// Never finishes.
    Hang,
}

/// The behaviour of each callback.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Script {
    pub(crate) binding: Behaviour,
    pub(crate) authorize: Behaviour,
    pub(crate) image_remote: Behaviour,
    pub(crate) allow_restricted: Behaviour,
    /// The default project the binding's context names.
    pub(crate) project: Option<&'static str>,
}

impl Default for Script {
    fn default() -> Self {
        Self {
            binding: Behaviour::Allow,
            authorize: Behaviour::Allow,
            image_remote: Behaviour::Allow,
            allow_restricted: Behaviour::Deny,
            project: None,
        }
    }
}

/// What the callbacks saw, in order.
#[derive(Debug, Default)]
pub(crate) struct Log {
    calls: Vec<&'static str>,
    authorized_input: Option<Value>,
}

/// A host that follows a [`Script`] and logs its callbacks.
pub(crate) struct ScriptedHost {
    connection: Connection,
    script: Script,
    log: Arc<Mutex<Log>>,
}

impl ScriptedHost {
    fn record(&self, call: &'static str) -> Behaviour {
        self.log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .calls
            .push(call);
        match call {
            "binding" => self.script.binding,
            "authorize" => self.script.authorize,
            "image_remote" => self.script.image_remote,
            _ => self.script.allow_restricted,
        }
    }
}

async fn act(behaviour: Behaviour) -> Result<(), HostError> {
    match behaviour {
        Behaviour::Allow => Ok(()),
        Behaviour::Deny => Err(HostError::Denied("scripted refusal".into())),
        Behaviour::Fail => Err(HostError::Failed("scripted failure".into())),
        Behaviour::Panic => panic!("host callback {}", crate::runner::EXPECTED_PANIC),
        Behaviour::Hang => std::future::pending().await,
    }
}

impl Host for ScriptedHost {
    type Caller = ();

    async fn binding(&self, _caller: &(), _operation: &str) -> Result<Binding, HostError> {
        act(self.record("binding")).await?;
        let mut context = BindingContext::default();
        if let Some(project) = self.script.project {
            context = context.default_project(project);
        }
        Ok(Binding::connection(self.connection.clone(), context))
    }

    async fn authorize(
        &self,
        _caller: &(),
        _operation: &str,
        input: &Value,
    ) -> Result<(), HostError> {
        self.log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .authorized_input = Some(input.clone());
        act(self.record("authorize")).await
    }

    async fn image_remote(&self, _caller: &(), _name: &str) -> Result<ImageRemote, HostError> {
        act(self.record("image_remote")).await?;
        Ok(ImageRemote::new(
            "https://images.example.invalid",
            "simplestreams",
        ))
    }

    async fn allow_restricted(
        &self,
        _caller: &(),
        _operation: &str,
        _items: &[RestrictedItem],
    ) -> bool {
        act(self.record("allow_restricted")).await.is_ok()
    }
}

/// The bound on callbacks in these checks (the default 5 s would make a hang slow to observe).
const CALLBACK_BOUND: Duration = Duration::from_millis(300);

/// Targets whose hosts follow `script`, and the log of their callbacks.
pub(crate) fn scripted(script: Script) -> (Arc<dyn TargetFactory>, Arc<Mutex<Log>>) {
    let log = Arc::new(Mutex::new(Log::default()));
    let shared = Arc::clone(&log);
    let hosts: HostFactory<ScriptedHost> = Arc::new(move |connection| {
        let host = ScriptedHost {
            connection,
            script,
            log: Arc::clone(&shared),
        };
        (host, ())
    });
    (
        Arc::new(HostTargets::new(hosts).callback_timeout(CALLBACK_BOUND)),
        log,
    )
}

fn check(
    name: &str,
    script: Script,
    body: impl FnOnce(&Session, &Arc<Mutex<Log>>) -> Result<(), String> + Send + 'static,
) -> Check {
    check_with(name, script, FakeSetup::default(), body)
}

fn check_with(
    name: &str,
    script: Script,
    setup: FakeSetup,
    body: impl FnOnce(&Session, &Arc<Mutex<Log>>) -> Result<(), String> + Send + 'static,
) -> Check {
    Check::new(name, move || {
        let (factory, log) = scripted(script);
        let session = Session::start(&factory, &setup)?;
        body(&session, &log)
    })
}

fn calls(log: &Arc<Mutex<Log>>) -> Vec<&'static str> {
    log.lock().unwrap_or_else(|p| p.into_inner()).calls.clone()
}

fn read() -> Vec<String> {
    vec!["incus.read".into()]
}

fn write() -> Vec<String> {
    vec!["incus.write".into()]
}

/// Every check of this suite (they use their own scripted host, so they run in the main job only).
pub(crate) fn checks() -> Vec<Check> {
    let mut checks = Vec::new();
    for (word, behaviour) in [
        ("fails", Behaviour::Fail),
        ("refuses", Behaviour::Deny),
        ("panics", Behaviour::Panic),
        ("hangs", Behaviour::Hang),
    ] {
        let script = Script {
            binding: behaviour,
            ..Script::default()
        };
        checks.push(check(
            &format!("binding::callback_failure_denies::binding_{word}"),
            script,
            |session, _| {
                session
                    .call("incus_instance_list", &read(), json!({}))
                    .refused_before_backend("binding_denied")
            },
        ));
        let script = Script {
            authorize: behaviour,
            ..Script::default()
        };
        checks.push(check(
            &format!("authorization::callback_failure_denies::authorize_{word}"),
            script,
            |session, log| {
                session
                    .call("incus_instance_list", &read(), json!({}))
                    .refused_before_backend("unauthorized")?;
                let seen = calls(log);
                if seen != ["binding", "authorize"] {
                    return Err(format!(
                        "callbacks ran as {seen:?}, expected binding then authorize"
                    ));
                }
                Ok(())
            },
        ));
        if behaviour != Behaviour::Deny {
            let script = Script {
                image_remote: behaviour,
                ..Script::default()
            };
            checks.push(check(&format!("image_remote::host_approved::image_remote_{word}_is_unknown_remote"), script, |session, _| {
                let input = json!({"name": "web", "source": {"type": "image", "alias": "alpine", "remote": "images"}});
                session.call("incus_instance_create", &write(), input).refused_before_backend("unknown_remote")
            }));
        }
        let script = Script {
            allow_restricted: behaviour,
            ..Script::default()
        };
        checks.push(check(
            &format!("restricted_input::allow_callback::allow_restricted_{word}_denies"),
            script,
            |session, log| {
                let input = json!({"name": "web", "config": {"security.privileged": "true"}});
                session
                    .call("incus_instance_update", &write(), input)
                    .refused_before_backend("restricted_input")?;
                let seen = calls(log);
                if seen != ["allow_restricted"] {
                    return Err(format!(
                        "callbacks ran as {seen:?}: restricted input comes before binding"
                    ));
                }
                Ok(())
            },
        ));
    }
    checks.push(check("restricted_input::allow_callback::allowed_restricted_input_runs", Script { allow_restricted: Behaviour::Allow, ..Script::default() }, |session, _| {
        let create = json!({"name": "web", "source": {"type": "image", "alias": "busybox"}, "config": {"security.privileged": "true"}});
        let called = session.call("incus_instance_create", &write(), create);
        if called.result.get("status") != Some(&json!("completed")) {
            return Err(called.failure("restricted input allowed by the host did not run"));
        }
        called.schema_valid()
    }));
    checks.push(check(
        "check_order::sequence::local_checks_come_before_every_callback",
        Script::default(),
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
            let seen = calls(log);
            if !seen.is_empty() {
                return Err(format!(
                    "callbacks ran before the local checks refused: {seen:?}"
                ));
            }
            Ok(())
        },
    ));
    checks.push(check("check_order::sequence::binding_authorize_image_remote_then_discovery", Script::default(), |session, log| {
        let input = json!({"name": "web", "source": {"type": "image", "alias": "alpine", "remote": "images"}});
        let called = session.call("incus_instance_create", &write(), input);
        let seen = calls(log);
        if seen != ["binding", "authorize", "image_remote"] {
            return Err(called.failure(&format!("callbacks ran as {seen:?}")));
        }
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
            &format!("discovery::after_authorization::discovery_{word}_is_discovery_failed"),
            Script::default(),
            setup,
            |session, log| {
                let called = session.call("incus_instance_list", &read(), json!({}));
                called.error_is("discovery_failed")?;
                let seen = calls(log);
                if seen != ["binding", "authorize"] {
                    return Err(called.failure(&format!(
                        "callbacks ran as {seen:?}: discovery comes after authorization"
                    )));
                }
                Ok(())
            },
        ));
    }
    let team = FakeSetup {
        seed: Some(json!({"projects": [{"name": "default"}, {"name": "team"}]})),
        faults: vec![],
    };
    let script = Script {
        project: Some("team"),
        ..Script::default()
    };
    checks.push(check_with(
        "authorization::project_after_authorization::the_binding_project_is_authorized_then_used",
        script,
        team,
        |session, log| {
            let called = session.call("incus_instance_list", &read(), json!({}));
            let input = log
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .authorized_input
                .clone();
            if input.as_ref().and_then(|i| i.get("project")) != Some(&json!("team")) {
                return Err(called.failure(&format!("authorize saw {input:?}, not project team")));
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
        "authorization::validated_input::authorize_sees_normalized_input",
        Script::default(),
        |session, log| {
            session.call("incus_instance_list", &read(), json!({}));
            let input = log
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .authorized_input
                .clone();
            let input = input.ok_or("authorize was not called")?;
            if input.get("project") != Some(&json!("default")) {
                return Err(format!(
                    "authorize saw {input}: the native project must be filled in"
                ));
            }
            Ok(())
        },
    ));
    checks
}
