//! `sh`: runs a script (`sh -c LINE [NAME [ARG...]]`, or read from stdin) step by step, expanding words,
//! applying redirections and handling the shell-only `exit` and `cd`. Busybox's built-ins (`echo`,
//! `printf`, `pwd`, `true`, `false`) run whatever the image holds; in a busybox image every applet
//! does, as busybox's `sh` prefers its applets to `PATH`.

use super::streams::{Fds, Output, Sink, Status};
use super::syntax::{self, Command, Condition, Part, Script, Target, Word};
use super::{
    not_simulated, pipeline, run_command, Command as Program, Ctx, Found, Search, NOT_FOUND_STATUS,
};

/// Exit status of a shell that could not run its script (bad option, syntax error).
const USAGE_STATUS: i32 = 2;
/// A script read from stdin larger than this is refused.
const MAX_SCRIPT_BYTES: usize = 1 << 20;
/// How many `sh` may run inside each other.
const MAX_DEPTH: usize = 16;

/// `sh [-e] -c LINE [NAME [ARG...]]`, or `sh [-e] [-s]` to read the script from stdin.
pub(super) async fn sh(ctx: &mut Ctx<'_>, args: &[String]) -> Status {
    let loaded = match Invocation::parse(args) {
        Ok(invocation) => load(ctx, invocation).await,
        Err(message) => Err(message),
    };
    let (invocation, script) = match loaded {
        Ok(loaded) => loaded,
        Err(message) => {
            ctx.output.err_line(&format!("sh: {message}")).await?;
            return Ok(USAGE_STATUS);
        }
    };
    let env = shell_environment(ctx);
    let fds = ctx.output.fds;
    let mut shell = Shell {
        ctx: ctx.child(fds, env),
        positional: invocation.positional,
        errexit: invocation.errexit,
        status: 0,
    };
    shell.ctx.depth += 1;
    shell.run(&script).await
}

/// Reads (from stdin if need be) and parses the script; the message says why it cannot run.
async fn load(ctx: &mut Ctx<'_>, invocation: Invocation) -> Result<(Invocation, Script), String> {
    if ctx.depth >= MAX_DEPTH {
        return Err("too many nested shells".into());
    }
    let source = match &invocation.script {
        Some(line) => line.clone(),
        None => read_script(ctx)
            .await
            .ok_or("script on stdin is too long or not UTF-8")?,
    };
    let script = syntax::parse(&source).map_err(|error| format!("syntax error: {error}"))?;
    Ok((invocation, script))
}

/// The environment plus the variables a shell sets: `SHLVL` one higher, `PWD`.
fn shell_environment(ctx: &Ctx<'_>) -> std::collections::BTreeMap<String, String> {
    let mut env = ctx.env.clone();
    let level = env
        .get("SHLVL")
        .and_then(|l| l.parse::<u32>().ok())
        .unwrap_or(0);
    env.insert("SHLVL".into(), level.saturating_add(1).to_string());
    env.insert("PWD".into(), ctx.identity.cwd.clone());
    env
}

/// The parsed command line of `sh`.
#[derive(Debug, PartialEq, Eq)]
struct Invocation {
    /// The `-c` script, or `None` to read stdin.
    script: Option<String>,
    /// `$0`, `$1`, …
    positional: Vec<String>,
    errexit: bool,
}

impl Invocation {
    fn parse(args: &[String]) -> Result<Self, String> {
        let mut command = false;
        let mut errexit = false;
        let mut rest = args;
        while let Some(option) = rest.first().filter(|a| a.starts_with('-') && a.len() > 1) {
            rest = &rest[1..];
            if option == "--" {
                break;
            }
            for flag in option.chars().skip(1) {
                match flag {
                    'c' => command = true,
                    'e' => errexit = true,
                    's' => {}
                    other => return Err(format!("-{other}: option not supported by the fake")),
                }
            }
        }
        if !command {
            return match rest.first() {
                None => Ok(Invocation {
                    script: None,
                    positional: vec!["sh".into()],
                    errexit,
                }),
                Some(file) => Err(format!("can't open '{file}': No such file or directory")),
            };
        }
        let Some((script, positional)) = rest.split_first() else {
            return Err("-c requires an argument".into());
        };
        let positional = if positional.is_empty() {
            vec!["sh".into()]
        } else {
            positional.to_vec()
        };
        Ok(Invocation {
            script: Some(script.clone()),
            positional,
            errexit,
        })
    }
}

/// Reads the whole of stdin as a script, at most [`MAX_SCRIPT_BYTES`].
async fn read_script(ctx: &mut Ctx<'_>) -> Option<String> {
    let mut source = Vec::new();
    while let Some(chunk) = ctx.stdin.next_chunk().await {
        if source.len() + chunk.len() > MAX_SCRIPT_BYTES {
            return None;
        }
        source.extend_from_slice(&chunk);
    }
    String::from_utf8(source).ok()
}

struct Shell<'a> {
    ctx: Ctx<'a>,
    positional: Vec<String>,
    errexit: bool,
    /// `$?`: the status of the last command run.
    status: i32,
}

impl Shell<'_> {
    async fn run(&mut self, script: &Script) -> Status {
        for (index, step) in script.steps.iter().enumerate() {
            if !step.condition.allows(self.status) {
                continue;
            }
            self.status = match step.pipeline.as_slice() {
                [command] => {
                    let argv = self.expand(&command.words);
                    let fds = redirect(self.ctx.output.fds, command);
                    if argv.first().is_some_and(|name| name == "exit") {
                        let output = self.output(fds);
                        return exit(output, &argv[1..], self.status).await;
                    }
                    if argv.first().is_some_and(|name| name == "cd") {
                        self.cd(&argv[1..], fds, step.line).await?
                    } else {
                        self.run_simple(&argv, fds).await?
                    }
                }
                commands => self.run_pipeline(commands).await?,
            };
            let last_of_list = script
                .steps
                .get(index + 1)
                .is_none_or(|next| next.condition == Condition::Always);
            if self.errexit && self.status != 0 && last_of_list {
                return Ok(self.status);
            }
        }
        Ok(self.status)
    }

    /// `cd [DIR]`: changes the shell's directory (default `$HOME`) and `PWD`; a missing directory is
    /// busybox's `sh: cd: line N: can't cd to DIR: No such file or directory`, status 2.
    async fn cd(&mut self, args: &[String], fds: Fds, line: usize) -> Status {
        let target = match args.first() {
            Some(dir) if dir == "-" => self.ctx.env.get("OLDPWD").cloned().unwrap_or_default(),
            Some(dir) => dir.clone(),
            None => self.ctx.env.get("HOME").cloned().unwrap_or_default(),
        };
        let rootfs = &self.ctx.identity.rootfs;
        let cwd = self.ctx.identity.cwd.clone();
        let destination = super::Rootfs::absolute(&cwd, &target)
            .filter(|dir| !target.is_empty() && rootfs.is_dir("/", dir));
        let Some(destination) = destination else {
            let message =
                format!("sh: cd: line {line}: can't cd to {target}: No such file or directory");
            self.output(fds).err_line(&message).await?;
            return Ok(USAGE_STATUS);
        };
        self.ctx.env.insert("OLDPWD".into(), cwd);
        self.ctx.env.insert("PWD".into(), destination.clone());
        self.ctx.identity.cwd = destination;
        Ok(0)
    }

    async fn run_simple(&mut self, argv: &[String], fds: Fds) -> Status {
        let env = self.ctx.env.clone();
        let mut ctx = self.ctx.child(fds, env);
        run_program(&mut ctx, argv).await
    }

    /// `a | b | c`: every word is expanded first (`$?` is the status before the pipeline), then the
    /// commands run together.
    async fn run_pipeline(&mut self, commands: &[Command]) -> Status {
        let stages = commands
            .iter()
            .map(|command| pipeline::Stage {
                argv: self.expand(&command.words),
                command,
            })
            .collect();
        let status = self.status;
        pipeline::run(&mut self.ctx, stages, status).await
    }

    fn output(&self, fds: Fds) -> Output<'_> {
        Output {
            streams: self.ctx.output.streams,
            fds,
        }
    }

    fn expand(&self, words: &[Word]) -> Vec<String> {
        let mut fields = Vec::new();
        for word in words {
            expand_word(word, |name| self.parameter(name), &mut fields);
        }
        fields
    }

    fn parameter(&self, name: &str) -> String {
        if name == "?" {
            return self.status.to_string();
        }
        if let Ok(index) = name.parse::<usize>() {
            return self.positional.get(index).cloned().unwrap_or_default();
        }
        self.ctx.env.get(name).cloned().unwrap_or_default()
    }
}

/// The shell's own commands that are also programs (busybox `sh` built-ins).
const BUILTINS: &[(&str, Program)] = &[
    ("echo", Program::Echo),
    ("printf", Program::Printf),
    ("pwd", Program::Pwd),
    ("true", Program::True),
    ("false", Program::False),
];

/// Runs one expanded command line: a built-in, a program the shell finds, or `sh: NAME: not found`
/// and 127.
async fn run_program(ctx: &mut Ctx<'_>, argv: &[String]) -> Status {
    let Some(name) = argv.first() else {
        return Ok(0);
    };
    let builtin = BUILTINS
        .iter()
        .find(|(builtin, _)| builtin == name)
        .map(|(_, command)| *command);
    let found = match builtin {
        Some(command) => Found::Command(command),
        None => ctx.find(name, Search::PreferApplets),
    };
    match found {
        Found::Command(command) => run_command(ctx, command, &argv[1..]).await,
        Found::NotSimulated(path) => not_simulated(ctx, &path).await,
        Found::Missing => {
            ctx.output
                .err_line(&format!("sh: {name}: not found"))
                .await?;
            Ok(NOT_FOUND_STATUS)
        }
    }
}

/// Runs one command of a pipeline: like any command, except that `exit` only ends that command (a real
/// shell runs each part of a pipeline in a subshell).
pub(super) async fn run_piped(ctx: &mut Ctx<'_>, argv: &[String], last_status: i32) -> Status {
    if argv.first().is_some_and(|name| name == "exit") {
        return exit(ctx.output, &argv[1..], last_status).await;
    }
    if argv.first().is_some_and(|name| name == "cd") {
        // A subshell's `cd`: its status alone, the shell's directory stays.
        let target = argv
            .get(1)
            .cloned()
            .unwrap_or_else(|| ctx.env.get("HOME").cloned().unwrap_or_default());
        if !target.is_empty() && ctx.identity.rootfs.is_dir(&ctx.identity.cwd, &target) {
            return Ok(0);
        }
        let message = format!("sh: cd: line 0: can't cd to {target}: No such file or directory");
        ctx.output.err_line(&message).await?;
        return Ok(USAGE_STATUS);
    }
    run_program(ctx, argv).await
}

/// `exit [N]`: the shell's status, N modulo 256, or `last_status` without N.
async fn exit(output: Output<'_>, args: &[String], last_status: i32) -> Status {
    let Some(arg) = args.first() else {
        return Ok(last_status);
    };
    match arg.parse::<i64>() {
        Ok(code) if !arg.starts_with('+') => Ok((code & 0xff) as i32),
        _ => {
            output
                .err_line(&format!("sh: exit: Illegal number: {arg}"))
                .await?;
            Ok(USAGE_STATUS)
        }
    }
}

/// Applies a command's redirections, left to right, to the shell's descriptors.
pub(super) fn redirect(mut fds: Fds, command: &Command) -> Fds {
    for redirect in &command.redirects {
        let sink = match redirect.target {
            Target::Fd(1) => fds.out,
            Target::Fd(_) => fds.err,
            Target::Null => Sink::Null,
        };
        if redirect.fd == 1 {
            fds.out = sink;
        } else {
            fds.err = sink;
        }
    }
    fds
}

/// Expands one word into fields: unquoted parameter values are split on blanks, and a word that ends up
/// empty without any quotes disappears.
fn expand_word(word: &Word, parameter: impl Fn(&str) -> String, fields: &mut Vec<String>) {
    let mut current = String::new();
    let mut has_field = false;
    for part in word {
        match part {
            Part::Text { text, .. } => {
                current.push_str(text);
                has_field = true;
            }
            Part::Param { name, quoted: true } => {
                current.push_str(&parameter(name));
                has_field = true;
            }
            Part::Param {
                name,
                quoted: false,
            } => {
                for c in parameter(name).chars() {
                    if matches!(c, ' ' | '\t' | '\n') {
                        if has_field {
                            fields.push(std::mem::take(&mut current));
                            has_field = false;
                        }
                    } else {
                        current.push(c);
                        has_field = true;
                    }
                }
            }
        }
    }
    if has_field {
        fields.push(current);
    }
}

/// The variables a test's `expand_word` sees.
#[cfg(test)]
fn expand_with(word: &Word, vars: &std::collections::BTreeMap<&str, &str>) -> Vec<String> {
    let mut fields = Vec::new();
    expand_word(
        word,
        |name| vars.get(name).map(|v| v.to_string()).unwrap_or_default(),
        &mut fields,
    );
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Word> {
        syntax::parse(line).unwrap().steps[0].pipeline[0]
            .words
            .clone()
    }

    fn expand_line(line: &str, vars: &[(&str, &str)]) -> Vec<String> {
        let vars: std::collections::BTreeMap<&str, &str> = vars.iter().copied().collect();
        words(line)
            .iter()
            .flat_map(|w| expand_with(w, &vars))
            .collect()
    }

    #[test]
    fn unquoted_parameters_are_split_and_quoted_ones_are_not() {
        let vars = [("X", " a  b "), ("E", "")];
        assert_eq!(expand_line("echo $X", &vars), ["echo", "a", "b"]);
        assert_eq!(expand_line("echo \"$X\"", &vars), ["echo", " a  b "]);
        assert_eq!(expand_line("echo x$X", &vars), ["echo", "x", "a", "b"]);
    }

    #[test]
    fn empty_unquoted_parameters_vanish_but_empty_quotes_stay() {
        let vars = [("E", "")];
        assert_eq!(
            expand_line("echo $E $UNSET \"$E\" ''", &vars),
            ["echo", "", ""]
        );
    }

    #[test]
    fn redirections_apply_left_to_right() {
        let fds = |line: &str| {
            redirect(
                Fds::STANDARD,
                &syntax::parse(line).unwrap().steps[0].pipeline[0],
            )
        };
        assert_eq!(fds("echo >&2").out, Sink::Stderr);
        assert_eq!(
            fds("echo 2>&1 >/dev/null"),
            Fds {
                out: Sink::Null,
                err: Sink::Stdout
            }
        );
        assert_eq!(
            fds("echo >/dev/null 2>&1"),
            Fds {
                out: Sink::Null,
                err: Sink::Null
            }
        );
    }

    #[test]
    fn sh_options_and_positional_parameters_are_parsed() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let parsed = Invocation::parse(&args(&["-ec", "echo $1", "me", "one"])).unwrap();
        assert_eq!(parsed.script.as_deref(), Some("echo $1"));
        assert_eq!(parsed.positional, ["me", "one"]);
        assert!(parsed.errexit);
        assert_eq!(Invocation::parse(&args(&[])).unwrap().script, None);
        assert!(Invocation::parse(&args(&["-c"])).is_err());
        assert!(Invocation::parse(&args(&["-x", "-c", "true"])).is_err());
        assert!(Invocation::parse(&args(&["script.sh"])).is_err());
    }
}
