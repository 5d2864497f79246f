//! `safety::*` trials of what reads hand an agent beyond credentials: names that go into a URL path
//! mean themselves after Incus decodes them, exec sessions' environment and command, the guest's
//! data (`environment.*`, cloud-init), credentials in URLs however they are spelled, and `used_by`
//! entries of projects the host does not show the caller. See the parent module.
//!
//! Each attack is what Incus 6.0.4 and 7.0 really do (checked on both daemons): a snapshot's path
//! segment is decoded twice (`GET .../snapshots/s%2531` reads `s1`), every other name once; an exec
//! operation's metadata holds the session's `command` and `environment` as sent; instance and
//! profile config hold `environment.*` and cloud-init values as set; a network or a profile shared
//! with another project lists that project's instances in `used_by`.

use std::sync::Arc;

use incus_operations::{Binding, BindingContext, Connection, Host, HostError, REDACTED};
use serde_json::{json, Value};

use super::secrets::{carries, scopes, seeded, sent_besides_discovery};
use crate::runner::Check;
use crate::scenario::format::FakeSetup;
use crate::scenario::target::TargetFactory;
use crate::suites::host_target::{HostFactory, HostTargets};
use crate::suites::session::{Called, Session};

const READ: &str = "incus.read";
const WRITE: &str = "incus.write";
const EXEC: &str = "incus.exec";
const DELETE: &str = "incus.delete";

/// The trials of this group.
pub(crate) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    vec![
        seeded(
            "safety::path_names_mean_themselves::a_snapshot_name_with_percent_or_plus_is_refused_before_any_request",
            factory,
            json!({"instances": [{"name": "c1", "status": "Stopped",
                "snapshots": [{"name": "s1"}, {"name": "s2"}]}]}),
            snapshot_names_decoded_twice,
        ),
        seeded(
            "safety::path_names_mean_themselves::names_decoded_once_reach_only_the_object_they_name",
            factory,
            json!({
                "profiles": [{"project": "default", "name": "default"}, {"project": "default", "name": "p1"}],
                "networks": [{"name": "lo", "type": "loopback"},
                             {"name": "br1", "type": "bridge", "managed": true}],
                "storage_pools": [{"name": "default", "driver": "dir"}],
                "storage_volumes": [{"pool": "default", "project": "default", "name": "v1"}],
            }),
            names_decoded_once,
        ),
        seeded(
            "safety::exec_sessions_redacted::another_sessions_environment_and_command_reach_no_reader_without_exec",
            factory,
            json!({"instances": [{"name": "c1", "status": "Running"}]}),
            another_exec_session,
        ),
        seeded(
            "safety::exec_sessions_redacted::an_exec_result_carries_its_operation_without_environment_values",
            factory,
            json!({"instances": [{"name": "c1", "status": "Running"}]}),
            own_exec_session,
        ),
        seeded(
            "safety::guest_data_redacted::environment_and_cloud_init_values_reach_only_callers_with_exec",
            factory,
            guest_data_seed(),
            guest_data,
        ),
        seeded(
            "safety::server_credentials_redacted::a_url_whose_password_holds_a_delimiter_is_replaced_whole",
            factory,
            json!({"server_config": SPELLED_URLS
                .iter()
                .map(|(key, url, _)| ((*key).to_owned(), json!(url)))
                .collect::<serde_json::Map<String, Value>>()}),
            spelled_urls,
        ),
        Check::new(
            "safety::used_by_of_visible_projects::another_projects_resources_are_left_out_by_default",
            || used_by_seen_from_default(&[], false),
        ),
        Check::new(
            "safety::used_by_of_visible_projects::another_projects_resources_are_kept_when_the_host_shows_that_project",
            || used_by_seen_from_default(&["other"], true),
        ),
    ]
}

/// Finding 7: `{"snapshot": "s%31", "confirm": "c1/s%31"}` deleted `c1/s1` on both real daemons.
fn snapshot_names_decoded_twice(session: &Session) -> Result<(), String> {
    let attacks = [
        (
            "incus_instance_snapshot_delete",
            DELETE,
            json!({"instance": "c1", "snapshot": "s%31", "confirm": "c1/s%31"}),
        ),
        (
            "incus_instance_snapshot_delete",
            DELETE,
            json!({"instance": "c1", "snapshot": "s2+", "confirm": "c1/s2+"}),
        ),
        (
            "incus_instance_snapshot_restore",
            DELETE,
            json!({"instance": "c1", "snapshot": "s%31", "confirm": "c1/s%31"}),
        ),
        (
            "incus_instance_snapshot_get",
            READ,
            json!({"instance": "c1", "snapshot": "s%31"}),
        ),
        (
            "incus_instance_snapshot_create",
            WRITE,
            json!({"instance": "c1", "snapshot": "s%32"}),
        ),
    ];
    for (operation, scope, input) in attacks {
        let called = session.call(operation, &scopes(&[scope]), input);
        called.refused_before_backend("invalid_input")?;
        if called.result.pointer("/error/pointer") != Some(&json!("/snapshot")) {
            return Err(called.failure("the refusal does not point at /snapshot"));
        }
    }
    // Both snapshots are still there, and their own names still work.
    for snapshot in ["s1", "s2"] {
        let get = session.call(
            "incus_instance_snapshot_get",
            &scopes(&[READ]),
            json!({"instance": "c1", "snapshot": snapshot}),
        );
        get.schema_valid()?;
        if get.result.pointer("/item/name") != Some(&json!(snapshot)) {
            return Err(get.failure(&format!("snapshot {snapshot} is gone")));
        }
    }
    Ok(())
}

/// Every other name that goes into a path is decoded once: `p%31` never reads `p1`.
fn names_decoded_once(session: &Session) -> Result<(), String> {
    let reads = [
        (
            "incus_profile_get",
            json!({"name": "p%31"}),
            "GET /1.0/profiles/p%2531?project=default",
        ),
        (
            "incus_network_get",
            json!({"name": "br%31"}),
            "GET /1.0/networks/br%2531?project=default",
        ),
        (
            "incus_storage_pool_get",
            json!({"pool": "d%65fault"}),
            "GET /1.0/storage-pools/d%2565fault?project=default",
        ),
        (
            "incus_storage_volume_get",
            json!({"pool": "default", "type": "custom", "name": "v%31"}),
            "GET /1.0/storage-pools/default/volumes/custom/v%2531?project=default",
        ),
    ];
    for (operation, input, request) in reads {
        let called = session.call(operation, &scopes(&[READ]), input);
        called.error_is("native")?;
        if called.result.pointer("/error/http_status") != Some(&json!(404)) {
            return Err(called.failure("expected the native 404 of a missing object"));
        }
        if let Some(sent) = called.requests.as_deref().map(sent_besides_discovery) {
            if sent != [request.to_owned()] {
                return Err(called.failure(&format!("expected exactly {request}, sent {sent:?}")));
            }
        }
    }
    Ok(())
}

const EXEC_TOKEN: &str = "env-token-5d21";
const COMMAND_TOKEN: &str = "cmd-token-9b07";

/// The exec session an operator started (as `incus exec` does), still waiting for its websockets:
/// its operation id.
fn operators_exec_session(session: &Session) -> Result<String, String> {
    let envelope = session.native(
        "POST",
        "/1.0/instances/c1/exec",
        Some(json!({
            "command": ["sh", "-c", format!("curl -H 'Authorization: {COMMAND_TOKEN}' https://api.example")],
            "environment": {"API_TOKEN": EXEC_TOKEN},
            "wait-for-websocket": true, "interactive": false,
        })),
        202,
    )?;
    envelope["metadata"]["id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("the exec answered no operation: {envelope}"))
}

/// The operation of `called` (`item`, a list's item with `id`, or `operation`) has its
/// environment's values replaced, and its command replaced unless `command_shown`.
fn exec_redacted(
    called: &Called,
    operation: Option<&Value>,
    command_shown: bool,
) -> Result<(), String> {
    called.schema_valid()?;
    let operation = operation.ok_or_else(|| called.failure("the exec operation is missing"))?;
    let metadata = &operation["metadata"];
    if metadata["environment"]["API_TOKEN"] != REDACTED || carries(&called.result, EXEC_TOKEN) {
        return Err(called.failure("the session's environment value is not redacted"));
    }
    let command = metadata["command"].as_array().cloned().unwrap_or_default();
    let hidden = !command.is_empty() && command.iter().all(|arg| arg == REDACTED);
    match (
        command_shown,
        hidden,
        carries(&called.result, COMMAND_TOKEN),
    ) {
        (false, true, false) => Ok(()),
        (true, false, true) if command[0] == "sh" => Ok(()),
        (false, ..) => Err(called.failure("the session's command reached a caller without exec")),
        (true, ..) => {
            Err(called.failure("the session's command is hidden from a caller with exec"))
        }
    }
}

/// Finding 4: an `incus.read` agent read the tokens an operator passed to another exec session.
fn another_exec_session(session: &Session) -> Result<(), String> {
    let id = operators_exec_session(session)?;
    let listed = |called: &Called| {
        called
            .result
            .pointer("/items")
            .and_then(Value::as_array)
            .and_then(|items| items.iter().find(|op| op["id"] == id.as_str()))
            .cloned()
    };
    let list = session.call("incus_operation_list", &scopes(&[READ]), json!({}));
    exec_redacted(&list, listed(&list).as_ref(), false)?;
    let get = session.call(
        "incus_operation_get",
        &scopes(&[READ]),
        json!({"operation_id": id}),
    );
    exec_redacted(&get, get.result.get("item"), false)?;
    let wait = session.call(
        "incus_operation_wait",
        &scopes(&[READ]),
        json!({"operation_id": id, "wait_seconds": 1}),
    );
    match wait.result.get("operation").filter(|op| !op.is_null()) {
        Some(operation) => exec_redacted(&wait, Some(operation), false)?,
        None if carries(&wait.result, EXEC_TOKEN) || carries(&wait.result, COMMAND_TOKEN) => {
            return Err(wait.failure("the session's secrets are in the wait's result"));
        }
        None => wait.schema_valid()?,
    }
    // A caller that may run commands sees the command, never the environment's values.
    let exec_list = session.call("incus_operation_list", &scopes(&[READ, EXEC]), json!({}));
    exec_redacted(&exec_list, listed(&exec_list).as_ref(), true)?;
    let exec_get = session.call(
        "incus_operation_get",
        &scopes(&[READ, EXEC]),
        json!({"operation_id": id}),
    );
    exec_redacted(&exec_get, exec_get.result.get("item"), true)?;
    let cancel = session.call(
        "incus_operation_cancel",
        &scopes(&[WRITE]),
        json!({"operation_id": id}),
    );
    exec_redacted(&cancel, cancel.result.get("operation"), false)
}

/// The exec operation's own result: the caller passed the environment, the result still carries
/// none of its values.
fn own_exec_session(session: &Session) -> Result<(), String> {
    let called = session.call(
        "incus_instance_exec",
        &scopes(&[EXEC]),
        json!({"name": "c1", "command": ["echo", "done"], "environment": {"API_TOKEN": EXEC_TOKEN}}),
    );
    called.schema_valid()?;
    if called.result["status"] != "completed" {
        return Err(called.failure("expected the command to complete"));
    }
    let metadata = &called.result["operation"]["metadata"];
    if metadata["environment"]["API_TOKEN"] != REDACTED || carries(&called.result, EXEC_TOKEN) {
        return Err(called.failure("the exec's own environment value is in its result"));
    }
    if metadata["command"] != json!(["echo", "done"]) {
        return Err(called.failure("the exec's own command is hidden from its caller"));
    }
    Ok(())
}

const GUEST_SECRETS: &[(&str, &str)] = &[
    ("environment.DB_PASSWORD", "db-pw-3e91"),
    (
        "cloud-init.user-data",
        "#cloud-config\npassword: ci-pw-77a0",
    ),
    ("user.vendor-data", "#cloud-config\npassword: vd-pw-12c4"),
];
const PROFILE_SECRET: (&str, &str) = ("environment.PROFILE_TOKEN", "profile-token-c5e8");

fn guest_data_seed() -> Value {
    let config: serde_json::Map<String, Value> = GUEST_SECRETS
        .iter()
        .map(|(key, value)| ((*key).to_owned(), json!(value)))
        .chain([("limits.cpu".to_owned(), json!("1"))])
        .collect();
    json!({
        "profiles": [{"project": "default", "name": "default",
            "config": {PROFILE_SECRET.0: PROFILE_SECRET.1}}],
        "instances": [{"name": "c1", "status": "Stopped", "config": config.clone(),
            "profiles": ["default"], "snapshots": [{"name": "s1", "config": config}]}],
    })
}

/// Findings 12: `environment.*` and cloud-init values went to `incus.read` as set.
fn guest_data(session: &Session) -> Result<(), String> {
    let reads = [
        ("incus_instance_get", json!({"name": "c1"})),
        ("incus_instance_list", json!({})),
        (
            "incus_instance_snapshot_get",
            json!({"instance": "c1", "snapshot": "s1"}),
        ),
        ("incus_instance_snapshot_list", json!({"instance": "c1"})),
        ("incus_profile_get", json!({"name": "default"})),
        ("incus_profile_list", json!({})),
    ];
    let secrets = GUEST_SECRETS.iter().chain([&PROFILE_SECRET]);
    for (operation, input) in reads {
        let hidden = session.call(operation, &scopes(&[READ]), input.clone());
        hidden.schema_valid()?;
        if let Some((key, _)) = secrets
            .clone()
            .find(|(_, value)| carries(&hidden.result, value))
        {
            return Err(
                hidden.failure(&format!("the value of {key} reached a caller without exec"))
            );
        }
        let profile = operation.starts_with("incus_profile");
        let plain_kept = profile || carries(&hidden.result, "\"limits.cpu\":\"1\"");
        if !carries(&hidden.result, REDACTED) || !plain_kept {
            return Err(hidden.failure("expected the keys with redacted values, others unchanged"));
        }
        let shown = session.call(operation, &scopes(&[READ, EXEC]), input);
        shown.schema_valid()?;
        let expected = if profile {
            PROFILE_SECRET.1
        } else {
            "db-pw-3e91"
        };
        if !carries(&shown.result, expected) {
            return Err(shown.failure("the guest's data is hidden from a caller with exec"));
        }
    }
    Ok(())
}

/// URL keys, each with a value that carries a password however it is spelled, and the password.
const SPELLED_URLS: &[(&str, &str, &str)] = &[
    (
        "core.proxy_http",
        "//proxy:sr-pw-a1f0@10.0.0.9:3128",
        "sr-pw-a1f0",
    ),
    (
        "core.proxy_https",
        "http://proxy:hash#pw-b2e1@10.0.0.9:3128",
        "pw-b2e1",
    ),
    (
        "loki.api.url",
        "https://loki:123/slash-pw-c3d2@loki.example",
        "slash-pw-c3d2",
    ),
    (
        "openfga.api.url",
        "https://fga:q?pw-d4c3@fga.example",
        "pw-d4c3",
    ),
];

/// Finding 11: credentials in server URLs escaped redaction when spelled scheme-relative or with
/// an unescaped `#`, `/` or `?` in the password.
fn spelled_urls(session: &Session) -> Result<(), String> {
    let called = session.call("incus_server_get", &scopes(&[READ]), json!({}));
    called.schema_valid()?;
    for (key, _, password) in SPELLED_URLS {
        if called.result.pointer(&format!("/item/config/{key}")) != Some(&json!(REDACTED))
            || carries(&called.result, password)
        {
            return Err(called.failure(&format!("{key} is not replaced whole")));
        }
    }
    Ok(())
}

/// A host that lets every caller run everything and see the projects it was built with.
struct ProjectsHost {
    connection: Connection,
    visible: Vec<String>,
}

impl Host for ProjectsHost {
    type Caller = ();

    async fn binding(&self, _: &(), _: &str) -> Result<Binding, HostError> {
        Ok(Binding::connection(
            self.connection.clone(),
            BindingContext::default(),
        ))
    }

    async fn authorize(&self, _: &(), _: &str, _: &Value) -> Result<(), HostError> {
        Ok(())
    }

    async fn may_see_project(&self, _: &(), project: &str) -> bool {
        self.visible.iter().any(|visible| visible == project)
    }
}

/// An instance of project `other` (which shares project default's networks and profiles) uses
/// the network `incusbr0` and the profile `default`.
fn shared_seed() -> Value {
    json!({
        "projects": [{"name": "default"}, {"name": "other"}],
        "networks": [{"name": "lo", "type": "loopback"},
                     {"name": "incusbr0", "type": "bridge", "managed": true}],
        "instances": [
            {"name": "mine", "project": "default", "profiles": ["default"],
             "devices": {"eth0": {"type": "nic", "network": "incusbr0"}}},
            {"name": "hidden-app", "project": "other", "profiles": ["default"],
             "devices": {"eth0": {"type": "nic", "network": "incusbr0"}}},
        ],
    })
}

/// Finding 10: `used_by` listed instance names of projects the host does not let the caller see.
/// A caller in project `default` reads the shared network, the shared profile and the projects; the
/// host shows it `visible`; `hidden-app` must be listed exactly when `shown`.
fn used_by_seen_from_default(visible: &[&str], shown: bool) -> Result<(), String> {
    let visible: Vec<String> = visible.iter().map(|p| (*p).to_owned()).collect();
    let hosts: HostFactory<ProjectsHost> = Arc::new(move |connection| {
        let host = ProjectsHost {
            connection,
            visible: visible.clone(),
        };
        (host, ())
    });
    let factory: Arc<dyn TargetFactory> = Arc::new(HostTargets::new(hosts));
    let setup = FakeSetup {
        seed: Some(shared_seed()),
        ..FakeSetup::default()
    };
    let session = Session::start(&factory, &setup)?;
    let reads = [
        ("incus_network_get", json!({"name": "incusbr0"})),
        ("incus_network_list", json!({})),
        ("incus_profile_get", json!({"name": "default"})),
        ("incus_profile_list", json!({})),
        ("incus_project_get", json!({"name": "other"})),
        ("incus_project_list", json!({})),
    ];
    for (operation, input) in reads {
        let called = session.call(operation, &scopes(&[READ]), input);
        called.schema_valid()?;
        let listed = carries(&called.result, "/1.0/instances/hidden-app?project=other");
        if listed != shown {
            return Err(called.failure(&format!(
                "project other's instance must be {} used_by",
                if shown { "in" } else { "left out of" }
            )));
        }
        let own = carries(&called.result, "/1.0/instances/mine");
        if !own && operation != "incus_project_get" {
            return Err(called.failure("the call's own project's instance is missing"));
        }
    }
    Ok(())
}
