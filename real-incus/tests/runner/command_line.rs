//! The command line: the opt-in, argument errors and help.
use std::os::unix::net::UnixListener;
use std::process::{Command, Output};

fn runner() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_real-incus-acceptance"));
    command
        .env_remove("INCUS_ACCEPTANCE")
        .env_remove("INCUS_SOCKET");
    command
}

fn run(command: &mut Command) -> Output {
    command.output().expect("the runner starts")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A socket nobody answers on; after the run, `accept` tells whether anything connected.
fn listening_socket(dir: &tempfile::TempDir) -> (std::path::PathBuf, UnixListener) {
    let path = dir.path().join("incus.socket");
    let listener = UnixListener::bind(&path).expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    (path, listener)
}

fn nothing_connected(listener: &UnixListener) -> bool {
    matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

#[test]
fn without_opt_in_it_refuses_with_status_2_and_contacts_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (socket, listener) = listening_socket(&dir);
    let output = run(runner()
        .arg("--unix")
        .arg(&socket)
        .arg("--report-dir")
        .arg(dir.path()));
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(text.contains("--yes-create-resources"), "{text}");
    assert!(text.contains("INCUS_ACCEPTANCE=1"), "{text}");
    assert!(text.contains("Nothing was contacted"), "{text}");
    assert!(
        nothing_connected(&listener),
        "the runner connected without opt-in"
    );
    assert!(!dir.path().join("real-incus-acceptance.md").exists());
}

#[test]
fn opt_in_env_other_than_1_is_not_consent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (socket, listener) = listening_socket(&dir);
    for value in ["0", "yes", "true", ""] {
        let output = run(runner()
            .env("INCUS_ACCEPTANCE", value)
            .arg("--unix")
            .arg(&socket));
        assert_eq!(output.status.code(), Some(2), "INCUS_ACCEPTANCE={value:?}");
    }
    assert!(nothing_connected(&listener));
}

#[test]
fn cleanup_only_also_needs_the_opt_in() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (socket, listener) = listening_socket(&dir);
    let output = run(runner().arg("--cleanup-only").arg("--unix").arg(&socket));
    assert_eq!(output.status.code(), Some(2));
    assert!(nothing_connected(&listener));
}

#[test]
fn opt_in_by_env_proceeds_and_reports_an_unreachable_daemon() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("no-daemon.socket");
    let output = run(runner()
        .env("INCUS_ACCEPTANCE", "1")
        .arg("--unix")
        .arg(&missing)
        .arg("--busybox")
        .arg(env!("CARGO_BIN_EXE_real-incus-acceptance"))
        .arg("--report-dir")
        .arg(dir.path()));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let md = std::fs::read_to_string(dir.path().join("real-incus-acceptance.md"))
        .expect("markdown report");
    assert!(md.contains("FAILED"), "{md}");
    assert!(md.contains("discovery (GET /1.0) failed"), "{md}");
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("real-incus-acceptance.json"))
            .expect("json report"),
    )
    .expect("json");
    assert_eq!(json["server"], serde_json::Value::Null);
    assert_eq!(json["cleanup"]["leftovers"], serde_json::json!([]));
}

#[test]
fn url_without_certificates_is_an_argument_error() {
    let output = run(runner().args(["--yes-create-resources", "--url", "https://127.0.0.1:8443"]));
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--url needs --client-cert, --client-key and --server-cert"));
}

#[test]
fn certificates_without_url_are_an_argument_error() {
    let output = run(runner().args(["--yes-create-resources", "--client-cert", "c.pem"]));
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("only apply with --url"));
}

#[test]
fn malformed_flags_are_argument_errors() {
    let cases: &[&[&str]] = &[
        &["--image-remote", "no-equals-sign", "--remote-alias", "a"],
        &["--image-remote", "x=ftp://host", "--remote-alias", "a"],
        &["--image-remote", "x=https://host"],
        &["--timeout", "10"],
        &["--image", "bb", "--busybox", "/bin/busybox"],
        &["--cleanup-only", "--compare-fake"],
        &["--no-such-flag"],
    ];
    for args in cases {
        let output = run(runner().arg("--yes-create-resources").args(*args));
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
    }
}

#[test]
fn help_explains_the_opt_in_the_isolation_and_the_exit_statuses() {
    let output = run(runner().arg("--help"));
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8_lossy(&output.stdout);
    for needle in [
        "--yes-create-resources",
        "INCUS_ACCEPTANCE=1",
        "ioacc-",
        "--cleanup-only",
        "--compare-fake",
        "--server-cert",
        "real-incus-acceptance.json",
        "130",
    ] {
        assert!(text.contains(needle), "--help lacks {needle}");
    }
}
