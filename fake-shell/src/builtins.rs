//! The shell's own commands (busybox `ash`'s built-ins): they change the shell itself (`cd`, `export`,
//! `set`, `exit`, …) or are faster than a program (`echo`, `test`, `printf`, which are the applets).

use crate::applets::{self, Applet};
use crate::fs::{self};
use crate::shell::{Boxed, Search, Shell, Status, Stop, NOT_FOUND_STATUS, USAGE_STATUS};
use crate::syntax::is_name;

macro_rules! builtins {
    ($($name:literal => $variant:ident => $func:path),* $(,)?) => {
        /// A shell built-in.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum Builtin { $($variant),* }
        const TABLE: &[(&str, Builtin)] = &[$(($name, Builtin::$variant)),*];
        impl Builtin {
            pub(crate) fn run<'a>(self, sh: &'a mut Shell, args: &'a [String]) -> Boxed<'a, Status> {
                Box::pin(async move {
                    match self { $(Builtin::$variant => $func(sh, args).await),* }
                })
            }
        }
    };
}

builtins! {
    ":" => Colon => colon,
    "." => Dot => dot,
    "source" => Source => dot,
    "break" => Break => break_,
    "continue" => Continue => continue_,
    "eval" => Eval => eval,
    "exec" => Exec => exec,
    "exit" => Exit => exit,
    "export" => Export => export,
    "readonly" => Readonly => export,
    "return" => Return => return_,
    "set" => Set => set,
    "shift" => Shift => shift,
    "trap" => Trap => trap,
    "unset" => Unset => unset,
    "cd" => Cd => cd,
    "umask" => Umask => umask,
    "command" => Command => command,
    "type" => Type => type_,
    "read" => Read => read,
    "local" => Local => local,
    "wait" => Wait => colon,
    "alias" => Alias => alias,
    "getopts" => Getopts => getopts,
}

/// The POSIX special built-ins: found before functions, and assignments before them stay.
const SPECIAL: &[&str] = &[
    ":", ".", "source", "break", "continue", "eval", "exec", "exit", "export", "readonly",
    "return", "set", "shift", "trap", "unset",
];

/// The applets that are also built into the shell, so they run whatever the image holds.
const BUILTIN_APPLETS: &[&str] = &[
    "echo", "printf", "test", "[", "[[", "true", "false", "pwd", "kill",
];

pub(crate) fn is_special(name: &str) -> bool {
    SPECIAL.contains(&name)
}

/// A special built-in by name.
pub(crate) fn special(name: &str) -> Option<Builtin> {
    if !is_special(name) {
        return None;
    }
    TABLE.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
}

/// Any other built-in: the shell's own, or an applet built into it.
pub(crate) fn regular(name: &str) -> Option<Regular> {
    if let Some((_, builtin)) = TABLE.iter().find(|(n, _)| *n == name) {
        return Some(Regular::Shell(*builtin));
    }
    if BUILTIN_APPLETS.contains(&name) {
        return applets::find(name).map(Regular::Applet);
    }
    None
}

/// A built-in that is not special.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Regular {
    Shell(Builtin),
    Applet(Applet),
}

impl Regular {
    pub(crate) fn run<'a>(self, sh: &'a mut Shell, args: &'a [String]) -> Boxed<'a, Status> {
        match self {
            Regular::Shell(builtin) => builtin.run(sh, args),
            Regular::Applet(applet) => applet.run(sh, args),
        }
    }
}

async fn colon(_: &mut Shell, _: &[String]) -> Status {
    Ok(0)
}

async fn alias(sh: &mut Shell, args: &[String]) -> Status {
    if args.is_empty() {
        return Ok(0);
    }
    sh.fail("sh: alias: aliases are not supported by the fake's shell")
        .await
}

/// `. FILE [ARG...]`: runs the file in this shell.
async fn dot(sh: &mut Shell, args: &[String]) -> Status {
    let Some(file) = args.first() else {
        return Ok(0);
    };
    let path = if file.contains('/') {
        Ok(sh.path(file))
    } else {
        let search = sh.var("PATH").unwrap_or(crate::DEFAULT_PATH).to_owned();
        search
            .split(':')
            .map(|dir| sh.path(&format!("{dir}/{file}")))
            .find(|p| sh.m.fs.read(p).is_ok())
            .ok_or(fs::FsError::NotFound)
    };
    let content = path.and_then(|p| sh.m.fs.read(&p));
    let source = match content {
        Ok(content) => String::from_utf8_lossy(&content).into_owned(),
        Err(error) => {
            sh.err_line(&format!(
                "sh: .: line {}: can't open '{file}': {}",
                sh.line,
                error.text()
            ))
            .await?;
            sh.status = USAGE_STATUS;
            return Err(Stop::Exit);
        }
    };
    let saved =
        (!args[1..].is_empty()).then(|| std::mem::replace(&mut sh.args, args[1..].to_vec()));
    let ran = sh.eval(&source).await;
    if let Some(saved) = saved {
        sh.args = saved;
    }
    match ran {
        Ok(()) | Err(Stop::Return) => Ok(sh.status),
        Err(other) => Err(other),
    }
}

async fn loop_count(sh: &Shell, name: &str, args: &[String]) -> Result<usize, Status> {
    match args.first() {
        None => Ok(1),
        Some(n) => match n.parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => {
                let message = format!("sh: {name}: Illegal number: {n}");
                Err(sh.err_line(&message).await.map(|()| USAGE_STATUS))
            }
        },
    }
}

async fn break_(sh: &mut Shell, args: &[String]) -> Status {
    let n = match loop_count(sh, "break", args).await {
        Ok(n) => n,
        Err(status) => return status,
    };
    if sh.loops == 0 {
        return Ok(0);
    }
    sh.status = 0;
    Err(Stop::Break(n.min(sh.loops)))
}

async fn continue_(sh: &mut Shell, args: &[String]) -> Status {
    let n = match loop_count(sh, "continue", args).await {
        Ok(n) => n,
        Err(status) => return status,
    };
    if sh.loops == 0 {
        return Ok(0);
    }
    sh.status = 0;
    Err(Stop::Continue(n.min(sh.loops)))
}

async fn eval(sh: &mut Shell, args: &[String]) -> Status {
    let source = args.join(" ");
    sh.eval(&source).await?;
    Ok(sh.status)
}

/// `exec [COMMAND [ARG...]]`: runs the command in place of the shell (which then ends with its
/// status); without a command, the redirections stay for the rest of the shell.
async fn exec(sh: &mut Shell, args: &[String]) -> Status {
    if args.is_empty() {
        return Ok(0);
    }
    let status = sh.run_argv(args, Search::Program).await?;
    sh.status = status;
    Err(Stop::Exit)
}

async fn exit(sh: &mut Shell, args: &[String]) -> Status {
    if let Some(arg) = args.first() {
        match arg.parse::<i64>() {
            Ok(code) if !arg.starts_with('+') && code >= 0 => sh.status = (code & 0xff) as i32,
            _ => {
                sh.err_line(&format!("sh: exit: Illegal number: {arg}"))
                    .await?;
                sh.status = USAGE_STATUS;
            }
        }
    }
    Err(Stop::Exit)
}

/// `export NAME[=VALUE]...`, `export -p`.
async fn export(sh: &mut Shell, args: &[String]) -> Status {
    let names: Vec<&String> = args.iter().filter(|a| *a != "-p").collect();
    if names.is_empty() {
        let listing: String = sh
            .environ()
            .iter()
            .map(|(k, v)| format!("export {k}={}\n", quote(v)))
            .collect();
        sh.out(listing).await?;
        return Ok(0);
    }
    for arg in names {
        let (name, value) = match arg.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (arg.as_str(), None),
        };
        if !is_name(name) {
            sh.err_line(&format!("sh: export: bad variable name: {arg}"))
                .await?;
            sh.status = USAGE_STATUS;
            return Err(Stop::Exit);
        }
        if let Some(value) = value {
            sh.vars.insert(name.to_owned(), value.to_owned());
        }
        sh.exported.insert(name.to_owned());
    }
    Ok(0)
}

/// A value as `export -p` and `set` print it: in single quotes when it needs them.
fn quote(value: &str) -> String {
    if !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c))
    {
        return format!("'{value}'");
    }
    format!("'{}'", value.replace('\'', "'\"'\"'"))
}

async fn local(sh: &mut Shell, args: &[String]) -> Status {
    for arg in args {
        match arg.split_once('=') {
            Some((name, value)) => {
                sh.vars.insert(name.to_owned(), value.to_owned());
            }
            None => {
                sh.vars.entry(arg.clone()).or_default();
            }
        }
    }
    Ok(0)
}

async fn return_(sh: &mut Shell, args: &[String]) -> Status {
    if let Some(arg) = args.first() {
        match arg.parse::<i64>() {
            Ok(code) => sh.status = (code & 0xff) as i32,
            Err(_) => {
                sh.err_line(&format!("sh: return: Illegal number: {arg}"))
                    .await?;
                sh.status = USAGE_STATUS;
            }
        }
    }
    Err(Stop::Return)
}

/// `set [-eu] [+eu] [-o OPTION] [--] [ARG...]`; without arguments, the variables.
async fn set(sh: &mut Shell, args: &[String]) -> Status {
    if args.is_empty() {
        let listing: String = sh
            .vars
            .iter()
            .map(|(k, v)| format!("{k}={}\n", quote(v)))
            .collect();
        sh.out(listing).await?;
        return Ok(0);
    }
    let mut rest = args;
    while let Some(arg) = rest.first() {
        let (on, flags) = match arg.as_bytes().first() {
            Some(b'-') if arg == "--" || arg == "-" => {
                rest = &rest[1..];
                sh.args = rest.to_vec();
                return Ok(0);
            }
            Some(b'-') => (true, &arg[1..]),
            Some(b'+') => (false, &arg[1..]),
            _ => break,
        };
        rest = &rest[1..];
        for flag in flags.chars() {
            let option = if flag == 'o' {
                let Some((name, tail)) = rest.split_first() else {
                    return Ok(0);
                };
                rest = tail;
                name.as_str()
            } else {
                match flag {
                    'e' => "errexit",
                    'u' => "nounset",
                    other => {
                        let message =
                            format!("sh: set: -{other}: option not supported by the fake's shell");
                        sh.err_line(&message).await?;
                        return Ok(USAGE_STATUS);
                    }
                }
            };
            match option {
                "errexit" => sh.errexit = on,
                "nounset" => sh.nounset = on,
                other => {
                    let message =
                        format!("sh: set: -o {other}: option not supported by the fake's shell");
                    sh.err_line(&message).await?;
                    return Ok(USAGE_STATUS);
                }
            }
        }
    }
    if !rest.is_empty() {
        sh.args = rest.to_vec();
    }
    Ok(0)
}

async fn shift(sh: &mut Shell, args: &[String]) -> Status {
    let n = match args.first().map(|a| a.parse::<usize>()) {
        None => 1,
        Some(Ok(n)) => n,
        Some(Err(_)) => {
            sh.err_line(&format!("sh: shift: Illegal number: {}", args[0]))
                .await?;
            sh.status = USAGE_STATUS;
            return Err(Stop::Exit);
        }
    };
    if n > sh.args.len() {
        sh.err_line("sh: shift: can't shift that many").await?;
        sh.status = USAGE_STATUS;
        return Err(Stop::Exit);
    }
    sh.args.drain(..n);
    Ok(0)
}

/// `trap`: the fake's shell runs no trap (a signal ends the program); it says so.
async fn trap(sh: &mut Shell, args: &[String]) -> Status {
    if args.is_empty() {
        return Ok(0);
    }
    sh.fail("sh: trap: traps are not supported by the fake's shell")
        .await
}

async fn unset(sh: &mut Shell, args: &[String]) -> Status {
    let functions = args.first().is_some_and(|a| a == "-f");
    for name in args.iter().filter(|a| !a.starts_with('-')) {
        if functions {
            sh.funcs.remove(name);
        } else {
            sh.vars.remove(name);
            sh.exported.remove(name);
        }
    }
    Ok(0)
}

/// `cd [DIR|-]`: default `$HOME`; a missing directory is busybox's message and status 2.
async fn cd(sh: &mut Shell, args: &[String]) -> Status {
    let operands: Vec<&String> = args.iter().filter(|a| *a != "-L" && *a != "-P").collect();
    let target = match operands.first() {
        Some(dir) if *dir == "-" => sh.var("OLDPWD").unwrap_or_default().to_owned(),
        Some(dir) => (*dir).clone(),
        None => match sh.var("HOME") {
            Some(home) if !home.is_empty() => home.to_owned(),
            _ => return Ok(0),
        },
    };
    let destination = sh.path(&target);
    let error = match sh.m.fs.stat(&destination) {
        Ok(meta) if meta.kind == fs::Kind::Directory => None,
        Ok(_) => Some(fs::FsError::NotDirectory),
        Err(error) => Some(error),
    };
    if let Some(error) = error {
        let message = format!(
            "sh: cd: line {}: can't cd to {target}: {}",
            sh.line,
            error.text()
        );
        sh.err_line(&message).await?;
        return Ok(USAGE_STATUS);
    }
    let old = std::mem::replace(&mut sh.cwd, destination.clone());
    sh.vars.insert("OLDPWD".into(), old);
    sh.vars.insert("PWD".into(), destination.clone());
    if operands.first().is_some_and(|d| *d == "-") {
        sh.out(format!("{destination}\n")).await?;
    }
    Ok(0)
}

/// `umask [-S] [MODE]`.
async fn umask(sh: &mut Shell, args: &[String]) -> Status {
    let symbolic = args.first().is_some_and(|a| a == "-S");
    let operands: Vec<&String> = args.iter().filter(|a| *a != "-S").collect();
    let Some(mode) = operands.first() else {
        let text = if symbolic {
            let allowed = !sh.umask & 0o777;
            let part = |shift: u32| {
                let bits = (allowed >> shift) & 7;
                let mut s = String::new();
                if bits & 4 != 0 {
                    s.push('r');
                }
                if bits & 2 != 0 {
                    s.push('w');
                }
                if bits & 1 != 0 {
                    s.push('x');
                }
                s
            };
            format!("u={},g={},o={}\n", part(6), part(3), part(0))
        } else {
            format!("{:04o}\n", sh.umask)
        };
        sh.out(text).await?;
        return Ok(0);
    };
    match u32::from_str_radix(mode, 8) {
        Ok(value) if value <= 0o777 => {
            sh.umask = value;
            Ok(0)
        }
        _ => match crate::applets::files::symbolic_mode(mode, !sh.umask & 0o777, false) {
            Some(allowed) => {
                sh.umask = !allowed & 0o777;
                Ok(0)
            }
            None => {
                sh.err_line(&format!("sh: umask: Illegal mode: {mode}"))
                    .await?;
                Ok(1)
            }
        },
    }
}

/// What a name runs as, for `command -v` / `type`.
enum Resolved {
    Builtin,
    Function,
    Applet,
    Path(String),
    Missing,
}

fn resolve(sh: &Shell, name: &str) -> Resolved {
    if !name.contains('/') {
        if special(name).is_some() {
            return Resolved::Builtin;
        }
        if sh.funcs.contains_key(name) {
            return Resolved::Function;
        }
        if regular(name).is_some() {
            return Resolved::Builtin;
        }
        if sh.m.busybox && (applets::find(name).is_some() || applets::is_real_applet(name)) {
            return Resolved::Applet;
        }
    }
    match sh.find_program(name) {
        Ok(path) => Resolved::Path(path),
        Err(_) => Resolved::Missing,
    }
}

/// `command [-v|-V] NAME [ARG...]`.
async fn command(sh: &mut Shell, args: &[String]) -> Status {
    let mut rest = args;
    let mut mode = None;
    while let Some(option) = rest.first().filter(|a| a.starts_with('-') && a.len() > 1) {
        match option.as_str() {
            "-v" => mode = Some('v'),
            "-V" => mode = Some('V'),
            "-p" => {}
            "--" => {
                rest = &rest[1..];
                break;
            }
            other => {
                return sh
                    .fail(&format!(
                        "sh: command: {other}: option not supported by the fake"
                    ))
                    .await
            }
        }
        rest = &rest[1..];
    }
    let Some(mode) = mode else {
        if rest.is_empty() {
            return Ok(0);
        }
        let name = &rest[0];
        if let Some(builtin) = special(name) {
            return builtin.run(sh, &rest[1..]).await;
        }
        if let Some(builtin) = regular(name) {
            return builtin.run(sh, &rest[1..]).await;
        }
        return sh.run_argv(rest, Search::Program).await;
    };
    let mut status = 0;
    for name in rest {
        let line = match (resolve(sh, name), mode) {
            (Resolved::Missing, 'v') => {
                status = NOT_FOUND_STATUS;
                continue;
            }
            (Resolved::Missing, _) => {
                status = NOT_FOUND_STATUS;
                format!("{name}: not found")
            }
            (Resolved::Path(path), 'v') => path,
            (_, 'v') => name.clone(),
            (resolved, _) => describe(name, resolved),
        };
        sh.out(format!("{line}\n")).await?;
    }
    Ok(status)
}

fn describe(name: &str, resolved: Resolved) -> String {
    match resolved {
        Resolved::Builtin if is_special(name) => format!("{name} is a special shell builtin"),
        Resolved::Builtin => format!("{name} is a shell builtin"),
        Resolved::Function => format!("{name} is a function"),
        Resolved::Applet => format!("{name} is {name}"),
        Resolved::Path(path) => format!("{name} is {path}"),
        Resolved::Missing => format!("{name}: not found"),
    }
}

async fn type_(sh: &mut Shell, args: &[String]) -> Status {
    let mut status = 0;
    for name in args {
        let resolved = resolve(sh, name);
        if matches!(resolved, Resolved::Missing) {
            status = NOT_FOUND_STATUS;
        }
        sh.out(format!("{}\n", describe(name, resolved))).await?;
    }
    Ok(status)
}

/// `read [-r] [-p PROMPT] [NAME...]`: one line of stdin split on `IFS` into the names (`REPLY`).
async fn read(sh: &mut Shell, args: &[String]) -> Status {
    let mut raw = false;
    let mut names = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "-r" => raw = true,
            "-p" => {
                if let Some(prompt) = rest.next() {
                    sh.err(prompt.clone()).await?;
                }
            }
            other if other.starts_with('-') => {
                return sh
                    .fail(&format!(
                        "sh: read: {other}: option not supported by the fake"
                    ))
                    .await
            }
            name => names.push(name.to_owned()),
        }
    }
    if names.is_empty() {
        names.push("REPLY".into());
    }
    let input = sh.fds.input();
    let mut reader = input.lock().await;
    let mut line = Vec::new();
    let mut ended = false;
    loop {
        let Some(chunk) = reader.next_chunk().await else {
            break;
        };
        if let Some(at) = chunk.iter().position(|b| *b == b'\n') {
            let continued = !raw && at > 0 && chunk[at - 1] == b'\\';
            line.extend_from_slice(&chunk[..at]);
            reader.unread(chunk.slice(at + 1..));
            if continued {
                line.pop();
                continue;
            }
            ended = true;
            break;
        }
        line.extend_from_slice(&chunk);
    }
    drop(reader);
    let mut text = String::from_utf8_lossy(&line).into_owned();
    if !raw {
        text = unbackslash(&text);
    }
    let ifs = sh.var("IFS").unwrap_or(" \t\n").to_owned();
    let mut fields: Vec<String> = Vec::new();
    let mut rest_text = text.trim_matches(|c: char| ifs.contains(c) && c.is_whitespace());
    for index in 0..names.len() {
        if index + 1 == names.len() {
            fields.push(rest_text.to_owned());
            break;
        }
        match rest_text.find(|c: char| ifs.contains(c)) {
            Some(at) => {
                fields.push(rest_text[..at].to_owned());
                rest_text = rest_text[at..]
                    .trim_start_matches(|c: char| ifs.contains(c) && c.is_whitespace());
                if let Some(stripped) = rest_text.strip_prefix(|c: char| ifs.contains(c)) {
                    rest_text = stripped;
                }
            }
            None => {
                fields.push(rest_text.to_owned());
                rest_text = "";
            }
        }
    }
    for (name, value) in names
        .iter()
        .zip(fields.into_iter().chain(std::iter::repeat(String::new())))
    {
        sh.vars.insert(name.clone(), value);
    }
    Ok(if ended || !line.is_empty() {
        i32::from(!ended)
    } else {
        1
    })
}

fn unbackslash(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            out.extend(chars.next());
        } else {
            out.push(c);
        }
    }
    out
}

/// `getopts OPTSTRING NAME [ARG...]`.
async fn getopts(sh: &mut Shell, args: &[String]) -> Status {
    let (Some(spec), Some(name)) = (args.first(), args.get(1)) else {
        return sh
            .fail("sh: getopts: usage: getopts optstring var [arg]")
            .await;
    };
    let operands: Vec<String> = if args.len() > 2 {
        args[2..].to_vec()
    } else {
        sh.args.clone()
    };
    let index: usize = sh
        .var("OPTIND")
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1);
    let offset: usize = sh
        .var("_GETOPTS_OFFSET")
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let Some(arg) = operands
        .get(index - 1)
        .filter(|a| a.starts_with('-') && a.len() > 1 && *a != "--")
    else {
        if operands.get(index - 1).is_some_and(|a| a == "--") {
            sh.vars.insert("OPTIND".into(), (index + 1).to_string());
        }
        sh.vars.insert(name.clone(), "?".into());
        return Ok(1);
    };
    let chars: Vec<char> = arg.chars().collect();
    let flag = chars.get(offset).copied().unwrap_or('?');
    let (next_index, next_offset) = if offset + 1 < chars.len() {
        (index, offset + 1)
    } else {
        (index + 1, 1)
    };
    let wants_value = spec
        .find(flag)
        .is_some_and(|at| spec[at + 1..].starts_with(':'));
    let known = spec.contains(flag) && flag != ':';
    let (next_index, next_offset) = if known && wants_value {
        let value = if offset + 1 < chars.len() {
            Some(chars[offset + 1..].iter().collect::<String>())
        } else {
            operands.get(index).cloned()
        };
        let used = if offset + 1 < chars.len() {
            index + 1
        } else {
            index + 2
        };
        match value {
            Some(value) => {
                sh.vars.insert("OPTARG".into(), value);
                (used, 1)
            }
            None => {
                sh.err_line(&format!("sh: option requires an argument -- {flag}"))
                    .await?;
                sh.vars.insert(name.clone(), "?".into());
                sh.vars.insert("OPTIND".into(), used.to_string());
                return Ok(0);
            }
        }
    } else {
        (next_index, next_offset)
    };
    if !known {
        sh.err_line(&format!("sh: illegal option -- {flag}"))
            .await?;
    }
    sh.vars.insert(
        name.clone(),
        if known { flag.to_string() } else { "?".into() },
    );
    sh.vars.insert("OPTIND".into(), next_index.to_string());
    sh.vars
        .insert("_GETOPTS_OFFSET".into(), next_offset.to_string());
    Ok(0)
}
