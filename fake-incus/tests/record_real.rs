//! Record and replay against the real daemon: an everyday `incus` CLI session (and one of CLI
//! errors) runs with `INCUS_SOCKET` pointed at a recorder in front of the daemon on
//! `INCUS_SOCKET` (default `/var/lib/incus/unix.socket`), in a throw-away project; the
//! transcript then replays against a fresh fake seeded with the capture taken when the
//! recording began (which serves as the Incus line the capture read). The client is `incus` on
//! `PATH`, or `INCUS_CLIENT` (the daemon's own line's client: `ci/incus7.sh` prints the 7.0
//! one as `INCUS7_CLIENT`). Every difference must be a known gap of the fake
//! (`tests/transcripts/mod.rs`). Without a daemon or the `incus` client, each trial is reported
//! as ignored, with the reason.
//!
//! `RECORD_TRANSCRIPTS_TO=DIR` also writes each session's transcript and capture to DIR
//! (`NAME.jsonl`, `NAME.state.json`): `ci/record-transcripts.sh` re-records the kept ones so.

#[path = "ignorable/mod.rs"]
mod ignorable;
#[path = "transcripts/mod.rs"]
mod transcripts;

use fake_incus::record::Recorder;
use fake_incus::{capture, transcript, CaptureOptions, FakeIncus};
use ignorable::trial;
use libtest_mimic::Completion;
use std::path::{Path, PathBuf};

const DEFAULT_SOCKET: &str = "/var/lib/incus/unix.socket";

fn socket() -> PathBuf {
    std::env::var_os("INCUS_SOCKET").map_or_else(|| PathBuf::from(DEFAULT_SOCKET), PathBuf::from)
}

/// The `incus` client the sessions run: `INCUS_CLIENT`, else `incus` on `PATH`.
fn client() -> PathBuf {
    std::env::var_os("INCUS_CLIENT").map_or_else(|| PathBuf::from("incus"), PathBuf::from)
}

/// One CLI session: `incus` argument lists, `{p}` standing for the project and `{dir}` for a
/// temporary directory holding `hello.txt`.
struct Session {
    name: &'static str,
    commands: &'static [&'static [&'static str]],
}

const SESSIONS: &[Session] = &[
    Session {
        name: "cli-session",
        commands: &[
            &[
                "project",
                "create",
                "{p}",
                "-c",
                "features.images=false",
                "-c",
                "features.profiles=false",
            ],
            &["launch", "busybox", "c1", "--project", "{p}"],
            &["exec", "c1", "--project", "{p}", "--", "echo", "hello"],
            &[
                "file",
                "push",
                "{dir}/hello.txt",
                "c1/etc/hello.txt",
                "--project",
                "{p}",
            ],
            &[
                "file",
                "pull",
                "c1/etc/hello.txt",
                "{dir}/pulled.txt",
                "--project",
                "{p}",
            ],
            &["file", "delete", "c1/etc/nothing", "--project", "{p}"],
            &[
                "file",
                "pull",
                "c1/etc/nothing",
                "{dir}/nothing",
                "--project",
                "{p}",
            ],
            &["snapshot", "create", "c1", "s1", "--project", "{p}"],
            &["list", "--project", "{p}", "--format", "csv"],
            &["stop", "--force", "c1", "--project", "{p}"],
            &[
                "snapshot",
                "create",
                "c1",
                "s0",
                "--stateful",
                "--project",
                "{p}",
            ],
            &["rename", "c1", "c2", "--project", "{p}"],
            &["config", "show", "c2", "--project", "{p}"],
            &["delete", "--force", "c2", "--project", "{p}"],
            &["project", "delete", "{p}"],
        ],
    },
    Session {
        name: "cli-errors",
        commands: &[
            &[
                "project",
                "create",
                "{p}",
                "-c",
                "features.images=false",
                "-c",
                "features.profiles=false",
            ],
            &["project", "create", "{p}"],
            &["info", "nope", "--project", "{p}"],
            &[
                "init",
                "busybox",
                "c1",
                "-c",
                "bad.key=1",
                "--project",
                "{p}",
            ],
            &["init", "no-such-image", "c2", "--project", "{p}"],
            &["config", "set", "nope", "limits.cpu=1", "--project", "{p}"],
            &["snapshot", "create", "nope", "s1", "--project", "{p}"],
            &["delete", "nope", "--project", "{p}"],
            &["profile", "show", "nope", "--project", "{p}"],
            &["project", "delete", "{p}"],
        ],
    },
];

/// Runs `incus ARGS` against `socket` with its own configuration directory; returns whether it
/// succeeded.
async fn incus(socket: &Path, conf: &Path, args: &[String]) -> Result<bool, String> {
    let out = tokio::process::Command::new(client())
        .args(args)
        .env("INCUS_SOCKET", socket)
        .env("INCUS_CONF", conf)
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| format!("incus: {e}"))?;
    Ok(out.status.success())
}

/// Deletes what a session made in its project, and the project, whatever happened.
struct Cleanup(String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let run = |args: &[&str]| {
            let _ = std::process::Command::new(client())
                .args(args)
                .env("INCUS_SOCKET", socket())
                .output();
        };
        for instance in ["c1", "c2"] {
            run(&["delete", "--force", instance, "--project", &self.0]);
        }
        run(&["project", "delete", &self.0]);
    }
}

/// Why the trials cannot run here, if they cannot.
async fn unavailable() -> Option<String> {
    let socket = socket();
    let probe = fake_incus::client::send(&socket, fake_incus::Request::get("/1.0"));
    match tokio::time::timeout(std::time::Duration::from_secs(5), probe).await {
        Ok(Ok(reply)) if reply.status() == 200 => {}
        _ => return Some(format!("no Incus daemon answers on {}", socket.display())),
    }
    match tokio::process::Command::new(client())
        .arg("--version")
        .output()
        .await
    {
        Ok(out) if out.status.success() => None,
        _ => Some(format!(
            "the incus client ({}) is not installed",
            client().display()
        )),
    }
}

/// A transcript as it is kept: its header names the daemon's socket by its path in the
/// daemon's own layout (from `/var/lib/incus/` on), else by its file name, never by where this
/// machine keeps the daemon (a 7.0 tree set up beside 6.0).
fn as_kept(text: &str, socket: &Path) -> String {
    let path = socket.to_string_lossy();
    let own = match path.find("/var/lib/incus/") {
        Some(at) => path[at..].to_string(),
        None => socket
            .file_name()
            .map_or_else(String::new, |name| name.to_string_lossy().into_owned()),
    };
    let json = |text: &str| serde_json::to_string(text).expect("a JSON string");
    let (header, rest) = text.split_once('\n').unwrap_or((text, ""));
    let header = header.replacen(
        &format!("\"upstream\":{}", json(&path)),
        &format!("\"upstream\":{}", json(&own)),
        1,
    );
    format!("{header}\n{rest}")
}

async fn record_and_replay(session: &Session) -> Completion {
    if let Some(reason) = unavailable().await {
        return Completion::ignored_with(reason);
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let project = format!(
        "rec{}",
        uuid::Uuid::new_v4()
            .simple()
            .to_string()
            .get(..10)
            .unwrap_or("x")
    );
    let _cleanup = Cleanup(project.clone());
    // The capture when the recording begins: the default project and what it lends, no
    // instances (the session makes its own).
    let options = CaptureOptions::new()
        .project("default")
        .instances("no-instance-has-this-name");
    let seed = match capture(&socket(), &options).await {
        Ok(seed) => seed,
        Err(err) => panic!("capture: {err}"),
    };
    std::fs::write(dir.path().join("hello.txt"), "hello from the session\n").unwrap();
    let conf = dir.path().join("conf");
    std::fs::create_dir(&conf).unwrap();
    let path = dir.path().join("t.jsonl");
    let recorder = Recorder::start(
        &socket(),
        &dir.path().join("recorder.socket"),
        &path,
        transcript::DEFAULT_BODY_LIMIT,
    )
    .await
    .expect("recorder");
    let dir_text = dir.path().display().to_string();
    for command in session.commands {
        let args: Vec<String> = command
            .iter()
            .map(|a| a.replace("{p}", &project).replace("{dir}", &dir_text))
            .collect();
        if let Err(err) = incus(recorder.unix_socket(), &conf, &args).await {
            panic!("{err}");
        }
    }
    if let Err(err) = recorder.finish().await {
        panic!("recorder: {err}");
    }
    let text = std::fs::read_to_string(&path).expect("transcript");
    if let Some(out) = std::env::var_os("RECORD_TRANSCRIPTS_TO") {
        let out = PathBuf::from(out);
        let kept = as_kept(&text, &socket());
        std::fs::write(out.join(format!("{}.jsonl", session.name)), kept).expect("write");
        let mut seed_text = serde_json::to_string_pretty(&seed).unwrap();
        seed_text.push('\n');
        std::fs::write(out.join(format!("{}.state.json", session.name)), seed_text).expect("write");
    }
    let (_, exchanges) = transcript::parse(&text).expect("a transcript");
    let fake = FakeIncus::builder()
        .state(seed)
        .start()
        .await
        .expect("the capture loads");
    let report = match fake_incus::replay::replay(&exchanges, fake.unix_socket()).await {
        Ok(report) => report,
        Err(err) => panic!("replay: {err}"),
    };
    print!("{}", report.text());
    assert_eq!(report.replayed, exchanges.len(), "every exchange replayed");
    // A capture of a 7.0 daemon serves as 7.0 (it records the version it read).
    let server = fake.call(fake_incus::Request::get("/1.0")).await;
    let seven = server.metadata()["environment"]["server_version"]
        .as_str()
        .is_some_and(|v| v.starts_with("7."));
    let more = if seven { transcripts::KNOWN_7_0 } else { &[] };
    let unexpected = transcripts::unexpected_beside(&report, more);
    assert!(
        unexpected.is_empty(),
        "unexpected differences:\n{}",
        unexpected.join("\n")
    );
    Completion::Completed
}

fn main() -> std::process::ExitCode {
    let mut args = libtest_mimic::Arguments::from_args();
    // One session at a time: each transcript then holds its own session only.
    args.test_threads.get_or_insert(1);
    let trials = SESSIONS
        .iter()
        .map(|session| {
            trial(
                &format!(
                    "a_real_cli_session_replays_with_only_known_differences::{}",
                    session.name
                ),
                move || record_and_replay(session),
            )
        })
        .collect();
    libtest_mimic::run(&args, trials).exit_code()
}
