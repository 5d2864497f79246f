//! The checks `run` performs before any native call, in the spec's order; every refusal is
//! proven to have made no backend request.
//!
//! Client evidence exercised through `run`: none: every refusal here is proven to make no backend
//! request. (Exec's own bounds are tested below the evidence gate, in `core/src/run/tests.rs`.)
use crate::run_support;

use incus_operations::Scope;
use run_support::{call_with, kind, Act, Bench, ALL};
use serde_json::{json, Value};

const FINGERPRINT_LEN: usize = 64;

/// A JSON object `{"name": name, key: "x…"}` padded so that its compact form is `size` bytes.
fn padded(name: &str, key: &str, size: usize) -> Value {
    let skeleton = json!({"name": name, key: ""});
    let pad = size - serde_json::to_vec(&skeleton).unwrap().len();
    let value = json!({"name": name, key: "x".repeat(pad)});
    assert_eq!(serde_json::to_vec(&value).unwrap().len(), size);
    value
}

fn padded_config(name: &str, size: usize) -> Value {
    let skeleton = json!({"name": name, "config": {"user.pad": ""}});
    let pad = size - serde_json::to_vec(&skeleton).unwrap().len();
    json!({"name": name, "config": {"user.pad": "x".repeat(pad)}})
}

#[tokio::test]
async fn unknown_operation_is_refused_before_anything_else() {
    let bench = Bench::start().await;
    let host = bench.host();
    for name in ["incus_instance_copy", "incus_instance_rename", "nope", ""] {
        let result = call_with(&host, name, json!({}), &ALL).await;
        assert_eq!(kind(&result), "unknown_operation", "{name}: {result}");
    }
    assert!(host.callbacks().is_empty());
    assert!(bench.fake.journal().is_empty());
}

#[tokio::test]
async fn scopes_are_the_host_verified_grants_never_input() {
    let bench = Bench::start().await;
    let host = bench.host();
    let cases: [(&str, Value, &[Scope]); 4] = [
        (
            "incus_instance_list",
            json!({}),
            &[Scope::Write, Scope::Exec, Scope::Delete],
        ),
        (
            "incus_instance_list",
            json!({"scopes": ["incus.read"]}),
            &[],
        ),
        (
            "incus_instance_delete",
            json!({"name": "web", "confirm": "web"}),
            &[Scope::Read, Scope::Write],
        ),
        (
            "incus_image_delete",
            json!({"fingerprint": "a".repeat(64), "confirm": "a".repeat(64)}),
            &[Scope::Read, Scope::Write, Scope::Exec],
        ),
    ];
    for (name, input, scopes) in cases {
        let result = call_with(&host, name, input, scopes).await;
        assert_eq!(kind(&result), "scope_missing", "{name}: {result}");
    }
    assert!(host.callbacks().is_empty());
    assert!(bench.fake.journal().is_empty());
}

#[tokio::test]
async fn input_schema_failures_are_invalid_input_with_a_pointer() {
    let bench = Bench::start().await;
    let host = bench.host();
    let cases = [
        ("incus_instance_list", json!({"limit": 0}), "/limit"),
        ("incus_instance_list", json!({"limit": 501}), "/limit"),
        (
            "incus_instance_get",
            json!({"name": "web", "socket": "/srv/other/unix.socket"}),
            "",
        ),
        ("incus_instance_get", json!({"name": "a/b"}), "/name"),
        (
            "incus_instance_create",
            json!({"name": "web", "source": {"type": "image", "alias": "busybox", "server": "https://evil.example"}}),
            "/source",
        ),
        (
            "incus_operation_wait",
            json!({"operation_id": "x"}),
            "/operation_id",
        ),
        (
            "incus_operation_wait",
            json!({"operation_id": "00000000-0000-4000-8000-000000000000", "wait_seconds": 61}),
            "/wait_seconds",
        ),
        (
            "incus_instance_state_update",
            json!({"name": "web", "action": "explode"}),
            "/action",
        ),
    ];
    for (name, input, pointer) in cases {
        let result = call_with(&host, name, input, &ALL).await;
        assert_eq!(kind(&result), "invalid_input", "{name}: {result}");
        assert_eq!(result["error"]["pointer"], pointer, "{name}: {result}");
    }
    for input in [json!(null), json!([]), json!("incus_instance_list")] {
        let result = call_with(&host, "incus_instance_list", input, &ALL).await;
        assert_eq!(kind(&result), "invalid_input", "{result}");
    }
    assert!(host.callbacks().is_empty());
    assert!(bench.fake.journal().is_empty());
}

#[tokio::test]
async fn input_bounds_hold_at_the_limit_and_refuse_one_byte_past_it() {
    let bench = Bench::start().await;
    let host = bench.host();
    // Reads: 16 KiB. At the bound the input reaches the schema (and fails it on the padding).
    let at = call_with(
        &host,
        "incus_instance_get",
        padded("web", "pad", 16 * 1024),
        &ALL,
    )
    .await;
    assert_eq!(kind(&at), "invalid_input", "{at}");
    let past = call_with(
        &host,
        "incus_instance_get",
        padded("web", "pad", 16 * 1024 + 1),
        &ALL,
    )
    .await;
    assert_eq!(kind(&past), "input_too_large", "{past}");
    assert_eq!(past["error"]["limit"], 16 * 1024);
    assert!(bench.fake.journal().is_empty());
    // Mutations: 64 KiB. At the bound a valid update reaches Incus (no such instance).
    let past = call_with(
        &host,
        "incus_instance_update",
        padded_config("web", 64 * 1024 + 1),
        &ALL,
    )
    .await;
    assert_eq!(kind(&past), "input_too_large", "{past}");
    assert_eq!(past["error"]["limit"], 64 * 1024);
    assert!(bench.fake.journal().is_empty());
    let at = call_with(
        &host,
        "incus_instance_update",
        padded_config("web", 64 * 1024),
        &ALL,
    )
    .await;
    assert_eq!(kind(&at), "native", "{at}");
    assert_eq!(at["error"]["http_status"], 404, "{at}");
}

#[tokio::test]
async fn confirmation_refuses_inferred_consent_and_near_misses() {
    let bench = Bench::start().await;
    let host = bench.host();
    let fingerprint = "a".repeat(FINGERPRINT_LEN);
    let cases: Vec<(&str, Value, Vec<Value>)> = vec![
        (
            "incus_instance_delete",
            json!({"name": "web"}),
            vec![
                json!("yes"),
                json!("YES"),
                json!("Web"),
                json!(" web"),
                json!("web "),
                json!("we"),
                json!("web/"),
                json!("webx"),
                json!(""),
            ],
        ),
        (
            "incus_instance_snapshot_delete",
            json!({"instance": "web", "snapshot": "snap0"}),
            vec![
                json!("yes"),
                json!("snap0"),
                json!("web"),
                json!("web/snap"),
                json!("web/snap0 "),
                json!("WEB/snap0"),
            ],
        ),
        (
            "incus_instance_snapshot_restore",
            json!({"instance": "web", "snapshot": "snap0"}),
            vec![json!("y"), json!("web/snap1"), json!("web\\snap0")],
        ),
        (
            "incus_image_delete",
            json!({"fingerprint": fingerprint}),
            vec![
                json!("yes"),
                json!(&fingerprint[..12]),
                json!(fingerprint.to_uppercase()),
                json!(format!("{fingerprint} ")),
            ],
        ),
    ];
    for (name, input, wrong) in cases {
        let missing = call_with(&host, name, input.clone(), &ALL).await;
        assert_eq!(kind(&missing), "confirmation_required", "{name}: {missing}");
        for confirm in wrong {
            let mut input = input.clone();
            input["confirm"] = confirm.clone();
            let result = call_with(&host, name, input, &ALL).await;
            let expected = if confirm == "" {
                "invalid_input"
            } else {
                "confirmation_mismatch"
            };
            assert_eq!(
                kind(&result),
                expected,
                "{name} confirm={confirm}: {result}"
            );
        }
    }
    assert!(host.callbacks().is_empty());
    assert!(bench.fake.journal().is_empty());
}

#[tokio::test]
async fn image_delete_requires_the_full_fingerprint() {
    let bench = Bench::start().await;
    let host = bench.host();
    let prefix = "abcdef012345";
    let result = call_with(
        &host,
        "incus_image_delete",
        json!({"fingerprint": prefix, "confirm": prefix}),
        &ALL,
    )
    .await;
    assert_eq!(kind(&result), "invalid_input", "{result}");
    assert_eq!(result["error"]["pointer"], "/fingerprint");
    assert!(bench.fake.journal().is_empty());
}

#[tokio::test]
async fn exact_confirmation_reaches_incus() {
    let bench = Bench::start().await;
    let result = bench
        .call(
            "incus_instance_delete",
            json!({"name": "web", "confirm": "web"}),
        )
        .await;
    assert_eq!(kind(&result), "native", "{result}");
    assert_eq!(result["error"]["http_status"], 404);
    assert_eq!(bench.count("DELETE", "/1.0/instances/web"), 1);
}

#[tokio::test]
async fn restricted_config_keys_and_devices_are_denied_unless_the_host_allows_them() {
    let bench = Bench::start().await;
    let host = bench.host();
    let source = json!({"type": "image", "alias": "busybox"});
    let denied = [
        json!({"config": {"raw.lxc": "lxc.apparmor.profile=unconfined"}}),
        json!({"config": {"security.privileged": "true"}}),
        json!({"config": {"security.idmap.isolated": "false"}}),
        json!({"config": {"security.syscalls.intercept.mount": "true"}}),
        json!({"config": {"volatile.uuid": "x"}}),
        json!({"config": {"linux.kernel_modules": "zfs"}}),
        json!({"devices": {"host": {"type": "disk", "source": "/etc", "path": "/mnt"}}}),
        json!({"devices": {"host": {"type": "disk", "pool": "default", "source": "/etc", "path": "/mnt"}}}),
        json!({"devices": {"eth0": {"type": "nic", "nictype": "bridged", "parent": "br0"}}}),
        json!({"devices": {"eth0": {"type": "nic", "network": "incusbr0", "nictype": "macvlan"}}}),
        json!({"devices": {"gpu": {"type": "gpu"}}}),
        json!({"devices": {"u": {"type": "unix-char", "source": "/dev/kvm"}}}),
    ];
    for extra in denied {
        let mut create = json!({"name": "web", "source": source});
        let mut update = json!({"name": "web"});
        for (key, value) in extra.as_object().unwrap() {
            create[key] = value.clone();
            update[key] = value.clone();
        }
        for (name, input) in [
            ("incus_instance_create", create),
            ("incus_instance_update", update),
        ] {
            let result = call_with(&host, name, input, &ALL).await;
            assert_eq!(kind(&result), "restricted_input", "{name}: {result}");
        }
    }
    assert!(host.callbacks().iter().all(|c| *c == "allow_restricted"));
    assert!(bench.fake.journal().is_empty());
}

#[tokio::test]
async fn plain_pool_disks_and_network_nics_are_not_restricted() {
    let bench = Bench::start().await;
    let host = bench.host();
    let input = json!({
        "name": "web",
        "source": {"type": "image", "alias": "busybox"},
        "config": {"limits.cpu": "1", "user.note": "x"},
        "devices": {"data": {"type": "disk", "pool": "default", "source": "vol1", "path": "/data"}}
    });
    let result = call_with(&host, "incus_instance_create", input, &ALL).await;
    assert!(result.get("status").is_some(), "{result}");
    assert!(!host.callbacks().contains(&"allow_restricted"));
    assert_eq!(bench.count("POST", "/1.0/instances"), 1);
}

#[tokio::test]
async fn restricted_input_passes_when_the_host_allows_it() {
    let bench = Bench::start().await;
    let mut host = bench.host();
    host.restricted = Act::Allow;
    let input = json!({"name": "web", "source": {"type": "image", "alias": "busybox"}, "config": {"security.privileged": "true"}});
    let result = call_with(&host, "incus_instance_create", input, &ALL).await;
    assert_eq!(result["status"], "completed", "{result}");
    for failing in [Act::Panic, Act::Hang] {
        let mut host = bench.host();
        host.restricted = failing;
        let input = json!({"name": "web2", "source": {"type": "image", "alias": "busybox"}, "config": {"raw.lxc": "x"}});
        let result = call_with(&host, "incus_instance_create", input, &ALL).await;
        assert_eq!(kind(&result), "restricted_input", "{failing:?}: {result}");
    }
    assert_eq!(bench.count("POST", "/1.0/instances"), 1);
}

#[tokio::test]
async fn a_failing_binding_callback_denies_before_any_backend_request() {
    let bench = Bench::start().await;
    for act in [Act::Deny, Act::Panic, Act::Hang, Act::Malformed] {
        let mut host = bench.host();
        host.binding = act;
        let result = call_with(&host, "incus_instance_list", json!({}), &ALL).await;
        assert_eq!(kind(&result), "binding_denied", "{act:?}: {result}");
        assert_eq!(host.callbacks(), ["binding"], "{act:?}");
    }
    assert!(bench.fake.journal().is_empty());
}

#[tokio::test]
async fn a_failing_authorize_callback_denies_before_any_backend_request() {
    let bench = Bench::start().await;
    for act in [Act::Deny, Act::Panic, Act::Hang] {
        let mut host = bench.host();
        host.authorize = act;
        let result = call_with(
            &host,
            "incus_instance_delete",
            json!({"name": "web", "confirm": "web"}),
            &ALL,
        )
        .await;
        assert_eq!(kind(&result), "unauthorized", "{act:?}: {result}");
        assert_eq!(host.callbacks(), ["binding", "authorize"], "{act:?}");
    }
    assert!(bench.fake.journal().is_empty());
}

#[tokio::test]
async fn authorize_sees_validated_normalized_input_with_the_native_project() {
    let bench = Bench::start().await;
    let mut host = bench.host();
    call_with(&host, "incus_instance_list", json!({}), &ALL).await;
    host.default_project = Some("team".into());
    call_with(&host, "incus_instance_list", json!({"limit": 5}), &ALL).await;
    call_with(
        &host,
        "incus_instance_list",
        json!({"project": "other"}),
        &ALL,
    )
    .await;
    call_with(
        &host,
        "incus_instance_state_update",
        json!({"name": "web", "action": "start"}),
        &ALL,
    )
    .await;
    let seen = host.authorized.lock().unwrap().clone();
    assert_eq!(seen[0], json!({"limit": 100, "project": "default"}));
    assert_eq!(seen[1], json!({"limit": 5, "project": "team"}));
    assert_eq!(seen[2], json!({"limit": 100, "project": "other"}));
    assert_eq!(seen[3]["wait_seconds"], 10);
    assert_eq!(seen[3]["project"], "team");
    // The native project is the one authorized.
    let lists: Vec<Option<String>> = bench
        .requests()
        .into_iter()
        .filter(|entry| entry.path == "/1.0/instances")
        .map(|entry| entry.query)
        .collect();
    assert_eq!(lists.len(), 3);
    assert!(
        lists[1]
            .as_deref()
            .unwrap_or_default()
            .contains("project=team"),
        "{lists:?}"
    );
    assert!(
        lists[2]
            .as_deref()
            .unwrap_or_default()
            .contains("project=other"),
        "{lists:?}"
    );
}

#[tokio::test]
async fn image_remotes_are_named_only_and_resolved_by_the_host() {
    let bench = Bench::start().await;
    let input = json!({"name": "web", "source": {"type": "image", "alias": "debian-12", "remote": "images"}});
    for act in [Act::Deny, Act::Panic, Act::Hang, Act::Malformed] {
        let mut host = bench.host();
        host.image_remote = act;
        let result = call_with(&host, "incus_instance_create", input.clone(), &ALL).await;
        assert_eq!(kind(&result), "unknown_remote", "{act:?}: {result}");
        assert_eq!(
            host.callbacks(),
            ["binding", "authorize", "image_remote"],
            "{act:?}"
        );
    }
    assert!(bench.fake.journal().is_empty());
    let url = json!({"name": "web", "source": {"type": "image", "alias": "x", "remote": "https://images.example.org"}});
    let result = call_with(&bench.host(), "incus_instance_create", url, &ALL).await;
    assert_eq!(kind(&result), "invalid_input", "{result}");
    // An approved remote is sent as server and protocol, never as the name.
    let mut host = bench.host();
    host.image_remote = Act::Allow;
    call_with(&host, "incus_instance_create", input, &ALL).await;
    let posts: Vec<Value> = bench
        .fake
        .requests("POST", "/1.0/instances")
        .into_iter()
        .map(|entry| serde_json::from_str(&entry.body).unwrap())
        .collect();
    assert_eq!(posts.len(), 1);
    assert_eq!(posts[0]["source"]["server"], "https://images.example.org");
    assert_eq!(posts[0]["source"]["protocol"], "simplestreams");
    assert!(posts[0]["source"].get("remote").is_none());
}

#[tokio::test]
async fn discovery_failure_is_reported_after_authorization() {
    let dir = tempfile::tempdir().unwrap();
    let connection = incus_operations::Connection::unix(dir.path().join("missing.socket"));
    let host = run_support::TestHost::new(connection);
    let result = call_with(&host, "incus_instance_list", json!({}), &ALL).await;
    assert_eq!(kind(&result), "discovery_failed", "{result}");
    assert_eq!(host.callbacks(), ["binding", "authorize"]);
}

#[tokio::test]
async fn the_first_failing_check_decides() {
    let bench = Bench::start().await;
    let host = bench.host();
    // Scope before bounds, bounds before schema, schema before confirmation.
    let huge = padded("web", "pad", 64 * 1024 + 1);
    let result = call_with(&host, "incus_instance_delete", huge.clone(), &[Scope::Read]).await;
    assert_eq!(kind(&result), "scope_missing");
    let result = call_with(&host, "incus_instance_delete", huge, &ALL).await;
    assert_eq!(kind(&result), "input_too_large");
    let result = call_with(
        &host,
        "incus_instance_delete",
        json!({"name": "web", "confirm": 5}),
        &ALL,
    )
    .await;
    assert_eq!(kind(&result), "invalid_input");
    // Confirmation before restricted input and the host.
    let result = call_with(
        &host,
        "incus_instance_snapshot_restore",
        json!({"instance": "web", "snapshot": "s"}),
        &ALL,
    )
    .await;
    assert_eq!(kind(&result), "confirmation_required");
    assert!(host.callbacks().is_empty());
    assert!(bench.fake.journal().is_empty());
}

/// JSON Schema counts `1000.0` and `1e3` as integers: every integer the schema accepts must mean
/// its value in the native request, never a dropped float (`user: 1000.0` once ran as root).
#[tokio::test]
async fn integers_written_as_floats_mean_their_value() {
    let bench = Bench::start().await;
    bench.running_instance("web").await;
    for (spelling, user) in [(json!(1000.0), 1000), (json!(1e3), 1000), (json!(0.0), 0)] {
        let result = bench
            .call(
                "incus_instance_exec",
                json!({"name": "web", "command": ["true"], "user": spelling.clone(),
                       "group": spelling, "timeout_seconds": 5.0}),
            )
            .await;
        assert_eq!(result["status"], "completed", "{result}");
        assert_eq!(result["timeout_seconds"], 5, "{result}");
        let sent = bench
            .fake
            .requests("POST", "/1.0/instances/web/exec")
            .pop()
            .expect("exec sent");
        let body: Value = serde_json::from_str(&sent.body).expect("exec body is JSON");
        assert_eq!(body["user"], user, "{body}");
        assert_eq!(body["group"], user, "{body}");
    }

    bench.instance("db").await;
    bench.instance("cache").await;
    let listed = bench
        .call("incus_instance_list", json!({"limit": 2.0}))
        .await;
    assert_eq!(
        listed["items"].as_array().map(Vec::len),
        Some(2),
        "{listed}"
    );

    let stopped = bench
        .call(
            "incus_instance_state_update",
            json!({"name": "web", "action": "stop", "force": true, "wait_seconds": 2.0}),
        )
        .await;
    assert_eq!(stopped["status"], "completed", "{stopped}");
    assert_eq!(stopped["waited_seconds"], 2, "{stopped}");
    let waits: Vec<String> = bench
        .requests()
        .into_iter()
        .filter(|entry| entry.path.ends_with("/wait"))
        .filter_map(|entry| entry.query)
        .collect();
    assert!(
        waits.iter().all(|query| !query.contains('.')),
        "a float reached the daemon as a query parameter: {waits:?}"
    );
}

/// Profiles with restricted config or devices, beside a plain one and the default one.
fn restricted_profiles() -> Value {
    json!({
        "instances": [{"name": "web", "status": "Stopped"}],
        "profiles": [
            {"project": "default", "name": "default", "description": "", "config": {},
             "devices": {"root": {"type": "disk", "pool": "default", "path": "/"}}},
            {"project": "default", "name": "privileged", "description": "", "config": {"security.privileged": "true"}, "devices": {}},
            {"project": "default", "name": "rawlxc", "description": "", "config": {"raw.lxc": "lxc.apparmor.profile=unconfined"}, "devices": {}},
            {"project": "default", "name": "hostdisk", "description": "", "config": {},
             "devices": {"host": {"type": "disk", "source": "/etc", "path": "/mnt"}}},
            {"project": "default", "name": "plain", "description": "", "config": {"limits.cpu": "1"}, "devices": {}},
        ],
    })
}

/// Issue 10 item 2: attaching a profile does not bypass the restricted-input rule. A named
/// profile's config and devices are read after authorization and must pass the same rule before
/// the mutation; denied calls send no mutation (the journal shows only the profile reads).
#[tokio::test]
async fn a_named_profile_with_restricted_config_or_devices_is_denied_on_create_and_update() {
    let bench = Bench::with(crate::run_support::fake_builder().state(restricted_profiles())).await;
    for profile in ["privileged", "rawlxc", "hostdisk"] {
        let host = bench.host();
        bench.fake.clear_journal();
        let profiles = json!(["default", profile]);
        let create = json!({"name": "new", "source": {"type": "image", "alias": "busybox"}, "profiles": profiles});
        let update = json!({"name": "web", "profiles": profiles});
        for (name, input) in [
            ("incus_instance_create", create),
            ("incus_instance_update", update),
        ] {
            let result = call_with(&host, name, input, &ALL).await;
            assert_eq!(
                kind(&result),
                "restricted_input",
                "{name} {profile}: {result}"
            );
            let message = result["error"]["message"].as_str().unwrap_or_default();
            assert!(
                message.contains(&format!("profile {profile:?}")),
                "{message}"
            );
        }
        // Read after authorization: the host was asked in order, and allow_restricted last.
        assert_eq!(
            host.callbacks(),
            [
                "binding",
                "authorize",
                "allow_restricted",
                "binding",
                "authorize",
                "allow_restricted"
            ],
            "{profile}"
        );
        let mutations: Vec<String> = bench
            .requests()
            .iter()
            .filter(|entry| entry.method != "GET")
            .map(|entry| format!("{} {}", entry.method, entry.path))
            .collect();
        assert!(mutations.is_empty(), "{profile}: {mutations:?}");
        assert_eq!(bench.count("GET", &format!("/1.0/profiles/{profile}")), 2);
    }
}

#[tokio::test]
async fn plain_named_profiles_pass_and_a_host_may_allow_restricted_ones() {
    let bench = Bench::with(crate::run_support::fake_builder().state(restricted_profiles())).await;
    let host = bench.host();
    let plain = json!({"name": "a", "source": {"type": "image", "alias": "busybox"}, "profiles": ["default", "plain"]});
    let result = call_with(&host, "incus_instance_create", plain, &ALL).await;
    assert_eq!(result["status"], "completed", "{result}");
    assert!(!host.callbacks().contains(&"allow_restricted"));
    let mut allowing = bench.host();
    allowing.restricted = Act::Allow;
    let privileged = json!({"name": "b", "source": {"type": "image", "alias": "busybox"}, "profiles": ["default", "privileged"]});
    let result = call_with(&allowing, "incus_instance_create", privileged, &ALL).await;
    assert_eq!(result["status"], "completed", "{result}");
    let update = json!({"name": "web", "profiles": ["default", "hostdisk"]});
    let result = call_with(&allowing, "incus_instance_update", update, &ALL).await;
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(bench.count("POST", "/1.0/instances"), 2);
    assert_eq!(bench.count("PATCH", "/1.0/instances/web"), 1);
}

#[tokio::test]
async fn an_input_device_that_replaces_a_profile_device_is_judged_as_the_input_wrote_it() {
    let bench = Bench::with(crate::run_support::fake_builder().state(restricted_profiles())).await;
    let host = bench.host();
    let input = json!({
        "name": "c",
        "source": {"type": "image", "alias": "busybox"},
        "profiles": ["default", "hostdisk"],
        "devices": {"host": {"type": "disk", "pool": "default", "path": "/mnt"}}
    });
    let result = call_with(&host, "incus_instance_create", input, &ALL).await;
    // The input's plain pool disk replaces the profile's host-path disk: nothing restricted is
    // left, so the create is sent (Incus then judges the disk itself: a pool disk other than
    // the root needs a volume as its source, so the operation fails natively).
    assert_ne!(kind(&result), "restricted_input", "{result}");
    assert!(!host.callbacks().contains(&"allow_restricted"));
    assert_eq!(bench.count("POST", "/1.0/instances"), 1, "{result}");
}
