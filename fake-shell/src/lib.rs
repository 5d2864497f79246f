//! What runs when a client execs a command in a fake Incus instance: a POSIX shell and the busybox
//! applets that tools use, interpreted in memory over the instance's own files.
//!
//! The host (the fake) hands over a [`FileSystem`]: the instance's tree, the one `incus file push`
//! and SFTP write. Commands are found as the daemon finds them: `command[0]` along `PATH` in that
//! tree, without a shell (127 when missing, 126 for a directory or a file without execute
//! permission, both silent); a file that resolves to `busybox` runs the applet it is called as; a
//! `#!` script runs with its interpreter; a text file runs as a shell script. Inside `sh`, busybox's
//! applets come first (busybox is built with "prefer applets"), as on the real image.
//!
//! # Why an interpreter, not the image's real busybox in a sandbox
//!
//! Measured on the machine this was built on (Incus 6.0.4, busybox 1.35.0, the `ci/busybox-image.sh`
//! image): running the image's own `busybox` would need the instance's tree on a real disk (it lives in
//! the fake's memory, shared copy-on-write between an image's instances and snapshots), a chroot or
//! user namespace per exec (the fake runs unprivileged, in CI too, where unprivileged user namespaces
//! may be off), the image to ship real binaries (the fake's test images declare executables without
//! content), and would lose what the fake guarantees: deterministic output for tests, fault injection
//! on the streams, bounded memory and no host process. A shell parser crate was weighed too:
//! `conch-parser` is unmaintained since 2017; `brush-parser` and `yash-syntax` are maintained but
//! parse bash (accepting what busybox `ash` refuses) or bring an async runtime model of their own,
//! and either AST would still need an evaluator over the instance's tree. The POSIX grammar is small
//! enough to parse here (see `syntax`), so the whole language is one crate without dependencies
//! beyond the workspace's.
//!
//! Output goes out in chunks of at most 32 KiB through bounded channels, so memory stays bounded
//! whatever a command prints. Signals from the control channel end the program with 128+N unless
//! ignored; a dropped output receiver ends it with 141 (128+SIGPIPE). What the fake cannot run (a
//! program that is neither busybox nor a script, an applet it does not simulate, a background job)
//! fails with a message that says so, never silently.
//!
//! # How the code is laid out
//!
//! The modules, top-down; a module uses only modules listed after it, except that the interpreter
//! (`Shell`, in `shell`) is one type whose methods are split over the files that extend it
//! (`dispatch`: finding and running a command; `expand`: words and parameters):
//!
//! | module | what it does |
//! |---|---|
//! | `lib` (this file) | [`run`]: one exec ([`ExecRequest`]), its file descriptors and its end |
//! | `interactive` | [`interactive`]: `ash` reading a terminal (a console): prompt, line editing, one line at a time |
//! | `dispatch` | `command[0]` along `PATH`: an applet, a `#!` script, a shell script, or 126/127 |
//! | `builtins`, `applets` | the shell's builtins; the busybox applets, grouped by kind under `applets/` |
//! | `sh`, `expand`, `arith`, `printf` | `sh -c` and scripts; word expansion; arithmetic; `printf` formats |
//! | `shell` | the interpreter's state and the evaluation of the syntax tree |
//! | `io`, `pattern` | file descriptors and pipes over bounded channels; glob patterns |
//! | [`fs`], `syntax` | the instance's file tree; the POSIX shell grammar (uses nothing) |
//!
//! Where to add things: an applet is a function in its group under `applets/` and a line of the
//! table in `applets/mod.rs`; a builtin goes into `builtins`.

mod applets;
mod arith;
mod builtins;
mod dispatch;
mod expand;
pub mod fs;
mod interactive;
mod io;
mod pattern;
mod printf;
mod sh;
mod shell;
mod syntax;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc;

pub use fs::{FileSystem, FsError, Kind, MemoryFs, Meta, Owner};
pub use interactive::{interactive, PROMPT_QUERY};
use io::{Fds, Reader, Sink};
use shell::{Search, Shell, Stop, BROKEN_PIPE_STATUS};
pub use shell::{NOT_EXECUTABLE_STATUS, NOT_FOUND_STATUS};

/// The `PATH` Incus gives a command.
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// What to run: the fields of an Incus exec request that matter to the program.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    /// The command and its arguments.
    pub command: Vec<String>,
    /// The environment, as the daemon gives it (the fake fills in Incus's defaults).
    pub environment: BTreeMap<String, String>,
    /// User id.
    pub user: u32,
    /// Group id.
    pub group: u32,
    /// Working directory; empty for the user's home.
    pub cwd: String,
    /// The instance's files.
    pub fs: Arc<dyn FileSystem>,
    /// The instance's host name (its name).
    pub hostname: String,
}

/// The program's standard streams and the signals sent to it.
#[derive(Debug)]
pub struct ExecIo {
    /// Standard input; the sender dropped is end of input.
    pub stdin: mpsc::Receiver<bytes::Bytes>,
    /// Standard output; bounded, so a slow reader slows the program down.
    pub stdout: mpsc::Sender<bytes::Bytes>,
    /// Standard error; bounded like stdout.
    pub stderr: mpsc::Sender<bytes::Bytes>,
    /// Signal numbers from the control socket.
    pub signals: mpsc::UnboundedReceiver<i32>,
}

/// What every process of one exec shares: the instance and the signal state.
#[derive(Debug)]
pub(crate) struct Machine {
    pub(crate) fs: fs::Fs,
    pub(crate) hostname: String,
    pub(crate) user: u32,
    pub(crate) group: u32,
    /// The instance has `/bin/busybox`: its `sh` prefers applets.
    pub(crate) busybox: bool,
    /// `fake-ignore-signals` is running.
    pub(crate) ignoring: AtomicBool,
    next_pid: AtomicU32,
    /// The program's own pids signalled with `kill`.
    pub(crate) kill: mpsc::UnboundedSender<i32>,
    /// The first pid of the exec (its `kill` targets).
    pub(crate) first_pid: u32,
}

/// The pid of the exec'd command: the busybox container's first exec gets a small one.
const FIRST_PID: u32 = 16;

impl Machine {
    pub(crate) fn new_pid(&self) -> u32 {
        self.next_pid.fetch_add(1, Ordering::SeqCst)
    }

    /// Whether `pid` is one of this exec's processes.
    pub(crate) fn owns_pid(&self, pid: u32) -> bool {
        (self.first_pid..self.next_pid.load(Ordering::SeqCst)).contains(&pid)
    }
}

/// The status of an empty command, which runs nothing (the daemon never starts one: it fails the
/// operation, see the fake's exec).
pub const EMPTY_COMMAND_STATUS: i32 = -1;

/// Runs to completion; returns the exit status as Incus reports it (killed by signal N -> 128+N;
/// command not found -> [`NOT_FOUND_STATUS`], not executable -> [`NOT_EXECUTABLE_STATUS`]).
pub async fn run(req: ExecRequest, io: ExecIo) -> i32 {
    let ExecIo {
        stdin,
        stdout,
        stderr,
        mut signals,
    } = io;
    if req.command.is_empty() {
        return EMPTY_COMMAND_STATUS;
    }
    let input = Arc::new(tokio::sync::Mutex::new(Reader::channel(stdin)));
    let fds = Fds::standard(input, Sink::Chan(stdout), Sink::Chan(stderr));
    let (mut process, mut killed) = first_process(&req, fds);
    let machine = Arc::clone(&process.m);
    let program = async {
        match process.run_argv(&req.command, Search::Exec).await {
            Ok(status) => status,
            Err(Stop::BrokenPipe) => BROKEN_PIPE_STATUS,
            Err(_) => process.status,
        }
    };
    tokio::select! {
        biased;
        signal = fatal_signal(&mut signals, &mut killed, &machine.ignoring) => 128 + signal,
        status = program => status,
    }
}

/// The exec's machine and its first process (the one `command` runs in), with these descriptors;
/// the receiver of the signals the program sends its own pids.
fn first_process(req: &ExecRequest, fds: Fds) -> (Shell, mpsc::UnboundedReceiver<i32>) {
    let fs = fs::Fs(Arc::clone(&req.fs));
    let busybox = fs.stat("/bin/busybox").is_ok();
    let (kill, killed) = mpsc::unbounded_channel();
    let machine = Arc::new(Machine {
        fs,
        hostname: req.hostname.clone(),
        user: req.user,
        group: req.group,
        busybox,
        ignoring: AtomicBool::new(false),
        next_pid: AtomicU32::new(FIRST_PID),
        kill,
        first_pid: FIRST_PID,
    });
    let cwd = initial_cwd(&machine.fs, &req.cwd, req.user);
    let env = process_environment(&req.environment);
    (Shell::process(machine, env, cwd, fds), killed)
}

/// The working directory: the request's, else the user's home (`/root` for root, `/` otherwise); one
/// that does not exist is `/`, where the daemon starts the command then.
fn initial_cwd(fs: &fs::Fs, requested: &str, user: u32) -> String {
    let wanted = match (requested, user) {
        ("", 0) => "/root",
        ("", _) => "/",
        (cwd, _) => cwd,
    };
    let path = fs::absolute("/", wanted);
    if fs.is_dir(&path) {
        path
    } else {
        "/".to_owned()
    }
}

/// The environment the process sees: the request's, plus `container=lxc` that LXC adds when
/// attaching.
fn process_environment(requested: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut env = requested.clone();
    env.entry("container".into())
        .or_insert_with(|| "lxc".into());
    env
}

/// Waits for a signal that ends the program and returns its number. SIGKILL always ends it; SIGCHLD,
/// SIGURG, SIGWINCH and the stop/continue signals never do (their default action is not to terminate,
/// and stopping is not modelled); any other valid signal does unless `fake-ignore-signals` is running.
async fn fatal_signal(
    signals: &mut mpsc::UnboundedReceiver<i32>,
    killed: &mut mpsc::UnboundedReceiver<i32>,
    ignoring: &AtomicBool,
) -> i32 {
    let mut open = true;
    loop {
        let signal = tokio::select! {
            signal = signals.recv(), if open => match signal {
                Some(signal) => signal,
                None => {
                    open = false;
                    continue;
                }
            },
            Some(signal) = killed.recv() => signal,
            else => std::future::pending().await,
        };
        if terminates(signal, ignoring.load(Ordering::SeqCst)) {
            return signal;
        }
        tracing::debug!(signal, "exec: signal ignored");
    }
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
