//! The busybox applets the fake simulates, with busybox 1.35's messages and formats, and the fake's own
//! test commands (`fake-…`). Any other applet of the real build fails with a message that says it is
//! not simulated.

mod basic;
mod fake_commands;
pub(crate) mod files;
mod hash;
mod text;

use crate::shell::{Boxed, Shell, Status, NOT_FOUND_STATUS};

/// Busybox's banner, first line of every usage text.
pub(crate) const BANNER: &str = "BusyBox v1.35.0 (Debian 1:1.35.0-4+deb12u1+b1) multi-call binary.";
/// `busybox` without arguments: its help and the applets of the real build.
const BUSYBOX_HELP: &str = include_str!("../busybox/help.txt");

macro_rules! applets {
    ($($name:literal => $variant:ident => $func:path),* $(,)?) => {
        /// An applet the fake simulates.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum Applet { $($variant),* }
        const TABLE: &[(&str, Applet)] = &[$(($name, Applet::$variant)),*];
        impl Applet {
            /// Runs the applet in `process`.
            pub(crate) fn run<'a>(self, process: &'a mut Shell, args: &'a [String]) -> Boxed<'a, Status> {
                Box::pin(async move {
                    match self { $(Applet::$variant => $func(process, args).await),* }
                })
            }
        }
    };
}

applets! {
    "[" => Bracket => basic::bracket,
    "[[" => DoubleBracket => basic::double_bracket,
    "base64" => Base64 => text::base64,
    "basename" => Basename => basic::basename,
    "busybox" => Busybox => busybox,
    "cat" => Cat => text::cat,
    "chmod" => Chmod => files::chmod,
    "chown" => Chown => files::chown,
    "cp" => Cp => files::cp,
    "cut" => Cut => text::cut,
    "date" => Date => basic::date,
    "dd" => Dd => files::dd,
    "dirname" => Dirname => basic::dirname,
    "echo" => Echo => basic::echo,
    "env" => Env => basic::env,
    "false" => False => basic::false_,
    "find" => Find => files::find,
    "grep" => Grep => text::grep,
    "egrep" => Egrep => text::egrep,
    "fgrep" => Fgrep => text::fgrep,
    "head" => Head => text::head,
    "hostname" => Hostname => basic::hostname,
    "id" => Id => basic::id,
    "init" => Init => basic::init,
    "kill" => Kill => basic::kill,
    "ln" => Ln => files::ln,
    "ls" => Ls => files::ls,
    "md5sum" => Md5sum => hash::md5sum,
    "mkdir" => Mkdir => files::mkdir,
    "mktemp" => Mktemp => files::mktemp,
    "mv" => Mv => files::mv,
    "printf" => Printf => basic::printf,
    "pwd" => Pwd => basic::pwd,
    "readlink" => Readlink => files::readlink,
    "realpath" => Realpath => files::realpath,
    "rm" => Rm => files::rm,
    "rmdir" => Rmdir => files::rmdir,
    "sed" => Sed => text::sed,
    "seq" => Seq => basic::seq,
    "sh" => Sh => crate::sh::sh,
    "ash" => Ash => crate::sh::sh,
    "sha1sum" => Sha1sum => hash::sha1sum,
    "sha256sum" => Sha256sum => hash::sha256sum,
    "sleep" => Sleep => basic::sleep,
    "sort" => Sort => text::sort,
    "stat" => Stat => files::stat,
    "tail" => Tail => text::tail,
    "tee" => Tee => text::tee,
    "test" => Test => basic::test,
    "touch" => Touch => files::touch,
    "tr" => Tr => text::tr,
    "true" => True => basic::true_,
    "uname" => Uname => basic::uname,
    "uniq" => Uniq => text::uniq,
    "wc" => Wc => text::wc,
    "which" => Which => basic::which,
    "whoami" => Whoami => basic::whoami,
    "xargs" => Xargs => basic::xargs,
    "yes" => Yes => basic::yes,
}

/// The simulated applet of that name.
pub(crate) fn find(name: &str) -> Option<Applet> {
    TABLE.iter().find(|(n, _)| *n == name).map(|(_, a)| *a)
}

/// A test command of the fake (`fake-flood`, …), found whatever the instance holds.
pub(crate) fn fake_command(name: &str) -> Option<fake_commands::FakeCommand> {
    fake_commands::find(name)
}

/// Every applet of the real busybox build, as `busybox` lists them.
pub(crate) fn is_real_applet(name: &str) -> bool {
    applet_names().any(|applet| applet == name)
}

fn applet_names() -> impl Iterator<Item = &'static str> {
    BUSYBOX_HELP
        .split_once("Currently defined functions:")
        .map(|(_, list)| list)
        .unwrap_or_default()
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|n| !n.is_empty())
}

/// Busybox run under the name `called` (the link it was reached through, as `argv[0]` gave it).
/// An applet names itself by the link's base name; the shell keeps `argv[0]` whole as its `$0`
/// (`/bin/sh -c` says `/bin/sh: ...`), as busybox's ash does.
pub(crate) async fn busybox_called(process: &mut Shell, called: &str, args: &[String]) -> Status {
    let base = crate::fs::base_name(called);
    process.arg0 = if base == "sh" { called } else { base }.to_owned();
    let called = base;
    match find(called) {
        Some(applet) => applet.run(process, args).await,
        None if is_real_applet(called) => {
            process
                .not_simulated(&format!("busybox applet {called}"))
                .await
        }
        None => process
            .fail(&format!("{called}: applet not found"))
            .await
            .map(|_| NOT_FOUND_STATUS),
    }
}

/// `busybox [APPLET [ARG...]]`, `busybox --list`.
async fn busybox(process: &mut Shell, args: &[String]) -> Status {
    let Some((name, args)) = args.split_first() else {
        process.out(BUSYBOX_HELP.as_bytes().to_vec()).await?;
        return Ok(0);
    };
    if name == "--list" {
        let names: String = applet_names().map(|n| format!("{n}\n")).collect();
        process.out(names).await?;
        return Ok(0);
    }
    busybox_called(process, name, args).await
}

/// Options parsed like busybox's `getopt32`: flags anywhere before `--`, `-abc` bundles, a value after
/// a flag marked `:` in the spec (joined or as the next argument).
#[derive(Debug, Default)]
pub(crate) struct Opts {
    flags: Vec<(char, Option<String>)>,
    pub(crate) operands: Vec<String>,
}

impl Opts {
    pub(crate) fn parse(args: &[String], spec: &str) -> Result<Self, String> {
        let mut opts = Opts::default();
        let mut rest = args.iter();
        while let Some(arg) = rest.next() {
            if arg == "--" {
                opts.operands.extend(rest.cloned());
                break;
            }
            let Some(flags) = arg.strip_prefix('-').filter(|f| !f.is_empty()) else {
                opts.operands.push(arg.clone());
                continue;
            };
            for (at, flag) in flags.char_indices() {
                let Some(position) = spec.find(flag) else {
                    return Err(format!("invalid option -- '{flag}'"));
                };
                if spec[position + flag.len_utf8()..].starts_with(':') {
                    let joined = &flags[at + flag.len_utf8()..];
                    let value = if joined.is_empty() {
                        rest.next()
                            .cloned()
                            .ok_or_else(|| format!("option requires an argument -- '{flag}'"))?
                    } else {
                        joined.to_owned()
                    };
                    opts.flags.push((flag, Some(value)));
                    break;
                }
                opts.flags.push((flag, None));
            }
        }
        Ok(opts)
    }

    pub(crate) fn has(&self, flag: char) -> bool {
        self.flags.iter().any(|(f, _)| *f == flag)
    }

    pub(crate) fn value(&self, flag: char) -> Option<&str> {
        self.flags
            .iter()
            .rev()
            .find(|(f, _)| *f == flag)
            .and_then(|(_, v)| v.as_deref())
    }

    pub(crate) fn values(&self, flag: char) -> Vec<String> {
        self.flags
            .iter()
            .filter(|(f, _)| *f == flag)
            .filter_map(|(_, v)| v.clone())
            .collect()
    }
}

/// Parses an applet's options; a bad one is busybox's message and status 1.
pub(crate) async fn options(
    process: &Shell,
    name: &str,
    args: &[String],
    spec: &str,
) -> Result<Opts, Status> {
    match Opts::parse(args, spec) {
        Ok(opts) => Ok(opts),
        Err(message) => Err(process.fail(&format!("{name}: {message}")).await),
    }
}

/// Unwraps parsed options or returns the failed status.
macro_rules! opts {
    ($process:expr, $name:expr, $args:expr, $spec:expr) => {
        match crate::applets::options($process, $name, $args, $spec).await {
            Ok(opts) => opts,
            Err(status) => return status,
        }
    };
}
pub(crate) use opts;

/// The operands' contents (stdin for none or `-`), each with its name; a file that cannot be read is
/// reported as busybox's `NAME: can't open 'FILE': REASON` and sets `failed`.
pub(crate) async fn inputs(
    process: &Shell,
    name: &str,
    operands: &[String],
    failed: &mut bool,
) -> Result<Vec<(String, bytes::Bytes)>, crate::shell::Stop> {
    let mut out = Vec::new();
    if operands.is_empty() {
        out.push((
            "-".to_owned(),
            bytes::Bytes::from(process.read_stdin().await),
        ));
        return Ok(out);
    }
    for operand in operands {
        if operand == "-" {
            out.push((
                operand.clone(),
                bytes::Bytes::from(process.read_stdin().await),
            ));
            continue;
        }
        match read_file(process, operand) {
            Ok(content) => out.push((operand.clone(), content)),
            Err(error) => {
                process
                    .err_line(&format!("{name}: can't open '{operand}': {}", error.text()))
                    .await?;
                *failed = true;
            }
        }
    }
    Ok(out)
}

/// A file's content as a process reads it (devices included).
pub(crate) fn read_file(
    process: &Shell,
    operand: &str,
) -> Result<bytes::Bytes, crate::fs::FsError> {
    let path = process.path(operand);
    match crate::fs::device(&path) {
        Some(crate::fs::Device::Null) => Ok(bytes::Bytes::new()),
        Some(_) => Err(crate::fs::FsError::Denied),
        None => process.m.fs.read(&path),
    }
}
