//! `safety::*` trials: what results never carry (credentials, token secrets) and which
//! operations a call sees (its project's only). See the parent module.
//!
//! Each attack is what Incus 6.0.4 really does: `GET /1.0` dumps every server key that is set,
//! credentials included; a network's `bgp.peers.<peer>.password` is part of its config; a pending
//! trust token (`POST /1.0/certificates` with `token: true`) and a cluster-join token
//! (`POST /1.0/cluster/members`) are running operations of project `default` whose metadata holds
//! the token's `secret`; and `GET /1.0/operations/{id}` finds an operation of any project. The
//! setup the catalogue cannot make (a token, an operation of another project) is sent to the fake
//! directly, before the calls; each call's journal is then checked: besides discovery
//! (`GET /1.0`), nothing is sent but the documented reads.

use std::sync::Arc;

use incus_operations::{Connection, REDACTED};
use serde_json::{json, Value};

use super::super::session::{block_on_value, Called, Session};
use crate::runner::Check;
use crate::scenario::fake::native_request;
use crate::scenario::format::FakeSetup;
use crate::scenario::target::{HostTarget, Request, Target, TargetFactory};
use crate::ReferenceHost;

const READ: &[&str] = &["incus.read"];
const WRITE: &[&str] = &["incus.write"];

/// Where the fake says it listens on the network: Incus issues trust tokens only then.
const HTTPS_ADDRESS: &str = "127.0.0.1:8443";

/// Every server key that holds a credential, each with a value that must never come back, and
/// the URL keys with a password in them.
const SERVER_CREDENTIALS: &[(&str, &str)] = &[
    ("loki.auth.password", "loki-pw-6f1c"),
    ("openfga.api.token", "openfga-token-93ab"),
    (
        "network.ovn.client_key",
        "-----BEGIN EC PRIVATE KEY-----ovn-key-27d4",
    ),
    (
        "acme.provider.environment",
        "CLOUDFLARE_DNS_API_TOKEN=acme-token-55e0",
    ),
    (
        "core.proxy_http",
        "http://proxy:proxy-pw-0b7e@10.0.0.9:3128",
    ),
    (
        "core.proxy_https",
        "http://proxy:proxy-pw-4c21@10.0.0.9:3128",
    ),
    ("loki.api.url", "https://loki:loki-url-pw-8e3f@loki.example"),
    ("openfga.api.url", "https://fga:fga-url-pw-a41d@fga.example"),
];

/// Server keys that hold no credential and come back unchanged.
const SERVER_PLAIN: &[(&str, &str)] = &[
    ("loki.auth.username", "incus"),
    ("core.proxy_ignore_hosts", "localhost"),
    ("user.note", "kept"),
];

const BGP_PASSWORD: &str = "bgp-session-pw-71c9";

/// The trials of this group.
pub(crate) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    vec![
        seeded(
            "safety::server_credentials_redacted::every_credential_key_of_the_server_config_is_replaced",
            factory,
            server_seed(),
            server_credentials,
        ),
        seeded(
            "safety::network_credentials_redacted::bgp_peer_passwords_are_replaced_in_get_and_list",
            factory,
            json!({"networks": [
                {"name": "lo", "type": "loopback"},
                {"name": "incusbr0", "type": "bridge", "managed": true, "config": {
                    "ipv4.address": "10.0.3.1/24",
                    "bgp.peers.r1.address": "10.0.3.254",
                    "bgp.peers.r1.asn": "65001",
                    "bgp.peers.r1.password": BGP_PASSWORD,
                }},
            ]}),
            network_credentials,
        ),
        seeded(
            "safety::operation_secrets_redacted::a_pending_trust_token_is_listed_read_waited_and_cancelled_without_its_secret",
            factory,
            listening_seed(),
            trust_token_secret,
        ),
        Check::new(
            "safety::operation_secrets_redacted::a_cluster_join_token_is_listed_and_read_without_its_secret",
            join_token_secret,
        ),
        seeded(
            "safety::operations_of_the_project_only::get_wait_and_cancel_answer_another_projects_operation_as_unknown",
            factory,
            listening_seed(),
            other_projects_operations,
        ),
        seeded(
            "safety::operations_of_the_project_only::the_list_shows_only_the_projects_operations",
            factory,
            listening_seed(),
            list_of_the_project,
        ),
        seeded(
            "safety::operations_of_the_project_only::the_projects_own_operation_is_read_after_one_list",
            factory,
            listening_seed(),
            own_operation,
        ),
    ]
}

/// A trial on a target started with `seed`.
pub(super) fn seeded(
    name: &str,
    factory: &Arc<dyn TargetFactory>,
    seed: Value,
    body: fn(&Session) -> Result<(), String>,
) -> Check {
    let factory = Arc::clone(factory);
    Check::new(name.to_owned(), move || {
        let setup = FakeSetup {
            seed: Some(seed),
            ..FakeSetup::default()
        };
        body(&Session::start(&factory, &setup)?)
    })
}

pub(super) fn scopes(scopes: &[&str]) -> Vec<String> {
    scopes.iter().map(|s| (*s).to_owned()).collect()
}

fn server_seed() -> Value {
    let config: serde_json::Map<String, Value> = SERVER_CREDENTIALS
        .iter()
        .chain(SERVER_PLAIN)
        .map(|(key, value)| ((*key).to_owned(), json!(value)))
        .collect();
    json!({ "server_config": config })
}

fn listening_seed() -> Value {
    json!({"server_config": {"core.https_address": HTTPS_ADDRESS}})
}

/// Whether `secret` appears anywhere in the result's JSON.
pub(super) fn carries(result: &Value, secret: &str) -> bool {
    result.to_string().contains(secret)
}

/// The requests of a call other than discovery (`GET /1.0`), as `METHOD path[?query]`.
pub(super) fn sent_besides_discovery(requests: &[Request]) -> Vec<String> {
    requests
        .iter()
        .filter(|r| !(r.method == "GET" && r.path == "/1.0"))
        .map(|r| match &r.query {
            Some(query) => format!("{} {}?{query}", r.method, r.path),
            None => format!("{} {}", r.method, r.path),
        })
        .collect()
}

/// Besides discovery, the call sent exactly `expected` (in order), when the backend keeps a
/// journal.
fn sent_exactly(called: &Called, expected: &[String]) -> Result<(), String> {
    let Some(requests) = &called.requests else {
        return Ok(());
    };
    let sent = sent_besides_discovery(requests);
    if sent == expected {
        Ok(())
    } else {
        Err(called.failure(&format!(
            "expected exactly {expected:?} besides discovery, sent {sent:?}"
        )))
    }
}

fn operations_list_read(project: &str) -> String {
    format!("GET /1.0/operations?project={project}")
}

fn operation_read(id: &str, project: &str) -> String {
    format!("GET /1.0/operations/{id}?project={project}")
}

fn server_credentials(session: &Session) -> Result<(), String> {
    let called = session.call("incus_server_get", &scopes(READ), json!({}));
    called.schema_valid()?;
    let config = called
        .result
        .pointer("/item/config")
        .ok_or_else(|| called.failure("no item.config"))?;
    for (key, secret) in SERVER_CREDENTIALS {
        if config[*key] != REDACTED || carries(&called.result, secret) {
            return Err(called.failure(&format!("{key} is not replaced by {REDACTED:?}")));
        }
    }
    for (key, value) in SERVER_PLAIN {
        if config[*key] != *value {
            return Err(called.failure(&format!("{key} did not come back unchanged")));
        }
    }
    sent_exactly(&called, &[])
}

fn network_credentials(session: &Session) -> Result<(), String> {
    let get = session.call(
        "incus_network_get",
        &scopes(READ),
        json!({"name": "incusbr0"}),
    );
    get.schema_valid()?;
    let list = session.call("incus_network_list", &scopes(READ), json!({}));
    list.schema_valid()?;
    let listed = list
        .result
        .pointer("/items")
        .and_then(Value::as_array)
        .and_then(|items| items.iter().find(|n| n["name"] == "incusbr0"))
        .ok_or_else(|| list.failure("incusbr0 is not listed"))?;
    for (called, network) in [(&get, &get.result["item"]), (&list, listed)] {
        let config = &network["config"];
        if config["bgp.peers.r1.password"] != REDACTED || carries(&called.result, BGP_PASSWORD) {
            return Err(called.failure("bgp.peers.r1.password is not redacted"));
        }
        if config["bgp.peers.r1.address"] != "10.0.3.254" || config["ipv4.address"] != "10.0.3.1/24"
        {
            return Err(called.failure("other network keys did not come back unchanged"));
        }
    }
    sent_exactly(
        &get,
        &["GET /1.0/networks/incusbr0?project=default".to_owned()],
    )?;
    sent_exactly(
        &list,
        &["GET /1.0/networks?recursion=1&project=default".to_owned()],
    )
}

/// A pending trust token, issued as `incus config trust add NAME` does: its id and secret.
fn trust_token(session: &Session) -> Result<(String, String), String> {
    let envelope = session.native(
        "POST",
        "/1.0/certificates",
        Some(json!({"name": "agent-attack", "type": "client", "token": true})),
        202,
    )?;
    token_of(&envelope)
}

/// The operation id and `metadata.secret` of a token operation's 202 envelope.
fn token_of(envelope: &Value) -> Result<(String, String), String> {
    let operation = &envelope["metadata"];
    match (
        operation["id"].as_str(),
        operation["metadata"]["secret"].as_str(),
    ) {
        (Some(id), Some(secret)) if operation["class"] == "token" && secret.len() == 64 => {
            Ok((id.to_owned(), secret.to_owned()))
        }
        _ => Err(format!(
            "the token request did not answer a token operation with a secret: {envelope}"
        )),
    }
}

/// The result holds the token operation `id` with its secret replaced, and the secret nowhere.
fn token_redacted(called: &Called, operation: &Value, secret: &str) -> Result<(), String> {
    called.schema_valid()?;
    if carries(&called.result, secret) {
        return Err(called.failure("the token's secret is in the result"));
    }
    if operation["metadata"]["secret"] != REDACTED {
        return Err(called.failure(&format!(
            "the token operation's metadata.secret is not {REDACTED:?}"
        )));
    }
    Ok(())
}

fn listed<'a>(called: &'a Called, id: &str) -> Option<&'a Value> {
    called
        .result
        .pointer("/items")
        .and_then(Value::as_array)
        .and_then(|items| items.iter().find(|op| op["id"] == id))
}

fn trust_token_secret(session: &Session) -> Result<(), String> {
    let (id, secret) = trust_token(session)?;
    let list = session.call("incus_operation_list", &scopes(READ), json!({}));
    let item = listed(&list, &id).ok_or_else(|| list.failure("the token is not listed"))?;
    token_redacted(&list, item, &secret)?;
    sent_exactly(
        &list,
        &["GET /1.0/operations?recursion=1&project=default".to_owned()],
    )?;

    let get = session.call(
        "incus_operation_get",
        &scopes(READ),
        json!({"operation_id": id}),
    );
    token_redacted(&get, &get.result["item"], &secret)?;
    sent_exactly(
        &get,
        &[
            operations_list_read("default"),
            operation_read(&id, "default"),
        ],
    )?;

    let wait = session.call(
        "incus_operation_wait",
        &scopes(READ),
        json!({"operation_id": id, "wait_seconds": 1}),
    );
    wait.schema_valid()?;
    if carries(&wait.result, &secret) || wait.result["status"] != "running" {
        return Err(wait.failure("expected running, without the token's secret"));
    }

    let cancel = session.call(
        "incus_operation_cancel",
        &scopes(WRITE),
        json!({"operation_id": id}),
    );
    token_redacted(&cancel, &cancel.result["operation"], &secret)?;
    if cancel.result["status"] != "requested" {
        return Err(cancel.failure("expected the token's cancellation to be requested"));
    }
    sent_exactly(
        &cancel,
        &[
            operations_list_read("default"),
            operation_read(&id, "default"),
            format!("DELETE /1.0/operations/{id}?project=default"),
        ],
    )
}

/// A cluster of three members, the reference host bound to `m1`; `incus cluster add m4` is sent
/// to `m1`, then the operation is listed and read through the core.
fn join_token_secret() -> Result<(), String> {
    block_on_value(async {
        let fake = crate::scenario::fake::builder()
            .cluster(["m1", "m2", "m3"])
            .cluster_timings(fake_incus::ClusterTimings::fast())
            .start()
            .await
            .map_err(|e| format!("the fake cluster did not start: {e}"))?;
        let socket = fake.unix_socket().to_owned();
        let (status, envelope) = native_request(
            &fake,
            "POST",
            "/1.0/cluster/members",
            Some(json!({"server_name": "m4"})),
        )
        .await?;
        if status != 202 {
            return Err(format!(
                "incus cluster add m4 answered {status}: {envelope}"
            ));
        }
        let (id, secret) = token_of(&envelope)?;
        let host = HostTarget::new(ReferenceHost::new(Connection::unix(&socket)), ());
        let list = host
            .call("incus_operation_list", &scopes(READ), json!({}))
            .await;
        let get = host
            .call(
                "incus_operation_get",
                &scopes(READ),
                json!({"operation_id": id}),
            )
            .await;
        for (operation, result) in [
            (
                list.pointer("/items")
                    .and_then(Value::as_array)
                    .and_then(|items| items.iter().find(|op| op["id"] == id.as_str())),
                &list,
            ),
            (get.get("item"), &get),
        ] {
            let redacted = operation.is_some_and(|op| op["metadata"]["secret"] == REDACTED);
            if !redacted || carries(result, &secret) {
                return Err(format!(
                    "the join token is missing or carries its secret: {result}"
                ));
            }
        }
        Ok(())
    })
}

/// A running operation of project `other`: project `other`, then an instance create in it whose
/// operation never finishes.
fn operation_of_other(session: &Session) -> Result<String, String> {
    session.native("POST", "/1.0/projects", Some(json!({"name": "other"})), 201)?;
    session.add_fault(&json!({
        "method": "POST", "path": "/1.0/instances",
        "fault": {"kind": "operation_never_finish"}
    }))?;
    let envelope = session.native(
        "POST",
        "/1.0/instances?project=other",
        Some(json!({"name": "c1", "source": {"type": "none"},
            "devices": {"root": {"type": "disk", "path": "/", "pool": "default"}}})),
        202,
    )?;
    envelope["metadata"]["id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("the create answered no operation: {envelope}"))
}

/// A UUID no operation has.
const UNKNOWN_ID: &str = "00000000-0000-4000-8000-000000000000";

fn other_projects_operations(session: &Session) -> Result<(), String> {
    let in_other = operation_of_other(session)?;
    let (token, secret) = trust_token(session)?;
    // The attack (authorized for `default`, an operation of `other`) and its mirror
    // (authorized for `other`, the trust token of `default`).
    for (project, id) in [("default", &in_other), ("other", &token)] {
        for (operation, scopes_needed, extra) in [
            ("incus_operation_get", READ, json!({})),
            ("incus_operation_wait", READ, json!({"wait_seconds": 1})),
            ("incus_operation_cancel", WRITE, json!({})),
        ] {
            let call = |operation_id: &str| {
                let mut input = extra.clone();
                input["operation_id"] = json!(operation_id);
                input["project"] = json!(project);
                session.call(operation, &scopes(scopes_needed), input)
            };
            let unknown = call(UNKNOWN_ID);
            let foreign = call(id);
            foreign.error_is("native")?;
            if foreign.result != unknown.result {
                return Err(foreign.failure(&format!(
                    "another project's operation is not answered as an unknown one: {}",
                    unknown.result
                )));
            }
            if foreign.result.pointer("/error/http_status") != Some(&json!(404))
                || carries(&foreign.result, &secret)
            {
                return Err(foreign.failure("expected the native 404 of an unknown operation"));
            }
            sent_exactly(&foreign, &[operations_list_read(project)])?;
        }
    }
    // Nothing was cancelled: both operations still run.
    for (project, id) in [("other", &in_other), ("default", &token)] {
        let get = session.call(
            "incus_operation_get",
            &scopes(READ),
            json!({"operation_id": id, "project": project}),
        );
        if get.result.pointer("/item/status") != Some(&json!("Running")) {
            return Err(get.failure("the operation is no longer running"));
        }
    }
    Ok(())
}

fn list_of_the_project(session: &Session) -> Result<(), String> {
    let in_other = operation_of_other(session)?;
    let (token, _) = trust_token(session)?;
    for (project, own, foreign) in [("default", &token, &in_other), ("other", &in_other, &token)] {
        let list = session.call(
            "incus_operation_list",
            &scopes(READ),
            json!({"project": project}),
        );
        list.schema_valid()?;
        if listed(&list, own).is_none() || listed(&list, foreign).is_some() {
            return Err(list.failure(&format!(
                "project {project} must list {own} and not {foreign}"
            )));
        }
        sent_exactly(
            &list,
            &[format!("GET /1.0/operations?recursion=1&project={project}")],
        )?;
    }
    Ok(())
}

fn own_operation(session: &Session) -> Result<(), String> {
    let id = operation_of_other(session)?;
    let get = session.call(
        "incus_operation_get",
        &scopes(READ),
        json!({"operation_id": id, "project": "other"}),
    );
    get.schema_valid()?;
    if get.result.pointer("/item/id") != Some(&json!(id)) {
        return Err(get.failure("the project's own operation was not read"));
    }
    sent_exactly(
        &get,
        &[operations_list_read("other"), operation_read(&id, "other")],
    )?;
    let wait = session.call(
        "incus_operation_wait",
        &scopes(READ),
        json!({"operation_id": id, "project": "other", "wait_seconds": 1}),
    );
    wait.schema_valid()?;
    if wait.result["status"] != "running" {
        return Err(wait.failure("expected running"));
    }
    sent_exactly(
        &wait,
        &[
            operations_list_read("other"),
            format!("GET /1.0/operations/{id}/wait?timeout=1&project=other"),
        ],
    )
}
