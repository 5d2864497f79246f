//! Finding and starting a command: the shell's built-ins and functions, busybox's applets, and the
//! instance's files along `PATH` (`#!` scripts, busybox by the name it is called with).

use crate::fs::{self, FsError, Kind, Meta};
use crate::shell::{Boxed, Search, Shell, Status, Stop, NOT_EXECUTABLE_STATUS, NOT_FOUND_STATUS};
use crate::syntax::Command;
use crate::{applets, builtins};

/// How many shells, scripts and functions may run inside each other.
const MAX_DEPTH: usize = 64;

impl Shell {
    /// Whether assignments before `name` stay in the shell (a POSIX special built-in).
    pub(crate) fn keeps_assignments(name: &str) -> bool {
        builtins::is_special(name)
    }

    /// Runs one command line and returns its status.
    pub(crate) fn run_argv<'a>(
        &'a mut self,
        argv: &'a [String],
        search: Search,
    ) -> Boxed<'a, Status> {
        Box::pin(async move {
            let Some(name) = argv.first() else {
                return Ok(0);
            };
            if self.depth >= MAX_DEPTH {
                return self
                    .fail("sh: too many nested shells, scripts or functions")
                    .await;
            }
            if let Some(applet) = applets::fake_command(name) {
                return applet.run(self, &argv[1..]).await;
            }
            if search == Search::Shell && !name.contains('/') {
                if let Some(builtin) = builtins::special(name) {
                    return builtin.run(self, &argv[1..]).await;
                }
                if let Some(body) = self.funcs.get(name).cloned() {
                    return self.call_function(&body, argv).await;
                }
                if let Some(builtin) = builtins::regular(name) {
                    return builtin.run(self, &argv[1..]).await;
                }
            }
            if search != Search::Exec && self.m.busybox && !name.contains('/') {
                if let Some(applet) = applets::find(name) {
                    return self.run_applet(applet, argv).await;
                }
                if applets::is_real_applet(name) {
                    return self.not_simulated(name).await;
                }
            }
            let found = match self.find_program(name) {
                Ok(path) => path,
                Err(error) => return self.cannot_run(name, error, search).await,
            };
            self.run_file(&found, argv, search).await
        })
    }

    /// Runs an applet as a program of its own (its own variables and directory).
    async fn run_applet(&mut self, applet: applets::Applet, argv: &[String]) -> Status {
        let mut process = self.program(self.environ());
        let base = fs::base_name(&argv[0]);
        // The shell keeps its `argv[0]` whole as `$0` (see `applets::busybox_called`).
        process.arg0 = if base == "sh" { &argv[0] } else { base }.to_owned();
        applet.run(&mut process, &argv[1..]).await
    }

    async fn call_function(&mut self, body: &Command, argv: &[String]) -> Status {
        let saved = std::mem::replace(&mut self.args, argv[1..].to_vec());
        self.depth += 1;
        let ran = self.run_command(body).await;
        self.depth -= 1;
        self.args = saved;
        match ran {
            Ok(()) | Err(Stop::Return) => Ok(self.status),
            Err(other) => Err(other),
        }
    }

    /// A command that cannot start: 127 for a missing one, 126 for one that is not executable, with
    /// the message of whoever tried (the shell, `env`, …; nothing when the daemon starts it).
    pub(crate) async fn cannot_run(&self, name: &str, error: FsError, search: Search) -> Status {
        let status = if error == FsError::NotFound {
            NOT_FOUND_STATUS
        } else {
            NOT_EXECUTABLE_STATUS
        };
        let reason = if error == FsError::NotFound {
            "not found".to_owned()
        } else {
            error.text()
        };
        match search {
            Search::Exec => {}
            Search::Shell => self.err_line(&format!("sh: {name}: {reason}")).await?,
            Search::Program => {
                let who = &self.arg0;
                self.err_line(&format!("{who}: can't execute '{name}': {}", error.text()))
                    .await?
            }
        }
        Ok(status)
    }

    /// Where `name` is, searched like `execvp`: a name with a slash as it is, a bare name along `PATH`.
    /// A directory or a file without execute permission is `EACCES`.
    pub(crate) fn find_program(&self, name: &str) -> Result<String, FsError> {
        if name.is_empty() {
            return Err(FsError::NotFound);
        }
        if name.contains('/') {
            let path = self.path(name);
            return self.executable(&path).map(|()| path);
        }
        let search = self.var("PATH").unwrap_or(crate::DEFAULT_PATH).to_owned();
        let mut denied = None;
        for dir in search.split(':') {
            let dir = if dir.is_empty() { "." } else { dir };
            let path = self.path(&format!("{dir}/{name}"));
            match self.executable(&path) {
                Ok(()) => return Ok(path),
                Err(FsError::NotFound | FsError::NotDirectory) => {}
                Err(error) => denied = Some(error),
            }
        }
        Err(denied.unwrap_or(FsError::NotFound))
    }

    fn executable(&self, path: &str) -> Result<(), FsError> {
        match self.m.fs.stat(path)? {
            Meta {
                kind: Kind::File(_),
                mode,
                ..
            } if mode & 0o111 != 0 => Ok(()),
            _ => Err(FsError::Denied),
        }
    }

    /// Runs the executable at `path`: busybox by the name it is called with, a `#!` script with its
    /// interpreter, a text file as a shell script; anything else is not simulated.
    pub(crate) fn run_file<'a>(
        &'a mut self,
        path: &'a str,
        argv: &'a [String],
        search: Search,
    ) -> Boxed<'a, Status> {
        Box::pin(async move {
            let real = self
                .m
                .fs
                .resolve(path, true)
                .unwrap_or_else(|_| path.to_owned());
            if fs::base_name(&real) == "busybox" {
                let mut program = self.program(self.environ());
                return applets::busybox_called(&mut program, &argv[0], &argv[1..]).await;
            }
            let content = match self.m.fs.read(&real) {
                Ok(content) => content,
                Err(error) => return self.cannot_run(&argv[0], error, search).await,
            };
            if let Some(line) = content.strip_prefix(b"#!") {
                let line = line.split(|b| *b == b'\n').next().unwrap_or_default();
                let line = String::from_utf8_lossy(line);
                let mut words = line.split_whitespace();
                let Some(interpreter) = words.next() else {
                    return self.cannot_run(&argv[0], FsError::NotFound, search).await;
                };
                let mut new_argv = vec![interpreter.to_owned()];
                new_argv.extend(words.next().map(str::to_owned));
                new_argv.push(path.to_owned());
                new_argv.extend(argv[1..].iter().cloned());
                let interpreter_path = match self.executable(interpreter) {
                    Ok(()) => interpreter.to_owned(),
                    Err(error) => return self.cannot_run(&argv[0], error, search).await,
                };
                self.depth += 1;
                let ran = self.run_file(&interpreter_path, &new_argv, search).await;
                self.depth -= 1;
                return ran;
            }
            if let Some(applet) = applets::find(fs::base_name(path)) {
                // An image that declares its executables without shipping busybox: a file named
                // after an applet runs as that applet.
                return self.run_applet(applet, argv).await;
            }
            let head = &content[..content.len().min(512)];
            if !head.is_empty() && !head.contains(&0) {
                let source = String::from_utf8_lossy(&content).into_owned();
                let mut program = self.program(self.environ());
                return crate::sh::run_source(
                    &mut program,
                    &source,
                    path.to_owned(),
                    argv[1..].to_vec(),
                )
                .await;
            }
            self.not_simulated(path).await
        })
    }

    /// A program the instance holds that the fake cannot run: 126 with a message that says so.
    pub(crate) async fn not_simulated(&self, what: &str) -> Status {
        self.err_line(&format!("fake-incus: {what}: not simulated by the fake"))
            .await?;
        Ok(NOT_EXECUTABLE_STATUS)
    }
}
