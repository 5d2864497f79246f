//! `safety::*` trials of the value rules: what a config value, a device name or a device field may
//! be, the writes that do not look like writes (restore, ephemeral on create, profiles), the nic's
//! network, and the keys of a newer Incus line judged by the server's API extensions.
//!
//! The inputs refused before any request and the benign values of each rule are data,
//! `conformance/data/safety-values.json` ([`value_cases`]), so that a runner against a real daemon
//! runs the same list; the trials here that need seeded state (profiles, snapshots, networks) or a
//! server of another line build it in the fake.

use std::sync::{Arc, Mutex};

use incus_operations::RestrictedItem;
use serde_json::{json, Value};

use super::grants::{
    default_profile, scopes, seeded, sent_exactly, ExactHost, DELETE, EXEC, WRITE,
};
use crate::runner::Check;
use crate::scenario::format::FakeSetup;
use crate::scenario::target::TargetFactory;
use crate::suites::host_target::{HostFactory, HostTargets};
use crate::suites::session::{Called, Session};

/// The cases of `conformance/data/safety-values.json`.
const VALUE_CASES: &str = include_str!("../../../data/safety-values.json");

/// Every case of the value rules as data: `{"rule", "label", "operation", "scopes", "input",
/// "expect", "harm"?}`, `expect` one of `invalid_input`, `scope_missing`, `restricted_input`
/// (refused before any request) or `sent` (a benign value that reaches Incus).
pub(crate) fn value_cases() -> Vec<Value> {
    serde_json::from_str::<Value>(VALUE_CASES)
        .ok()
        .and_then(|doc| doc.get("cases").and_then(Value::as_array).cloned())
        .unwrap_or_default()
}

/// An instance `c1` to update.
fn instance_seed() -> Value {
    json!({"instances": [{"name": "c1"}]})
}

/// Whether a call reached Incus with a change (a create, update or restore request).
fn mutated(called: &Called) -> Option<bool> {
    called.requests.as_ref().map(|requests| {
        requests
            .iter()
            .any(|r| matches!(r.method.as_str(), "POST" | "PATCH" | "PUT"))
    })
}

/// One case of the data: refused before any request with its kind, or sent.
fn run_case(session: &Session, case: &Value) -> Result<(), String> {
    let text = |key: &str| case.get(key).and_then(Value::as_str).unwrap_or_default();
    let grant: Vec<String> = case
        .get("scopes")
        .and_then(Value::as_array)
        .map(|s| {
            s.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let input = case.get("input").cloned().unwrap_or(Value::Null);
    let called = session.call(text("operation"), &grant, input);
    let label = text("label");
    match text("expect") {
        "sent" => {
            if matches!(
                called.error_kind(),
                Some("invalid_input" | "scope_missing" | "restricted_input")
            ) || mutated(&called) == Some(false)
            {
                return Err(called.failure(&format!("benign case {label:?} was not sent")));
            }
            called.schema_valid()
        }
        kind => called
            .refused_before_backend(kind)
            .map_err(|e| format!("case {label:?}: {e}")),
    }
}

/// The cases of one rule, each on a fresh fake (a sent case changes the instance).
fn cases_of(factory: &Arc<dyn TargetFactory>, name: &str, rule: &'static str) -> Check {
    let factory = Arc::clone(factory);
    Check::new(name, move || {
        let cases: Vec<Value> = value_cases()
            .into_iter()
            .filter(|case| case.get("rule").and_then(Value::as_str) == Some(rule))
            .collect();
        if cases.is_empty() {
            return Err(format!("no case of {rule} in safety-values.json"));
        }
        let setup = FakeSetup {
            seed: Some(instance_seed()),
            faults: Vec::new(),
        };
        let session = Session::start(&factory, &setup)?;
        for case in &cases {
            run_case(&session, case)?;
        }
        Ok(())
    })
}

/// The trials of this group.
pub(crate) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    let mut checks = vec![
        cases_of(
            factory,
            "safety::snapshot_pattern_grammar::a_pattern_outside_the_grammar_is_refused_before_any_request",
            "safety::snapshot_pattern_grammar",
        ),
        cases_of(
            factory,
            "safety::device_names_by_incus_7::names_in_the_input_are_refused_before_any_request",
            "safety::device_names_by_incus_7",
        ),
        cases_of(
            factory,
            "safety::guest_code_needs_exec::environment_variables_are_guest_code",
            "safety::guest_code_needs_exec",
        ),
        cases_of(
            factory,
            "safety::host_impact_bounded::values_past_the_bound_are_restricted_before_any_request",
            "safety::host_impact_bounded",
        ),
        cases_of(
            factory,
            "safety::config_values_checked::hostile_values_are_refused_before_any_request",
            "safety::config_values_checked",
        ),
        cases_of(
            factory,
            "safety::device_values_checked::hostile_fields_are_refused_before_any_request",
            "safety::device_values_checked",
        ),
        cases_of(
            factory,
            "safety::ephemeral_create_needs_delete::write_alone_is_refused_before_any_request",
            "safety::ephemeral_create_needs_delete",
        ),
    ];
    checks.extend(pattern(factory));
    checks.extend(applied_device_names(factory));
    checks.push(host_allows_a_value());
    checks.extend(nic_networks(factory));
    checks.extend(restore(factory));
    checks.extend(extensions(factory));
    checks
}

fn pattern(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    vec![
        seeded(
            "safety::snapshot_pattern_grammar::an_unnamed_snapshot_reads_the_instance_pattern_first",
            factory,
            Some(json!({"instances": [
                // Set by an operator on the daemon, past the core.
                {"name": "c1", "config": {"snapshots.pattern": ".."}},
                {"name": "c2", "config": {"snapshots.pattern": "auto-%d"}}
            ]})),
            |session| {
                let unnamed = session.call(
                    "incus_instance_snapshot_create",
                    &scopes(&[WRITE]),
                    json!({"instance": "c1"}),
                );
                unnamed.error_is("restricted_input")?;
                sent_exactly(&unnamed, &[("GET", "/1.0/instances/c1")])?;
                let named = session.call(
                    "incus_instance_snapshot_create",
                    &scopes(&[WRITE]),
                    json!({"instance": "c1", "snapshot": "s1"}),
                );
                if named.sent("GET", "/1.0/instances/c1") != named.requests.as_ref().map(|_| 0) {
                    return Err(named.failure("a named snapshot read the instance"));
                }
                if named.result["status"] != "completed" {
                    return Err(named.failure("a named snapshot was not created"));
                }
                let benign = session.call(
                    "incus_instance_snapshot_create",
                    &scopes(&[WRITE]),
                    json!({"instance": "c2"}),
                );
                if benign.result["status"] != "completed" {
                    return Err(benign.failure("an unnamed snapshot with a safe pattern failed"));
                }
                sent_exactly(
                    &benign,
                    &[
                        ("GET", "/1.0/instances/c2"),
                        ("POST", "/1.0/instances/c2/snapshots"),
                        ("GET", "/1.0/operations/*/wait"),
                    ],
                )
            },
        ),
        seeded(
            "safety::snapshot_pattern_grammar::a_pattern_from_a_profile_is_restricted_after_its_read",
            factory,
            Some(json!({
                "instances": [{"name": "c1"}],
                "profiles": [default_profile(json!({})), {"name": "pat", "config": {"snapshots.pattern": ".."}}]
            })),
            |session| {
                let called = session.call(
                    "incus_instance_update",
                    &scopes(&[WRITE]),
                    json!({"name": "c1", "profiles": ["default", "pat"]}),
                );
                called.error_is("restricted_input")?;
                sent_exactly(
                    &called,
                    &[("GET", "/1.0/profiles/default"), ("GET", "/1.0/profiles/pat")],
                )
            },
        ),
    ]
}

/// A disk on the default pool, mounted at `path`.
fn pool_disk(path: &str) -> Value {
    json!({"type": "disk", "pool": "default", "source": "vol1", "path": path})
}

fn applied_device_names(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    vec![seeded(
        "safety::device_names_by_incus_7::profiles_and_restored_snapshots_are_judged_after_their_reads",
        factory,
        Some(json!({
            "instances": [{"name": "c1", "snapshots": [
                {"name": "s0", "devices": {"x/../../../../var/log/auth": pool_disk("/mnt")}}
            ]}],
            "profiles": [default_profile(json!({})), {"name": "slash", "devices": {"/mnt/v3": pool_disk("/mnt/v3")}}]
        })),
        |session| {
            let update = session.call(
                "incus_instance_update",
                &scopes(&[WRITE]),
                json!({"name": "c1", "profiles": ["default", "slash"]}),
            );
            update.error_is("restricted_input")?;
            sent_exactly(
                &update,
                &[("GET", "/1.0/profiles/default"), ("GET", "/1.0/profiles/slash")],
            )?;
            let restore = session.call(
                "incus_instance_snapshot_restore",
                &scopes(&[DELETE]),
                json!({"instance": "c1", "snapshot": "s0", "confirm": "c1/s0"}),
            );
            restore.error_is("restricted_input")?;
            sent_exactly(
                &restore,
                &[
                    ("GET", "/1.0/instances/c1/snapshots/s0"),
                    ("GET", "/1.0/profiles/default"),
                ],
            )
        },
    )]
}

/// A host may allow one exact value past a bound: `allow_restricted` sees it.
fn host_allows_a_value() -> Check {
    Check::new(
        "safety::host_impact_bounded::a_host_allows_one_exact_value_past_the_bound",
        || {
            let seen = Arc::new(Mutex::new(Vec::new()));
            let allowed = vec![RestrictedItem::config_key(
                "boot.host_shutdown_timeout",
                json!("600"),
            )];
            let log = Arc::clone(&seen);
            let hosts: HostFactory<ExactHost> = Arc::new(move |connection| {
                let host = ExactHost {
                    connection,
                    allowed: allowed.clone(),
                    seen: Arc::clone(&log),
                };
                (host, ())
            });
            let factory: Arc<dyn TargetFactory> = Arc::new(HostTargets::new(hosts));
            let setup = FakeSetup {
                seed: Some(instance_seed()),
                faults: Vec::new(),
            };
            let session = Session::start(&factory, &setup)?;
            let update = |value: &str| {
                session.call(
                    "incus_instance_update",
                    &scopes(&[WRITE]),
                    json!({"name": "c1", "config": {"boot.host_shutdown_timeout": value}}),
                )
            };
            update("601").refused_before_backend("restricted_input")?;
            let allowed = update("600");
            if allowed.result["status"] != "completed" {
                return Err(allowed.failure("the host's one allowed value was refused"));
            }
            Ok(())
        },
    )
}

/// Networks of every kind a nic may name.
fn networks_seed() -> Value {
    let network = |name: &str, kind: &str, managed: bool| json!({"name": name, "type": kind, "managed": managed, "config": {}});
    json!({
        "instances": [{"name": "c1"}],
        "networks": [
            network("incusbr0", "bridge", true),
            network("ovn0", "ovn", true),
            network("uplink", "physical", true),
            network("mv0", "macvlan", true),
            network("sriov0", "sriov", true),
            network("eth9", "physical", false),
            network("lo", "loopback", false)
        ],
        "profiles": [
            default_profile(json!({})),
            {"name": "up", "devices": {"eth1": {"type": "nic", "network": "uplink"}}}
        ]
    })
}

fn nic_networks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    vec![
        seeded(
            "safety::nic_network_read::a_nic_on_anything_but_a_bridge_or_ovn_network_is_restricted_after_one_read",
            factory,
            Some(networks_seed()),
            |session| {
                let nic = |network: &str| json!({"type": "nic", "network": network});
                for network in ["uplink", "mv0", "sriov0", "eth9", "lo"] {
                    let called = session.call(
                        "incus_instance_update",
                        &scopes(&[WRITE]),
                        json!({"name": "c1", "devices": {"eth1": nic(network), "eth2": nic(network)}}),
                    );
                    called.error_is("restricted_input")?;
                    // Two nics on one network: one read.
                    sent_exactly(&called, &[("GET", &format!("/1.0/networks/{network}"))])?;
                }
                for network in ["incusbr0", "ovn0"] {
                    let called = session.call(
                        "incus_instance_update",
                        &scopes(&[WRITE]),
                        json!({"name": "c1", "devices": {"eth1": nic(network)}}),
                    );
                    if called.error_kind() == Some("restricted_input") {
                        return Err(called.failure("a nic on a managed bridge or OVN network was refused"));
                    }
                    if called.sent("GET", &format!("/1.0/networks/{network}")) == Some(0) {
                        return Err(called.failure("the nic's network was not read"));
                    }
                }
                Ok(())
            },
        ),
        seeded(
            "safety::nic_network_read::a_nic_from_a_profile_is_judged_after_its_read",
            factory,
            Some(networks_seed()),
            |session| {
                let called = session.call(
                    "incus_instance_update",
                    &scopes(&[WRITE]),
                    json!({"name": "c1", "profiles": ["default", "up"]}),
                );
                called.error_is("restricted_input")?;
                sent_exactly(
                    &called,
                    &[
                        ("GET", "/1.0/profiles/default"),
                        ("GET", "/1.0/profiles/up"),
                        ("GET", "/1.0/networks/uplink"),
                    ],
                )
            },
        ),
    ]
}

/// Snapshots of `c1` that bring back what a write could not set.
fn restore_seed() -> Value {
    let snapshot = |name: &str, config: Value, devices: Value| json!({"name": name, "config": config, "devices": devices});
    json!({"instances": [{"name": "c1", "snapshots": [
        snapshot("priv", json!({"security.privileged": "true"}), json!({})),
        snapshot("raw", json!({"raw.lxc": "lxc.mount.auto = sys:rw"}), json!({})),
        snapshot("hostroot", json!({}), json!({"host": {"type": "disk", "source": "/", "path": "/host"}})),
        snapshot("ci", json!({"cloud-init.user-data": "#cloud-config\nruncmd: [[sh, -c, id]]"}), json!({})),
        snapshot("env", json!({"environment.BASH_ENV": "/tmp/x"}), json!({})),
        snapshot("kernel", json!({"limits.kernel.rtprio": "99"}), json!({})),
        snapshot("plain", json!({"limits.cpu": "1", "volatile.uuid": "6a0e4b8e-2f8e-4a49-a1b7-1c4b6f8d9e10"}), json!({}))
    ]}]})
}

fn restore(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    vec![
        seeded(
            "safety::restore_judged_like_a_write::a_snapshot_that_brings_back_what_a_write_could_not_set_is_refused_after_its_read",
            factory,
            Some(restore_seed()),
            |session| {
                for (snapshot, kind) in [
                    ("priv", "restricted_input"),
                    ("raw", "restricted_input"),
                    ("hostroot", "restricted_input"),
                    ("kernel", "restricted_input"),
                    ("ci", "scope_missing"),
                    ("env", "scope_missing"),
                ] {
                    let called = session.call(
                        "incus_instance_snapshot_restore",
                        &scopes(&[DELETE]),
                        json!({"instance": "c1", "snapshot": snapshot, "confirm": format!("c1/{snapshot}")}),
                    );
                    called.error_is(kind)?;
                    sent_exactly(
                        &called,
                        &[
                            ("GET", &format!("/1.0/instances/c1/snapshots/{snapshot}")),
                            ("GET", "/1.0/profiles/default"),
                        ],
                    )?;
                }
                // With incus.exec, guest code comes back.
                let with_exec = session.call(
                    "incus_instance_snapshot_restore",
                    &scopes(&[DELETE, EXEC]),
                    json!({"instance": "c1", "snapshot": "ci", "confirm": "c1/ci"}),
                );
                if with_exec.result["status"] != "completed" {
                    return Err(with_exec.failure("a restore of guest code with incus.exec failed"));
                }
                Ok(())
            },
        ),
        seeded(
            "safety::restore_judged_like_a_write::a_plain_snapshot_is_restored_after_its_read",
            factory,
            Some(restore_seed()),
            |session| {
                let called = session.call(
                    "incus_instance_snapshot_restore",
                    &scopes(&[DELETE]),
                    json!({"instance": "c1", "snapshot": "plain", "confirm": "c1/plain"}),
                );
                if called.result["status"] != "completed" {
                    return Err(called.failure("a plain snapshot was not restored"));
                }
                sent_exactly(
                    &called,
                    &[
                        ("GET", "/1.0/instances/c1/snapshots/plain"),
                        ("GET", "/1.0/profiles/default"),
                        ("PUT", "/1.0/instances/c1"),
                        ("GET", "/1.0/operations/*/wait"),
                    ],
                )
            },
        ),
    ]
}

/// The server object of the fake (of whichever Incus line the run imitates) with the API
/// extensions `with` and without those of `without`, as a `Respond` fault on `GET /1.0`: a
/// server that reports, or lacks, exactly the extensions a trial is about.
fn server_editing(session: &Session, with: &[&str], without: &[&str]) -> Result<(), String> {
    let mut envelope = session.native("GET", "/1.0", None, 200)?;
    if let Some(list) = envelope
        .pointer_mut("/metadata/api_extensions")
        .and_then(Value::as_array_mut)
    {
        list.retain(|e| {
            !e.as_str()
                .is_some_and(|e| without.contains(&e) || with.contains(&e))
        });
        list.extend(with.iter().map(|e| json!(e)));
    }
    session.add_fault(&json!({
        "method": "GET",
        "path": "/1.0",
        "fault": {"kind": "respond", "status": 200,
                  "headers": {"Content-Type": "application/json"},
                  "body": envelope.to_string()}
    }))
}

fn extensions(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    let update = |key: &str, value: &str| json!({"name": "c1", "config": {key: value}});
    vec![
        seeded(
            "safety::keys_by_server_extensions::a_key_of_a_newer_line_is_restricted_where_the_server_lacks_its_extension",
            factory,
            Some(instance_seed()),
            move |session| {
                server_editing(session, &[], &["instance_protection_start"])?;
                let called = session.call(
                    "incus_instance_update",
                    &scopes(&[WRITE]),
                    update("security.protection.start", "true"),
                );
                called.error_is("restricted_input")?;
                sent_exactly(&called, &[])?;
                let message = called.result["error"]["message"].as_str().unwrap_or_default();
                if !message.contains("instance_protection_start") {
                    return Err(called.failure("the refusal does not name the API extension"));
                }
                // Guest code of the newer line needs incus.exec on any server, before any request.
                session
                    .call("incus_instance_update", &scopes(&[WRITE]), update("oci.entrypoint", "/bin/sh"))
                    .refused_before_backend("scope_missing")
            },
        ),
        seeded(
            "safety::keys_by_server_extensions::the_same_key_passes_where_the_server_reports_it",
            factory,
            Some(instance_seed()),
            move |session| {
                server_editing(
                    session,
                    &["instance_protection_start", "disk_attached"],
                    &["instance_limits_oom"],
                )?;
                let called = session.call(
                    "incus_instance_update",
                    &scopes(&[WRITE]),
                    update("security.protection.start", "false"),
                );
                if called.error_kind() == Some("restricted_input") {
                    return Err(called.failure("a key the server reports was refused"));
                }
                if called.sent("PATCH", "/1.0/instances/c1") == Some(0) {
                    return Err(called.failure("the update was not sent"));
                }
                // Still refused: a key whose extension is not reported.
                session
                    .call("incus_instance_update", &scopes(&[WRITE]), update("limits.memory.oom_priority", "10"))
                    .error_is("restricted_input")
            },
        ),
    ]
}
