//! The `record` and `replay` subcommands of the `fake-incus` binary.

use fake_incus::record::Recorder;
use fake_incus::replay::Pace;
use fake_incus::FakeIncus;
use std::path::PathBuf;
use std::process::ExitCode;

/// `fake-incus record`.
#[derive(clap::Args)]
pub(crate) struct Record {
    /// The Incus to record: its Unix socket (e.g. /var/lib/incus/unix.socket), or its HTTPS
    /// listener (https://host[:port]) with --client-cert, --client-key and --server-cert
    /// (pinned).
    #[arg(long, value_name = "SOCKET|URL")]
    upstream: String,
    #[command(flatten)]
    tls: crate::TlsFiles,
    /// Listen here (point INCUS_SOCKET at it); a stale socket file is replaced.
    #[arg(long, value_name = "PATH")]
    unix: PathBuf,
    /// Listen for HTTPS here too (e.g. 127.0.0.1:8443; port 0: any free one), with mutual TLS:
    /// only the client certificate of --tls-dir is relayed, any other gets 403.
    #[arg(long, value_name = "ADDR", requires = "tls_dir")]
    https: Option<std::net::SocketAddr>,
    /// The HTTPS listener's certificates: server.crt/server.key (the recorder's) and
    /// client.crt/client.key (the client it trusts), loaded, or made when missing.
    #[arg(long, value_name = "DIR", requires = "https")]
    tls_dir: Option<PathBuf>,
    /// Write the transcript (JSON lines) here.
    #[arg(long, value_name = "FILE")]
    transcript: PathBuf,
    /// Keep at most this many bytes of each body or websocket frame (the size and the SHA-256
    /// of the whole are always kept).
    #[arg(long, value_name = "BYTES", default_value_t = fake_incus::transcript::DEFAULT_BODY_LIMIT)]
    body_limit: usize,
}

/// `fake-incus replay`.
#[derive(clap::Args)]
pub(crate) struct Replay {
    /// The transcript written by `fake-incus record`.
    #[arg(value_name = "TRANSCRIPT")]
    transcript: PathBuf,
    /// Seed the fake with this capture (`fake-incus capture`, taken when the recording began);
    /// default: the fake's default state.
    #[arg(long, value_name = "CAPTURE")]
    state: Option<PathBuf>,
    /// Print the report as JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Cut every pause between two requests to at most this long (default: the recorded pace).
    #[arg(long, value_name = "MS")]
    max_pause_ms: Option<u64>,
}

/// Records until SIGINT or SIGTERM. Prints one JSON line when ready:
/// `{"unix_socket", "transcript", "https_address", "server_cert", "client_cert", "client_key"}`
/// (null when not listening for HTTPS), and one when done: `{"exchanges"}`.
pub(crate) async fn record(args: Record) -> Result<ExitCode, String> {
    let upstream = if args.upstream.starts_with("https://") {
        args.tls.https_source(&args.upstream)?
    } else if args.tls.any() {
        return Err(format!(
            "{}: --client-cert, --client-key and --server-cert are for an https:// upstream",
            args.upstream
        ));
    } else {
        fake_incus::CaptureSource::Unix(PathBuf::from(&args.upstream))
    };
    let mut recorder =
        Recorder::start_from(&upstream, &args.unix, &args.transcript, args.body_limit)
            .await
            .map_err(|e| e.to_string())?;
    let mut ready = serde_json::json!({
        "unix_socket": recorder.unix_socket(), "transcript": args.transcript,
        "https_address": null, "server_cert": null, "client_cert": null, "client_key": null,
    });
    if let (Some(address), Some(dir)) = (args.https, &args.tls_dir) {
        let bound = recorder
            .listen_https(address, dir)
            .await
            .map_err(|e| e.to_string())?;
        ready["https_address"] = bound.to_string().into();
        for (key, file) in [
            ("server_cert", "server.crt"),
            ("client_cert", "client.crt"),
            ("client_key", "client.key"),
        ] {
            ready[key] = dir.join(file).display().to_string().into();
        }
    }
    println!("{ready}");
    crate::wait_for_signal().await?;
    let exchanges = recorder.finish().await.map_err(|e| e.to_string())?;
    println!("{}", serde_json::json!({ "exchanges": exchanges }));
    Ok(ExitCode::SUCCESS)
}

/// Replays against a fresh fake; the exit status is 1 when anything differs.
pub(crate) async fn replay(args: Replay) -> Result<ExitCode, String> {
    let read = |path: &PathBuf| {
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))
    };
    let (_, exchanges) = fake_incus::transcript::parse(&read(&args.transcript)?)
        .map_err(|e| format!("{}: {e}", args.transcript.display()))?;
    let mut builder = FakeIncus::builder();
    if let Some(path) = &args.state {
        let seed =
            serde_json::from_str(&read(path)?).map_err(|e| format!("{}: {e}", path.display()))?;
        builder = builder.state(seed);
    }
    let fake = builder.start().await.map_err(|e| e.to_string())?;
    let pace = args.max_pause_ms.map_or(Pace::Recorded, |ms| {
        Pace::AtMost(std::time::Duration::from_millis(ms))
    });
    let report = fake_incus::replay::replay_with(&exchanges, fake.unix_socket(), pace)
        .await
        .map_err(|e| e.to_string())?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?
        );
    } else {
        print!("{}", report.text());
    }
    Ok(if report.differences.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
