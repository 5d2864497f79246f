//! Read calls: each sends the path and query of the Go client method it is named after and
//! returns the native data unchanged.

use super::*;
use crate::client::query::json_len;
use crate::client::ClientError;

fn query_of(entry: &JournalEntry) -> String {
    entry.query.clone().unwrap_or_default()
}

/// GetInstances: `GET /1.0/instances?recursion=1&project=...`, native order kept.
#[tokio::test]
async fn clones_share_the_discovered_server_object_instead_of_copying_it() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    let clone = client.clone();
    assert!(client.server()["api_extensions"]
        .as_array()
        .is_some_and(|e| e.len() > 100));
    assert!(std::sync::Arc::ptr_eq(&client.server, &clone.server));
}

#[tokio::test]
async fn get_instances_lists_native_objects_in_native_order() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    running_instance(&client, "c1").await;
    running_instance(&client, "c2").await;
    let items = client.get_instances(PROJECT).await.unwrap();
    let names: Vec<_> = items.iter().map(|i| i.value["name"].clone()).collect();
    assert_eq!(names, [json!("c1"), json!("c2")]);
    for item in &items {
        assert_eq!(item.json_len, json_len(&item.value));
    }
    let entry = last_request(&fake);
    assert_eq!(
        (entry.method.as_str(), entry.path.as_str()),
        ("GET", "/1.0/instances")
    );
    assert_eq!(query_of(&entry), "recursion=1&project=default");
}

/// GetInstance: `GET /1.0/instances/{name}` with the quoted ETag header.
#[tokio::test]
async fn get_instance_returns_the_object_and_its_etag() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    running_instance(&client, "c1").await;
    let single = client.get_instance(PROJECT, "c1").await.unwrap();
    assert_eq!(single.value["name"], "c1");
    let etag = single.etag.expect("instances carry an ETag");
    assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");
    assert_eq!(last_request(&fake).path, "/1.0/instances/c1");
}

/// GetInstance on a missing instance is a native 404 with the native message.
#[tokio::test]
async fn get_instance_missing_is_a_native_404() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    match client.get_instance(PROJECT, "nope").await {
        Err(ClientError::Native {
            http_status,
            error_code,
            message,
        }) => {
            assert_eq!((http_status, error_code), (404, 404));
            assert!(message.contains("Instance not found"), "{message}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

/// GetInstanceState: `GET /1.0/instances/{name}/state`, no ETag.
#[tokio::test]
async fn get_instance_state_reads_the_state_path() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    running_instance(&client, "c1").await;
    let state = client.get_instance_state(PROJECT, "c1").await.unwrap();
    assert_eq!(state.value["status"], "Running");
    assert_eq!(state.etag, None);
    assert_eq!(last_request(&fake).path, "/1.0/instances/c1/state");
}

/// GetInstanceSnapshots and GetInstanceSnapshot.
#[tokio::test]
async fn snapshots_are_listed_and_read() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    running_instance(&client, "c1").await;
    let accepted = client
        .create_instance_snapshot(PROJECT, "c1", &json!({"name": "snap0"}))
        .await
        .unwrap();
    finish(&client, &accepted.id).await;
    let snapshots = client.get_instance_snapshots(PROJECT, "c1").await.unwrap();
    assert_eq!(snapshots.len(), 1);
    assert_eq!(snapshots[0].value["name"], "snap0");
    let entry = last_request(&fake);
    assert_eq!(entry.path, "/1.0/instances/c1/snapshots");
    assert_eq!(query_of(&entry), "recursion=1&project=default");
    let snapshot = client
        .get_instance_snapshot(PROJECT, "c1", "snap0")
        .await
        .unwrap();
    assert_eq!(snapshot.value["name"], "snap0");
    assert!(snapshot.etag.is_some());
    assert_eq!(
        last_request(&fake).path,
        "/1.0/instances/c1/snapshots/snap0"
    );
}

/// GetImages, GetImage and GetImageAliases.
#[tokio::test]
async fn images_and_aliases_are_listed_and_read() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    let images = client.get_images(PROJECT).await.unwrap();
    assert!(!images.is_empty());
    assert_eq!(last_request(&fake).path, "/1.0/images");
    let fingerprint = images[0].value["fingerprint"].as_str().unwrap().to_owned();
    let image = client.get_image(PROJECT, &fingerprint).await.unwrap();
    assert_eq!(image.value["fingerprint"], fingerprint.as_str());
    assert!(image.etag.is_some());
    assert_eq!(
        last_request(&fake).path,
        format!("/1.0/images/{fingerprint}")
    );
    let aliases = client.get_image_aliases(PROJECT).await.unwrap();
    assert!(aliases.iter().any(|a| a.value["name"] == "busybox"));
    let entry = last_request(&fake);
    assert_eq!(entry.path, "/1.0/images/aliases");
    assert_eq!(query_of(&entry), "recursion=1&project=default");
}

/// GetNetworks, GetNetwork, GetProfiles, GetProfile, GetProjects, GetProject.
#[tokio::test]
async fn networks_profiles_and_projects_are_listed_and_read() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    let cases: [(&str, &str); 3] = [
        ("networks", "lo"),
        ("profiles", "default"),
        ("projects", "default"),
    ];
    for (collection, name) in cases {
        let (items, single) = match collection {
            "networks" => (
                client.get_networks(PROJECT).await.unwrap(),
                client.get_network(PROJECT, name).await.unwrap(),
            ),
            "profiles" => (
                client.get_profiles(PROJECT).await.unwrap(),
                client.get_profile(PROJECT, name).await.unwrap(),
            ),
            _ => (
                client.get_projects(PROJECT).await.unwrap(),
                client.get_project(PROJECT, name).await.unwrap(),
            ),
        };
        assert!(
            items.iter().any(|i| i.value["name"] == name),
            "{collection}"
        );
        assert_eq!(single.value["name"], name);
        assert!(single.etag.is_some(), "{collection} objects carry an ETag");
        let paths: Vec<_> = requests(&fake)
            .iter()
            .rev()
            .take(2)
            .map(|e| e.path.clone())
            .collect();
        assert_eq!(
            paths,
            [
                format!("/1.0/{collection}/{name}"),
                format!("/1.0/{collection}")
            ]
        );
    }
}

/// GetStoragePools, GetStoragePool, GetStoragePoolVolumes, GetStoragePoolVolume.
#[tokio::test]
async fn storage_pools_and_volumes_are_listed_and_read() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    running_instance(&client, "c1").await;
    let pools = client.get_storage_pools(PROJECT).await.unwrap();
    assert!(pools.iter().any(|p| p.value["name"] == "default"));
    assert_eq!(last_request(&fake).path, "/1.0/storage-pools");
    let pool = client.get_storage_pool(PROJECT, "default").await.unwrap();
    assert_eq!(pool.value["name"], "default");
    let volumes = client
        .get_storage_pool_volumes(PROJECT, "default")
        .await
        .unwrap();
    let entry = last_request(&fake);
    assert_eq!(entry.path, "/1.0/storage-pools/default/volumes");
    assert_eq!(query_of(&entry), "recursion=1&project=default");
    let volume = volumes
        .iter()
        .find(|v| v.value["name"] == "c1")
        .expect("the instance has a volume");
    let volume_type = volume.value["type"].as_str().unwrap();
    let read = client
        .get_storage_pool_volume(PROJECT, "default", volume_type, "c1")
        .await
        .unwrap();
    assert_eq!(read.value["name"], "c1");
    assert_eq!(
        last_request(&fake).path,
        format!("/1.0/storage-pools/default/volumes/{volume_type}/c1")
    );
}

/// GetOperations flattens the status-keyed groups; GetOperation reads one.
#[tokio::test]
async fn operations_are_flattened_and_read() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    running_instance(&client, "c1").await;
    let operations = client.get_operations(PROJECT).await.unwrap();
    assert!(!operations.is_empty());
    assert!(operations.iter().all(|o| o.value["id"].is_string()));
    let entry = last_request(&fake);
    assert_eq!(entry.path, "/1.0/operations");
    assert_eq!(query_of(&entry), "recursion=1&project=default");
    let id = operations[0].value["id"].as_str().unwrap();
    let operation = client.get_operation(PROJECT, id).await.unwrap();
    assert_eq!(operation.value["id"], id);
    assert_eq!(last_request(&fake).path, format!("/1.0/operations/{id}"));
}

/// Names are percent-encoded as one path segment each, so input cannot reach other paths.
#[tokio::test]
async fn names_are_encoded_as_single_path_segments() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    let result = client.get_instance(PROJECT, "../profiles/default").await;
    assert!(
        matches!(result, Err(ClientError::Native { .. })),
        "{result:?}"
    );
    let entry = last_request(&fake);
    assert!(!entry.path.starts_with("/1.0/profiles"), "{}", entry.path);
}
