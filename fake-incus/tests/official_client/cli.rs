//! The official client run against a fake: one `incus` process per call, with its own
//! configuration directory, killed when it does not finish.

use fake_incus::{FakeIncus, FakeIncusBuilder, IncusLine};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

fn incus_binary() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("incus"))
        .find(|p| p.is_file())
}

pub(crate) struct Cli {
    pub(crate) binary: PathBuf,
    pub(crate) socket: PathBuf,
    pub(crate) conf: tempfile::TempDir,
}

impl Cli {
    /// Runs `incus ARGS` with optional stdin; panics with the output if it does not finish.
    pub(crate) async fn run_with(&self, args: &[&str], stdin: Option<&[u8]>) -> Output {
        let mut cmd = tokio::process::Command::new(&self.binary);
        cmd.args(args)
            .env("INCUS_SOCKET", &self.socket)
            .env("INCUS_CONF", self.conf.path())
            .env_remove("INCUS_DIR")
            .env_remove("INCUS_REMOTE")
            .env_remove("INCUS_PROJECT")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().expect("spawn incus");
        let mut input = child.stdin.take().expect("stdin");
        if let Some(bytes) = stdin {
            input.write_all(bytes).await.expect("write stdin");
        }
        drop(input);
        match tokio::time::timeout(Duration::from_secs(30), child.wait_with_output()).await {
            Ok(output) => output.expect("incus output"),
            Err(_) => panic!("incus {args:?} did not finish within 30 s"),
        }
    }

    pub(crate) async fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, None).await
    }

    /// Runs and requires success; returns stdout.
    pub(crate) async fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args).await;
        assert!(
            out.status.success(),
            "incus {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// The line of the client these trials run (`incus` on PATH: Debian 12's, 6.0.4) and of the
/// real daemon their expectations were measured on; the trials about another line (`cli_set`,
/// `snapshot_patterns`) choose theirs.
pub(crate) const CLIENT_LINE: IncusLine = IncusLine::V6_0;

/// A builder of a fake that imitates [`CLIENT_LINE`].
pub(crate) fn fake_builder() -> FakeIncusBuilder {
    FakeIncus::builder().incus_version(CLIENT_LINE)
}

/// Why the official client tests cannot run here.
pub(crate) const NO_CLIENT: &str = "needs the official `incus` client on PATH";

pub(crate) async fn setup(fake: &FakeIncus) -> Option<Cli> {
    let binary = incus_binary()?;
    let conf = tempfile::tempdir().expect("temp conf");
    Some(Cli {
        binary,
        socket: fake.unix_socket().to_path_buf(),
        conf,
    })
}

pub(crate) fn csv_rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split(',').map(String::from).collect())
        .collect()
}
pub(crate) fn write_conf_cert(conf: &Path, fake: &FakeIncus) {
    std::fs::write(conf.join("client.crt"), fake.client_cert_pem()).unwrap();
    std::fs::write(conf.join("client.key"), fake.client_key_pem()).unwrap();
}
