//! Image import and aliases, instance files, rename and copy over the Unix socket, with the
//! answers, operations and texts of the real Incus 6.0.4 daemon (captured from it).

use crate::common;
use crate::tarball::tarball;

use common::{call, completed, fake, launch, unix_bytes as send, wait, Reply};
use fake_incus::{assert_native_error, FakeIncus};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const META: &[u8] = b"architecture: x86_64\ncreation_date: 1700000000\nproperties:\n  os: probeos\n  release: \"7\"\n  description: probe image\n";

fn unified_tarball() -> Vec<u8> {
    tarball(&[
        ("metadata.yaml", META),
        ("rootfs/", b""),
        ("rootfs/bin/", b""),
        ("rootfs/bin/sh", b"x"),
        ("rootfs/bin/ls", b"x"),
        ("rootfs/usr/bin/env", b"x"),
        ("rootfs/etc/hostname", b"h"),
    ])
}

/// The split form as the Go client's multipart writer sends it.
fn multipart(parts: &[(&str, &str, &[u8])]) -> (String, Vec<u8>) {
    let boundary = "3d1f0e9a2b7c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7081920a1b";
    let mut body = Vec::new();
    for (name, filename, data) in parts {
        body.extend_from_slice(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{filename}\"\r\nContent-Type: application/octet-stream\r\n\r\n").as_bytes());
        body.extend_from_slice(data);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

async fn operation(fake: &FakeIncus, accepted: &Reply) -> Value {
    let op = accepted.json()["operation"].as_str().unwrap().to_string();
    call(fake, "GET", &op, None).await.json()["metadata"].clone()
}

#[tokio::test]
async fn a_unified_upload_becomes_an_image_with_the_sha256_of_its_bytes_and_the_headers_asks() {
    let fake = fake().await;
    let body = unified_tarball();
    let fingerprint = hex::encode(Sha256::digest(&body));
    let accepted = send(
        &fake,
        "POST",
        "/1.0/images",
        body.clone(),
        &[
            ("content-type", "application/octet-stream"),
            ("x-incus-filename", "unified.tar.gz"),
            ("x-incus-aliases", "alias=probe-uni&alias=probe-uni2"),
            ("x-incus-properties", "extra=1&os=override"),
        ],
    )
    .await;
    assert_eq!(accepted.status(), 202);
    let created = &accepted.json()["metadata"];
    assert_eq!(
        (
            &created["description"],
            &created["resources"],
            &created["metadata"]
        ),
        (&json!("Downloading image"), &json!({}), &Value::Null)
    );
    let done = wait(&fake, &accepted).await;
    assert_eq!(
        done.json()["metadata"]["metadata"],
        json!({"fingerprint": fingerprint, "size": body.len().to_string()})
    );
    let image = call(&fake, "GET", &format!("/1.0/images/{fingerprint}"), None).await;
    let m = image.metadata();
    assert_eq!(
        m["properties"],
        json!({"description": "probe image", "extra": "1", "os": "override", "release": "7"})
    );
    assert_eq!(
        m["aliases"],
        json!([{"name": "probe-uni", "description": ""}, {"name": "probe-uni2", "description": ""}])
    );
    assert_eq!(
        (
            &m["filename"],
            &m["size"],
            &m["type"],
            &m["created_at"],
            &m["architecture"]
        ),
        (
            &json!("unified.tar.gz"),
            &json!(body.len()),
            &json!("container"),
            &json!("2023-11-14T22:13:20Z"),
            &json!("x86_64")
        )
    );
    assert!(image.header("etag").is_some());
    let state = fake.dump_state();
    let recorded = state["images"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["fingerprint"] == fingerprint)
        .unwrap();
    assert_eq!(
        recorded["executables"],
        json!(["/bin/ls", "/bin/sh", "/usr/bin/env"])
    );

    // The same bytes again: the daemon's duplicate failure, with fingerprint and size set.
    let again = send(&fake, "POST", "/1.0/images", body.clone(), &[]).await;
    let failed = wait(&fake, &again).await;
    assert_native_error(&failed, 500, "Image with same fingerprint already exists");
    assert_eq!(
        operation(&fake, &again).await["metadata"]["fingerprint"],
        json!(fingerprint)
    );

    // An instance launches from the imported alias.
    let reply = call(
        &fake,
        "POST",
        "/1.0/instances",
        Some(json!({"name": "c1", "source": {"type": "image", "alias": "probe-uni"}})),
    )
    .await;
    completed(&fake, &reply).await;
    let c1 = call(&fake, "GET", "/1.0/instances/c1", None).await;
    assert_eq!(c1.metadata()["config"]["image.os"], "override");
    assert_eq!(
        c1.metadata()["config"]["volatile.base_image"],
        json!(fingerprint)
    );
}

#[tokio::test]
async fn a_split_upload_is_fingerprinted_over_both_parts_and_named_after_the_rootfs_part() {
    let fake = fake().await;
    let meta = tarball(&[("metadata.yaml", META)]);
    let rootfs = tarball(&[("bin/", b""), ("bin/busybox", b"x"), ("sbin/init", b"x")]);
    let (content_type, body) = multipart(&[
        ("metadata", "meta.tar.gz", &meta),
        ("rootfs", "rootfs.tar.gz", &rootfs),
    ]);
    let mut hasher = Sha256::new();
    hasher.update(&meta);
    hasher.update(&rootfs);
    let fingerprint = hex::encode(hasher.finalize());
    let accepted = send(
        &fake,
        "POST",
        "/1.0/images",
        body,
        &[("content-type", &content_type)],
    )
    .await;
    let done = wait(&fake, &accepted).await;
    assert_eq!(
        done.json()["metadata"]["metadata"]["fingerprint"],
        json!(fingerprint),
        "{}",
        done.json()
    );
    let image = call(&fake, "GET", &format!("/1.0/images/{fingerprint}"), None).await;
    assert_eq!(
        (&image.metadata()["filename"], &image.metadata()["size"]),
        (&json!("rootfs.tar.gz"), &json!(meta.len() + rootfs.len()))
    );
    let state = fake.dump_state();
    let recorded = state["images"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["fingerprint"] == fingerprint)
        .unwrap();
    assert_eq!(
        recorded["executables"],
        json!(["/bin/busybox", "/sbin/init"])
    );

    let (content_type, body) = multipart(&[
        ("rootfs", "rootfs.tar.gz", &rootfs),
        ("metadata", "meta.tar.gz", &meta),
    ]);
    let accepted = send(
        &fake,
        "POST",
        "/1.0/images",
        body,
        &[("content-type", &content_type)],
    )
    .await;
    assert_eq!(
        wait(&fake, &accepted).await.json()["error"],
        "Invalid multipart image"
    );
    let (content_type, body) = multipart(&[("metadata", "meta.tar.gz", &meta)]);
    let accepted = send(
        &fake,
        "POST",
        "/1.0/images",
        body,
        &[("content-type", &content_type)],
    )
    .await;
    assert_eq!(wait(&fake, &accepted).await.json()["error"], "EOF");
}

#[tokio::test]
async fn upload_problems_fail_the_operation_with_the_daemons_texts() {
    let fake = fake().await;
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"not a tarball at all".to_vec(), "Unsupported compression"),
        (Vec::new(), "EOF"),
        (
            tarball(&[("other.txt", b"x")]),
            "Metadata tarball is missing metadata.yaml",
        ),
        (
            tarball(&[("metadata.yaml", b"architecture: x86_64\n")]),
            "Missing creation date",
        ),
        (
            tarball(&[("metadata.yaml", b"architecture: foo\ncreation_date: 1\n")]),
            "Architecture isn't supported: foo",
        ),
        (
            tarball(&[("metadata.yaml", b"architecture: [\n")]),
            "yaml: line 1: did not find expected node content",
        ),
        (
            tarball(&[("metadata.yaml", b"architecture: x86_64\ncreation_date: 1\n")]),
            "Invalid instance type",
        ),
    ];
    for (body, message) in cases {
        let accepted = send(&fake, "POST", "/1.0/images", body, &[]).await;
        assert_eq!(accepted.status(), 202, "{message}");
        let done = wait(&fake, &accepted).await;
        assert_native_error(&done, 500, message);
        assert_eq!(operation(&fake, &accepted).await["metadata"], Value::Null);
    }
    let bad_json = send(
        &fake,
        "POST",
        "/1.0/images",
        b"{bad".to_vec(),
        &[("content-type", "application/json")],
    )
    .await;
    assert_native_error(
        &bad_json,
        400,
        "invalid character 'b' looking for beginning of object key string",
    );
    let no_source = send(
        &fake,
        "POST",
        "/1.0/images",
        b"{}".to_vec(),
        &[("content-type", "application/json")],
    )
    .await;
    assert_native_error(&no_source, 500, "Invalid images JSON");
}

#[tokio::test]
async fn image_aliases_are_created_renamed_updated_and_deleted_with_the_daemons_answers() {
    let fake = fake().await;
    let busybox = call(&fake, "GET", "/1.0/images/aliases/busybox", None).await;
    let target = busybox.metadata()["target"].as_str().unwrap().to_string();

    let created = call(
        &fake,
        "POST",
        "/1.0/images/aliases",
        Some(json!({"name": "a1", "target": &target[..12], "description": "d1"})),
    )
    .await;
    assert_eq!(
        (
            created.status(),
            created.header("location"),
            &created.json()["metadata"]
        ),
        (201, Some("/1.0/images/aliases/a1"), &Value::Null)
    );
    let alias = call(&fake, "GET", "/1.0/images/aliases/a1", None).await;
    assert_eq!(
        alias.metadata(),
        &json!({"description": "d1", "target": target, "name": "a1", "type": "container"})
    );
    for (body, status, message) in [
        (
            json!({"name": "a1", "target": target}),
            409,
            "Alias \"a1\" already exists",
        ),
        (
            json!({"name": "a2", "target": "abcdef"}),
            404,
            "Image not found",
        ),
        (
            json!({"name": "", "target": target}),
            400,
            "name and target are required",
        ),
        (json!({"name": "a3"}), 400, "name and target are required"),
    ] {
        let reply = call(&fake, "POST", "/1.0/images/aliases", Some(body)).await;
        assert_eq!(
            (reply.status(), reply.json()["error"].as_str()),
            (status, Some(message))
        );
    }

    let renamed = call(
        &fake,
        "POST",
        "/1.0/images/aliases/a1",
        Some(json!({"name": "a2"})),
    )
    .await;
    assert_eq!(
        (renamed.status(), renamed.header("location")),
        (201, Some("/1.0/images/aliases/a2"))
    );
    let taken = call(
        &fake,
        "POST",
        "/1.0/images/aliases/a2",
        Some(json!({"name": "busybox"})),
    )
    .await;
    assert_native_error(&taken, 409, "Alias \"busybox\" already exists");

    let put = call(
        &fake,
        "PUT",
        "/1.0/images/aliases/a2",
        Some(json!({"description": "new", "target": target})),
    )
    .await;
    assert_eq!((put.status(), &put.json()["metadata"]), (200, &json!({})));
    let patch = call(
        &fake,
        "PATCH",
        "/1.0/images/aliases/a2",
        Some(json!({"description": "newer"})),
    )
    .await;
    assert_eq!(patch.status(), 200);
    let alias = call(&fake, "GET", "/1.0/images/aliases/a2", None).await;
    assert_eq!(alias.metadata()["description"], "newer");
    let no_target = call(
        &fake,
        "PUT",
        "/1.0/images/aliases/a2",
        Some(json!({"description": "x"})),
    )
    .await;
    assert_native_error(&no_target, 400, "The target field is required");

    let deleted = call(&fake, "DELETE", "/1.0/images/aliases/a2", None).await;
    assert_eq!(
        (deleted.status(), &deleted.json()["metadata"]),
        (200, &json!({}))
    );
    let again = call(&fake, "DELETE", "/1.0/images/aliases/a2", None).await;
    assert_native_error(&again, 404, "Image alias not found");
}

fn files_path(instance: &str, path: &str) -> String {
    format!("/1.0/instances/{instance}/files?path={path}")
}

/// Writes `bytes` to `path` in `instance` (`POST` of an octet stream).
async fn write_file(fake: &FakeIncus, instance: &str, path: &str, bytes: Vec<u8>) -> Reply {
    send(
        fake,
        "POST",
        &files_path(instance, path),
        bytes,
        &[("content-type", "application/octet-stream")],
    )
    .await
}

#[tokio::test]
async fn files_are_written_read_listed_and_deleted_with_the_daemons_headers() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    let octet = ("content-type", "application/octet-stream");
    let written = send(
        &fake,
        "POST",
        &files_path("c1", "/root/new.txt"),
        b"abc".to_vec(),
        &[
            octet,
            ("x-incus-uid", "1000"),
            ("x-incus-gid", "1001"),
            ("x-incus-mode", "0640"),
            ("x-incus-type", "file"),
        ],
    )
    .await;
    assert_eq!(
        (written.status(), &written.json()["metadata"]),
        (200, &json!({}))
    );
    let appended = send(
        &fake,
        "POST",
        &files_path("c1", "/root/new.txt"),
        b"def".to_vec(),
        &[octet, ("x-incus-write", "append")],
    )
    .await;
    assert_eq!(appended.status(), 200);
    let read = send(
        &fake,
        "GET",
        &files_path("c1", "root/new.txt"),
        Vec::new(),
        &[],
    )
    .await;
    assert_eq!(read.bytes().as_ref(), b"abcdef");
    let header = |name: &str| read.header(name);
    assert_eq!(
        (
            header("x-incus-uid"),
            header("x-incus-gid"),
            header("x-incus-mode"),
            header("x-incus-type"),
            header("content-disposition"),
        ),
        (
            Some("1000"),
            Some("1001"),
            Some("0640"),
            Some("file"),
            Some("inline;filename=new.txt")
        )
    );
    let head = send(
        &fake,
        "HEAD",
        &files_path("c1", "/root/new.txt"),
        Vec::new(),
        &[],
    )
    .await;
    assert_eq!((head.status(), head.bytes().len()), (200, 0));
    assert_eq!(head.header("x-incus-mode"), Some("0640"));

    let dir = send(
        &fake,
        "POST",
        &files_path("c1", "/root/d1"),
        Vec::new(),
        &[("x-incus-type", "directory"), ("x-incus-mode", "0755")],
    )
    .await;
    assert_eq!(dir.status(), 200);
    let link = send(
        &fake,
        "POST",
        &files_path("c1", "/root/ln"),
        b"new.txt".to_vec(),
        &[octet, ("x-incus-type", "symlink")],
    )
    .await;
    assert_eq!(link.status(), 200);
    let read_link = send(&fake, "GET", &files_path("c1", "/root/ln"), Vec::new(), &[]).await;
    assert_eq!(
        (read_link.bytes().as_ref(), read_link.header("x-incus-type")),
        (&b"/root/new.txt"[..], Some("symlink"))
    );
    let listing = call(&fake, "GET", &files_path("c1", "/root"), None).await;
    assert_eq!(
        (listing.metadata(), listing.header("x-incus-type")),
        (&json!(["d1", "ln", "new.txt"]), Some("directory"))
    );

    for (method, path, headers, status, message) in [
        ("GET", "/root/nope", vec![], 404, "Not Found"),
        ("POST", "/nodir/x", vec![octet], 404, "Not Found"),
        (
            "POST",
            "/root/d1",
            vec![octet],
            500,
            "sftp: \"open /root/d1: is a directory\" (SSH_FX_FAILURE)",
        ),
        (
            "POST",
            "/root/w",
            vec![("x-incus-type", "weird")],
            400,
            "Bad file type: weird",
        ),
        (
            "POST",
            "/root/w",
            vec![("x-incus-write", "bogus")],
            400,
            "Bad file write mode: bogus",
        ),
    ] {
        let reply = send(
            &fake,
            method,
            &files_path("c1", path),
            b"x".to_vec(),
            &headers,
        )
        .await;
        assert_eq!(
            (reply.status(), reply.json()["error"].as_str()),
            (status, Some(message)),
            "{method} {path}"
        );
    }
    let no_path = call(&fake, "GET", "/1.0/instances/c1/files", None).await;
    assert_native_error(&no_path, 400, "Missing path argument");
    let missing = call(&fake, "GET", &files_path("nope", "/"), None).await;
    assert_eq!(missing.status(), 404);

    write_file(&fake, "c1", "/root/d1/f", b"x".to_vec()).await;
    let not_empty = call(&fake, "DELETE", &files_path("c1", "/root/d1"), None).await;
    assert_native_error(
        &not_empty,
        500,
        "sftp: \"remove /root/d1: directory not empty\" (SSH_FX_FAILURE)",
    );
    let deleted = call(&fake, "DELETE", &files_path("c1", "/root/new.txt"), None).await;
    assert_eq!(deleted.status(), 200);
    let gone = call(&fake, "DELETE", &files_path("c1", "/root/new.txt"), None).await;
    assert_eq!(gone.status(), 404);
}

#[tokio::test]
async fn an_instance_file_tree_is_bounded_and_answers_a_full_disk_past_its_cap() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    let nine_mib = vec![7u8; 9 << 20];
    let first = write_file(&fake, "c1", "/tmp/a", nine_mib.clone()).await;
    assert_eq!(first.status(), 200);
    let second = write_file(&fake, "c1", "/tmp/b", nine_mib).await;
    assert_native_error(
        &second,
        500,
        "sftp: \"write /tmp/b: no space left on device\" (SSH_FX_FAILURE)",
    );
}

async fn file_of(fake: &FakeIncus, instance: &str, path: &str) -> Option<Vec<u8>> {
    let reply = send(fake, "GET", &files_path(instance, path), Vec::new(), &[]).await;
    (reply.status() == 200).then(|| reply.bytes().to_vec())
}

#[tokio::test]
async fn files_follow_rename_copy_snapshot_restore_and_go_with_the_instance() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    write_file(&fake, "c1", "/root/f", b"v1".to_vec()).await;
    let snap = call(
        &fake,
        "POST",
        "/1.0/instances/c1/snapshots",
        Some(json!({"name": "s1"})),
    )
    .await;
    wait(&fake, &snap).await;
    write_file(&fake, "c1", "/root/f", b"v2".to_vec()).await;

    let renamed = call(
        &fake,
        "POST",
        "/1.0/instances/c1",
        Some(json!({"name": "c2"})),
    )
    .await;
    completed(&fake, &renamed).await;
    assert_eq!(file_of(&fake, "c2", "/root/f").await, Some(b"v2".to_vec()));

    let copied = call(
        &fake,
        "POST",
        "/1.0/instances",
        Some(json!({"name": "c3", "source": {"type": "copy", "source": "c2"}})),
    )
    .await;
    completed(&fake, &copied).await;
    assert_eq!(file_of(&fake, "c3", "/root/f").await, Some(b"v2".to_vec()));

    let restored = call(
        &fake,
        "PUT",
        "/1.0/instances/c3",
        Some(json!({"restore": "s1"})),
    )
    .await;
    completed(&fake, &restored).await;
    assert_eq!(file_of(&fake, "c3", "/root/f").await, Some(b"v1".to_vec()));
    assert_eq!(
        file_of(&fake, "c2", "/root/f").await,
        Some(b"v2".to_vec()),
        "the copy is its own tree"
    );

    let deleted = call(&fake, "DELETE", "/1.0/instances/c2", None).await;
    wait(&fake, &deleted).await;
    launch(&fake, "c2", false).await;
    assert_eq!(file_of(&fake, "c2", "/root/f").await, None);
}

#[tokio::test]
async fn a_copy_has_the_sources_config_without_its_identity_and_its_snapshots_unless_instance_only()
{
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    let patch = call(
        &fake,
        "PATCH",
        "/1.0/instances/c1",
        Some(json!({"config": {"user.k": "v"}})),
    )
    .await;
    assert_eq!(patch.status(), 200);
    let snap = call(
        &fake,
        "POST",
        "/1.0/instances/c1/snapshots",
        Some(json!({"name": "s1"})),
    )
    .await;
    wait(&fake, &snap).await;

    let accepted = call(
        &fake,
        "POST",
        "/1.0/instances",
        Some(json!({"name": "c2", "source": {"type": "copy", "source": "c1"}})),
    )
    .await;
    assert_eq!(
        accepted.json()["metadata"]["resources"],
        json!({"instances": ["/1.0/instances/c2", "/1.0/instances/c1"]})
    );
    completed(&fake, &accepted).await;
    let source = call(&fake, "GET", "/1.0/instances/c1", None).await;
    let copy = call(&fake, "GET", "/1.0/instances/c2", None).await;
    let (src, dst) = (&source.metadata()["config"], &copy.metadata()["config"]);
    assert_eq!(dst["user.k"], "v");
    assert_eq!(dst["volatile.apply_template"], "copy");
    assert_eq!(dst["volatile.base_image"], src["volatile.base_image"]);
    assert_ne!(dst["volatile.uuid"], src["volatile.uuid"]);
    assert_eq!(copy.metadata()["status"], "Stopped");
    let snaps = call(&fake, "GET", "/1.0/instances/c2/snapshots", None).await;
    assert_eq!(snaps.metadata(), &json!(["/1.0/instances/c2/snapshots/s1"]));

    let only = call(
        &fake,
        "POST",
        "/1.0/instances",
        Some(json!({"name": "c3", "source": {"type": "copy", "source": "c1", "instance_only": true}})),
    )
    .await;
    wait(&fake, &only).await;
    let snaps = call(&fake, "GET", "/1.0/instances/c3/snapshots", None).await;
    assert_eq!(snaps.metadata(), &json!([]));

    let missing = call(
        &fake,
        "POST",
        "/1.0/instances",
        Some(json!({"name": "c4", "source": {"type": "copy", "source": "nope"}})),
    )
    .await;
    assert_native_error(
        &missing,
        404,
        "Failed to fetch instance \"nope\" in project \"default\": Instance not found",
    );
    let unnamed = call(
        &fake,
        "POST",
        "/1.0/instances",
        Some(json!({"name": "c4", "source": {"type": "copy"}})),
    )
    .await;
    assert_native_error(&unnamed, 400, "Must specify a source instance");
    let taken = call(
        &fake,
        "POST",
        "/1.0/instances",
        Some(json!({"name": "c2", "source": {"type": "copy", "source": "c1"}})),
    )
    .await;
    let failed = wait(&fake, &taken).await;
    assert_eq!(failed.json()["error"], "Failed creating instance record: Add instance info to the database: Failed to create \"instances\" entry: UNIQUE constraint failed: instances.project_id, instances.name");
}

#[tokio::test]
async fn sftp_without_the_upgrade_header_is_refused_like_the_daemon() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    let reply = call(&fake, "GET", "/1.0/instances/c1/sftp", None).await;
    assert_native_error(&reply, 400, "Missing or invalid upgrade header");
    let post = call(&fake, "POST", "/1.0/instances/c1/sftp", None).await;
    assert_eq!(post.status(), 501);
}
