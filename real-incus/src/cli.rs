//! The command line.
use std::path::PathBuf;

use clap::Parser;

use crate::endpoint::{Endpoint, EndpointError, DEFAULT_SOCKET};

const ABOUT: &str =
    "Runs every Incus operation for real against an Incus daemon and writes what happened \
to real-incus-acceptance.md and real-incus-acceptance.json.";

const LONG_ABOUT: &str = "\
Runs every Incus operation for real against an Incus daemon and writes what happened to \
real-incus-acceptance.md and real-incus-acceptance.json.

It CREATES AND DELETES RESOURCES on that daemon, so it does nothing unless you opt in with \
--yes-create-resources or INCUS_ACCEPTANCE=1 (without the opt-in it exits with status 2 and \
contacts nothing).

Everything happens in a project of its own with a random name (ioacc-...), with its own images and \
profiles (features.images and features.profiles) and a root disk on --pool in its default profile. \
The test image is a static busybox (--busybox) packed and imported into that project, or an existing \
image (--image) copied into it. Every operation runs through the operation core's run() with a \
reference host; each result is validated against the operation's output schema. At the end (also \
after a failure or Ctrl-C) the project and all it holds are removed, and the runner checks that \
nothing is left. --cleanup-only removes what earlier runs left behind.

Exit status: 0 when every operation passed and cleanup left nothing, 1 when something failed, \
2 for usage errors or a missing opt-in, 130 after Ctrl-C (cleanup done).";

/// Command-line arguments of `real-incus-acceptance`.
#[derive(Debug, Clone, Parser)]
#[command(name = "real-incus-acceptance", version, about = ABOUT, long_about = LONG_ABOUT)]
pub struct Cli {
    /// Opt in: allow the runner to create (and then delete) a project, instances, snapshots and an
    /// image on the daemon. INCUS_ACCEPTANCE=1 does the same.
    #[arg(long)]
    pub yes_create_resources: bool,

    /// Unix socket of the daemon (INCUS_SOCKET also sets it). Ignored with --url.
    #[arg(long, value_name = "PATH", env = "INCUS_SOCKET", default_value = DEFAULT_SOCKET)]
    pub unix: PathBuf,

    // The help text shows the URL as typed.
    #[allow(rustdoc::bare_urls)]
    /// Use HTTPS instead of the Unix socket, e.g. https://incus.example:8443 (needs the three
    /// certificate flags; the server certificate is pinned, no CA is consulted).
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,

    /// PEM client certificate trusted by the daemon (with --url).
    #[arg(long, value_name = "FILE")]
    pub client_cert: Option<PathBuf>,

    /// PEM private key of the client certificate (with --url).
    #[arg(long, value_name = "FILE")]
    pub client_key: Option<PathBuf>,

    /// PEM certificate of the server, pinned: the connection is refused if the server shows another.
    #[arg(long, value_name = "FILE")]
    pub server_cert: Option<PathBuf>,

    /// Existing storage pool for the project's root disk.
    #[arg(long, value_name = "NAME", default_value = "default")]
    pub pool: String,

    /// Use this existing image (alias in --image-project) instead of building one from busybox; it is
    /// copied into the acceptance project. It must provide sh, echo, cat, printf, head, yes and sleep.
    #[arg(long, value_name = "ALIAS")]
    pub image: Option<String>,

    /// Project that holds the --image alias.
    #[arg(
        long,
        value_name = "PROJECT",
        default_value = "default",
        requires = "image"
    )]
    pub image_project: String,

    /// Static busybox binary to build the test image from (default: `command -v busybox`).
    #[arg(long, value_name = "PATH", conflicts_with = "image")]
    pub busybox: Option<PathBuf>,

    /// A host-approved image remote to exercise, as NAME=URL (otherwise reported as skipped).
    #[arg(long, value_name = "NAME=URL", value_parser = parse_remote, requires = "remote_alias")]
    pub image_remote: Option<(String, String)>,

    /// Protocol of --image-remote.
    #[arg(long, value_name = "PROTOCOL", default_value = "simplestreams", value_parser = ["simplestreams", "incus"])]
    pub remote_protocol: String,

    /// Image alias to launch from --image-remote.
    #[arg(long, value_name = "ALIAS")]
    pub remote_alias: Option<String>,

    /// Per-request timeout in seconds of the operation core's connection (at least 61 so that the
    /// full 60 s waits fit).
    #[arg(long, value_name = "SECONDS", default_value_t = 90, value_parser = clap::value_parser!(u64).range(61..=600))]
    pub timeout: u64,

    /// Only remove what earlier runs left behind (projects named ioacc-...), then report.
    #[arg(long, conflicts_with = "compare_fake")]
    pub cleanup_only: bool,

    /// Differential mode: run the portable scenarios on the real daemon and on an in-process fake
    /// Incus and report where the results differ in shape.
    #[arg(long)]
    pub compare_fake: bool,

    /// Directory of the scenario files to run (default: the repository's scenarios/, built into
    /// the runner when it was compiled).
    #[arg(long, value_name = "DIR")]
    pub scenarios: Option<PathBuf>,

    /// Directory for the reports (default: the current directory).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub report_dir: PathBuf,
}

fn parse_remote(value: &str) -> Result<(String, String), String> {
    let (name, url) = value
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=URL, got {value:?}"))?;
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(format!(
            "remote name {name:?} must be letters, digits, '-' or '_'"
        ));
    }
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Err(format!(
            "remote URL {url:?} must start with https:// or http://"
        ));
    }
    Ok((name.to_owned(), url.to_owned()))
}

impl Cli {
    /// True when the operator opted in (flag, or `INCUS_ACCEPTANCE=1`).
    pub fn opted_in(&self) -> bool {
        self.yes_create_resources || std::env::var("INCUS_ACCEPTANCE").is_ok_and(|v| v == "1")
    }

    /// The endpoint the flags describe.
    pub(crate) fn endpoint(&self) -> Result<Endpoint, EndpointError> {
        let tls = [&self.client_cert, &self.client_key, &self.server_cert];
        match &self.url {
            Some(url) => match tls {
                [Some(cert), Some(key), Some(server)] => Endpoint::https(url, cert, key, server),
                _ => Err(EndpointError::MissingTlsFiles),
            },
            None if tls.iter().any(|f| f.is_some()) => Err(EndpointError::TlsFilesWithoutUrl),
            None => Ok(Endpoint::Unix(self.unix.clone())),
        }
    }

    /// The busybox binary: `--busybox`, else the first `busybox` on `PATH`.
    pub(crate) fn busybox_path(&self) -> Option<PathBuf> {
        if let Some(path) = &self.busybox {
            return Some(path.clone());
        }
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .map(|dir| dir.join("busybox"))
            .find(|candidate| candidate.is_file())
    }
}

/// The message printed (exit status 2) when the opt-in is missing.
pub const OPT_IN_REFUSAL: &str = "\
real-incus-acceptance: refusing to run without an explicit opt-in.
It creates and then deletes an Incus project, instances, snapshots and an image on the daemon it is
pointed at. Nothing was contacted and nothing was changed.
To proceed, pass --yes-create-resources or set INCUS_ACCEPTANCE=1 (see --help).";
