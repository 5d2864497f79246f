//! Mutations and operation waits: each sends the method, path, body and `If-Match` of the Go
//! client method it is named after, and async ones return the operation of the 202.

use super::*;
use crate::client::{effective_wait, ClientError};

fn body_of(entry: &JournalEntry) -> serde_json::Value {
    serde_json::from_str(&entry.body).expect("a JSON body")
}

/// CreateInstance: `POST /1.0/instances` with the native body; the 202's operation comes back.
#[tokio::test]
async fn create_instance_posts_the_body_and_returns_the_operation() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    let body = json!({"name": "c1", "source": {"type": "image", "alias": "busybox"}});
    let accepted = client.create_instance(PROJECT, &body).await.unwrap();
    assert_eq!(accepted.operation["id"], accepted.id.as_str());
    let entry = last_request(&fake);
    assert_eq!(
        (entry.method.as_str(), entry.path.as_str()),
        ("POST", "/1.0/instances")
    );
    assert_eq!(entry.query.as_deref(), Some("project=default"));
    assert_eq!(body_of(&entry), body);
    // GetOperationWait: the final operation object.
    let operation = finish(&client, &accepted.id).await;
    assert_eq!(operation["status"], "Success");
    let wait = last_request(&fake);
    assert_eq!(wait.path, format!("/1.0/operations/{}/wait", accepted.id));
    assert_eq!(wait.query.as_deref(), Some("timeout=10&project=default"));
}

/// GetOperationWait: a failed operation is `Failed` with Incus's error (HTTP 200 error envelope).
#[tokio::test]
async fn operation_wait_reports_a_failed_operation() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    running_instance(&client, "c1").await;
    let body = json!({"name": "c1", "source": {"type": "image", "alias": "busybox"}});
    let accepted = client.create_instance(PROJECT, &body).await.unwrap();
    match client
        .get_operation_wait(PROJECT, &accepted.id, 5)
        .await
        .unwrap()
    {
        WaitOutcome::Failed { message, .. } => assert!(message.contains("UNIQUE"), "{message}"),
        other => panic!("unexpected {other:?}"),
    }
}

/// GetOperationWait: a wait that ends first is `NotFinished` ("context deadline exceeded").
#[tokio::test]
async fn operation_wait_that_ends_first_is_not_finished() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    let _guard = fake.add_rule(
        fake_incus::Rule::new("POST", "/1.0/instances")
            .fault(fake_incus::Fault::OperationNeverFinish),
    );
    let body = json!({"name": "c1", "source": {"type": "image", "alias": "busybox"}});
    let accepted = client.create_instance(PROJECT, &body).await.unwrap();
    let outcome = client
        .get_operation_wait(PROJECT, &accepted.id, 0)
        .await
        .unwrap();
    assert_eq!(outcome, WaitOutcome::NotFinished);
    // The effective wait never reaches the request timeout.
    assert_eq!(effective_wait(60, client.connection().timeout()), 29);
}

/// GetOperationWait on an unknown operation is a native 404.
#[tokio::test]
async fn operation_wait_on_an_unknown_operation_is_a_native_404() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    let result = client
        .get_operation_wait(PROJECT, "6b2ae1e4-0000-4000-8000-000000000000", 1)
        .await;
    assert!(
        matches!(
            result,
            Err(ClientError::Native {
                http_status: 404,
                ..
            })
        ),
        "{result:?}"
    );
}

/// PatchInstance: conditional `PATCH` with `If-Match` (the ETag read by GetInstance), synchronous;
/// a stale ETag is a native 412.
#[tokio::test]
async fn patch_instance_is_conditional_on_the_etag() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    running_instance(&client, "c1").await;
    let etag = client
        .get_instance(PROJECT, "c1")
        .await
        .unwrap()
        .etag
        .unwrap();
    let body = json!({"config": {"user.note": "hi"}, "description": "d"});
    client
        .patch_instance(PROJECT, "c1", &body, &etag)
        .await
        .unwrap();
    let entry = last_request(&fake);
    assert_eq!(
        (entry.method.as_str(), entry.path.as_str()),
        ("PATCH", "/1.0/instances/c1")
    );
    assert_eq!(entry.if_match.as_deref(), Some(etag.as_str()));
    assert_eq!(body_of(&entry), body);
    let after = client.get_instance(PROJECT, "c1").await.unwrap();
    assert_eq!(after.value["config"]["user.note"], "hi");
    let stale = client.patch_instance(PROJECT, "c1", &body, &etag).await;
    assert!(
        matches!(
            stale,
            Err(ClientError::Native {
                http_status: 412,
                ..
            })
        ),
        "{stale:?}"
    );
}

/// UpdateInstance in restore mode: `PUT /1.0/instances/{name}` with `{"restore": snapshot}`.
/// Also CreateInstanceSnapshot and DeleteInstanceSnapshot.
#[tokio::test]
async fn snapshot_create_restore_and_delete() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    running_instance(&client, "c1").await;
    let accepted = client
        .create_instance_snapshot(PROJECT, "c1", &json!({"name": "snap0"}))
        .await
        .unwrap();
    let entry = last_request(&fake);
    assert_eq!(
        (entry.method.as_str(), entry.path.as_str()),
        ("POST", "/1.0/instances/c1/snapshots")
    );
    assert_eq!(body_of(&entry), json!({"name": "snap0"}));
    finish(&client, &accepted.id).await;

    let restore = json!({"restore": "snap0"});
    let accepted = client
        .update_instance(PROJECT, "c1", &restore, None)
        .await
        .unwrap();
    let entry = last_request(&fake);
    assert_eq!(
        (entry.method.as_str(), entry.path.as_str()),
        ("PUT", "/1.0/instances/c1")
    );
    assert_eq!(body_of(&entry), restore);
    assert_eq!(entry.if_match, None);
    assert_eq!(
        finish(&client, &accepted.id).await["description"],
        "Restoring snapshot"
    );

    let accepted = client
        .delete_instance_snapshot(PROJECT, "c1", "snap0")
        .await
        .unwrap();
    let entry = last_request(&fake);
    assert_eq!(
        (entry.method.as_str(), entry.path.as_str()),
        ("DELETE", "/1.0/instances/c1/snapshots/snap0")
    );
    finish(&client, &accepted.id).await;
    assert!(client
        .get_instance_snapshots(PROJECT, "c1")
        .await
        .unwrap()
        .is_empty());
}

/// UpdateInstanceState: `PUT /1.0/instances/{name}/state`; DeleteInstance: `DELETE`.
#[tokio::test]
async fn state_update_then_delete_instance() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    running_instance(&client, "c1").await;
    let stop = json!({"action": "stop", "force": true, "timeout": 0, "stateful": false});
    let accepted = client
        .update_instance_state(PROJECT, "c1", &stop)
        .await
        .unwrap();
    let entry = last_request(&fake);
    assert_eq!(
        (entry.method.as_str(), entry.path.as_str()),
        ("PUT", "/1.0/instances/c1/state")
    );
    assert_eq!(body_of(&entry), stop);
    finish(&client, &accepted.id).await;

    let accepted = client.delete_instance(PROJECT, "c1").await.unwrap();
    let entry = last_request(&fake);
    assert_eq!(
        (entry.method.as_str(), entry.path.as_str()),
        ("DELETE", "/1.0/instances/c1")
    );
    finish(&client, &accepted.id).await;
    assert!(client.get_instances(PROJECT).await.unwrap().is_empty());
}

/// DeleteInstance on a running instance is rejected synchronously (native 400, no operation).
#[tokio::test]
async fn delete_running_instance_is_a_native_rejection() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    running_instance(&client, "c1").await;
    let result = client.delete_instance(PROJECT, "c1").await;
    match result {
        Err(
            error @ ClientError::Native {
                http_status: 400, ..
            },
        ) => {
            assert!(error.may_have_been_sent());
        }
        other => panic!("unexpected {other:?}"),
    }
}

/// DeleteImage: `DELETE /1.0/images/{fingerprint}`, an operation.
#[tokio::test]
async fn delete_image_returns_the_operation() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    let images = client.get_images(PROJECT).await.unwrap();
    let fingerprint = images[0].value["fingerprint"].as_str().unwrap().to_owned();
    let accepted = client.delete_image(PROJECT, &fingerprint).await.unwrap();
    let entry = last_request(&fake);
    assert_eq!(
        (entry.method.as_str(), entry.path.clone()),
        ("DELETE", format!("/1.0/images/{fingerprint}"))
    );
    finish(&client, &accepted.id).await;
    assert!(client.get_images(PROJECT).await.unwrap().is_empty());
}

/// DeleteOperation: `DELETE /1.0/operations/{id}`; Incus refuses for non-cancellable ones.
#[tokio::test]
async fn delete_operation_cancels_or_reports_the_native_refusal() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    let _cancellable = fake.add_rule(
        fake_incus::Rule::new("POST", "/1.0/instances")
            .nth(1)
            .fault(fake_incus::Fault::OperationCancellable),
    );
    let body = json!({"name": "c1", "source": {"type": "image", "alias": "busybox"}});
    let accepted = client.create_instance(PROJECT, &body).await.unwrap();
    client
        .delete_operation(PROJECT, &accepted.id)
        .await
        .unwrap();
    let entry = last_request(&fake);
    assert_eq!(
        (entry.method.as_str(), entry.path.clone()),
        ("DELETE", format!("/1.0/operations/{}", accepted.id))
    );
    assert_eq!(finish(&client, &accepted.id).await["status"], "Cancelled");

    let body = json!({"name": "c2", "source": {"type": "image", "alias": "busybox"}});
    let _slow = fake.add_rule(
        fake_incus::Rule::new("POST", "/1.0/instances")
            .fault(fake_incus::Fault::OperationNeverFinish),
    );
    let accepted = client.create_instance(PROJECT, &body).await.unwrap();
    let refused = client.delete_operation(PROJECT, &accepted.id).await;
    assert!(
        matches!(
            refused,
            Err(ClientError::Native {
                http_status: 400,
                ..
            })
        ),
        "{refused:?}"
    );
}

/// UpdateInstance sends `If-Match` when given an ETag; a stale one is a synchronous native 412.
#[tokio::test]
async fn update_instance_with_a_stale_etag_is_a_native_412() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    running_instance(&client, "c1").await;
    let stale = "\"0000000000000000000000000000000000000000000000000000000000000000\"";
    let result = client
        .update_instance(PROJECT, "c1", &json!({"restore": "snap0"}), Some(stale))
        .await;
    assert!(
        matches!(
            result,
            Err(ClientError::Native {
                http_status: 412,
                ..
            })
        ),
        "{result:?}"
    );
    assert_eq!(last_request(&fake).if_match.as_deref(), Some(stale));
}
