//! `safety::*` trials of the third round: what a call leaves in force beyond what it writes (the
//! triggers of a schedule taken together, an expiry behind a schedule the write does not state, a
//! profile's value under an unset key, the pattern a schedule turned on names its snapshots by,
//! the ID map a restore writes back), the names of new snapshots, and the credentials results
//! still carried (the guest's credentials, Incus 7.0's logging targets, a cached image's source).
//!
//! Each attack got through before its rule; each trial asserts the verdict and the journal.

use std::sync::Arc;

use serde_json::{json, Value};

use super::grants::{default_profile, scopes, seeded, sent_exactly, DELETE, EXEC, WRITE};
use super::secrets::carries;
use crate::runner::Check;
use crate::scenario::target::TargetFactory;
use crate::suites::session::Session;

const READ: &str = "incus.read";

/// What the guest, a logging target and an image server were given: never shown to a reader.
const SECRET: &str = "hunter2-3rd-round";

/// An instance `c1` with this config (an operator's, set past the core), and profiles.
fn instance_with(config: Value, profiles: &[&str], extra_profiles: Value) -> Value {
    let mut all = vec![default_profile(json!({}))];
    all.extend(extra_profiles.as_array().cloned().unwrap_or_default());
    json!({
        "instances": [{"name": "c1", "config": config, "profiles": profiles}],
        "profiles": all
    })
}

fn update(config: Value) -> Value {
    json!({"name": "c1", "config": config})
}

/// The trials of this group.
pub(crate) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    vec![
        seeded(
            "safety::host_impact_bounded::a_schedule_is_as_frequent_as_all_its_triggers",
            factory,
            Some(json!({"instances": [{"name": "c1"}]})),
            schedules_together,
        ),
        seeded(
            "safety::host_impact_bounded::an_expiry_raised_behind_a_schedule_the_write_does_not_state_is_restricted",
            factory,
            Some(instance_with(
                json!({"snapshots.schedule": "*/5 * * * *", "snapshots.expiry": "1H"}),
                &["default"],
                json!([]),
            )),
            expiry_raised,
        ),
        seeded(
            "safety::unset_keys_fall_back_to_profiles::an_empty_value_does_not_hide_a_profiles_value",
            factory,
            Some(instance_with(
                json!({}),
                &["default"],
                json!([{"name": "hp", "config": {
                    "limits.kernel.memlock": "unlimited",
                    "snapshots.pattern": "..",
                    "snapshots.schedule": "* * * * *"
                }}]),
            )),
            empty_value_in_create,
        ),
        seeded(
            "safety::unset_keys_fall_back_to_profiles::unsetting_an_override_judges_the_profile_value_after_the_reads",
            factory,
            Some(instance_with(
                json!({"limits.kernel.nofile": "1024", "snapshots.pattern": "snap%d", "limits.cpu": "1"}),
                &["default", "hp"],
                json!([{"name": "hp", "config": {
                    "limits.kernel.nofile": "unlimited",
                    "snapshots.pattern": ".."
                }}]),
            )),
            unset_override,
        ),
        seeded(
            "safety::snapshot_pattern_grammar::a_schedule_turned_on_reads_the_instance_pattern_first",
            factory,
            Some(json!({"instances": [
                // Set by an operator on the daemon, past the core.
                {"name": "c1", "config": {"snapshots.pattern": ".."}},
                {"name": "c2", "config": {"snapshots.pattern": "auto-%d"}}
            ]})),
            schedule_under_a_pattern,
        ),
        seeded(
            "safety::restore_judged_like_a_write::a_snapshot_with_an_empty_id_map_is_restricted_after_its_read",
            factory,
            Some(idmap_seed()),
            empty_id_map,
        ),
        seeded(
            "safety::snapshot_names_by_incus_7::names_7_0_refuses_are_refused_before_any_request",
            factory,
            Some(json!({"instances": [{"name": "c1"}]})),
            new_snapshot_names,
        ),
        seeded(
            "safety::guest_data_redacted::guest_credentials_reach_only_callers_with_exec",
            factory,
            Some(guest_credentials_seed()),
            guest_credentials,
        ),
        seeded(
            "safety::server_credentials_redacted::logging_targets_of_incus_7_are_replaced",
            factory,
            Some(json!({"server_config": {
                "logging.siem.target.type": "loki",
                "logging.siem.target.username": "incus",
                "logging.siem.target.password": SECRET,
                "logging.hook.target.type": "webhook",
                "logging.hook.target.address": format!("https://ops:{SECRET}@hooks.example/incus"),
                "logging.plain.target.address": "https://hooks.example/incus"
            }})),
            logging_targets,
        ),
        seeded(
            "safety::image_credentials_redacted::an_update_source_with_a_user_is_replaced_in_get_and_list",
            factory,
            None,
            image_update_source,
        ),
    ]
}

/// Each trigger of these fires at most hourly; together they fire more often (Incus snapshots in
/// every minute any trigger matches), or at every start (`@startup`, repeated by
/// `boot.autorestart`).
fn schedules_together(session: &Session) -> Result<(), String> {
    let every_minute = format!(
        "@hourly, {}",
        (0..60)
            .map(|m| format!("{m} * * * *"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for schedule in [
        every_minute.as_str(),
        "0 * * * *, 30 * * * *",
        "@daily, 7 * * * *",
        "@startup",
        "@STARTUP, @daily",
    ] {
        let called = session.call(
            "incus_instance_update",
            &scopes(&[WRITE]),
            update(json!({"snapshots.schedule": schedule, "boot.autorestart": "true"})),
        );
        called.refused_before_backend("restricted_input")?;
    }
    // With a short expiry in the same write, and for triggers sharing one minute, it is sent.
    for config in [
        json!({"snapshots.schedule": "0 * * * *, 30 * * * *", "snapshots.expiry": "1d"}),
        json!({"snapshots.schedule": "@hourly, @daily"}),
        json!({"snapshots.schedule": "5 * * * *, 05 3 * * *"}),
    ] {
        let called = session.call("incus_instance_update", &scopes(&[WRITE]), update(config));
        if called.result["status"] != "completed" {
            return Err(called.failure("a schedule within the bound was not sent"));
        }
    }
    Ok(())
}

/// The instance fires every five minutes and keeps each snapshot an hour (set together, as the
/// rule asks); raising the expiry alone must not keep them for a century.
fn expiry_raised(session: &Session) -> Result<(), String> {
    for expiry in ["100y", "2d", "1d 1H"] {
        let called = session.call(
            "incus_instance_update",
            &scopes(&[WRITE]),
            update(json!({"snapshots.expiry": expiry})),
        );
        called.refused_before_backend("restricted_input")?;
    }
    let called = session.call(
        "incus_instance_update",
        &scopes(&[WRITE]),
        update(json!({"snapshots.expiry": "12H"})),
    );
    if called.result["status"] != "completed" {
        return Err(called.failure("an expiry within a day was not sent"));
    }
    Ok(())
}

/// Incus stores no empty value: `{"limits.kernel.memlock": ""}` beside profile `hp` leaves hp's
/// `unlimited` in force (checked on the real 6.0.4 and 7.0.2: the expanded value is the
/// profile's).
fn empty_value_in_create(session: &Session) -> Result<(), String> {
    for key in [
        "limits.kernel.memlock",
        "snapshots.pattern",
        "snapshots.schedule",
    ] {
        let called = session.call(
            "incus_instance_create",
            &scopes(&[WRITE]),
            json!({"name": "c2", "source": {"type": "none"}, "profiles": ["default", "hp"],
                   "config": {key: ""}}),
        );
        called.error_is("restricted_input")?;
        sent_exactly(
            &called,
            &[
                ("GET", "/1.0/profiles/default"),
                ("GET", "/1.0/profiles/hp"),
            ],
        )?;
        let message = called.result["error"]["message"]
            .as_str()
            .unwrap_or_default();
        if !message.contains(key) || !message.contains("from profile \"hp\"") {
            return Err(called.failure(&format!("the refusal does not name {key} from hp")));
        }
    }
    Ok(())
}

/// The instance overrides profile `hp` (the operator's decision for it); unsetting the override
/// brings hp's value back, judged after reading the instance and its profiles.
fn unset_override(session: &Session) -> Result<(), String> {
    for key in ["limits.kernel.nofile", "snapshots.pattern"] {
        let called = session.call(
            "incus_instance_update",
            &scopes(&[WRITE]),
            update(json!({key: ""})),
        );
        called.error_is("restricted_input")?;
        sent_exactly(
            &called,
            &[
                ("GET", "/1.0/instances/c1"),
                ("GET", "/1.0/profiles/default"),
                ("GET", "/1.0/profiles/hp"),
            ],
        )?;
    }
    // A key whose fallback stays within its rule is unset.
    let called = session.call(
        "incus_instance_update",
        &scopes(&[WRITE]),
        update(json!({"limits.cpu": ""})),
    );
    if called.result["status"] != "completed" {
        return Err(called.failure("unsetting a key with a plain fallback failed"));
    }
    // Without an unset key the update reads nothing more.
    let plain = session.call(
        "incus_instance_update",
        &scopes(&[WRITE]),
        update(json!({"limits.cpu": "2"})),
    );
    if plain.sent("GET", "/1.0/profiles/*").is_some_and(|n| n > 0) {
        return Err(plain.failure("an update without an unset key read the profiles"));
    }
    Ok(())
}

/// Scheduled snapshots are named by the instance's pattern, as unnamed ones are.
fn schedule_under_a_pattern(session: &Session) -> Result<(), String> {
    for config in [
        json!({"snapshots.schedule": "0 * * * *"}),
        json!({"snapshots.schedule": "@daily", "snapshots.schedule.stopped": "true"}),
    ] {
        let called = session.call("incus_instance_update", &scopes(&[WRITE]), update(config));
        called.error_is("restricted_input")?;
        sent_exactly(&called, &[("GET", "/1.0/instances/c1")])?;
    }
    // The write that states a pattern of the grammar replaces the bad one: no read.
    let stated = session.call(
        "incus_instance_update",
        &scopes(&[WRITE]),
        update(json!({"snapshots.schedule": "@hourly", "snapshots.pattern": "snap%d"})),
    );
    if stated.result["status"] != "completed" {
        return Err(stated.failure("a schedule with a safe pattern in the same write failed"));
    }
    let benign = session.call(
        "incus_instance_update",
        &scopes(&[WRITE]),
        json!({"name": "c2", "config": {"snapshots.schedule": "@hourly"}}),
    );
    if benign.result["status"] != "completed" {
        return Err(benign.failure("a schedule on an instance with a safe pattern failed"));
    }
    if benign.sent("GET", "/1.0/instances/c2") == Some(0) {
        return Err(benign.failure("the instance's pattern was not read"));
    }
    Ok(())
}

/// The map Incus gives an unprivileged container, and a snapshot of the same container taken
/// while a profile (since changed) made it privileged.
fn idmap_seed() -> Value {
    let mapped = r#"[{"Isuid":true,"Isgid":false,"Hostid":1000000,"Nsid":0,"Maprange":1000000000},{"Isuid":false,"Isgid":true,"Hostid":1000000,"Nsid":0,"Maprange":1000000000}]"#;
    let snapshot = |name: &str, idmap: &str| {
        json!({"name": name, "config": {"volatile.idmap.next": idmap, "volatile.last_state.idmap": "[]"},
               "profiles": ["default", "was-privileged"]})
    };
    json!({
        "instances": [{"name": "c1", "config": {"volatile.idmap.next": mapped, "volatile.last_state.idmap": "[]"},
                       "snapshots": [snapshot("priv-era", "[]"), snapshot("mapped", mapped)]}],
        "profiles": [default_profile(json!({})), {"name": "was-privileged", "config": {"limits.cpu": "1"}}]
    })
}

/// Restored, `priv-era` ran privileged on the real 6.0.4 (`uid_map` `0 0 4294967295`), with no
/// `security.privileged` anywhere; the snapshot with the instance's own map restores.
fn empty_id_map(session: &Session) -> Result<(), String> {
    let restore = |snapshot: &str, grant: &[&str]| {
        session.call(
            "incus_instance_snapshot_restore",
            &scopes(grant),
            json!({"instance": "c1", "snapshot": snapshot, "confirm": format!("c1/{snapshot}")}),
        )
    };
    for grant in [&[DELETE][..], &[DELETE, EXEC, WRITE]] {
        let called = restore("priv-era", grant);
        called.error_is("restricted_input")?;
        sent_exactly(
            &called,
            &[
                ("GET", "/1.0/instances/c1/snapshots/priv-era"),
                ("GET", "/1.0/profiles/default"),
                ("GET", "/1.0/profiles/was-privileged"),
            ],
        )?;
        let message = called.result["error"]["message"]
            .as_str()
            .unwrap_or_default();
        if !message.contains("volatile.idmap.next") {
            return Err(called.failure("the refusal does not name the ID map"));
        }
    }
    let mapped = restore("mapped", &[DELETE]);
    if mapped.result["status"] != "completed" {
        return Err(mapped.failure("a snapshot with the instance's own ID map was not restored"));
    }
    Ok(())
}

/// Names Incus 7.0 refuses for a new snapshot (`validate.IsAPIName`), which 6.0.4 takes.
fn new_snapshot_names(session: &Session) -> Result<(), String> {
    for name in [
        "-rf",
        ".hidden",
        "x.",
        "a$b",
        "a*b",
        "a'b",
        "a`id`",
        "a\u{1}b",
        "..\u{0}",
        "\u{455}nap",
        &"x".repeat(65),
    ] {
        session
            .call(
                "incus_instance_snapshot_create",
                &scopes(&[WRITE]),
                json!({"instance": "c1", "snapshot": name}),
            )
            .refused_before_backend("invalid_input")?;
    }
    for name in ["before-upgrade", "s-\u{455}nap-1", "a.b_c"] {
        let called = session.call(
            "incus_instance_snapshot_create",
            &scopes(&[WRITE]),
            json!({"instance": "c1", "snapshot": name}),
        );
        if called.result["status"] != "completed" {
            return Err(called.failure("a snapshot name 7.0 accepts was refused"));
        }
    }
    Ok(())
}

fn guest_credentials_seed() -> Value {
    let config = json!({
        "smbios11.io.systemd.credential:db": SECRET,
        "systemd.credential.api": SECRET,
        "systemd.credential-binary.key": "aHVudGVyMi0zcmQtcm91bmQ=",
        "limits.cpu": "2"
    });
    json!({
        "instances": [{"name": "v1", "type": "virtual-machine", "config": config,
                       "snapshots": [{"name": "s1", "config": config}]}],
        "profiles": [default_profile(json!({})), {"name": "creds", "config": {"smbios11.io.systemd.credential:db": SECRET}}]
    })
}

/// `smbios11.*` and systemd credentials are a credential handed to the guest: a reader without
/// `incus.exec` sees the keys, never the values.
fn guest_credentials(session: &Session) -> Result<(), String> {
    let reads = [
        ("incus_instance_get", json!({"name": "v1"})),
        ("incus_instance_list", json!({})),
        (
            "incus_instance_snapshot_get",
            json!({"instance": "v1", "snapshot": "s1"}),
        ),
        ("incus_instance_snapshot_list", json!({"instance": "v1"})),
        ("incus_profile_get", json!({"name": "creds"})),
        ("incus_profile_list", json!({})),
    ];
    for (operation, input) in &reads {
        let called = session.call(operation, &scopes(&[READ]), input.clone());
        called.schema_valid()?;
        if called.error_kind().is_some() {
            return Err(called.failure("the read failed"));
        }
        if carries(&called.result, SECRET) || carries(&called.result, "aHVudGVyMi0zcmQtcm91bmQ=") {
            return Err(called.failure("a guest credential reached a reader without incus.exec"));
        }
        if !carries(&called.result, "smbios11.io.systemd.credential:db") {
            return Err(called.failure("the key itself was dropped"));
        }
    }
    let with_exec = session.call(
        "incus_instance_get",
        &scopes(&[READ, EXEC]),
        json!({"name": "v1"}),
    );
    if !carries(&with_exec.result, SECRET) {
        return Err(
            with_exec.failure("a caller with incus.exec was not shown the guest's credentials")
        );
    }
    Ok(())
}

/// Incus 7.0's `logging.<name>.target.*` (`server_logging`, `server_logging_webhook`).
fn logging_targets(session: &Session) -> Result<(), String> {
    let called = session.call("incus_server_get", &scopes(&[READ]), json!({}));
    called.schema_valid()?;
    if carries(&called.result, SECRET) {
        return Err(called.failure("a logging target's credential reached the reader"));
    }
    let config = &called.result["item"]["config"];
    for (key, expected) in [
        ("logging.siem.target.password", "[redacted]"),
        ("logging.hook.target.address", "[redacted]"),
        ("logging.siem.target.username", "incus"),
        (
            "logging.plain.target.address",
            "https://hooks.example/incus",
        ),
    ] {
        if config[key] != expected {
            return Err(called.failure(&format!("{key} is not {expected:?}")));
        }
    }
    Ok(())
}

/// A cached image keeps the server it came from as fetched (`update_source.server`), with the
/// image server's `user:password@` when it had one. The fake keeps no update source, so the
/// image is answered as a real daemon answers it.
fn image_update_source(session: &Session) -> Result<(), String> {
    let list = session.native("GET", "/1.0/images?recursion=1", None, 200)?;
    let mut image = list["metadata"][0].clone();
    let fingerprint = image["fingerprint"].as_str().unwrap_or_default().to_owned();
    image["update_source"] = json!({
        "alias": "debian/12", "certificate": "", "image_type": "container", "protocol": "simplestreams",
        "server": format!("https://mirror:{SECRET}@images.example.org")
    });
    let envelope = |metadata: Value| {
        json!({"type": "sync", "status": "Success", "status_code": 200, "operation": "",
               "error_code": 0, "error": "", "metadata": metadata})
        .to_string()
    };
    for (path, body) in [
        (
            format!("/1.0/images/{fingerprint}"),
            envelope(image.clone()),
        ),
        ("/1.0/images".to_owned(), envelope(json!([image]))),
    ] {
        session.add_fault(&json!({"method": "GET", "path": path, "fault": {
            "kind": "respond", "status": 200,
            "headers": {"Content-Type": "application/json"}, "body": body}}))?;
    }
    for (operation, input) in [
        ("incus_image_get", json!({"fingerprint": fingerprint})),
        ("incus_image_list", json!({})),
    ] {
        let called = session.call(operation, &scopes(&[READ]), input);
        called.schema_valid()?;
        if carries(&called.result, SECRET) {
            return Err(called.failure("the image server's credential reached the reader"));
        }
        if !carries(&called.result, "debian/12") {
            return Err(called.failure("the image's update source was not returned"));
        }
    }
    Ok(())
}
