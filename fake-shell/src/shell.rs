//! The shell: runs parsed lists. One [`Shell`] is one process's state (variables, functions, working
//! directory, umask, descriptors); a subshell, a pipeline's command or a command substitution runs on a
//! clone, so nothing it changes leaks back, as with a fork.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::future::join_all;
use tokio::sync::mpsc;

use crate::fs::{self, Device, FsError, Owner};
use crate::io::{input_of, Fd, Fds, FileOut, Reader, Sink, WriteError};
use crate::syntax::{self, AndOr, Command, Compound, List, Pipeline, Redir, RedirOp, Simple};
use crate::Machine;

/// Status of a command killed by SIGPIPE.
pub(crate) const BROKEN_PIPE_STATUS: i32 = 128 + 13;
/// "command not found".
pub const NOT_FOUND_STATUS: i32 = 127;
/// "found but cannot be executed".
pub const NOT_EXECUTABLE_STATUS: i32 = 126;
/// Status of a shell usage or syntax error.
pub(crate) const USAGE_STATUS: i32 = 2;
/// How many pipes a pipeline's channel holds before its writer waits.
const PIPE_CHUNKS: usize = 4;

/// Why a list stopped before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// `exit`, `set -e`, or a fatal error: the shell ends with its status.
    Exit,
    /// `return` from a function or a sourced file.
    Return,
    Break(usize),
    Continue(usize),
    /// The reader of an output went away.
    BrokenPipe,
}

/// A command's exit status, or why the shell stops.
pub(crate) type Status = Result<i32, Stop>;
/// The end of a list: the status is in [`Shell::status`].
pub(crate) type Flow = Result<(), Stop>;
pub(crate) type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How a command name is looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Search {
    /// As the daemon starts `command[0]`: only what the instance holds, along `PATH`, silently.
    Exec,
    /// As a program (`env`, `xargs`, `find -exec`) runs one: busybox's applets first in a busybox
    /// instance, then `PATH`.
    Program,
    /// As the shell runs one: special built-ins, functions, built-ins, then like a program.
    Shell,
}

/// One process's state.
#[derive(Debug, Clone)]
pub(crate) struct Shell {
    pub(crate) m: Arc<Machine>,
    pub(crate) vars: BTreeMap<String, String>,
    pub(crate) exported: BTreeSet<String>,
    pub(crate) funcs: BTreeMap<String, Arc<Command>>,
    pub(crate) arg0: String,
    pub(crate) args: Vec<String>,
    /// `$?`.
    pub(crate) status: i32,
    pub(crate) errexit: bool,
    pub(crate) nounset: bool,
    pub(crate) cwd: String,
    pub(crate) umask: u32,
    pub(crate) fds: Fds,
    /// `$$`.
    pub(crate) pid: u32,
    pub(crate) depth: usize,
    /// Inside an `if`/`while` condition or before `&&`/`||`: `set -e` does not apply.
    pub(crate) condition: usize,
    pub(crate) loops: usize,
    /// The line of the command running (busybox's messages name it).
    pub(crate) line: usize,
    /// The status of the last command substitution of the command being expanded.
    pub(crate) substituted: Option<i32>,
}

impl Shell {
    /// A process with this environment, directory and descriptors.
    pub(crate) fn process(
        m: Arc<Machine>,
        env: BTreeMap<String, String>,
        cwd: String,
        fds: Fds,
    ) -> Self {
        let exported = env.keys().cloned().collect();
        let pid = m.new_pid();
        Self {
            m,
            vars: env,
            exported,
            funcs: BTreeMap::new(),
            arg0: "sh".into(),
            args: Vec::new(),
            status: 0,
            errexit: false,
            nounset: false,
            cwd,
            umask: 0o022,
            fds,
            pid,
            depth: 0,
            condition: 0,
            loops: 0,
            line: 0,
            substituted: None,
        }
    }

    /// The environment a program started from here gets: the exported variables.
    pub(crate) fn environ(&self) -> BTreeMap<String, String> {
        self.vars
            .iter()
            .filter(|(k, _)| self.exported.contains(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// A new program's process: this one's environment only, a new pid.
    pub(crate) fn program(&self, env: BTreeMap<String, String>) -> Shell {
        let mut child =
            Shell::process(Arc::clone(&self.m), env, self.cwd.clone(), self.fds.clone());
        child.umask = self.umask;
        child.depth = self.depth + 1;
        child
    }

    pub(crate) fn owner(&self) -> Owner {
        Owner {
            uid: self.m.user,
            gid: self.m.group,
        }
    }

    pub(crate) fn var(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// A path as the process names it, absolute and clean.
    pub(crate) fn path(&self, path: &str) -> String {
        fs::absolute(&self.cwd, path)
    }

    /// Writes to fd 1.
    pub(crate) async fn out(&self, bytes: impl Into<Bytes>) -> Flow {
        self.write_fd(1, bytes.into()).await
    }

    /// Writes to fd 2.
    pub(crate) async fn err(&self, bytes: impl Into<Bytes>) -> Flow {
        self.write_fd(2, bytes.into()).await
    }

    /// Writes a line to fd 2.
    pub(crate) async fn err_line(&self, line: &str) -> Flow {
        // The shell's own messages are written `sh: ...`; a shell run by its path names itself
        // so, as busybox's ash does with its `$0` (`/bin/sh: /usr/bin/python3: not found`).
        match line.strip_prefix("sh: ") {
            Some(rest) if self.arg0.contains('/') => {
                self.err(format!("{}: {rest}\n", self.arg0)).await
            }
            _ => self.err(format!("{line}\n")).await,
        }
    }

    /// `NAME: message` on stderr, and status 1: the usual failure of an applet.
    pub(crate) async fn fail(&self, line: &str) -> Status {
        self.err_line(line).await?;
        Ok(1)
    }

    pub(crate) async fn write_fd(&self, fd: u32, bytes: Bytes) -> Flow {
        match self.fds.sink(fd).write(bytes).await {
            Ok(()) | Err(WriteError::NoSpace) => Ok(()),
            Err(WriteError::BrokenPipe) => Err(Stop::BrokenPipe),
        }
    }

    /// Reads all of stdin.
    pub(crate) async fn read_stdin(&self) -> Vec<u8> {
        let input = self.fds.input();
        let mut reader = input.lock().await;
        let mut all = Vec::new();
        while let Some(chunk) = reader.next_chunk().await {
            all.extend_from_slice(&chunk);
        }
        all
    }

    pub(crate) fn run_list<'a>(&'a mut self, list: &'a List) -> Boxed<'a, Flow> {
        Box::pin(async move {
            for and_or in list {
                self.run_and_or(and_or).await?;
            }
            Ok(())
        })
    }

    async fn run_and_or(&mut self, and_or: &AndOr) -> Flow {
        let last = and_or.rest.len();
        self.run_pipeline(&and_or.first, last > 0).await?;
        for (index, (and, pipeline)) in and_or.rest.iter().enumerate() {
            if *and == (self.status == 0) {
                self.run_pipeline(pipeline, index + 1 < last).await?;
            }
        }
        Ok(())
    }

    async fn run_pipeline(&mut self, pipeline: &Pipeline, is_condition: bool) -> Flow {
        let quiet = is_condition || pipeline.bang;
        self.condition += usize::from(quiet);
        let ran = match pipeline.commands.as_slice() {
            [command] => self.run_command(command).await,
            commands => self.run_piped(commands).await,
        };
        self.condition -= usize::from(quiet);
        ran?;
        if pipeline.bang {
            self.status = i32::from(self.status == 0);
        }
        if quiet {
            return Ok(());
        }
        self.check_errexit()
    }

    /// `set -e`: a failed command outside a condition ends the shell.
    fn check_errexit(&self) -> Flow {
        if self.errexit && self.status != 0 && self.condition == 0 {
            return Err(Stop::Exit);
        }
        Ok(())
    }

    /// `a | b | c`: each command in a subshell, all at once, joined by bounded pipes.
    async fn run_piped(&mut self, commands: &[Command]) -> Flow {
        let count = commands.len();
        let mut receivers = Vec::new();
        let mut senders = Vec::new();
        for _ in 1..count {
            let (tx, rx) = mpsc::channel::<Bytes>(PIPE_CHUNKS);
            senders.push(tx);
            receivers.push(rx);
        }
        let mut stages = Vec::new();
        let mut receivers = receivers.into_iter();
        let mut senders = senders.into_iter();
        for (index, command) in commands.iter().enumerate() {
            let mut stage = self.clone();
            if index > 0 {
                if let Some(rx) = receivers.next() {
                    let input = Arc::new(tokio::sync::Mutex::new(Reader::channel(rx)));
                    stage.fds.set(0, Fd::In(input));
                }
            }
            if index + 1 < count {
                if let Some(tx) = senders.next() {
                    stage.fds.set(1, Fd::Out(Sink::Chan(tx)));
                }
            }
            let last = index + 1 == count;
            stages.push(Box::pin(async move {
                let ran = stage.run_command(command).await;
                match ran {
                    Err(Stop::BrokenPipe) if last => Err(Stop::BrokenPipe),
                    Err(Stop::BrokenPipe) => Ok(BROKEN_PIPE_STATUS),
                    _ => Ok(stage.status),
                }
            }) as Boxed<'_, Status>);
        }
        let results = join_all(stages).await;
        self.status = results.into_iter().last().unwrap_or(Ok(0))?;
        Ok(())
    }

    pub(crate) fn run_command<'a>(&'a mut self, command: &'a Command) -> Boxed<'a, Flow> {
        Box::pin(async move {
            match command {
                Command::Simple(simple) => self.run_simple(simple).await,
                Command::Function(name, body) => {
                    self.funcs.insert(name.clone(), Arc::clone(body));
                    self.status = 0;
                    Ok(())
                }
                Command::Compound(compound, redirs) => {
                    let saved = self.fds.clone();
                    let opened = match self.redirect(redirs).await {
                        Ok(opened) => opened,
                        Err(Ok(status)) => {
                            self.fds = saved;
                            self.status = status;
                            return Ok(());
                        }
                        Err(Err(stop)) => {
                            self.fds = saved;
                            return Err(stop);
                        }
                    };
                    let ran = self.run_compound(compound).await;
                    self.fds = saved;
                    self.finish_files(opened).await?;
                    ran
                }
            }
        })
    }

    async fn run_compound(&mut self, compound: &Compound) -> Flow {
        match compound {
            Compound::Brace(list) => self.run_list(list).await,
            Compound::Subshell(list) => {
                let mut sub = self.clone();
                let ran = sub.run_list(list).await;
                self.status = sub.status;
                match ran {
                    Err(Stop::BrokenPipe) => Err(Stop::BrokenPipe),
                    _ => Ok(()),
                }
            }
            Compound::If(arms, otherwise) => {
                for (cond, body) in arms {
                    self.condition += 1;
                    let ran = self.run_list(cond).await;
                    self.condition -= 1;
                    ran?;
                    if self.status == 0 {
                        return self.run_list(body).await;
                    }
                }
                match otherwise {
                    Some(body) => self.run_list(body).await,
                    None => {
                        self.status = 0;
                        Ok(())
                    }
                }
            }
            Compound::For(name, words, body) => {
                let items = match words {
                    Some(words) => self.expand_words(words).await?,
                    None => self.args.clone(),
                };
                let mut status = 0;
                for item in items {
                    self.vars.insert(name.clone(), item);
                    if self.loop_body(body, &mut status).await? {
                        break;
                    }
                }
                self.status = status;
                Ok(())
            }
            Compound::Loop { until, cond, body } => {
                let mut status = 0;
                loop {
                    self.condition += 1;
                    let ran = self.run_list(cond).await;
                    self.condition -= 1;
                    ran?;
                    if (self.status == 0) == *until {
                        break;
                    }
                    if self.loop_body(body, &mut status).await? {
                        break;
                    }
                }
                self.status = status;
                Ok(())
            }
            Compound::Case(subject, arms) => {
                let subject = self.expand_string(subject).await?;
                for (patterns, body) in arms {
                    for pattern in patterns {
                        let pattern = self.expand_pattern(pattern).await?;
                        if crate::pattern::matches(&pattern, &subject) {
                            return self.run_list(body).await;
                        }
                    }
                }
                self.status = 0;
                Ok(())
            }
        }
    }

    /// Runs a loop body; `Ok(true)` when the loop ends (`break`).
    async fn loop_body(&mut self, body: &List, status: &mut i32) -> Result<bool, Stop> {
        self.loops += 1;
        let ran = self.run_list(body).await;
        self.loops -= 1;
        *status = self.status;
        match ran {
            Ok(()) => Ok(false),
            Err(Stop::Break(1)) => Ok(true),
            Err(Stop::Break(n)) => Err(Stop::Break(n - 1)),
            Err(Stop::Continue(1)) => Ok(false),
            Err(Stop::Continue(n)) => Err(Stop::Continue(n - 1)),
            Err(other) => Err(other),
        }
    }

    async fn run_simple(&mut self, simple: &Simple) -> Flow {
        self.line = simple.line;
        self.substituted = None;
        let argv = self.expand_words(&simple.words).await?;
        let mut assigns = Vec::new();
        for (name, value) in &simple.assigns {
            assigns.push((name.clone(), self.expand_string(value).await?));
        }
        let subst_status = self.substituted.unwrap_or(0);
        let saved = self.fds.clone();
        let opened = match self.redirect(&simple.redirs).await {
            Ok(opened) => opened,
            Err(Ok(status)) => {
                self.fds = saved;
                self.status = status;
                return Ok(());
            }
            Err(Err(stop)) => {
                self.fds = saved;
                return Err(stop);
            }
        };
        let ran = if argv.is_empty() {
            for (name, value) in assigns {
                self.vars.insert(name, value);
            }
            self.status = subst_status;
            Ok(())
        } else {
            self.run_argv_with(&argv, assigns).await
        };
        if argv.first().is_none_or(|name| name != "exec") {
            self.fds = saved;
        }
        self.finish_files(opened).await?;
        ran
    }

    /// Reports a file written through a redirection that could not be written whole.
    async fn finish_files(&mut self, opened: Vec<Arc<FileOut>>) -> Flow {
        for file in opened {
            if let Err(error) = file.finish() {
                self.err_line(&format!("sh: write error: {}", error.text()))
                    .await?;
                self.status = 1;
            }
        }
        Ok(())
    }

    /// Runs a command line with assignments that apply to it alone.
    async fn run_argv_with(&mut self, argv: &[String], assigns: Vec<(String, String)>) -> Flow {
        if assigns.is_empty() {
            self.status = self.run_argv(argv, Search::Shell).await?;
            return Ok(());
        }
        let special = Self::keeps_assignments(&argv[0]);
        let saved: Vec<(String, Option<String>, bool)> = assigns
            .iter()
            .map(|(name, _)| {
                (
                    name.clone(),
                    self.vars.get(name).cloned(),
                    self.exported.contains(name),
                )
            })
            .collect();
        for (name, value) in assigns {
            self.exported.insert(name.clone());
            self.vars.insert(name, value);
        }
        let ran = self.run_argv(argv, Search::Shell).await;
        if !special {
            for (name, value, exported) in saved {
                match value {
                    Some(value) => self.vars.insert(name.clone(), value),
                    None => self.vars.remove(&name),
                };
                if !exported {
                    self.exported.remove(&name);
                }
            }
        }
        self.status = ran?;
        Ok(())
    }

    /// Applies redirections to the descriptors; the files opened for writing, or the status of a
    /// redirection that failed (after its message).
    async fn redirect(&mut self, redirs: &[Redir]) -> Result<Vec<Arc<FileOut>>, Status> {
        let mut opened = Vec::new();
        for redir in redirs {
            let word = redir.target.get().cloned().unwrap_or_default();
            if redir.op == RedirOp::Here {
                let body = self.expand_string(&word).await.map_err(Err)?;
                let fd = redir.fd.unwrap_or(0);
                self.fds
                    .set(fd, Fd::In(input_of(Bytes::from(body.into_bytes()))));
                continue;
            }
            let target = self.expand_string(&word).await.map_err(Err)?;
            match redir.op {
                RedirOp::DupOut | RedirOp::DupIn => {
                    let default = u32::from(redir.op == RedirOp::DupOut);
                    let fd = redir.fd.unwrap_or(default);
                    if target == "-" {
                        self.fds.close(fd);
                        continue;
                    }
                    let Some(source) = target.parse::<u32>().ok().and_then(|n| self.fds.get(n))
                    else {
                        let message = format!("sh: {target}: bad file descriptor");
                        self.err_line(&message).await.map_err(Err)?;
                        return Err(Ok(1));
                    };
                    let source = source.clone();
                    self.fds.set(fd, source);
                }
                RedirOp::In | RedirOp::ReadWrite => {
                    let fd = redir.fd.unwrap_or(0);
                    let path = self.path(&target);
                    let content = match fs::device(&path) {
                        Some(Device::Fd(n)) => match self.fds.get(n) {
                            Some(Fd::In(input)) => {
                                let input = input.clone();
                                self.fds.set(fd, Fd::In(input));
                                continue;
                            }
                            _ => Ok(Bytes::new()),
                        },
                        Some(Device::Zero | Device::Random) => {
                            let message = format!(
                                "sh: {target}: endless input devices are not simulated by the fake's redirections"
                            );
                            self.err_line(&message).await.map_err(Err)?;
                            return Err(Ok(1));
                        }
                        Some(_) => Ok(Bytes::new()),
                        None => match self.m.fs.read(&path) {
                            Err(FsError::NotFound) if redir.op == RedirOp::ReadWrite => self
                                .m
                                .fs
                                .write(&path, Bytes::new(), true, self.file_mode(), self.owner())
                                .map(|()| Bytes::new()),
                            other => other,
                        },
                    };
                    match content {
                        Ok(content) => self.fds.set(fd, Fd::In(input_of(content))),
                        Err(error) => {
                            let message = format!("sh: can't open '{target}': {}", error.text());
                            self.err_line(&message).await.map_err(Err)?;
                            return Err(Ok(1));
                        }
                    }
                }
                RedirOp::Out | RedirOp::Append => {
                    let fd = redir.fd.unwrap_or(1);
                    let path = self.path(&target);
                    let sink = match fs::device(&path) {
                        Some(Device::Null | Device::Zero | Device::Random | Device::Tty) => {
                            Ok(Sink::Null)
                        }
                        Some(Device::Full) => Ok(Sink::Full),
                        Some(Device::Fd(n)) => Ok(self.fds.sink(n)),
                        None => FileOut::open(
                            &self.m.fs,
                            &path,
                            redir.op == RedirOp::Append,
                            self.file_mode(),
                            self.owner(),
                        )
                        .map(|file| {
                            opened.push(Arc::clone(&file));
                            Sink::File(file)
                        }),
                    };
                    match sink {
                        Ok(sink) => self.fds.set(fd, Fd::Out(sink)),
                        Err(error) => {
                            let reason = match error {
                                FsError::NotFound => "nonexistent directory".to_owned(),
                                other => other.text(),
                            };
                            let message = format!("sh: can't create {target}: {reason}");
                            self.err_line(&message).await.map_err(Err)?;
                            return Err(Ok(1));
                        }
                    }
                }
                RedirOp::Here => {}
            }
        }
        Ok(opened)
    }

    /// Mode of a new file: 0666 less the umask.
    pub(crate) fn file_mode(&self) -> u32 {
        0o666 & !self.umask
    }

    /// Mode of a new directory: 0777 less the umask.
    pub(crate) fn dir_mode(&self) -> u32 {
        0o777 & !self.umask
    }

    /// Parses and runs `source` in this shell (`eval`, `.`).
    pub(crate) async fn eval(&mut self, source: &str) -> Flow {
        match syntax::parse(source) {
            Ok(list) => self.run_list(&list).await,
            Err(error) => {
                self.err_line(&format!("sh: syntax error: {error}")).await?;
                self.status = USAGE_STATUS;
                Err(Stop::Exit)
            }
        }
    }

    /// A capture buffer for a command substitution.
    pub(crate) fn capture() -> Arc<Mutex<Vec<u8>>> {
        Arc::new(Mutex::new(Vec::new()))
    }
}
