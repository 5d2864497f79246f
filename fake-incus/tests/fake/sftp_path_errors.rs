//! The instance SFTP server words a failed call on a path as the daemon's (Go's pkg/sftp) does:
//! Go's `*PathError`, the call and the path as the client sent it (`stat /tmp/nope: no such
//! file or directory`), for every call, on both lines; and a `REALPATH` or `READLINK` answers a
//! bare name. Measured on Incus 6.0.4 and 7.0.2 with a raw SFTP client (and the 7.0 client,
//! which stats a file before it pushes it, lstats it before it pulls it, and asks for `/`).

use crate::common::{launch, sftp_upgrade};
use fake_incus::{FakeIncus, IncusLine};
use russh_sftp::client::{error::Error, RawSftpSession};
use russh_sftp::protocol::{FileAttributes, StatusCode};

async fn fake_of(line: IncusLine) -> FakeIncus {
    let fake = FakeIncus::builder()
        .incus_version(line)
        .start()
        .await
        .expect("fake starts");
    launch(&fake, "c1", false).await;
    fake
}

async fn raw(fake: &FakeIncus) -> RawSftpSession {
    let stream = sftp_upgrade(fake.unix_socket(), "/1.0/instances/c1/sftp").await;
    let raw = RawSftpSession::new(stream);
    raw.init().await.expect("VERSION");
    raw
}

/// The failure status of a call: its code and message.
fn failure<T: std::fmt::Debug>(answer: Result<T, Error>) -> (StatusCode, String) {
    match answer {
        Err(Error::Status(status)) => (status.status_code, status.error_message),
        other => panic!("expected a failure status, got {other:?}"),
    }
}

fn missing(text: &str) -> (StatusCode, String) {
    (StatusCode::NoSuchFile, text.to_string())
}

#[tokio::test]
async fn a_call_on_a_missing_path_names_the_call_and_the_path_on_either_line() {
    let nope = "/tmp/nope";
    let mut size = FileAttributes::empty();
    size.size = Some(0);
    let mut mode = FileAttributes::empty();
    mode.permissions = Some(0o644);
    for line in IncusLine::all() {
        let fake = fake_of(line).await;
        let raw = raw(&fake).await;
        let answers = [
            failure(raw.stat(nope).await),
            failure(raw.lstat(nope).await),
            // The daemon's server stats the directory before it opens it.
            failure(raw.opendir(nope).await),
            failure(raw.readlink(nope).await),
            // A directory is removed with `os.Remove`, as a file is.
            failure(raw.rmdir(nope).await),
            failure(raw.mkdir("/tmp/nope/d", FileAttributes::empty()).await),
            failure(raw.mkdir("/root", FileAttributes::empty()).await),
            // The path as the client sent it, relative or not.
            failure(raw.remove("root/nope").await),
            failure(raw.setstat(nope, size.clone()).await),
            failure(raw.setstat(nope, mode.clone()).await),
        ];
        let expected = [
            missing("stat /tmp/nope: no such file or directory"),
            missing("lstat /tmp/nope: no such file or directory"),
            missing("stat /tmp/nope: no such file or directory"),
            missing("readlink /tmp/nope: no such file or directory"),
            missing("remove /tmp/nope: no such file or directory"),
            missing("mkdir /tmp/nope/d: no such file or directory"),
            (StatusCode::Failure, "mkdir /root: file exists".to_string()),
            missing("remove root/nope: no such file or directory"),
            missing("truncate /tmp/nope: no such file or directory"),
            missing("chmod /tmp/nope: no such file or directory"),
        ];
        assert_eq!(answers, expected, "{line}");
        let nothing = raw.setstat(nope, FileAttributes::empty()).await;
        assert_eq!(
            nothing.map(|s| s.status_code).ok(),
            Some(StatusCode::Ok),
            "{line}: a SETSTAT of no attribute makes no call"
        );
    }
}

#[tokio::test]
async fn a_setstat_of_a_missing_path_reports_its_first_failed_call_on_7_0_and_its_last_on_6_0() {
    for (line, call) in [(IncusLine::V6_0, "chtimes"), (IncusLine::V7_0, "chmod")] {
        let fake = fake_of(line).await;
        let raw = raw(&fake).await;
        let mut attrs = FileAttributes::empty();
        attrs.permissions = Some(0o644);
        attrs.atime = Some(1);
        attrs.mtime = Some(2);
        assert_eq!(
            failure(raw.setstat("/tmp/nope", attrs).await),
            missing(&format!("{call} /tmp/nope: no such file or directory")),
            "{line}"
        );
    }
}

#[tokio::test]
async fn realpath_answers_the_clean_path_as_name_and_long_name_with_no_attributes() {
    for line in IncusLine::all() {
        let fake = fake_of(line).await;
        let raw = raw(&fake).await;
        for (asked, clean) in [("/", "/"), ("/etc/../tmp/", "/tmp")] {
            let name = raw.realpath(asked).await.expect("a NAME");
            assert_eq!(name.files.len(), 1, "{line} {asked}");
            let file = &name.files[0];
            assert_eq!(
                (file.filename.as_str(), file.longname.as_str()),
                (clean, clean),
                "{line} {asked}"
            );
            let attrs = &file.attrs;
            let none = (attrs.size, attrs.uid, attrs.gid, attrs.permissions)
                == (None, None, None, None)
                && (attrs.atime, attrs.mtime) == (None, None);
            assert!(none, "{line} {asked}: {attrs:?}");
        }
    }
}
