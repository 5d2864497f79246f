//! Applets about the process and the system: `echo`, `printf`, `true`, `false`, `sleep`, `yes`, `env`,
//! `id`, `whoami`, `pwd`, `hostname`, `init`, `uname`, `date`, `kill`, `basename`, `dirname`, `which`,
//! `test`/`[`, `xargs`, `seq`.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;

use super::{opts, BANNER};
use crate::fs::{self, Kind};
use crate::io::CHUNK;
use crate::printf::{self as format, Escapes};
use crate::shell::{Search, Shell, Status, USAGE_STATUS};

const ID_USAGE: &str = include_str!("../busybox/id-usage.txt");
const HOSTNAME_USAGE: &str = include_str!("../busybox/hostname-usage.txt");

/// A usage text on stderr, and status 1.
async fn usage(process: &Shell, text: &str) -> Status {
    process.err(text.as_bytes().to_vec()).await?;
    Ok(1)
}

pub(super) async fn true_(_: &mut Shell, _: &[String]) -> Status {
    Ok(0)
}

pub(super) async fn false_(_: &mut Shell, _: &[String]) -> Status {
    Ok(1)
}

/// `echo [-neE] [ARG...]`.
pub(super) async fn echo(process: &mut Shell, args: &[String]) -> Status {
    let mut newline = true;
    let mut escapes = false;
    let mut words = args;
    while let Some(option) = words.first().and_then(|w| w.strip_prefix('-')) {
        if option.is_empty() || !option.chars().all(|c| matches!(c, 'n' | 'e' | 'E')) {
            break;
        }
        for flag in option.chars() {
            match flag {
                'n' => newline = false,
                'e' => escapes = true,
                _ => escapes = false,
            }
        }
        words = &words[1..];
    }
    let mut bytes = Vec::new();
    for (index, word) in words.iter().enumerate() {
        if index > 0 {
            bytes.push(b' ');
        }
        if !escapes {
            bytes.extend_from_slice(word.as_bytes());
            continue;
        }
        let rendered = format::unescape(word, Escapes::Argument);
        bytes.extend(rendered.bytes);
        if rendered.stopped {
            process.out(bytes).await?;
            return Ok(0);
        }
    }
    if newline {
        bytes.push(b'\n');
    }
    process.out(bytes).await?;
    Ok(0)
}

/// `printf FORMAT [ARG...]`.
pub(super) async fn printf(process: &mut Shell, args: &[String]) -> Status {
    let Some((template, args)) = args.split_first() else {
        process
            .err_line("printf: usage: printf FORMAT [ARGUMENT...]")
            .await?;
        return Ok(2);
    };
    let printed = match format::printf(template, args) {
        Ok(printed) => printed,
        Err(message) => return process.fail(&format!("printf: {message}")).await,
    };
    process.out(printed.bytes).await?;
    for bad in &printed.bad_numbers {
        process
            .err_line(&format!("printf: invalid number '{bad}'"))
            .await?;
    }
    Ok(i32::from(!printed.bad_numbers.is_empty()))
}

/// `sleep DURATION...`.
pub(super) async fn sleep(process: &mut Shell, args: &[String]) -> Status {
    if args.is_empty() {
        return process.fail("sleep: missing operand").await;
    }
    let mut total = Duration::ZERO;
    for arg in args {
        match parse_duration(arg) {
            Some(duration) => total = total.saturating_add(duration),
            None => {
                return process
                    .fail(&format!("sleep: invalid number '{arg}'"))
                    .await
            }
        }
    }
    tokio::time::sleep(total).await;
    Ok(0)
}

pub(crate) fn parse_duration(arg: &str) -> Option<Duration> {
    let (number, unit) = match arg.char_indices().last()? {
        (at, 's') => (&arg[..at], 1.0),
        (at, 'm') => (&arg[..at], 60.0),
        (at, 'h') => (&arg[..at], 3600.0),
        (at, 'd') => (&arg[..at], 86400.0),
        _ => (arg, 1.0),
    };
    let digits_and_one_point = !number.is_empty()
        && number != "."
        && number.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && number.bytes().filter(|b| *b == b'.').count() <= 1;
    if !digits_and_one_point {
        return None;
    }
    let seconds = number.parse::<f64>().ok()? * unit;
    Some(Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX))
}

/// `yes [STRING...]`: forever, in chunks of whole lines of about 32 KiB.
pub(super) async fn yes(process: &mut Shell, args: &[String]) -> Status {
    let line = if args.is_empty() {
        "y\n".to_owned()
    } else {
        format!("{}\n", args.join(" "))
    };
    let chunk = Bytes::from(line.repeat((CHUNK / line.len()).max(1)));
    loop {
        tokio::task::consume_budget().await;
        process.out(chunk.clone()).await?;
    }
}

/// `env [-i] [-u NAME] [NAME=VALUE...] [COMMAND [ARG...]]`.
pub(super) async fn env(process: &mut Shell, args: &[String]) -> Status {
    let mut env: BTreeMap<String, String> = process.environ();
    let mut rest = args;
    while let Some(option) = rest.first().filter(|a| a.starts_with('-')) {
        match option.as_str() {
            "-i" | "-" => env.clear(),
            "-u" => {
                if let Some(name) = rest.get(1) {
                    env.remove(name);
                    rest = &rest[1..];
                }
            }
            "--" => {
                rest = &rest[1..];
                break;
            }
            other => {
                process
                    .err_line(&format!("env: unrecognized option '{other}'"))
                    .await?;
                return Ok(125);
            }
        }
        rest = &rest[1..];
    }
    while let Some((name, value)) = rest.first().and_then(|a| a.split_once('=')) {
        env.insert(name.to_owned(), value.to_owned());
        rest = &rest[1..];
    }
    if rest.is_empty() {
        let listing: String = env.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        process.out(listing).await?;
        return Ok(0);
    }
    let mut child = process.program(env);
    child.arg0 = "env".into();
    child.run_argv(rest, Search::Program).await
}

/// The name of `id` in `/etc/passwd` (or `/etc/group`), when the instance has one.
fn name_of(process: &Shell, file: &str, id: u32) -> Option<String> {
    let content = process.m.fs.read(file).ok()?;
    String::from_utf8_lossy(&content).lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let number = fields.nth(1)?.parse::<u32>().ok()?;
        (number == id).then(|| name.to_owned())
    })
}

/// `id [-ugGnr] [USER]`.
pub(super) async fn id(process: &mut Shell, args: &[String]) -> Status {
    let (user, group) = (process.m.user, process.m.group);
    let mut which = None;
    let mut names = false;
    let mut operands = Vec::new();
    for arg in args {
        let Some(flags) = arg.strip_prefix('-').filter(|f| !f.is_empty()) else {
            operands.push(arg);
            continue;
        };
        for flag in flags.chars() {
            match flag {
                'u' | 'g' | 'G' if which.is_some_and(|w| w != flag) => {
                    return usage(process, ID_USAGE).await;
                }
                'u' | 'g' | 'G' => which = Some(flag),
                'n' => names = true,
                'r' => {}
                other => {
                    process
                        .err_line(&format!("id: invalid option -- '{other}'"))
                        .await?;
                    return usage(process, ID_USAGE).await;
                }
            }
        }
    }
    if let Some(name) = operands.first() {
        return process.fail(&format!("id: unknown user {name}")).await;
    }
    let user_name = name_of(process, "/etc/passwd", user);
    let group_name = name_of(process, "/etc/group", group);
    let (number, name) = match which {
        None if names => return usage(process, ID_USAGE).await,
        None => {
            let with = |n: u32, name: &Option<String>| match name {
                Some(name) => format!("{n}({name})"),
                None => n.to_string(),
            };
            let groups = match &group_name {
                Some(_) => format!(" groups={}", with(group, &group_name)),
                None => String::new(),
            };
            let line = format!(
                "uid={} gid={}{groups}\n",
                with(user, &user_name),
                with(group, &group_name)
            );
            process.out(line).await?;
            return Ok(0);
        }
        Some('u') => (user, user_name),
        Some(_) => (group, group_name),
    };
    if names {
        return match name {
            Some(name) => {
                process.out(format!("{name}\n")).await?;
                Ok(0)
            }
            None => {
                process.out(format!("{number}\n")).await?;
                process.fail(&format!("id: unknown ID {number}")).await
            }
        };
    }
    process.out(format!("{number}\n")).await?;
    Ok(0)
}

/// `whoami`: the user's name from `/etc/passwd`.
pub(super) async fn whoami(process: &mut Shell, _: &[String]) -> Status {
    let user = process.m.user;
    match name_of(process, "/etc/passwd", user) {
        Some(name) => {
            process.out(format!("{name}\n")).await?;
            Ok(0)
        }
        None => process.fail(&format!("whoami: unknown uid {user}")).await,
    }
}

/// `pwd`.
pub(super) async fn pwd(process: &mut Shell, _: &[String]) -> Status {
    let line = format!("{}\n", process.cwd);
    process.out(line).await?;
    Ok(0)
}

/// `hostname [-s | -f]`.
pub(super) async fn hostname(process: &mut Shell, args: &[String]) -> Status {
    match args.first().map(String::as_str) {
        None | Some("-s" | "-f") => {
            let line = format!("{}\n", process.m.hostname);
            process.out(line).await?;
            Ok(0)
        }
        Some("-d") => Ok(0),
        Some(option) if option.starts_with('-') && option.len() > 1 => {
            let flag = option.chars().nth(1).unwrap_or('-');
            process
                .err_line(&format!("hostname: invalid option -- '{flag}'"))
                .await?;
            usage(process, HOSTNAME_USAGE).await
        }
        Some(_) => {
            process
                .fail("hostname: sethostname: Operation not permitted")
                .await
        }
    }
}

/// `init`: refuses to run other than as process 1.
pub(super) async fn init(process: &mut Shell, _: &[String]) -> Status {
    process.fail("init: must be run as PID 1").await
}

/// The kernel as `uname` reports it: the host's, as in a container.
fn kernel() -> (String, String) {
    let read = |file: &str, default: &str| {
        std::fs::read_to_string(file)
            .map(|s| s.trim().to_owned())
            .unwrap_or_else(|_| default.to_owned())
    };
    (
        read("/proc/sys/kernel/osrelease", "6.1.0"),
        read("/proc/sys/kernel/version", "#1 SMP"),
    )
}

/// `uname [-asnrvmpio]`.
pub(super) async fn uname(process: &mut Shell, args: &[String]) -> Status {
    let opts = opts!(process, "uname", args, "asnrvmpio");
    if let Some(extra) = opts.operands.first() {
        return process
            .fail(&format!("uname: unrecognized argument '{extra}'"))
            .await;
    }
    let (release, version) = kernel();
    let all = opts.has('a');
    let fields: [(char, String); 6] = [
        ('s', "Linux".into()),
        ('n', process.m.hostname.clone()),
        ('r', release),
        ('v', version),
        ('m', std::env::consts::ARCH.into()),
        ('o', "GNU/Linux".into()),
    ];
    let mut out: Vec<String> = fields
        .iter()
        .filter(|(flag, _)| all || opts.has(*flag))
        .map(|(_, value)| value.clone())
        .collect();
    for flag in ['p', 'i'] {
        if opts.has(flag) && !all {
            out.push("unknown".into());
        }
    }
    if out.is_empty() {
        out.push("Linux".into());
    }
    process.out(format!("{}\n", out.join(" "))).await?;
    Ok(0)
}

/// `date [-u] [-d @SECONDS] [+FORMAT]`, in UTC (the container's zone).
pub(super) async fn date(process: &mut Shell, args: &[String]) -> Status {
    let opts = opts!(process, "date", args, "uRId:r:s:");
    if opts.value('s').is_some() {
        return process
            .fail("date: can't set date: Operation not permitted")
            .await;
    }
    let mut when = time::OffsetDateTime::now_utc();
    if let Some(spec) = opts.value('d') {
        match spec.strip_prefix('@').and_then(|s| s.parse::<i64>().ok()) {
            Some(seconds) => match time::OffsetDateTime::from_unix_timestamp(seconds) {
                Ok(at) => when = at,
                Err(_) => return process.fail(&format!("date: invalid date '{spec}'")).await,
            },
            None => {
                return process
                    .fail(&format!(
                        "date: invalid date '{spec}' (the fake reads only @SECONDS)"
                    ))
                    .await
            }
        }
    }
    if let Some(file) = opts.value('r') {
        match process.m.fs.stat(&process.path(file)) {
            Ok(meta) => {
                when = time::OffsetDateTime::from_unix_timestamp(meta.modified).unwrap_or(when)
            }
            Err(error) => {
                return process
                    .fail(&format!("date: can't stat '{file}': {}", error.text()))
                    .await
            }
        }
    }
    let format = match opts.operands.first() {
        Some(operand) => match operand.strip_prefix('+') {
            Some(format) => format.to_owned(),
            None => {
                return process
                    .fail("date: can't set date: Operation not permitted")
                    .await
            }
        },
        None if opts.has('R') => "%a, %d %b %Y %H:%M:%S +0000".into(),
        None if opts.has('I') => "%Y-%m-%d".into(),
        None => "%a %b %e %H:%M:%S %Z %Y".into(),
    };
    process
        .out(format!("{}\n", strftime(&format, when)))
        .await?;
    Ok(0)
}

const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// The `strftime` conversions in use, in UTC.
pub(crate) fn strftime(format: &str, at: time::OffsetDateTime) -> String {
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(spec) = chars.next() else {
            out.push('%');
            break;
        };
        let month = u8::from(at.month()) as usize;
        match spec {
            'Y' => out.push_str(&at.year().to_string()),
            'y' => out.push_str(&format!("{:02}", at.year() % 100)),
            'm' => out.push_str(&format!("{month:02}")),
            'd' => out.push_str(&format!("{:02}", at.day())),
            'e' => out.push_str(&format!("{:2}", at.day())),
            'H' => out.push_str(&format!("{:02}", at.hour())),
            'M' => out.push_str(&format!("{:02}", at.minute())),
            'S' => out.push_str(&format!("{:02}", at.second())),
            'N' => out.push_str(&format!("{:09}", at.nanosecond())),
            's' => out.push_str(&at.unix_timestamp().to_string()),
            'j' => out.push_str(&format!("{:03}", at.ordinal())),
            'a' => out.push_str(DAYS[at.weekday().number_days_from_monday() as usize]),
            'b' | 'h' => out.push_str(MONTHS[month - 1]),
            'Z' => out.push_str("UTC"),
            'z' => out.push_str("+0000"),
            'F' => out.push_str(&strftime("%Y-%m-%d", at)),
            'T' => out.push_str(&strftime("%H:%M:%S", at)),
            'D' => out.push_str(&strftime("%m/%d/%y", at)),
            'R' => out.push_str(&strftime("%H:%M", at)),
            'n' => out.push('\n'),
            't' => out.push('\t'),
            '%' => out.push('%'),
            other => {
                out.push('%');
                out.push(other);
            }
        }
    }
    out
}

const SIGNALS: &[(&str, i32)] = &[
    ("HUP", 1),
    ("INT", 2),
    ("QUIT", 3),
    ("ILL", 4),
    ("TRAP", 5),
    ("ABRT", 6),
    ("BUS", 7),
    ("FPE", 8),
    ("KILL", 9),
    ("USR1", 10),
    ("SEGV", 11),
    ("USR2", 12),
    ("PIPE", 13),
    ("ALRM", 14),
    ("TERM", 15),
    ("STKFLT", 16),
    ("CHLD", 17),
    ("CONT", 18),
    ("STOP", 19),
    ("TSTP", 20),
    ("TTIN", 21),
    ("TTOU", 22),
    ("URG", 23),
    ("XCPU", 24),
    ("XFSZ", 25),
    ("VTALRM", 26),
    ("PROF", 27),
    ("WINCH", 28),
    ("POLL", 29),
    ("PWR", 30),
    ("SYS", 31),
];

fn signal_number(name: &str) -> Option<i32> {
    if let Ok(n) = name.parse::<i32>() {
        return (0..=64).contains(&n).then_some(n);
    }
    let name = name.strip_prefix("SIG").unwrap_or(name);
    SIGNALS
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, n)| *n)
}

/// `kill [-SIG | -s SIG] PID...`, `kill -l`: the exec's own processes are signalled (which ends
/// the program as the signal would); any other pid does not exist in the instance.
pub(super) async fn kill(process: &mut Shell, args: &[String]) -> Status {
    let mut signal = 15;
    let mut rest = args;
    match rest.first().map(String::as_str) {
        Some("-l") => {
            let names: String = SIGNALS
                .iter()
                .map(|(name, n)| format!("{n}) {name}\n"))
                .collect();
            process.out(names).await?;
            return Ok(0);
        }
        Some("-s") => {
            let Some(name) = rest.get(1) else {
                return process
                    .fail("kill: option requires an argument -- 's'")
                    .await;
            };
            match signal_number(name) {
                Some(n) => signal = n,
                None => {
                    return process
                        .fail(&format!("kill: bad signal name '{name}'"))
                        .await
                }
            }
            rest = &rest[2..];
        }
        Some(option) if option.starts_with('-') && option.len() > 1 && option != "--" => {
            match signal_number(&option[1..]) {
                Some(n) => signal = n,
                None => {
                    return process
                        .fail(&format!("kill: bad signal name '{}'", &option[1..]))
                        .await
                }
            }
            rest = &rest[1..];
        }
        _ => {}
    }
    if rest.first().is_some_and(|a| a == "--") {
        rest = &rest[1..];
    }
    if rest.is_empty() {
        return process
            .fail("kill: usage: kill [-s SIG | -SIG] PID...")
            .await;
    }
    let mut status = 0;
    for pid in rest {
        let ours = pid.parse::<u32>().ok().filter(|p| process.m.owns_pid(*p));
        match ours {
            Some(_) if signal == 0 => {}
            Some(_) => {
                let _ = process.m.kill.send(signal);
                // Let the signal watcher end the program before anything else runs.
                tokio::task::yield_now().await;
            }
            None if pid.parse::<i64>().is_err() => {
                process
                    .err_line(&format!("kill: invalid number '{pid}'"))
                    .await?;
                status = 1;
            }
            None => {
                process
                    .err_line(&format!(
                        "{}: can't kill pid {pid}: No such process",
                        process.arg0
                    ))
                    .await?;
                status = 1;
            }
        }
    }
    Ok(status)
}

/// `basename NAME [SUFFIX]`.
pub(super) async fn basename(process: &mut Shell, args: &[String]) -> Status {
    let Some(name) = args.first() else {
        process.err_line(&format!("{BANNER}\n\nUsage: basename FILE [SUFFIX]\n\nStrip directory path and SUFFIX from FILE"))
            .await?;
        return Ok(1);
    };
    let mut base = fs::base_name(name).to_owned();
    if let Some(suffix) = args.get(1) {
        if base != *suffix {
            if let Some(stripped) = base.strip_suffix(suffix.as_str()) {
                base = stripped.to_owned();
            }
        }
    }
    process.out(format!("{base}\n")).await?;
    Ok(0)
}

/// `dirname NAME`.
pub(super) async fn dirname(process: &mut Shell, args: &[String]) -> Status {
    let Some(name) = args.first() else {
        process
            .err_line(&format!(
                "{BANNER}\n\nUsage: dirname FILENAME\n\nStrip non-directory suffix from FILENAME"
            ))
            .await?;
        return Ok(1);
    };
    let trimmed = name.trim_end_matches('/');
    let dir = if trimmed.is_empty() {
        if name.is_empty() { "." } else { "/" }.to_owned()
    } else {
        match trimmed.rfind('/') {
            None => ".".to_owned(),
            Some(at) => {
                let dir = trimmed[..at].trim_end_matches('/');
                if dir.is_empty() {
                    "/".to_owned()
                } else {
                    dir.to_owned()
                }
            }
        }
    };
    process.out(format!("{dir}\n")).await?;
    Ok(0)
}

/// `which [-a] NAME...`: along `PATH` in the instance (busybox's applets are not files).
pub(super) async fn which(process: &mut Shell, args: &[String]) -> Status {
    let opts = opts!(process, "which", args, "a");
    if opts.operands.is_empty() {
        return Ok(1);
    }
    let mut status = 0;
    for name in &opts.operands {
        match process.find_program(name) {
            Ok(path) => process.out(format!("{path}\n")).await?,
            Err(_) => status = 1,
        }
    }
    Ok(status)
}

/// `seq [-s SEP] [-w] [FIRST [INCR]] LAST`.
pub(super) async fn seq(process: &mut Shell, args: &[String]) -> Status {
    let mut separator = "\n".to_owned();
    let mut numbers = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == "-s" {
            separator = rest.next().cloned().unwrap_or_default();
        } else {
            match arg.parse::<i64>() {
                Ok(n) => numbers.push(n),
                Err(_) => return process.fail(&format!("seq: invalid number '{arg}'")).await,
            }
        }
    }
    let (first, step, last) = match numbers.as_slice() {
        [last] => (1, 1, *last),
        [first, last] => (*first, 1, *last),
        [first, step, last] => (*first, *step, *last),
        _ => {
            return process
                .fail("seq: usage: seq [-s SEP] [FIRST [INCR]] LAST")
                .await
        }
    };
    if step == 0 {
        return Ok(0);
    }
    let mut out = Vec::new();
    let mut n = first;
    while (step > 0 && n <= last) || (step < 0 && n >= last) {
        out.push(n.to_string());
        if out.len() >= 1024 {
            let text = out.join(&separator);
            process.out(format!("{text}{separator}")).await?;
            out.clear();
        }
        n += step;
    }
    if !out.is_empty() {
        process.out(format!("{}\n", out.join(&separator))).await?;
    }
    Ok(0)
}

/// `[ EXPR ]`.
pub(super) async fn bracket(process: &mut Shell, args: &[String]) -> Status {
    match args.split_last() {
        Some((last, expr)) if last == "]" => evaluate(process, "[", expr).await,
        _ => process.fail("[: missing ]").await.map(|_| USAGE_STATUS),
    }
}

/// `[[ EXPR ]]` as busybox's `ash` has it: `[` with `]]`.
pub(super) async fn double_bracket(process: &mut Shell, args: &[String]) -> Status {
    match args.split_last() {
        Some((last, expr)) if last == "]]" => evaluate(process, "[[", expr).await,
        _ => process.fail("[[: missing ]]").await.map(|_| USAGE_STATUS),
    }
}

/// `test EXPR`.
pub(super) async fn test(process: &mut Shell, args: &[String]) -> Status {
    evaluate(process, "test", args).await
}

async fn evaluate(process: &Shell, name: &str, args: &[String]) -> Status {
    let mut parser = TestParser {
        process,
        args,
        at: 0,
    };
    let result = if args.is_empty() {
        Ok(false)
    } else {
        parser
            .expression()
            .and_then(|value| match args.get(parser.at) {
                None => Ok(value),
                Some(extra) => Err(format!("{extra}: unknown operand")),
            })
    };
    match result {
        Ok(value) => Ok(i32::from(!value)),
        Err(message) => process
            .fail(&format!("sh: {name}: {message}"))
            .await
            .map(|_| USAGE_STATUS),
    }
}

struct TestParser<'a> {
    process: &'a Shell,
    args: &'a [String],
    at: usize,
}

const UNARY: &str = "bcdefghknprsuwxzLSOGt";

impl TestParser<'_> {
    fn peek(&self) -> Option<&str> {
        self.args.get(self.at).map(String::as_str)
    }

    fn left(&self) -> usize {
        self.args.len() - self.at
    }

    fn expression(&mut self) -> Result<bool, String> {
        let mut value = self.and()?;
        while self.peek() == Some("-o") && self.left() > 1 {
            self.at += 1;
            let right = self.and()?;
            value = value || right;
        }
        Ok(value)
    }

    fn and(&mut self) -> Result<bool, String> {
        let mut value = self.not()?;
        while self.peek() == Some("-a") && self.left() > 1 {
            self.at += 1;
            let right = self.not()?;
            value = value && right;
        }
        Ok(value)
    }

    fn not(&mut self) -> Result<bool, String> {
        if self.peek() == Some("!") && self.left() > 1 && !self.is_binary_at(self.at + 1) {
            self.at += 1;
            return Ok(!self.not()?);
        }
        self.primary()
    }

    fn is_binary_at(&self, at: usize) -> bool {
        self.args.get(at).is_some_and(|op| binary_op(op)) && self.args.len() > at + 1
    }

    fn primary(&mut self) -> Result<bool, String> {
        let Some(first) = self.peek().map(str::to_owned) else {
            return Err("argument expected".into());
        };
        if self.is_binary_at(self.at + 1) {
            let op = self.args[self.at + 1].clone();
            let right = self.args[self.at + 2].clone();
            self.at += 3;
            return self.binary(&first, &op, &right);
        }
        if first == "(" && self.left() > 1 {
            self.at += 1;
            let value = self.expression()?;
            if self.peek() != Some(")") {
                return Err("')' expected".into());
            }
            self.at += 1;
            return Ok(value);
        }
        let unary = first.len() == 2
            && first.starts_with('-')
            && UNARY.contains(&first[1..])
            && self.left() > 1;
        if unary {
            let operand = self.args[self.at + 1].clone();
            self.at += 2;
            return Ok(self.unary(first.as_bytes()[1] as char, &operand));
        }
        self.at += 1;
        Ok(!first.is_empty())
    }

    fn unary(&self, op: char, operand: &str) -> bool {
        match op {
            'n' => !operand.is_empty(),
            'z' => operand.is_empty(),
            't' => false,
            _ => {
                let path = self.process.path(operand);
                if operand.is_empty() {
                    return false;
                }
                let fs = &self.process.m.fs;
                let meta = if op == 'h' || op == 'L' {
                    fs.lstat(&path)
                } else {
                    fs.stat(&path)
                };
                let Ok(meta) = meta else {
                    return false;
                };
                let device = fs::device(&path).is_some();
                let user = self.process.m.user;
                let allowed = |bit: u32| {
                    if user == 0 {
                        return bit != 1 || meta.mode & 0o111 != 0 || meta.kind == Kind::Directory;
                    }
                    let shift = if meta.uid == user { 6 } else { 0 };
                    (meta.mode >> shift) & bit != 0
                };
                match op {
                    'e' => true,
                    'f' => matches!(meta.kind, Kind::File(_)) && !device,
                    'd' => meta.kind == Kind::Directory,
                    'h' | 'L' => matches!(meta.kind, Kind::Symlink(_)),
                    's' => {
                        matches!(meta.kind, Kind::File(n) if n > 0) || meta.kind == Kind::Directory
                    }
                    'r' => allowed(4),
                    'w' => allowed(2),
                    'x' => allowed(1),
                    'c' => device,
                    'u' => meta.mode & 0o4000 != 0,
                    'g' => meta.mode & 0o2000 != 0,
                    'k' => meta.mode & 0o1000 != 0,
                    'O' => meta.uid == user,
                    'G' => meta.gid == self.process.m.group,
                    _ => false,
                }
            }
        }
    }

    fn binary(&self, left: &str, op: &str, right: &str) -> Result<bool, String> {
        let number = |s: &str| -> Result<i64, String> {
            s.trim()
                .parse::<i64>()
                .map_err(|_| format!("invalid number '{s}'"))
        };
        Ok(match op {
            "=" | "==" => left == right,
            "!=" => left != right,
            "<" => left < right,
            ">" => left > right,
            "-eq" => number(left)? == number(right)?,
            "-ne" => number(left)? != number(right)?,
            "-lt" => number(left)? < number(right)?,
            "-le" => number(left)? <= number(right)?,
            "-gt" => number(left)? > number(right)?,
            "-ge" => number(left)? >= number(right)?,
            "-nt" | "-ot" | "-ef" => {
                let fs = &self.process.m.fs;
                let l = fs.stat(&self.process.path(left));
                let r = fs.stat(&self.process.path(right));
                match (op, l, r) {
                    ("-nt", Ok(l), Ok(r)) => l.modified > r.modified,
                    ("-ot", Ok(l), Ok(r)) => l.modified < r.modified,
                    ("-ef", Ok(_), Ok(_)) => {
                        fs.resolve(&self.process.path(left), true)
                            == fs.resolve(&self.process.path(right), true)
                    }
                    _ => false,
                }
            }
            _ => return Err(format!("{op}: unknown operand")),
        })
    }
}

fn binary_op(op: &str) -> bool {
    matches!(
        op,
        "=" | "=="
            | "!="
            | "<"
            | ">"
            | "-eq"
            | "-ne"
            | "-lt"
            | "-le"
            | "-gt"
            | "-ge"
            | "-nt"
            | "-ot"
            | "-ef"
    )
}

/// `xargs [-0rt] [-n N] [-I STR] [COMMAND [ARG...]]`: runs the command (default `echo`) with the
/// words of stdin; 123 when a run failed, 127/126 when it could not start.
pub(super) async fn xargs(process: &mut Shell, args: &[String]) -> Status {
    let mut rest = args;
    let mut null = false;
    let mut no_empty = false;
    let mut trace = false;
    let mut per_run: Option<usize> = None;
    let mut replace: Option<String> = None;
    while let Some(option) = rest.first().filter(|a| a.starts_with('-') && a.len() > 1) {
        rest = &rest[1..];
        match option.as_str() {
            "--" => break,
            "-0" => null = true,
            "-r" => no_empty = true,
            "-t" => trace = true,
            "-n" | "-I" | "-L" => {
                let Some((value, tail)) = rest.split_first() else {
                    let flag = &option[1..];
                    return process
                        .fail(&format!("xargs: option requires an argument -- '{flag}'"))
                        .await;
                };
                rest = tail;
                if option == "-I" {
                    replace = Some(value.clone());
                } else {
                    match value.parse::<usize>() {
                        Ok(n) if n > 0 => per_run = Some(n),
                        _ => {
                            return process
                                .fail(&format!("xargs: invalid number '{value}'"))
                                .await
                        }
                    }
                }
            }
            other if other.starts_with("-n") || other.starts_with("-I") => {
                let value = &other[2..];
                if other.starts_with("-I") {
                    replace = Some(value.to_owned());
                } else {
                    match value.parse::<usize>() {
                        Ok(n) if n > 0 => per_run = Some(n),
                        _ => {
                            return process
                                .fail(&format!("xargs: invalid number '{value}'"))
                                .await
                        }
                    }
                }
            }
            other => {
                return process
                    .fail(&format!("xargs: invalid option -- '{}'", &other[1..]))
                    .await
            }
        }
    }
    let command: Vec<String> = if rest.is_empty() {
        vec!["echo".into()]
    } else {
        rest.to_vec()
    };
    let input = process.read_stdin().await;
    let text = String::from_utf8_lossy(&input).into_owned();
    let items: Vec<String> = if null {
        text.split('\0')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    } else if replace.is_some() {
        text.lines()
            .map(|l| l.trim_start().to_owned())
            .filter(|l| !l.is_empty())
            .collect()
    } else {
        match split_xargs(&text) {
            Ok(items) => items,
            Err(message) => return process.fail(&format!("xargs: {message}")).await,
        }
    };
    let runs: Vec<Vec<String>> = if let Some(marker) = &replace {
        items
            .iter()
            .map(|item| {
                command
                    .iter()
                    .map(|a| a.replace(marker.as_str(), item))
                    .collect()
            })
            .collect()
    } else if items.is_empty() {
        if no_empty {
            Vec::new()
        } else {
            vec![command.clone()]
        }
    } else {
        let size = per_run.unwrap_or(items.len());
        items
            .chunks(size)
            .map(|chunk| {
                command
                    .iter()
                    .cloned()
                    .chain(chunk.iter().cloned())
                    .collect()
            })
            .collect()
    };
    let mut status = 0;
    for argv in runs {
        if trace {
            process.err_line(&argv.join(" ")).await?;
        }
        let mut child = process.program(process.environ());
        child
            .fds
            .set(0, crate::io::Fd::In(crate::io::input_of(Bytes::new())));
        child.arg0 = "xargs".into();
        let ran = child.run_argv(&argv, Search::Program).await?;
        match ran {
            0 => {}
            126 | 127 => return Ok(ran),
            255 => return Ok(124),
            _ => status = 123,
        }
    }
    Ok(status)
}

/// Splits xargs input into words: blanks separate, quotes and backslashes escape.
fn split_xargs(text: &str) -> Result<Vec<String>, String> {
    let mut items = Vec::new();
    let mut current = String::new();
    let mut live = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if live {
                    items.push(std::mem::take(&mut current));
                    live = false;
                }
            }
            '\'' | '"' => {
                live = true;
                loop {
                    match chars.next() {
                        Some(q) if q == c => break,
                        Some('\n') | None => return Err("unmatched quote".into()),
                        Some(other) => current.push(other),
                    }
                }
            }
            '\\' => {
                live = true;
                current.extend(chars.next());
            }
            other => {
                live = true;
                current.push(other);
            }
        }
    }
    if live {
        items.push(current);
    }
    Ok(items)
}
