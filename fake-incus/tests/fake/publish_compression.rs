//! Publish honours `compression_algorithm` as the daemon does (the request's, else the project's,
//! else the server's `images.compression_algorithm`, else gzip): the image is stored so, its
//! fingerprint is the SHA-256 of what is stored, and its export is those bytes (measured on
//! Incus 6.0.4: `none` exports a POSIX tar `FP.tar`, gzip `FP.tar.gz`, each hashing to the
//! fingerprint).

use crate::common::{call, launch, wait};
use fake_incus::{assert_native_error, FakeIncus};
use serde_json::{json, Value};
use sha2::Digest;

/// Publishes `c1` with this body's extra keys; returns the final operation answer.
async fn publish(fake: &FakeIncus, extra: Value) -> crate::common::Reply {
    let mut body = json!({"source": {"type": "instance", "name": "c1"}});
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    let accepted = call(fake, "POST", "/1.0/images", Some(body)).await;
    wait(fake, &accepted).await
}

/// The export of the image the publish made: (file name, bytes), checked to hash to its
/// fingerprint.
async fn export(fake: &FakeIncus, done: &crate::common::Reply) -> (String, Vec<u8>) {
    let fingerprint = done.metadata()["metadata"]["fingerprint"]
        .as_str()
        .unwrap_or_else(|| panic!("a fingerprint: {}", done.json()))
        .to_owned();
    let export = call(
        fake,
        "GET",
        &format!("/1.0/images/{fingerprint}/export"),
        None,
    )
    .await;
    assert_eq!(export.status(), 200);
    assert_eq!(
        hex::encode(sha2::Sha256::digest(export.bytes())),
        fingerprint,
        "the fingerprint is the SHA-256 of what is stored"
    );
    let name = export
        .header("content-disposition")
        .and_then(|d| d.strip_prefix("inline;filename="))
        .expect("a file name")
        .replace(&fingerprint, "FP");
    (name, export.bytes().to_vec())
}

fn entries(tar: &[u8]) -> Vec<String> {
    tar::Archive::new(tar)
        .entries()
        .expect("a tarball")
        .filter_map(|e| Some(e.ok()?.path().ok()?.to_string_lossy().into_owned()))
        .collect()
}

#[tokio::test]
async fn publish_with_compression_none_stores_the_tar_itself() {
    let fake = crate::common::builder().start().await.expect("fake starts");
    launch(&fake, "c1", false).await;
    let done = publish(&fake, json!({"compression_algorithm": "none"})).await;
    let (name, bytes) = export(&fake, &done).await;
    assert_eq!(name, "FP.tar");
    assert_eq!(&bytes[257..262], b"ustar", "a POSIX tar");
    assert!(entries(&bytes).contains(&"metadata.yaml".to_owned()));
    let size = done.metadata()["metadata"]["size"].as_str().expect("size");
    assert_eq!(size, bytes.len().to_string());
}

#[tokio::test]
async fn publish_compresses_with_gzip_by_default_and_with_xz_when_asked() {
    let fake = crate::common::builder().start().await.expect("fake starts");
    launch(&fake, "c1", false).await;
    let (name, gzip) = export(&fake, &publish(&fake, json!({})).await).await;
    assert_eq!(
        (name.as_str(), &gzip[..2]),
        ("FP.tar.gz", &[0x1f, 0x8b][..])
    );
    let done = publish(
        &fake,
        json!({"compression_algorithm": "xz", "properties": {"k": "v"}}),
    )
    .await;
    let (name, xz) = export(&fake, &done).await;
    assert_eq!(name, "FP.tar.xz");
    let mut tar = Vec::new();
    lzma_rs::xz_decompress(&mut std::io::Cursor::new(xz), &mut tar).expect("xz");
    assert!(entries(&tar).contains(&"metadata.yaml".to_owned()));
}

#[tokio::test]
async fn publish_uses_the_projects_then_the_servers_images_compression_algorithm() {
    let fake = crate::common::builder().start().await.expect("fake starts");
    launch(&fake, "c1", false).await;
    let server = json!({"config": {"images.compression_algorithm": "none"}});
    let set = call(&fake, "PATCH", "/1.0", Some(server)).await;
    assert_eq!(set.status(), 200, "{}", set.json());
    let (name, _) = export(&fake, &publish(&fake, json!({})).await).await;
    assert_eq!(name, "FP.tar", "the server's setting");
    // A project PATCH replaces the whole config: keep its features.
    let mut config = call(&fake, "GET", "/1.0/projects/default", None)
        .await
        .metadata()["config"]
        .clone();
    config["images.compression_algorithm"] = json!("xz");
    let set = call(
        &fake,
        "PATCH",
        "/1.0/projects/default",
        Some(json!({"config": config})),
    )
    .await;
    assert_eq!(set.status(), 200, "{}", set.json());
    let (name, _) = export(
        &fake,
        &publish(&fake, json!({"properties": {"k": "2"}})).await,
    )
    .await;
    assert_eq!(name, "FP.tar.xz", "the project's over the server's");
    let done = publish(
        &fake,
        json!({"compression_algorithm": "gzip", "properties": {"k": "3"}}),
    )
    .await;
    let (name, _) = export(&fake, &done).await;
    assert_eq!(name, "FP.tar.gz", "the request's over both");
}

#[tokio::test]
async fn publish_with_an_unknown_compression_fails_with_the_daemons_text() {
    let fake = crate::common::builder().start().await.expect("fake starts");
    launch(&fake, "c1", false).await;
    let done = publish(&fake, json!({"compression_algorithm": "foo"})).await;
    assert_native_error(
        &done,
        500,
        "Compression algorithm \"foo\" isn't currently supported",
    );
}
