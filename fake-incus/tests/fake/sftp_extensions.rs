//! The OpenSSH extensions of the instance SFTP server, as the daemon's (Go's pkg/sftp) serves
//! them: announced in `VERSION` (`hardlink@openssh.com=1`, `posix-rename@openssh.com=1`,
//! `statvfs@openssh.com=2`), and answered with its statuses and texts (measured on Incus 6.0.4
//! and 7.0.2 with a raw SFTP client).

use crate::common::{default_fake as fake, launch, sftp_upgrade};
use fake_incus::FakeIncus;
use russh_sftp::client::{RawSftpSession, SftpSession};
use russh_sftp::protocol::{Packet, StatusCode};

async fn raw(fake: &FakeIncus) -> RawSftpSession {
    let stream = sftp_upgrade(fake.unix_socket(), "/1.0/instances/c1/sftp").await;
    RawSftpSession::new(stream)
}

async fn session(fake: &FakeIncus) -> SftpSession {
    let stream = sftp_upgrade(fake.unix_socket(), "/1.0/instances/c1/sftp").await;
    SftpSession::new(stream).await.expect("an SFTP session")
}

/// Creates (or truncates) a file and writes `data` into it.
async fn put(client: &SftpSession, path: &str, data: &[u8]) {
    use tokio::io::AsyncWriteExt;
    let mut file = client.create(path).await.expect("created");
    file.write_all(data).await.expect("written");
    file.shutdown().await.expect("closed");
}

/// The status of an extended request: its code and message.
fn status(packet: Packet) -> (StatusCode, String) {
    match packet {
        Packet::Status(status) => (status.status_code, status.error_message),
        other => panic!("expected a status, got {other:?}"),
    }
}

/// An extended request whose data is two strings (hardlink, posix-rename).
async fn two_paths(raw: &RawSftpSession, request: &str, old: &str, new: &str) -> Packet {
    let data = russh_sftp::extensions::HardlinkExtension {
        oldpath: old.into(),
        newpath: new.into(),
    };
    raw.extended(request, data.try_into().expect("encoded"))
        .await
        .expect("answered")
}

#[tokio::test]
async fn the_sftp_server_announces_the_daemons_three_openssh_extensions() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    let raw = raw(&fake).await;
    let version = raw.init().await.expect("VERSION");
    let mut announced: Vec<String> = version
        .extensions
        .iter()
        .map(|(name, data)| format!("{name}={data}"))
        .collect();
    announced.sort();
    assert_eq!(
        (version.version, announced),
        (
            3,
            vec![
                "hardlink@openssh.com=1".to_string(),
                "posix-rename@openssh.com=1".to_string(),
                "statvfs@openssh.com=2".to_string(),
            ]
        )
    );
}

#[tokio::test]
async fn a_hard_link_gives_a_file_a_second_name_and_refuses_as_the_daemon() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    let client = session(&fake).await;
    put(&client, "/tmp/a", b"one").await;
    assert!(client.hardlink("/tmp/a", "/tmp/b").await.expect("linked"));
    assert_eq!(client.read("/tmp/b").await.expect("read"), b"one");
    let raw = raw(&fake).await;
    raw.init().await.expect("VERSION");
    for (old, new, expected) in [
        (
            "/tmp/a",
            "/tmp/b",
            (StatusCode::Failure, "link /tmp/a /tmp/b: file exists"),
        ),
        (
            "/tmp/nope",
            "/tmp/c",
            (
                StatusCode::NoSuchFile,
                "link /tmp/nope /tmp/c: no such file or directory",
            ),
        ),
        (
            "/tmp",
            "/tmp/d",
            (
                StatusCode::Failure,
                "link /tmp /tmp/d: operation not permitted",
            ),
        ),
    ] {
        let answer = status(two_paths(&raw, "hardlink@openssh.com", old, new).await);
        assert_eq!(answer, (expected.0, expected.1.to_string()), "{old} {new}");
    }
}

#[tokio::test]
async fn posix_rename_replaces_the_target_and_names_both_paths_in_its_error() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    let client = session(&fake).await;
    put(&client, "/tmp/x1", b"one").await;
    put(&client, "/tmp/x2", b"two").await;
    let raw = raw(&fake).await;
    raw.init().await.expect("VERSION");
    let renamed = status(two_paths(&raw, "posix-rename@openssh.com", "/tmp/x1", "/tmp/x2").await);
    assert_eq!(renamed, (StatusCode::Ok, String::new()));
    assert_eq!(client.read("/tmp/x2").await.expect("read"), b"one");
    assert!(!client.try_exists("/tmp/x1").await.expect("looked up"));
    let missing = status(two_paths(&raw, "posix-rename@openssh.com", "/tmp/x1", "/tmp/x3").await);
    assert_eq!(
        missing,
        (
            StatusCode::NoSuchFile,
            "rename /tmp/x1 /tmp/x3: no such file or directory".to_string()
        )
    );
}

#[tokio::test]
async fn statvfs_reports_the_pool_filesystem_and_other_extensions_are_unsupported() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    let client = session(&fake).await;
    let info = client
        .fs_info("/")
        .await
        .expect("answered")
        .expect("statvfs announced");
    let pool =
        crate::common::call(&fake, "GET", "/1.0/storage-pools/default/resources", None).await;
    let space = &pool.metadata()["space"];
    let total = space["total"].as_u64().expect("total");
    let used = space["used"].as_u64().expect("used");
    assert_eq!(
        (
            info.block_size,
            info.blocks,
            info.blocks_free,
            info.name_max
        ),
        (4096, total / 4096, (total - used) / 4096, 255)
    );
    let raw = raw(&fake).await;
    raw.init().await.expect("VERSION");
    let missing = raw.statvfs("/nope").await.expect_err("refused");
    assert!(
        missing.to_string().contains("no such file or directory"),
        "{missing}"
    );
    let other = raw
        .extended("fstatvfs@openssh.com", Vec::new())
        .await
        .expect("answered");
    assert_eq!(
        status(other),
        (
            StatusCode::OpUnsupported,
            "operation unsupported".to_string()
        )
    );
}
