//! `fake-incus`: serve a fake Incus daemon.

// The binary's own modules live under `main/` (the library's crate map does not hold them).
#[path = "main/record_replay.rs"]
mod record_replay_cli;

use clap::{Parser, Subcommand};
use fake_incus::{ClusterTimings, FakeIncus, Rule};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// mimalloc rather than the system allocator: a small read allocates a few dozen short-lived
/// buffers (hyper's connection and request, the task, the answer), and glibc's malloc and free
/// were a quarter of the fake's instructions per request (callgrind; BENCHMARKS.md, "The
/// fake's small reads beside nginx").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A scriptable fake Incus daemon (the API of Incus 6.0 or 7.0) for tests.
#[derive(Parser)]
#[command(name = "fake-incus", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve until SIGINT or SIGTERM. Prints one JSON line when ready:
    /// {"unix_socket", "https_address", "https_url", "server_cert", "client_cert", "client_key",
    /// "control_socket"} (paths are null when not used).
    Serve(Serve),
    /// Read an Incus (a real daemon, or a fake) with GETs only and write a seed for --state:
    /// server config (secrets left out), projects, profiles, networks, pools, custom volumes,
    /// images, instances with their snapshots.
    Capture(Capture),
    /// A transparent proxy in front of an Incus: forwards every request on --unix (and --https)
    /// to the upstream (a socket, or https:// with mutual TLS) and writes a transcript (JSON
    /// lines). Prints {"unix_socket", "transcript", "https_address", ...} when ready; stops at
    /// SIGINT or SIGTERM.
    Record(record_replay_cli::Record),
    /// Send a transcript's requests, in order, to a fresh fake (seeded with --state) and report
    /// every difference from the recorded answers; exit status 1 when there is one.
    Replay(record_replay_cli::Replay),
}

#[derive(clap::Args)]
struct Capture {
    /// The Incus Unix socket to read (e.g. /var/lib/incus/unix.socket).
    #[arg(
        long,
        value_name = "SOCKET",
        required_unless_present = "url",
        conflicts_with = "url"
    )]
    unix: Option<PathBuf>,
    /// Or its HTTPS listener (https://host[:port]), with --client-cert, --client-key and
    /// --server-cert (pinned).
    #[arg(long, value_name = "URL", requires_all = ["client_cert", "client_key", "server_cert"])]
    url: Option<String>,
    #[command(flatten)]
    tls: TlsFiles,
    /// Also capture the images' files.
    #[arg(long)]
    with_image_files: bool,
    /// Also capture the instances' files (through the file API), at most
    /// --instance-files-budget bytes of file content in all.
    #[arg(long)]
    with_instance_files: bool,
    /// The byte budget of --with-instance-files.
    #[arg(long, value_name = "BYTES", default_value_t = 256 * 1024 * 1024, requires = "with_instance_files")]
    instance_files_budget: u64,
    /// Only this project (plus the default project's entry and what it lends).
    #[arg(long, value_name = "NAME")]
    project: Option<String>,
    /// Only the instances whose names match this glob.
    #[arg(long, value_name = "GLOB")]
    instances: Option<String>,
    /// Write the seed here (default: standard output).
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// The files an Incus reached over HTTPS needs: the client certificate it trusts, its key, and
/// its own certificate, pinned.
#[derive(clap::Args)]
struct TlsFiles {
    /// The client certificate (PEM) the server trusts.
    #[arg(long, value_name = "FILE")]
    client_cert: Option<PathBuf>,
    /// Its private key (PEM).
    #[arg(long, value_name = "FILE")]
    client_key: Option<PathBuf>,
    /// The server's certificate (PEM), pinned.
    #[arg(long, value_name = "FILE")]
    server_cert: Option<PathBuf>,
}

impl TlsFiles {
    /// The Incus at `url` (https://host[:port]), with these files read.
    fn https_source(&self, url: &str) -> Result<fake_incus::CaptureSource, String> {
        let read = |flag: &str, path: &Option<PathBuf>| {
            let path = path
                .as_deref()
                .ok_or_else(|| format!("{url}: {flag} is required for an https:// Incus"))?;
            std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))
        };
        Ok(fake_incus::CaptureSource::Https {
            url: url.to_string(),
            client_cert_pem: read("--client-cert", &self.client_cert)?,
            client_key_pem: read("--client-key", &self.client_key)?,
            server_cert_pem: read("--server-cert", &self.server_cert)?,
        })
    }

    /// Whether any of the files was given.
    fn any(&self) -> bool {
        self.client_cert.is_some() || self.client_key.is_some() || self.server_cert.is_some()
    }
}

#[derive(clap::Args)]
struct Serve {
    /// Path of the Incus Unix socket (trusted, like /var/lib/incus/unix.socket).
    #[arg(long, value_name = "PATH")]
    unix: PathBuf,
    /// The Incus line to answer as (its /1.0, API extensions and behaviour). Default: the
    /// line of the --state seed's `incus_version` (a capture records it), else 7.0.
    #[arg(long, value_name = "6.0|7.0")]
    incus_version: Option<fake_incus::IncusLine>,
    /// Also serve HTTPS with mutual TLS at this address; port 0 picks a free port. Without
    /// ADDR: 127.0.0.1:0. On a cluster, the first member's address (the others get free
    /// ports on the same IP).
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:0")]
    https: Option<SocketAddr>,
    /// Simulate a cluster of these members (comma-separated, e.g. m1,m2,m3); --unix is the
    /// first member's socket, the others' are DIR/NAME/unix.socket next to it. The ready line
    /// then also has "members": {NAME: {"unix_socket", "https_address", "https_url",
    /// "address"}}.
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    cluster: Vec<String>,
    /// The timings of a cluster member going down and coming back: `real` (the real daemon's)
    /// or `fast` (tens of milliseconds, for tests).
    #[arg(long, value_name = "real|fast", default_value = "real")]
    cluster_timings: ClusterTimingsArg,
    /// The seed the cluster's heartbeat-dependent moments are drawn from (when a dead member
    /// turns "not ready", shows Offline, is back Online), so that a run can be repeated.
    #[arg(long, value_name = "N", default_value_t = 0)]
    seed: u64,
    /// Directory for server.crt/server.key/client.crt/client.key (reused if present).
    /// Default: a temporary directory removed at exit.
    #[arg(long, value_name = "DIR")]
    tls_dir: Option<PathBuf>,
    /// Trust this client certificate (PEM file) on HTTPS. Repeatable.
    #[arg(long, value_name = "CERT")]
    trust: Vec<PathBuf>,
    /// Seed state (JSON, the format of the control socket's GET /state).
    #[arg(long, value_name = "FILE")]
    state: Option<PathBuf>,
    /// Keep the whole state (resources, files) in this directory across restarts: start from
    /// the state it holds (if any; --state is then what a reset returns to), and answer no
    /// change before it is on disk. A state file of another format version is refused.
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Fault rules (JSON: a list of rules, see the fake's FAULTS.md).
    #[arg(long, value_name = "FILE")]
    script: Option<PathBuf>,
    /// Serve the control socket (HTTP+JSON: rules, journal, state, reset) at this path.
    #[arg(long, value_name = "PATH")]
    control: Option<PathBuf>,
    /// How many journal entries to keep (the oldest go first; 0 turns the journal off).
    #[arg(long, value_name = "N", default_value_t = fake_incus::DEFAULT_JOURNAL_LIMIT)]
    journal_limit: usize,
    /// How long finished operations stay visible, in milliseconds (Incus: 5000).
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    operation_retention_ms: u64,
    /// How long exec waits for its websockets to connect, in milliseconds (default: the Incus
    /// line's, 5000 on 6.0, 10000 on 7.0).
    #[arg(long, value_name = "MS")]
    exec_connect_timeout_ms: Option<u64>,
    /// How long exec waits once its websockets are attached before the command starts, in
    /// milliseconds (Incus takes 25-50).
    #[arg(long, value_name = "MS", default_value_t = fake_incus::DEFAULT_EXEC_START_DELAY.as_millis() as u64)]
    exec_start_delay_ms: u64,
}

/// `--cluster-timings`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum ClusterTimingsArg {
    /// The real daemon's timings.
    Real,
    /// Tens of milliseconds.
    Fast,
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => serve(args).await.map(|()| ExitCode::SUCCESS),
        Command::Capture(args) => capture(args).await.map(|()| ExitCode::SUCCESS),
        Command::Record(args) => record_replay_cli::record(args).await,
        Command::Replay(args) => record_replay_cli::replay(args).await,
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("fake-incus: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(args: Serve) -> Result<(), String> {
    let read = |path: &PathBuf| {
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))
    };
    let temp_tls = match &args.tls_dir {
        Some(_) => None,
        None => {
            Some(tempfile::tempdir().map_err(|e| format!("creating a temporary directory: {e}"))?)
        }
    };
    let tls_dir = args
        .tls_dir
        .clone()
        .or_else(|| temp_tls.as_ref().map(|t| t.path().to_path_buf()))
        .ok_or("no TLS directory")?;
    let mut builder = FakeIncus::builder()
        .unix_socket(&args.unix)
        .tls_dir(&tls_dir)
        .journal_limit(args.journal_limit)
        .operation_retention(Duration::from_millis(args.operation_retention_ms))
        .exec_start_delay(Duration::from_millis(args.exec_start_delay_ms));
    if let Some(ms) = args.exec_connect_timeout_ms {
        builder = builder.exec_connect_timeout(Duration::from_millis(ms));
    }
    if let Some(addr) = args.https {
        builder = builder.https_address(addr);
    }
    if let Some(line) = args.incus_version {
        builder = builder.incus_version(line);
    }
    if !args.cluster.is_empty() {
        builder = builder
            .cluster(args.cluster.iter().cloned())
            .cluster_timings(
                match args.cluster_timings {
                    ClusterTimingsArg::Real => ClusterTimings::default(),
                    ClusterTimingsArg::Fast => ClusterTimings::fast(),
                }
                .with_seed(args.seed),
            );
    }
    for path in &args.trust {
        builder = builder.trust_certificate(read(path)?);
    }
    if let Some(path) = &args.state {
        let value =
            serde_json::from_str(&read(path)?).map_err(|e| format!("{}: {e}", path.display()))?;
        builder = builder.state(value);
    }
    if let Some(dir) = &args.state_dir {
        builder = builder.state_dir(dir);
    }
    if let Some(path) = &args.script {
        let rules: Vec<Rule> =
            serde_json::from_str(&read(path)?).map_err(|e| format!("{}: {e}", path.display()))?;
        for rule in rules {
            builder = builder.rule(rule);
        }
    }
    let fake = builder.start().await.map_err(|e| e.to_string())?;
    if let Some(path) = &args.control {
        fake.serve_control(path).map_err(|e| e.to_string())?;
    }
    let mut ready = serde_json::json!({
        "unix_socket": fake.unix_socket(),
        "https_address": fake.https_address().map(|a| a.to_string()),
        "https_url": fake.https_url(),
        "server_cert": tls_dir.join("server.crt"),
        "client_cert": tls_dir.join("client.crt"),
        "client_key": tls_dir.join("client.key"),
        "control_socket": args.control,
    });
    if !fake.members().is_empty() {
        let members: serde_json::Map<String, serde_json::Value> = fake
            .members()
            .into_iter()
            .map(|m| {
                let entry = serde_json::json!({
                    "unix_socket": m.unix_socket,
                    "https_address": m.https_address.map(|a| a.to_string()),
                    "https_url": m.https_url,
                });
                (m.name, entry)
            })
            .collect();
        ready["members"] = serde_json::Value::Object(members);
    }
    println!("{ready}");
    wait_for_signal().await?;
    drop(fake);
    if let Some(path) = &args.control {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

async fn capture(args: Capture) -> Result<(), String> {
    let mut options = fake_incus::CaptureOptions::new();
    if let Some(project) = args.project {
        options = options.project(project);
    }
    if let Some(glob) = args.instances {
        options = options.instances(glob);
    }
    if args.with_image_files {
        options = options.with_image_files();
    }
    if args.with_instance_files {
        options = options.with_instance_files(args.instance_files_budget);
    }
    let source = match (&args.unix, &args.url) {
        (Some(socket), _) => fake_incus::CaptureSource::Unix(socket.clone()),
        (None, Some(url)) => args.tls.https_source(url)?,
        (None, None) => return Err("--unix or --url is required".into()),
    };
    let seed = fake_incus::capture_from(&source, &options)
        .await
        .map_err(|e| e.to_string())?;
    let mut text = serde_json::to_string_pretty(&seed).map_err(|e| e.to_string())?;
    text.push('\n');
    match args.output {
        Some(path) => {
            std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))
        }
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

async fn wait_for_signal() -> Result<(), String> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    Ok(())
}
