//! The fake's built-in command interpreter: what runs when a client execs a command in a fake instance.
//!
//! Every command is interpreted here, deterministically, without any host process or filesystem. The
//! commands and their exact behaviour are documented in `EXEC.md` at the root of the crate. In short:
//! `echo`, `printf`, `cat`, `head`, `true`, `false`, `sleep`, `env`, `id`, `pwd`, `yes`, `ls`, `dd`,
//! `hostname`, `init`, `busybox`, `sh` (with `-c LINE` or a script on stdin, made of simple commands and
//! pipelines joined by `;`, `&&`, `||` and newlines, with `>&2`, `2>&1` and `>/dev/null`, and `exit` and
//! `cd` inside), plus test commands under a `fake-` prefix that flood output, emit raw bytes, ignore
//! signals or hang. A command runs only when the instance's image holds it (see [`Rootfs`]); the shell's
//! built-ins and, in a busybox image, busybox's applets run from `sh` and `env` whatever the image holds.
//!
//! Signals from the control channel end the program with 128+N unless ignored; a dropped output
//! receiver ends it with 141 (128+SIGPIPE). Output goes out in chunks of at most 32 KiB through the
//! bounded channels, so memory stays bounded whatever a command prints.

mod builtins;
mod fake_commands;
mod files;
mod pipeline;
mod printf;
mod rootfs;
mod shell;
mod streams;
mod syntax;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc;

pub(crate) use rootfs::Rootfs;
use streams::{Fds, Output, Status, Stdin, Streams};

/// What to run: the fields of an Incus exec request that matter to the program.
#[derive(Debug, Clone)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct ExecRequest {
    pub(crate) command: Vec<String>,
    pub(crate) environment: BTreeMap<String, String>,
    pub(crate) user: u32,
    pub(crate) group: u32,
    pub(crate) cwd: String,
    /// The instance's file system: what can run, and which directories exist.
    pub(crate) rootfs: Arc<Rootfs>,
    /// The instance's host name (its name).
    pub(crate) hostname: String,
}

/// The program's standard streams and the signals sent to it.
#[derive(Debug)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct ExecIo {
    /// Standard input; the sender dropped is end of input.
    pub(crate) stdin: mpsc::Receiver<bytes::Bytes>,
    /// Standard output; bounded, so a slow reader slows the program down.
    pub(crate) stdout: mpsc::Sender<bytes::Bytes>,
    /// Standard error; bounded like stdout.
    pub(crate) stderr: mpsc::Sender<bytes::Bytes>,
    /// Signal numbers from the control socket.
    pub(crate) signals: mpsc::UnboundedReceiver<i32>,
}

/// Exit status of a program whose output receiver was dropped: 128 + SIGPIPE.
const BROKEN_PIPE_STATUS: i32 = 128 + 13;
/// Exit status for "command not found", as Incus reports it.
const NOT_FOUND_STATUS: i32 = 127;
/// Exit status for a command that exists but cannot run (here: one the fake does not simulate).
const NOT_EXECUTABLE_STATUS: i32 = 126;

/// Runs to completion; returns the exit status as Incus reports it (killed by signal N -> 128+N;
/// command not found -> 127, see [`exit_failure`]).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) async fn run(req: ExecRequest, io: ExecIo) -> i32 {
    let ExecIo {
        stdin,
        stdout,
        stderr,
        mut signals,
    } = io;
    if let Some(failure) = start_failure(&req.command) {
        return failure.exit_status();
    }
    let ignoring = AtomicBool::new(false);
    let streams = Streams { stdout, stderr };
    let mut stdin = Stdin::new(stdin);
    let program = async {
        let mut ctx = Ctx {
            stdin: &mut stdin,
            output: Output {
                streams: &streams,
                fds: Fds::STANDARD,
            },
            env: process_environment(&req.environment, req.user),
            identity: Identity::of(&req),
            ignoring_signals: &ignoring,
            depth: 0,
        };
        let name = &req.command[0];
        let status = match ctx.find(name, Search::Exec) {
            Found::Command(command) => run_command(&mut ctx, command, &req.command[1..]).await,
            Found::NotSimulated(path) => not_simulated(&mut ctx, &path).await,
            // Like LXC when `execvp` fails: nothing on stderr, status 127.
            Found::Missing => Ok(NOT_FOUND_STATUS),
        };
        status.unwrap_or(BROKEN_PIPE_STATUS)
    };
    tokio::select! {
        biased;
        signal = fatal_signal(&mut signals, &ignoring) => 128 + signal,
        status = program => status,
    }
}

/// Why Incus would not start a command at all (it reports the operation as failed, with this message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) enum StartFailure {
    /// `command` was an empty list.
    EmptyCommand,
}

#[cfg_attr(not(test), allow(dead_code))]
impl StartFailure {
    /// The operation's `err`, as the real daemon words it.
    pub(crate) fn message(self) -> &'static str {
        match self {
            StartFailure::EmptyCommand => "Failed to retrieve PID of executing child process",
        }
    }

    /// The operation's `metadata.return`: -1 when no process started.
    pub(crate) fn exit_status(self) -> i32 {
        match self {
            StartFailure::EmptyCommand => -1,
        }
    }
}

/// Whether `command` cannot be started at all, so the fake can fail the operation like Incus does.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn start_failure(command: &[String]) -> Option<StartFailure> {
    command.is_empty().then_some(StartFailure::EmptyCommand)
}

/// How Incus reports a command that ended with `status`: the operation fails with "Command not found"
/// for 127 and "Command not executable" for 126, whatever the command was (`sh -c 'exit 127'` too), with
/// `return` and any recorded output in its metadata.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn exit_failure(status: i32) -> Option<&'static str> {
    match status {
        NOT_FOUND_STATUS => Some("Command not found"),
        NOT_EXECUTABLE_STATUS => Some("Command not executable"),
        _ => None,
    }
}

/// The environment Incus gives an exec'd command (as shown in the operation's metadata): the request's
/// variables over the defaults `PATH`, `LANG=C.UTF-8`, and `HOME=/root` with `USER=root` for uid 0.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn incus_environment(
    requested: &BTreeMap<String, String>,
    user: u32,
) -> BTreeMap<String, String> {
    let mut env = requested.clone();
    let mut default = |key: &str, value: &str| {
        env.entry(key.to_owned())
            .or_insert_with(|| value.to_owned());
    };
    default("PATH", DEFAULT_PATH);
    default("LANG", "C.UTF-8");
    if user == 0 {
        default("HOME", "/root");
        default("USER", "root");
    }
    env
}

/// The environment the process sees: Incus's, plus `container=lxc` that LXC adds when attaching.
fn process_environment(
    requested: &BTreeMap<String, String>,
    user: u32,
) -> BTreeMap<String, String> {
    let mut env = incus_environment(requested, user);
    env.entry("container".into())
        .or_insert_with(|| "lxc".into());
    env
}

const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The user, group and working directory of the program, and the instance it runs in.
#[derive(Debug, Clone)]
struct Identity {
    user: u32,
    group: u32,
    cwd: String,
    rootfs: Arc<Rootfs>,
    hostname: String,
}

impl Identity {
    /// An empty `cwd` is the user's home: `/root` for uid 0, `/` otherwise. A directory that does not
    /// exist is `/`, where the real daemon starts the command then.
    fn of(req: &ExecRequest) -> Self {
        let wanted = match (req.cwd.as_str(), req.user) {
            ("", 0) => "/root",
            ("", _) => "/",
            (cwd, _) => cwd,
        };
        let cwd = match Rootfs::absolute("/", wanted) {
            Some(dir) if req.rootfs.is_dir("/", &dir) => dir,
            _ => "/".to_owned(),
        };
        Identity {
            user: req.user,
            group: req.group,
            cwd,
            rootfs: Arc::clone(&req.rootfs),
            hostname: req.hostname.clone(),
        }
    }
}

/// What a running command can use: the shared stdin, its output after redirections, its environment.
struct Ctx<'a> {
    stdin: &'a mut Stdin,
    output: Output<'a>,
    env: BTreeMap<String, String>,
    identity: Identity,
    ignoring_signals: &'a AtomicBool,
    /// How many `sh` are running inside each other.
    depth: usize,
}

impl Ctx<'_> {
    /// A context for a command run by this one, with its own descriptors and environment.
    fn child(&mut self, fds: Fds, env: BTreeMap<String, String>) -> Ctx<'_> {
        Ctx {
            stdin: &mut *self.stdin,
            output: Output {
                streams: self.output.streams,
                fds,
            },
            env,
            identity: self.identity.clone(),
            ignoring_signals: self.ignoring_signals,
            depth: self.depth,
        }
    }

    /// Finds the command `name` runs, in this program's environment and file system.
    fn find(&self, name: &str, search: Search) -> Found {
        if name.starts_with("fake-") {
            if let Some(command) = applet(name) {
                return Found::Command(command);
            }
        }
        let rootfs = &self.identity.rootfs;
        if search == Search::PreferApplets && rootfs.is_busybox() && !name.contains('/') {
            if let Some(command) = busybox_applet(name) {
                return Found::Command(command);
            }
            if builtins::is_real_applet(name) {
                return Found::NotSimulated(name.to_owned());
            }
        }
        let path = self.env.get("PATH").map_or(DEFAULT_PATH, String::as_str);
        let Some(found) = rootfs.find_executable(name, path, &self.identity.cwd) else {
            return Found::Missing;
        };
        match found.rsplit('/').next().and_then(busybox_applet) {
            Some(command) => Found::Command(command),
            None => Found::NotSimulated(found),
        }
    }
}

/// How a command name is searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Search {
    /// As the daemon starts `command[0]`: only what the image holds, along `PATH`.
    Exec,
    /// As busybox's `sh`, `env` and `xargs` do: an applet of that name first (in a busybox image),
    /// then the image along `PATH`.
    PreferApplets,
}

/// What a command name leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Found {
    Command(Command),
    /// The image holds this executable, but the fake cannot run it.
    NotSimulated(String),
    Missing,
}

/// A file the image holds that the fake has no simulation of: status 126.
async fn not_simulated(ctx: &mut Ctx<'_>, path: &str) -> Status {
    let message = format!("fake-incus: {path}: not simulated by the fake");
    ctx.output.err_line(&message).await?;
    Ok(NOT_EXECUTABLE_STATUS)
}

/// The commands that exist as programs (the shell-only `exit` is handled by `sh` itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Command {
    Echo,
    Printf,
    Cat,
    Head,
    True,
    False,
    Sleep,
    Env,
    Id,
    Pwd,
    Sh,
    Yes,
    Ls,
    Dd,
    Hostname,
    Init,
    Busybox,
    FakeFlood,
    FakeBytes,
    FakeHang,
    FakeIgnoreSignals,
}

const COMMANDS: &[(&str, Command)] = &[
    ("echo", Command::Echo),
    ("printf", Command::Printf),
    ("cat", Command::Cat),
    ("head", Command::Head),
    ("true", Command::True),
    ("false", Command::False),
    ("sleep", Command::Sleep),
    ("env", Command::Env),
    ("id", Command::Id),
    ("pwd", Command::Pwd),
    ("sh", Command::Sh),
    ("yes", Command::Yes),
    ("ls", Command::Ls),
    ("dd", Command::Dd),
    ("hostname", Command::Hostname),
    ("init", Command::Init),
    ("busybox", Command::Busybox),
    ("fake-flood", Command::FakeFlood),
    ("fake-bytes", Command::FakeBytes),
    ("fake-hang", Command::FakeHang),
    ("fake-ignore-signals", Command::FakeIgnoreSignals),
];

/// The command of that exact name, test commands included.
fn applet(name: &str) -> Option<Command> {
    COMMANDS
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, command)| *command)
}

/// The busybox applet of that name that the fake simulates (not the `fake-` test commands).
fn busybox_applet(name: &str) -> Option<Command> {
    applet(name).filter(|_| !name.starts_with("fake-"))
}

type BoxedStatus<'a> = Pin<Box<dyn Future<Output = Status> + Send + 'a>>;

/// Runs one command with its arguments (boxed: `sh`, `env` and `fake-ignore-signals` run commands).
fn run_command<'a>(ctx: &'a mut Ctx<'_>, command: Command, args: &'a [String]) -> BoxedStatus<'a> {
    Box::pin(async move {
        match command {
            Command::Echo => builtins::echo(ctx, args).await,
            Command::Printf => builtins::printf(ctx, args).await,
            Command::Cat => builtins::cat(ctx, args).await,
            Command::Head => builtins::head(ctx, args).await,
            Command::True => Ok(0),
            Command::False => Ok(1),
            Command::Sleep => builtins::sleep(ctx, args).await,
            Command::Env => builtins::env(ctx, args).await,
            Command::Id => builtins::id(ctx, args).await,
            Command::Pwd => builtins::pwd(ctx).await,
            Command::Sh => shell::sh(ctx, args).await,
            Command::Yes => builtins::yes(ctx, args).await,
            Command::Ls => files::ls(ctx, args).await,
            Command::Dd => files::dd(ctx, args).await,
            Command::Hostname => builtins::hostname(ctx, args).await,
            Command::Init => builtins::init(ctx).await,
            Command::Busybox => builtins::busybox(ctx, args).await,
            Command::FakeFlood => fake_commands::flood(ctx, args).await,
            Command::FakeBytes => fake_commands::bytes(ctx, args).await,
            Command::FakeHang => fake_commands::hang().await,
            Command::FakeIgnoreSignals => fake_commands::ignore_signals(ctx, args).await,
        }
    })
}

/// Waits for a signal that ends the program and returns its number. SIGKILL always ends it; SIGCHLD,
/// SIGURG, SIGWINCH and the stop/continue signals never do (their default action is not to terminate,
/// and stopping is not modelled); any other valid signal does unless `fake-ignore-signals` is running.
async fn fatal_signal(signals: &mut mpsc::UnboundedReceiver<i32>, ignoring: &AtomicBool) -> i32 {
    while let Some(signal) = signals.recv().await {
        if terminates(signal, ignoring.load(Ordering::SeqCst)) {
            return signal;
        }
        tracing::debug!(signal, "exec: signal ignored");
    }
    std::future::pending().await
}

const SIGKILL: i32 = 9;

fn terminates(signal: i32, ignoring: bool) -> bool {
    match signal {
        SIGKILL => true,
        // SIGCHLD, SIGCONT, SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU, SIGURG, SIGWINCH.
        17..=23 | 28 => false,
        1..=64 => !ignoring,
        _ => false,
    }
}

#[cfg(test)]
mod tests;
