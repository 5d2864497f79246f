//! TEMPORARY stand-in for the built-in interpreter (`interpreter.rs`, written in another branch),
//! with the same crate-internal API. Delete this file when the interpreter is merged and declare
//! `mod interpreter;` in `exec/mod.rs` instead of the alias.
//!
//! Supports only: `echo ARGS...`, `cat` (stdin to stdout), `true`, `false`, `sleep SECONDS`,
//! `sh -c 'exit N'`. Signals end the command with 128+N.

use bytes::Bytes;
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::sync::mpsc;

/// What to run.
#[derive(Debug, Clone)]
#[allow(dead_code)]
pub(crate) struct ExecRequest {
    pub(crate) command: Vec<String>,
    pub(crate) environment: BTreeMap<String, String>,
    pub(crate) user: u32,
    pub(crate) group: u32,
    pub(crate) cwd: String,
}

/// The program's streams and signals.
#[derive(Debug)]
pub(crate) struct ExecIo {
    pub(crate) stdin: mpsc::Receiver<Bytes>,
    pub(crate) stdout: mpsc::Sender<Bytes>,
    pub(crate) stderr: mpsc::Sender<Bytes>,
    pub(crate) signals: mpsc::UnboundedReceiver<i32>,
}

/// Why a command cannot start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StartFailure {
    EmptyCommand,
    CommandNotFound,
}

impl StartFailure {
    pub(crate) fn message(self) -> &'static str {
        match self {
            Self::EmptyCommand => "Failed to retrieve PID of executing child process",
            Self::CommandNotFound => "Command not found",
        }
    }
    pub(crate) fn exit_status(self) -> i32 {
        match self {
            Self::EmptyCommand => -1,
            Self::CommandNotFound => 127,
        }
    }
}

const KNOWN: &[&str] = &["echo", "cat", "true", "false", "sleep", "sh"];

pub(crate) fn start_failure(command: &[String]) -> Option<StartFailure> {
    match command.first() {
        None => Some(StartFailure::EmptyCommand),
        Some(name) if !KNOWN.contains(&name.as_str()) => Some(StartFailure::CommandNotFound),
        Some(_) => None,
    }
}

pub(crate) fn incus_environment(
    requested: &BTreeMap<String, String>,
    user: u32,
) -> BTreeMap<String, String> {
    let mut env = requested.clone();
    let mut default = |key: &str, value: &str| {
        env.entry(key.to_owned())
            .or_insert_with(|| value.to_owned());
    };
    default(
        "PATH",
        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    );
    default("LANG", "C.UTF-8");
    if user == 0 {
        default("HOME", "/root");
        default("USER", "root");
    }
    env
}

pub(crate) async fn run(req: ExecRequest, io: ExecIo) -> i32 {
    let ExecIo {
        mut stdin,
        stdout,
        stderr: _stderr,
        mut signals,
    } = io;
    if let Some(failure) = start_failure(&req.command) {
        return failure.exit_status();
    }
    let args = &req.command[1..];
    let program = async {
        match req.command[0].as_str() {
            "echo" => {
                let _ = stdout
                    .send(Bytes::from(format!("{}\n", args.join(" "))))
                    .await;
                0
            }
            "cat" => {
                while let Some(chunk) = stdin.recv().await {
                    if stdout.send(chunk).await.is_err() {
                        return 141;
                    }
                }
                0
            }
            "true" => 0,
            "sleep" => {
                let secs: f64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(0.0);
                tokio::time::sleep(Duration::from_secs_f64(secs)).await;
                0
            }
            "sh" => args
                .get(1)
                .and_then(|line| line.strip_prefix("exit "))
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(0),
            _ => 1,
        }
    };
    tokio::select! {
        Some(signal) = signals.recv() => 128 + signal,
        status = program => status,
    }
}
