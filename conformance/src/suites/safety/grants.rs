//! `safety::*` trials of what create, update and state changes may write: see the parent module.
//! Each attack is built from what Incus 6.0.4 does (the source files are named in the clauses
//! and in `incus_keys`); each trial asserts the verdict and the journal: nothing sent, or only the
//! documented reads, counted.

use std::sync::{Arc, Mutex};

use incus_operations::{Binding, BindingContext, Connection, Host, HostError, RestrictedItem};
use proptest::prelude::*;
use serde_json::{json, Value};

pub(super) mod incus_keys;

use crate::runner::Check;
use crate::scenario::format::FakeSetup;
use crate::scenario::target::TargetFactory;
use crate::suites::host_target::{HostFactory, HostTargets};
use crate::suites::property;
use crate::suites::session::{Called, Session};
use incus_keys::Expected;

pub(super) const WRITE: &str = "incus.write";
pub(super) const EXEC: &str = "incus.exec";
pub(super) const DELETE: &str = "incus.delete";
const READ: &str = "incus.read";

pub(super) fn scopes(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

/// A trial against a target started with `seed` (the fake's state format; missing top-level keys
/// keep their defaults).
pub(super) fn seeded(
    name: &str,
    factory: &Arc<dyn TargetFactory>,
    seed: Option<Value>,
    body: impl FnOnce(&Session) -> Result<(), String> + Send + 'static,
) -> Check {
    let factory = Arc::clone(factory);
    Check::new(name, move || {
        let setup = FakeSetup {
            seed,
            faults: Vec::new(),
        };
        let session = Session::start(&factory, &setup)?;
        body(&session)
    })
}

/// The `default` profile of a fresh daemon (root disk on pool `default`), with extra config.
pub(super) fn default_profile(config: Value) -> Value {
    json!({"name": "default", "config": config,
           "devices": {"root": {"type": "disk", "pool": "default", "path": "/"}}})
}

/// The call sent exactly these requests (method and path pattern), in this order, besides
/// discovery (`GET /1.0`, which a binding to a connection makes first).
pub(super) fn sent_exactly(called: &Called, expected: &[(&str, &str)]) -> Result<(), String> {
    let Some(requests) = &called.requests else {
        return Ok(());
    };
    let requests: Vec<_> = requests
        .iter()
        .filter(|r| !(r.method == "GET" && r.path == "/1.0"))
        .collect();
    let matches = requests.len() == expected.len()
        && requests
            .iter()
            .zip(expected)
            .all(|(request, (method, pattern))| {
                request.method == *method && fake_incus::path_matches(pattern, &request.path)
            });
    if matches {
        Ok(())
    } else {
        let seen: Vec<String> = requests
            .iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect();
        Err(called.failure(&format!(
            "expected exactly the requests {expected:?}, got {seen:?}"
        )))
    }
}

/// The instance still exists (read through the operation, with `incus.read`).
fn still_there(session: &Session, name: &str) -> Result<(), String> {
    let read = session.call(
        "incus_instance_get",
        &scopes(&[READ]),
        json!({"name": name}),
    );
    if read.error_kind().is_some() {
        return Err(read.failure(&format!("instance {name} is gone")));
    }
    Ok(())
}

/// The trials of this group.
pub(crate) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    let mut checks = ephemeral(factory);
    checks.extend(implied_profiles(factory));
    checks.extend(config_keys(factory));
    checks.extend(device_keys(factory));
    checks.extend(guest_code(factory));
    checks.extend(values_for_the_host());
    checks.push(single_object_bound(factory));
    checks
}

/// Instances `c1` (ephemeral, running, with a snapshot) and `c2` (running).
fn ephemeral_seed() -> Option<Value> {
    Some(json!({"instances": [
        {"name": "c1", "ephemeral": true, "status": "Running", "snapshots": [{"name": "snap0"}]},
        {"name": "c2", "status": "Running"}
    ]}))
}

fn ephemeral(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    vec![
        seeded(
            "safety::ephemeral_update_needs_delete::write_alone_is_refused_before_any_request",
            factory,
            ephemeral_seed(),
            |session| {
                // The attack: make c2 ephemeral, then stop it; Incus would delete it.
                session
                    .call(
                        "incus_instance_update",
                        &scopes(&[WRITE]),
                        json!({"name": "c2", "ephemeral": true}),
                    )
                    .refused_before_backend("scope_missing")?;
                let stop = session.call(
                    "incus_instance_state_update",
                    &scopes(&[WRITE]),
                    json!({"name": "c2", "action": "stop", "force": true}),
                );
                if stop.result["status"] != "completed" {
                    return Err(stop.failure("a stop of a non-ephemeral instance did not complete"));
                }
                still_there(session, "c2")
            },
        ),
        seeded(
            "safety::ephemeral_update_needs_delete::with_delete_or_to_false_it_is_sent",
            factory,
            ephemeral_seed(),
            |session| {
                let off = session.call(
                    "incus_instance_update",
                    &scopes(&[WRITE]),
                    json!({"name": "c1", "ephemeral": false}),
                );
                sent_exactly(&off, &[("GET", "/1.0/instances/c1"), ("PATCH", "/1.0/instances/c1")])?;
                let on = session.call(
                    "incus_instance_update",
                    &scopes(&[WRITE, DELETE]),
                    json!({"name": "c2", "ephemeral": true}),
                );
                if on.result["status"] != "completed" {
                    return Err(on.failure("with incus.delete the update was not sent"));
                }
                sent_exactly(&on, &[("GET", "/1.0/instances/c2"), ("PATCH", "/1.0/instances/c2")])
            },
        ),
        seeded(
            "safety::ephemeral_stop_needs_delete::stop_of_an_ephemeral_instance_is_refused_after_one_read",
            factory,
            ephemeral_seed(),
            |session| {
                for input in [
                    json!({"name": "c1", "action": "stop", "force": true}),
                    json!({"name": "c1", "action": "stop", "timeout": 30}),
                    json!({"name": "c1", "action": "stop", "stateful": true}),
                ] {
                    let stop =
                        session.call("incus_instance_state_update", &scopes(&[WRITE]), input);
                    stop.error_is("scope_missing")?;
                    sent_exactly(&stop, &[("GET", "/1.0/instances/c1")])?;
                }
                still_there(session, "c1")
            },
        ),
        seeded(
            "safety::ephemeral_stop_needs_delete::restart_and_other_actions_read_nothing",
            factory,
            ephemeral_seed(),
            |session| {
                let restart = session.call(
                    "incus_instance_state_update",
                    &scopes(&[WRITE]),
                    json!({"name": "c1", "action": "restart", "force": true}),
                );
                if restart.sent("GET", "/1.0/instances/c1") != Some(0)
                    && restart.requests.is_some()
                {
                    return Err(restart.failure("a restart read the instance"));
                }
                if restart.sent("PUT", "/1.0/instances/c1/state") == Some(0) {
                    return Err(restart.failure("the restart was not sent"));
                }
                still_there(session, "c1")?;
                // A stop of a non-ephemeral instance: the one read, then the stop.
                let stop = session.call(
                    "incus_instance_state_update",
                    &scopes(&[WRITE]),
                    json!({"name": "c2", "action": "stop", "force": true}),
                );
                if stop.sent("GET", "/1.0/instances/c2") != stop.requests.as_ref().map(|_| 1) {
                    return Err(stop.failure("expected one read of c2 before the stop"));
                }
                Ok(())
            },
        ),
        seeded(
            "safety::ephemeral_stop_needs_delete::with_delete_the_stop_is_sent_without_a_read",
            factory,
            ephemeral_seed(),
            |session| {
                let stop = session.call(
                    "incus_instance_state_update",
                    &scopes(&[WRITE, DELETE]),
                    json!({"name": "c1", "action": "stop", "force": true}),
                );
                if stop.error_kind().is_some() {
                    return Err(stop.failure("with incus.delete the stop was refused"));
                }
                if stop.sent("GET", "/1.0/instances/c1") == Some(1) {
                    return Err(stop.failure("a caller with incus.delete needs no read"));
                }
                Ok(())
            },
        ),
    ]
}

/// An image `iso-image` whose `profiles` is `["iso"]`, the profile `iso` holding a syscall key
/// (the attack reproduced on the real daemon), and the fresh `default` profile.
fn image_profiles_seed(default_config: Value) -> Option<Value> {
    let fingerprint = "b".repeat(64);
    Some(json!({
        "profiles": [
            default_profile(default_config),
            {"name": "iso", "config": {"security.syscalls.intercept.mknod": "true"}},
            {"name": "ci", "config": {"cloud-init.user-data": "#cloud-config\nruncmd: [[sh, -c, id]]"}}
        ],
        "images": [
            {"fingerprint": fingerprint, "aliases": [{"name": "iso-image"}], "profiles": ["iso"]},
            {"fingerprint": "c".repeat(64), "aliases": [{"name": "plain-image"}]}
        ]
    }))
}

fn create_from(alias: &str) -> Value {
    json!({"name": "w1", "source": {"type": "image", "alias": alias}})
}

fn implied_profiles(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    vec![
        seeded(
            "safety::implied_profiles_checked::the_image_profiles_are_read_and_refused",
            factory,
            image_profiles_seed(json!({})),
            |session| {
                let by_alias =
                    session.call("incus_instance_create", &scopes(&[WRITE]), create_from("iso-image"));
                by_alias.error_is("restricted_input")?;
                sent_exactly(
                    &by_alias,
                    &[
                        ("GET", "/1.0/images/aliases"),
                        ("GET", "/1.0/images/*"),
                        ("GET", "/1.0/profiles/iso"),
                    ],
                )?;
                let fingerprint = "b".repeat(64);
                let by_fingerprint = session.call(
                    "incus_instance_create",
                    &scopes(&[WRITE]),
                    json!({"name": "w1", "source": {"type": "image", "fingerprint": fingerprint}}),
                );
                by_fingerprint.error_is("restricted_input")?;
                sent_exactly(
                    &by_fingerprint,
                    &[("GET", "/1.0/images/*"), ("GET", "/1.0/profiles/iso")],
                )
            },
        ),
        seeded(
            "safety::implied_profiles_checked::the_default_profile_is_checked_when_the_image_names_none",
            factory,
            image_profiles_seed(json!({"raw.lxc": "lxc.apparmor.profile = unconfined"})),
            |session| {
                let called =
                    session.call("incus_instance_create", &scopes(&[WRITE]), create_from("plain-image"));
                called.error_is("restricted_input")?;
                sent_exactly(
                    &called,
                    &[
                        ("GET", "/1.0/images/aliases"),
                        ("GET", "/1.0/images/*"),
                        ("GET", "/1.0/profiles/default"),
                    ],
                )?;
                let empty = session.call(
                    "incus_instance_create",
                    &scopes(&[WRITE]),
                    json!({"name": "w2", "source": {"type": "none"}}),
                );
                empty.error_is("restricted_input")?;
                sent_exactly(&empty, &[("GET", "/1.0/profiles/default")])
            },
        ),
        seeded(
            "safety::implied_profiles_checked::the_checked_list_is_sent_explicitly",
            factory,
            image_profiles_seed(json!({})),
            |session| {
                let called =
                    session.call("incus_instance_create", &scopes(&[WRITE]), create_from("plain-image"));
                if called.result["status"] != "completed" {
                    return Err(called.failure("a create from a plain image did not complete"));
                }
                let Some(requests) = &called.requests else {
                    return Ok(());
                };
                let post = requests
                    .iter()
                    .find(|r| r.method == "POST" && r.path == "/1.0/instances")
                    .ok_or_else(|| called.failure("no create was sent"))?;
                let body: Value = serde_json::from_str(&post.body).unwrap_or_default();
                if body["profiles"] != json!(["default"]) {
                    return Err(called.failure(&format!(
                        "the create did not carry the checked profiles: {body}"
                    )));
                }
                let read = session.call("incus_instance_get", &scopes(&[READ]), json!({"name": "w1"}));
                if read.result["item"]["profiles"] != json!(["default"]) {
                    return Err(read.failure("the instance did not get the checked profiles"));
                }
                // An update without profiles keeps the instance's, and reads no profile.
                let update = session.call(
                    "incus_instance_update",
                    &scopes(&[WRITE]),
                    json!({"name": "w1", "description": "x"}),
                );
                sent_exactly(&update, &[("GET", "/1.0/instances/w1"), ("PATCH", "/1.0/instances/w1")])
            },
        ),
    ]
}

/// Calls update with one config map as `scopes` and checks the verdict the documentation gives.
fn config_verdict(session: &Session, config: Value, grant: &[&str]) -> Result<(), String> {
    let keys: Vec<&str> = config
        .as_object()
        .map(|c| c.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let restricted = keys
        .iter()
        .any(|key| incus_keys::expected_config(key) == Expected::Restricted);
    let guest_code = keys
        .iter()
        .any(|key| incus_keys::expected_config(key) == Expected::GuestCode);
    let called = session.call(
        "incus_instance_update",
        &scopes(grant),
        json!({"name": "web", "config": config}),
    );
    let exec = grant.contains(&EXEC);
    if guest_code && !exec {
        called.refused_before_backend("scope_missing")
    } else if restricted {
        called.refused_before_backend("restricted_input")
    } else {
        match called.error_kind() {
            Some("restricted_input") | Some("scope_missing") => {
                Err(called.failure("allowlisted config keys were refused"))
            }
            _ => called.schema_valid(),
        }
    }
}

fn config_keys(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    let each = Arc::clone(factory);
    vec![
        Check::new(
            "safety::config_keys_allowlisted::every_key_of_incus_list_gets_its_documented_verdict",
            move || {
                let session = Session::start(&each, &FakeSetup::default())?;
                for key in incus_keys::CONFIG_KEYS {
                    config_verdict(
                        &session,
                        json!({ *key: incus_keys::value_for(key) }),
                        &[WRITE, EXEC],
                    )?;
                }
                Ok(())
            },
        ),
        {
            let factory = Arc::clone(factory);
            Check::new(
                "safety::config_keys_allowlisted::generated_config_maps_pass_only_within_the_allowlist",
                move || {
                    let session = Session::start(&factory, &FakeSetup::default())?;
                    let keys = proptest::sample::subsequence(incus_keys::CONFIG_KEYS.to_vec(), 1..=4);
                    let grants = prop_oneof![Just(vec![WRITE]), Just(vec![WRITE, EXEC])];
                    property::check(
                        "safety::config_keys_allowlisted::generated_config_maps_pass_only_within_the_allowlist",
                        (keys, grants),
                        |(keys, grant)| {
                            let config: serde_json::Map<String, Value> = keys
                                .iter()
                                .map(|key| ((*key).to_owned(), json!(incus_keys::value_for(key))))
                                .collect();
                            config_verdict(&session, Value::Object(config), &grant)
                        },
                    )
                },
            )
        },
    ]
}

/// A device of `device_type` with these keys (the required `network`/`pool` among them or not),
/// and whether `SECURITY.md` calls it plain.
fn device(device_type: &str, keys: &[&str], host_path: bool) -> (Value, bool) {
    let mut config = serde_json::Map::new();
    config.insert("type".into(), json!(device_type));
    for key in keys {
        config.insert((*key).to_owned(), json!(incus_keys::value_for(key)));
    }
    if host_path && config.contains_key("source") {
        config.insert("source".into(), json!("/srv/data"));
    }
    let within = |allowed: &[&str]| keys.iter().all(|key| allowed.contains(key));
    let plain = match device_type {
        "nic" => keys.contains(&"network") && within(incus_keys::PLAIN_NIC),
        "disk" => {
            keys.contains(&"pool")
                && within(incus_keys::PLAIN_DISK)
                && !(host_path && keys.contains(&"source"))
        }
        _ => false,
    };
    (Value::Object(config), plain)
}

fn device_verdict(session: &Session, device: Value, plain: bool) -> Result<(), String> {
    let called = session.call(
        "incus_instance_update",
        &scopes(&[WRITE]),
        json!({"name": "web", "devices": {"dev0": device}}),
    );
    if plain {
        if called.error_kind() == Some("restricted_input") {
            return Err(called.failure("an allowlisted device was refused"));
        }
        called.schema_valid()
    } else {
        called.refused_before_backend("restricted_input")
    }
}

fn device_keys(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    let each = Arc::clone(factory);
    let generated = Arc::clone(factory);
    vec![
        Check::new(
            "safety::device_keys_allowlisted::every_nic_and_disk_key_gets_its_documented_verdict",
            move || {
                let session = Session::start(&each, &FakeSetup::default())?;
                for key in incus_keys::NIC_KEYS {
                    let (nic, plain) = device("nic", &["network", key], false);
                    device_verdict(&session, nic, plain)?;
                }
                for key in incus_keys::DISK_KEYS {
                    let (disk, plain) = device("disk", &["pool", "path", key], false);
                    device_verdict(&session, disk, plain)?;
                }
                // The host-route attack of the issue, and a host path on a pool disk.
                let routes = json!({"type": "nic", "network": "incusbr0", "ipv4.routes": "0.0.0.0/1,128.0.0.0/1"});
                device_verdict(&session, routes, false)?;
                let host =
                    json!({"type": "disk", "pool": "default", "source": "/etc", "path": "/mnt"});
                device_verdict(&session, host, false)
            },
        ),
        Check::new(
            "safety::device_keys_allowlisted::generated_device_maps_pass_only_within_the_allowlist",
            move || {
                let session = Session::start(&generated, &FakeSetup::default())?;
                let strategy = prop_oneof![
                    proptest::sample::subsequence(incus_keys::NIC_KEYS.to_vec(), 0..=4)
                        .prop_map(|keys| ("nic", keys)),
                    proptest::sample::subsequence(incus_keys::DISK_KEYS.to_vec(), 0..=5)
                        .prop_map(|keys| ("disk", keys)),
                    prop_oneof![
                        Just("gpu"),
                        Just("proxy"),
                        Just("unix-char"),
                        Just("none"),
                        Just("usb")
                    ]
                    .prop_map(|kind| (kind, Vec::new())),
                ];
                property::check(
                    "safety::device_keys_allowlisted::generated_device_maps_pass_only_within_the_allowlist",
                    (strategy, any::<bool>()),
                    |((kind, keys), host_path)| {
                        let (value, plain) = device(kind, &keys, host_path);
                        device_verdict(&session, value, plain)
                    },
                )
            },
        ),
    ]
}

fn guest_code(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    vec![
        seeded(
            "safety::guest_code_needs_exec::in_the_input_before_any_request",
            factory,
            None,
            |session| {
                for key in incus_keys::GUEST_CODE
                    .iter()
                    .chain(&["smbios11.io.systemd.credential:ssh.authorized_keys.root"])
                {
                    let config = json!({ *key: "#cloud-config\nruncmd: [[sh, -c, id]]" });
                    session
                        .call(
                            "incus_instance_create",
                            &scopes(&[WRITE]),
                            json!({"name": "w1", "source": {"type": "none"}, "config": config.clone()}),
                        )
                        .refused_before_backend("scope_missing")?;
                    session
                        .call(
                            "incus_instance_update",
                            &scopes(&[WRITE]),
                            json!({"name": "w1", "config": config.clone()}),
                        )
                        .refused_before_backend("scope_missing")?;
                    let with_exec = session.call(
                        "incus_instance_update",
                        &scopes(&[WRITE, EXEC]),
                        json!({"name": "w1", "config": config}),
                    );
                    if with_exec.error_kind() == Some("scope_missing") {
                        return Err(with_exec.failure("incus.exec did not let guest code through"));
                    }
                }
                Ok(())
            },
        ),
        seeded(
            "safety::guest_code_needs_exec::in_the_profiles_the_call_applies_after_their_reads",
            factory,
            {
                let mut seed = image_profiles_seed(json!({})).unwrap_or_default();
                seed["instances"] = json!([{"name": "c1"}]);
                Some(seed)
            },
            |session| {
                let update = session.call(
                    "incus_instance_update",
                    &scopes(&[WRITE]),
                    json!({"name": "c1", "profiles": ["default", "ci"]}),
                );
                update.error_is("scope_missing")?;
                sent_exactly(
                    &update,
                    &[
                        ("GET", "/1.0/profiles/default"),
                        ("GET", "/1.0/profiles/ci"),
                    ],
                )?;
                let create = session.call(
                    "incus_instance_create",
                    &scopes(&[WRITE]),
                    json!({"name": "w1", "source": {"type": "none"}, "profiles": ["default", "ci"]}),
                );
                create.error_is("scope_missing")?;
                sent_exactly(
                    &create,
                    &[
                        ("GET", "/1.0/profiles/default"),
                        ("GET", "/1.0/profiles/ci"),
                    ],
                )
            },
        ),
    ]
}

/// A host that allows exactly the restricted items it was given, and records what it was asked.
pub(super) struct ExactHost {
    pub(super) connection: Connection,
    pub(super) allowed: Vec<RestrictedItem>,
    pub(super) seen: Arc<Mutex<Vec<RestrictedItem>>>,
}

impl Host for ExactHost {
    type Caller = ();

    async fn binding(&self, _caller: &(), _operation: &str) -> Result<Binding, HostError> {
        Ok(Binding::connection(
            self.connection.clone(),
            BindingContext::default(),
        ))
    }

    async fn authorize(&self, _: &(), _: &str, _: &Value) -> Result<(), HostError> {
        Ok(())
    }

    async fn allow_restricted(&self, _: &(), _: &str, items: &[RestrictedItem]) -> bool {
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(items.iter().cloned());
        items.iter().all(|item| self.allowed.contains(item))
    }
}

fn values_for_the_host() -> Vec<Check> {
    let data = json!({"type": "disk", "source": "/srv/data", "path": "/data"});
    vec![Check::new(
        "safety::allow_restricted_sees_values::a_host_allows_one_exact_host_path",
        move || {
            let seen = Arc::new(Mutex::new(Vec::new()));
            let allowed = vec![RestrictedItem::device("data", data.clone())];
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
            let session = Session::start(&factory, &FakeSetup::default())?;
            let create = |device: Value| {
                session.call(
                    "incus_instance_create",
                    &scopes(&[WRITE]),
                    json!({"name": "w1", "source": {"type": "none"}, "devices": {"data": device}}),
                )
            };
            let other = json!({"type": "disk", "source": "/srv/other", "path": "/data"});
            create(other.clone()).refused_before_backend("restricted_input")?;
            let parent = json!({"type": "disk", "source": "/srv/data/..", "path": "/data"});
            create(parent).refused_before_backend("restricted_input")?;
            let config = session.call(
                "incus_instance_update",
                &scopes(&[WRITE]),
                json!({"name": "w1", "config": {"raw.lxc": "lxc.mount.auto = sys:rw"}}),
            );
            config.refused_before_backend("restricted_input")?;
            let allowed = create(data.clone());
            if allowed.error_kind() == Some("restricted_input") {
                return Err(allowed.failure("the host's one allowed host path was refused"));
            }
            let seen = seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let expected = [
                RestrictedItem::device("data", other),
                RestrictedItem::config_key("raw.lxc", json!("lxc.mount.auto = sys:rw")),
                RestrictedItem::device("data", data.clone()),
            ];
            if expected.iter().all(|item| seen.contains(item)) {
                Ok(())
            } else {
                Err(format!(
                    "allow_restricted did not see the items with their values: {seen:?}"
                ))
            }
        },
    )]
}

/// Finding 9 of the safety issue: a single object over the bound is reported as one object.
fn single_object_bound(factory: &Arc<dyn TargetFactory>) -> Check {
    let big = "x".repeat(300 * 1024);
    seeded(
        "inspection::truncation::a_single_object_over_the_bound_is_named_as_one_object",
        factory,
        Some(json!({"instances": [{"name": "big", "config": {"user.blob": big}}]})),
        |session| {
            let called = session.call(
                "incus_instance_get",
                &scopes(&[READ]),
                json!({"name": "big"}),
            );
            called.error_is("output_limit")?;
            let message = called.result["error"]["message"]
                .as_str()
                .unwrap_or_default();
            if message.contains("list") || !message.contains("object") {
                return Err(called.failure("the message does not describe a single object"));
            }
            Ok(())
        },
    )
}
