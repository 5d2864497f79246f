//! Where Incus 6.0 and 7.0 answer the same request differently, the fake answers as the line it
//! imitates, each difference keyed on the API extension that brought it (`fake-incus/src/line.rs`),
//! with the texts measured on the real 6.0.4 and 7.0.2 daemons.

use crate::common::{call, launch, unix, wait};
use fake_incus::{assert_native_error, FakeIncus, IncusLine};
use serde_json::json;

async fn fake_of(line: IncusLine) -> FakeIncus {
    FakeIncus::builder()
        .incus_version(line)
        .start()
        .await
        .expect("fake starts")
}

#[tokio::test]
async fn an_error_body_ends_with_two_newlines_on_6_0_and_one_on_7_0() {
    for (line, ending) in [(IncusLine::V6_0, "}\n\n"), (IncusLine::V7_0, "}\n")] {
        let fake = fake_of(line).await;
        let reply = unix(&fake, "GET", "/1.0/instances/nosuch", None).await;
        let body = String::from_utf8_lossy(reply.bytes()).into_owned();
        assert!(
            body.ends_with(ending) && !body.ends_with(&format!("{ending}\n")),
            "{line}: {body:?}"
        );
    }
}

#[tokio::test]
async fn an_operation_without_metadata_shows_null_on_6_0_and_an_object_on_7_0() {
    for (line, shown) in [(IncusLine::V6_0, json!(null)), (IncusLine::V7_0, json!({}))] {
        let fake = fake_of(line).await;
        launch(&fake, "c1", false).await;
        let started = call(
            &fake,
            "PUT",
            "/1.0/instances/c1/state",
            Some(json!({"action": "start"})),
        )
        .await;
        assert_eq!(started.metadata()["metadata"], shown, "{line}");
    }
}

#[tokio::test]
async fn a_wait_on_a_failed_operation_is_an_error_on_6_0_and_the_operation_on_7_0() {
    for line in [IncusLine::V6_0, IncusLine::V7_0] {
        let fake = fake_of(line).await;
        launch(&fake, "c1", false).await;
        let stop = call(
            &fake,
            "PUT",
            "/1.0/instances/c1/state",
            Some(json!({"action": "stop"})),
        )
        .await;
        let waited = wait(&fake, &stop).await;
        assert_eq!(waited.status(), 200);
        if line == IncusLine::V6_0 {
            assert_eq!(waited.json()["error"], "The instance is already stopped");
        } else {
            assert_eq!(waited.json()["type"], "sync");
            assert_eq!(waited.metadata()["status"], "Failure");
            assert_eq!(waited.metadata()["err"], "The instance is already stopped");
        }
    }
}

#[tokio::test]
async fn a_running_exec_with_websockets_is_cancellable_on_7_0_only_and_its_reads_hide_the_secrets()
{
    for line in [IncusLine::V6_0, IncusLine::V7_0] {
        let fake = fake_of(line).await;
        launch(&fake, "c1", true).await;
        let exec = json!({"command": ["sleep", "30"], "wait-for-websocket": true});
        let started = call(&fake, "POST", "/1.0/instances/c1/exec", Some(exec)).await;
        assert!(
            started.metadata()["metadata"]["fds"].is_object(),
            "the creator sees the secrets"
        );
        let op = started.operation().expect("an operation");
        let got = call(&fake, "GET", op, None).await;
        let seven = line == IncusLine::V7_0;
        assert_eq!(got.metadata()["may_cancel"], json!(seven), "{line}");
        assert_eq!(got.metadata()["metadata"]["fds"].is_null(), seven, "{line}");
        let cancel = call(&fake, "DELETE", op, None).await;
        if seven {
            assert_eq!(cancel.status(), 200);
            let now = call(&fake, "GET", op, None).await;
            assert_eq!(now.metadata()["status"], "Cancelled");
        } else {
            assert_native_error(&cancel, 400, "This operation can't be cancelled");
        }
    }
}

#[tokio::test]
async fn a_snapshot_shows_its_instances_description_on_7_0_only() {
    for line in [IncusLine::V6_0, IncusLine::V7_0] {
        let fake = fake_of(line).await;
        launch(&fake, "c1", false).await;
        let described = call(
            &fake,
            "PATCH",
            "/1.0/instances/c1",
            Some(json!({"description": "web"})),
        )
        .await;
        assert_eq!(described.status(), 200);
        let taken = call(
            &fake,
            "POST",
            "/1.0/instances/c1/snapshots",
            Some(json!({"name": "s1"})),
        )
        .await;
        crate::common::completed(&fake, &taken).await;
        let snapshot = call(&fake, "GET", "/1.0/instances/c1/snapshots/s1", None).await;
        let expected = (line == IncusLine::V7_0).then(|| json!("web"));
        assert_eq!(
            snapshot.metadata().get("description").cloned(),
            expected,
            "{line}"
        );
    }
}

#[tokio::test]
async fn an_image_lists_its_locations_on_7_0_only() {
    for line in [IncusLine::V6_0, IncusLine::V7_0] {
        let fake = fake_of(line).await;
        let images = call(&fake, "GET", "/1.0/images?recursion=1", None).await;
        let expected = (line == IncusLine::V7_0).then(|| json!(["none"]));
        assert_eq!(
            images.metadata()[0].get("locations").cloned(),
            expected,
            "{line}"
        );
    }
}

#[tokio::test]
async fn loki_keys_are_deprecated_on_7_0_and_logging_keys_are_known() {
    let seven = fake_of(IncusLine::V7_0).await;
    let loki = call(
        &seven,
        "PATCH",
        "/1.0",
        Some(json!({"config": {"loki.api.url": "http://x"}})),
    )
    .await;
    assert_native_error(
        &loki,
        400,
        "cannot set 'loki.api.url' to 'http://x': deprecated: Use 'logging.*.target.address' instead",
    );
    let logging = call(
        &seven,
        "PATCH",
        "/1.0",
        Some(json!({"config": {"logging.l1.target.retry": "x"}})),
    )
    .await;
    assert_native_error(
        &logging,
        400,
        "cannot set 'logging.l1.target.retry' to 'x': invalid integer",
    );
    let six = fake_of(IncusLine::V6_0).await;
    let loki = call(
        &six,
        "PATCH",
        "/1.0",
        Some(json!({"config": {"loki.api.url": "http://x"}})),
    )
    .await;
    assert_eq!(loki.status(), 200);
    let logging = call(
        &six,
        "PATCH",
        "/1.0",
        Some(json!({"config": {"logging.l1.target.retry": "1"}})),
    )
    .await;
    assert_native_error(
        &logging,
        400,
        "cannot set 'logging.l1.target.retry' to '1': unknown key",
    );
}

#[tokio::test]
async fn a_new_name_is_checked_as_an_api_name_first_on_7_0() {
    let seven = fake_of(IncusLine::V7_0).await;
    let volume = call(
        &seven,
        "POST",
        "/1.0/storage-pools/default/volumes/custom",
        Some(json!({"name": "-v"})),
    )
    .await;
    assert_native_error(
        &volume,
        400,
        "Invalid storage volume name: Names must start and end with an alphanumeric character",
    );
    let alias = call(
        &seven,
        "POST",
        "/1.0/images/aliases/busybox",
        Some(json!({"name": "a b"})),
    )
    .await;
    assert_native_error(
        &alias,
        400,
        "Invalid image alias name: Name cannot contain white space",
    );
    let six = fake_of(IncusLine::V6_0).await;
    let volume = call(
        &six,
        "POST",
        "/1.0/storage-pools/default/volumes/custom",
        Some(json!({})),
    )
    .await;
    assert_native_error(&volume, 400, "No name provided");
}

#[tokio::test]
async fn seven_refuses_features_networks_without_ovn_acl_rules_naming_unknown_sets_and_state_changes_of_unknown_projects(
) {
    let seven = fake_of(IncusLine::V7_0).await;
    let project = json!({"name": "p1", "config": {"features.networks": "true"}});
    let refused = call(&seven, "POST", "/1.0/projects", Some(project.clone())).await;
    assert_native_error(
        &refused,
        400,
        "OVN is required for projects with \"features.networks\" enabled",
    );
    let acl = json!({"name": "a1", "egress": [{"action": "allow", "state": "enabled", "destination": "$none"}]});
    let refused = call(&seven, "POST", "/1.0/network-acls", Some(acl.clone())).await;
    assert_native_error(
        &refused,
        404,
        "Invalid egress rule 0: Invalid Destination: Failed getting network address set \"none\" for subject validation: Network_address_set not found",
    );
    let put = call(
        &seven,
        "PUT",
        "/1.0/instances?project=nosuch",
        Some(json!({"state": {"action": "bogus"}})),
    )
    .await;
    assert_native_error(&put, 404, "Project not found");
    let six = fake_of(IncusLine::V6_0).await;
    let created = call(&six, "POST", "/1.0/projects", Some(project)).await;
    assert_eq!(created.status(), 201, "{}", created.json());
    let put = call(
        &six,
        "PUT",
        "/1.0/instances?project=nosuch",
        Some(json!({"state": {"action": "bogus"}})),
    )
    .await;
    assert_native_error(&put, 400, "Unknown action: 'bogus'");
}

#[tokio::test]
async fn a_cancel_of_a_running_exec_on_7_0_kills_its_command_and_the_operation_ends_failed() {
    let fake = fake_of(IncusLine::V7_0).await;
    launch(&fake, "c1", true).await;
    let exec = json!({"command": ["sleep", "30"], "wait-for-websocket": true});
    let started = call(&fake, "POST", "/1.0/instances/c1/exec", Some(exec)).await;
    let id = started.metadata()["id"].as_str().expect("an id").to_owned();
    let fds = started.metadata()["metadata"]["fds"].clone();
    let secret = |fd: &str| fds[fd].as_str().expect("a secret").to_owned();
    let _control = crate::common::ws_unix(&fake, &id, &secret("control")).await;
    let _stdin = crate::common::ws_unix(&fake, &id, &secret("0")).await;
    let _stdout = crate::common::ws_unix(&fake, &id, &secret("1")).await;
    let _stderr = crate::common::ws_unix(&fake, &id, &secret("2")).await;
    let op = format!("/1.0/operations/{id}");
    // The command starts once every socket is attached (after the fake's start delay).
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let cancel = call(&fake, "DELETE", &op, None).await;
    assert_eq!(cancel.status(), 200, "{}", cancel.json());
    let waited = call(&fake, "GET", &format!("{op}/wait?timeout=10"), None).await;
    assert!(waited.metadata()["status"] == "Cancelled" || waited.metadata()["status"] == "Failure");
    let mut failed = json!(null);
    for _ in 0..500 {
        failed = call(&fake, "GET", &op, None).await.metadata().clone();
        if failed["status"] == "Failure" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(
        failed["status"], "Failure",
        "long before the 30 s command would end"
    );
    assert_eq!(
        failed["err"],
        "Only pending or running operations can be updated"
    );
    assert!(failed["metadata"].get("return").is_none());
}
