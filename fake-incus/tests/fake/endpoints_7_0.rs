//! The endpoints Incus 7.0 adds, each served only when the fake imitates a line with the API
//! extension that brought it, with the real 7.0.2 daemon's answers (measured in a throw-away
//! project on the daemon, the same requests to a fake in 7.0 mode).

use crate::common::call;
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
async fn network_address_sets_are_served_only_by_a_line_with_network_address_set() {
    let six = fake_of(IncusLine::V6_0).await;
    let unrouted = call(&six, "GET", "/1.0/network-address-sets", None).await;
    assert_native_error(&unrouted, 404, "not found");
    let seven = fake_of(IncusLine::V7_0).await;
    let empty = call(&seven, "GET", "/1.0/network-address-sets", None).await;
    assert_eq!((empty.status(), empty.metadata()), (200, &json!([])));
}

#[tokio::test]
async fn a_network_address_set_is_created_patched_used_by_an_acl_and_deleted_as_the_daemon_does() {
    let fake = fake_of(IncusLine::V7_0).await;
    let sets = "/1.0/network-address-sets";
    let body = json!({"name": "fe-as1", "addresses": ["10.0.0.1", "10.0.1.0/24", "10.0.0.120-10.0.0.130"],
                      "description": "d", "config": {"user.a": "b"}});
    let created = call(&fake, "POST", sets, Some(body.clone())).await;
    assert_eq!(created.status(), 201, "{}", created.json());
    assert_eq!(
        created.header("location"),
        Some("/1.0/network-address-sets/fe-as1")
    );
    let again = call(&fake, "POST", sets, Some(body)).await;
    assert_native_error(&again, 400, "The network address set already exists");
    let bad = call(
        &fake,
        "POST",
        sets,
        Some(
            json!({"name": "other", "addresses": ["00:11:22:33:44:55"], "config": {"bogus": "1"}}),
        ),
    )
    .await;
    assert_native_error(
        &bad,
        500,
        "Invalid addresses: Unsupported MAC address format \"00:11:22:33:44:55\" at index 0",
    );
    // PATCH merges the config only: the addresses and the description are the request's.
    let patched = call(
        &fake,
        "PATCH",
        "/1.0/network-address-sets/fe-as1",
        Some(json!({"config": {"user.c": "d"}})),
    )
    .await;
    assert_eq!(patched.status(), 200, "{}", patched.json());
    let set = call(&fake, "GET", "/1.0/network-address-sets/fe-as1", None).await;
    assert_eq!(
        set.metadata(),
        &json!({"addresses": [], "config": {"user.a": "b", "user.c": "d"}, "description": "",
                "name": "fe-as1", "used_by": [], "project": "default"})
    );
    // The daemon's ETag of the same set (measured: the name, description, addresses, config).
    assert_eq!(
        set.header("etag"),
        Some("\"d0643b7596d2a43cd7d9f7f69a9eaca4fb16a81d67f479a23baf30908e86c592\"")
    );
    let acl = json!({"name": "allow-web", "ingress": [{"action": "allow", "source": "$fe-as1", "state": "enabled"}]});
    let made = call(&fake, "POST", "/1.0/network-acls", Some(acl)).await;
    assert_eq!(made.status(), 201, "{}", made.json());
    let used = call(&fake, "GET", "/1.0/network-address-sets/fe-as1", None).await;
    assert_eq!(
        used.metadata()["used_by"],
        json!(["/1.0/network-acls/allow-web"])
    );
    let refused = call(&fake, "DELETE", "/1.0/network-address-sets/fe-as1", None).await;
    assert_native_error(&refused, 500, "Cannot delete address set that is in use");
    let renamed = call(
        &fake,
        "POST",
        "/1.0/network-address-sets/fe-as1",
        Some(json!({"name": "site"})),
    )
    .await;
    assert_native_error(&renamed, 500, "Cannot rename address set that is in use");
    call(&fake, "DELETE", "/1.0/network-acls/allow-web", None).await;
    let deleted = call(&fake, "DELETE", "/1.0/network-address-sets/fe-as1", None).await;
    assert_eq!(deleted.status(), 200, "{}", deleted.json());
    let gone = call(&fake, "GET", "/1.0/network-address-sets/fe-as1", None).await;
    assert_native_error(&gone, 404, "Network_address_set not found");
}

/// A custom volume `v1` of the default pool in the default project.
async fn with_volume(fake: &FakeIncus) {
    let made = call(
        fake,
        "POST",
        "/1.0/storage-pools/default/volumes/custom",
        Some(json!({"name": "v1"})),
    )
    .await;
    assert_eq!(made.status(), 200, "{}", made.json());
}

#[tokio::test]
async fn a_custom_volume_has_files_of_its_own_served_only_by_a_line_with_file_storage_volume() {
    let files = "/1.0/storage-pools/default/volumes/custom/v1/files";
    let six = fake_of(IncusLine::V6_0).await;
    with_volume(&six).await;
    let unrouted = call(&six, "GET", &format!("{files}?path=/"), None).await;
    assert_eq!(unrouted.status(), 404, "{}", unrouted.json());
    let fake = fake_of(IncusLine::V7_0).await;
    with_volume(&fake).await;
    let root = call(&fake, "GET", &format!("{files}?path=/"), None).await;
    assert_eq!((root.status(), root.metadata()), (200, &json!([])));
    assert_eq!(root.header("x-incus-mode"), Some("0711"));
    let written = fake
        .call(
            fake_incus::Request::post(&format!("{files}?path=/hello"))
                .header("x-incus-type", "file")
                .body("hi"),
        )
        .await;
    assert_eq!(written.status(), 200, "{}", written.json());
    let read = call(&fake, "GET", &format!("{files}?path=/hello"), None).await;
    assert_eq!(read.bytes().as_ref(), b"hi");
    // The volume's files are its own: not the instance's, and gone with the volume.
    let missing = call(&fake, "GET", &format!("{files}?path=/nope"), None).await;
    assert_native_error(&missing, 404, "Not Found");
    let no_path = call(&fake, "GET", files, None).await;
    assert_native_error(&no_path, 400, "Missing path argument");
    call(
        &fake,
        "DELETE",
        "/1.0/storage-pools/default/volumes/custom/v1",
        None,
    )
    .await;
    with_volume(&fake).await;
    let fresh = call(&fake, "GET", &format!("{files}?path=/"), None).await;
    assert_eq!(fresh.metadata(), &json!([]));
    crate::common::launch(&fake, "c1", false).await;
    let container = call(
        &fake,
        "GET",
        "/1.0/storage-pools/default/volumes/container/c1/files?path=/",
        None,
    )
    .await;
    assert_native_error(
        &container,
        404,
        "Storage volume \"c1\" in project \"default\" of type \"custom\" does not exist on pool \"default\": Storage volume not found",
    );
}

#[tokio::test]
async fn a_custom_volume_serves_sftp_on_its_files() {
    let fake = fake_of(IncusLine::V7_0).await;
    with_volume(&fake).await;
    let stream = crate::common::sftp_upgrade(
        fake.unix_socket(),
        "/1.0/storage-pools/default/volumes/custom/v1/sftp",
    )
    .await;
    let sftp = russh_sftp::client::SftpSession::new(stream)
        .await
        .expect("an SFTP session");
    sftp.create_dir("/data").await.expect("made");
    let listed = call(
        &fake,
        "GET",
        "/1.0/storage-pools/default/volumes/custom/v1/files?path=/",
        None,
    )
    .await;
    assert_eq!(listed.metadata(), &json!(["data"]));
}

#[tokio::test]
async fn nbd_bitmaps_rebuild_and_repair_answer_as_the_daemon_for_what_the_fake_has() {
    let fake = fake_of(IncusLine::V7_0).await;
    with_volume(&fake).await;
    crate::common::launch(&fake, "c1", false).await;
    let volume = "/1.0/storage-pools/default/volumes/custom/v1";
    let nbd = fake
        .call(fake_incus::Request::get(&format!("{volume}/nbd")).header("upgrade", "nbd"))
        .await;
    assert_native_error(
        &nbd,
        500,
        "qemu-nbd failed: Failed when running qemu-nbd: Failed to run: qemu-img info -U --output=json /var/lib/incus/storage-pools/default/custom/default_v1/root.img: exec: \"qemu-img\": executable file not found in $PATH",
    );
    let no_upgrade = call(&fake, "GET", &format!("{volume}/nbd"), None).await;
    assert_native_error(&no_upgrade, 400, "Missing or invalid upgrade header");
    let instance_nbd = fake
        .call(fake_incus::Request::get("/1.0/instances/c1/nbd").header("upgrade", "nbd"))
        .await;
    assert_native_error(
        &instance_nbd,
        400,
        "NBD export of all disks is only supported on virtual machines",
    );
    let bitmaps = call(&fake, "GET", &format!("{volume}/bitmaps"), None).await;
    assert_native_error(&bitmaps, 400, "Only block volumes are supported");
    let instance_bitmaps = call(&fake, "POST", "/1.0/instances/c1/bitmaps", Some(json!({}))).await;
    assert_native_error(
        &instance_bitmaps,
        400,
        "Creating bitmaps requires the instance to be running",
    );
    let repair = call(
        &fake,
        "POST",
        "/1.0/instances/c1/debug/repair",
        Some(json!({"action": "rebuild-config-volume"})),
    )
    .await;
    assert_native_error(
        &repair,
        500,
        "Config volume rebuild is only possible on VMs",
    );
    let rebuilt = call(&fake, "POST", &format!("{volume}/rebuild"), None).await;
    assert_eq!(
        rebuilt.metadata()["description"],
        "Rebuilding storage volume"
    );
    crate::common::completed(&fake, &rebuilt).await;
    let snapshotted = call(
        &fake,
        "POST",
        &format!("{volume}/snapshots"),
        Some(json!({"name": "s1"})),
    )
    .await;
    crate::common::completed(&fake, &snapshotted).await;
    let refused = call(&fake, "POST", &format!("{volume}/rebuild"), None).await;
    let failed = crate::common::wait(&fake, &refused).await;
    // 7.0's wait answers the failed operation itself (WAIT_ANSWERS_THE_OPERATION).
    assert_eq!(failed.status(), 200);
    assert_eq!(failed.metadata()["status"], "Failure");
    assert_eq!(
        failed.metadata()["err"],
        "Cannot rebuild custom volume with snapshots"
    );
    // None of them is served by a line without their extensions.
    let six = fake_of(IncusLine::V6_0).await;
    crate::common::launch(&six, "c1", false).await;
    for (method, path) in [
        ("POST", "/1.0/instances/c1/bitmaps"),
        ("POST", "/1.0/instances/c1/debug/repair"),
        ("GET", "/1.0/instances/c1/nbd"),
    ] {
        let reply = call(&six, method, path, None).await;
        assert_native_error(&reply, 404, "not found");
    }
}
