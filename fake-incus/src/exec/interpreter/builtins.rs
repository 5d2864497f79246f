//! The ordinary commands: `echo`, `printf`, `cat`, `head`, `sleep`, `env`, `id`, `pwd`, `hostname`,
//! `init` and `busybox` itself. Messages and formats follow busybox 1.35, the userland of the image the
//! real daemon was probed with. File contents are not modelled: naming a file is an error, as if it did
//! not exist.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;

use super::printf::{self as format, Escapes};
use super::streams::{Status, CHUNK};
use super::{busybox_applet, not_simulated, run_command, Ctx, Found, Search, NOT_FOUND_STATUS};

/// Busybox's banner, first line of every usage text.
#[cfg(test)]
pub(super) const BANNER: &str = "BusyBox v1.35.0 (Debian 1:1.35.0-4+deb12u1+b1) multi-call binary.";
/// `busybox` without arguments: its help and the applets of the real build.
const BUSYBOX_HELP: &str = include_str!("busybox/help.txt");
const ID_USAGE: &str = include_str!("busybox/id-usage.txt");
const HOSTNAME_USAGE: &str = include_str!("busybox/hostname-usage.txt");
/// Status of a busybox applet given bad options (after its usage text).
const BAD_USAGE_STATUS: i32 = 1;

/// Every applet of the real busybox build, as `busybox` lists them.
pub(super) fn is_real_applet(name: &str) -> bool {
    BUSYBOX_HELP
        .split_once("Currently defined functions:")
        .is_some_and(|(_, list)| {
            list.split(|c: char| c == ',' || c.is_whitespace())
                .any(|applet| applet == name)
        })
}

/// `echo [-neE] [ARG...]`: options only while every letter is one of `n`, `e`, `E`; `-e` expands
/// backslash escapes and `\c` stops the output, newline included.
pub(super) async fn echo(ctx: &mut Ctx<'_>, args: &[String]) -> Status {
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
            ctx.output.out(bytes).await?;
            return Ok(0);
        }
    }
    if newline {
        bytes.push(b'\n');
    }
    ctx.output.out(bytes).await?;
    Ok(0)
}

/// `printf FORMAT [ARG...]`: see the `printf` module. Status 1 when an argument was not a number.
pub(super) async fn printf(ctx: &mut Ctx<'_>, args: &[String]) -> Status {
    let Some((format, args)) = args.split_first() else {
        ctx.output
            .err_line("printf: usage: printf FORMAT [ARGUMENT...]")
            .await?;
        return Ok(2);
    };
    let printed = match format::printf(format, args) {
        Ok(printed) => printed,
        Err(message) => {
            ctx.output.err_line(&format!("printf: {message}")).await?;
            return Ok(1);
        }
    };
    ctx.output.out(printed.bytes).await?;
    for bad in &printed.bad_numbers {
        ctx.output
            .err_line(&format!("printf: invalid number '{bad}'"))
            .await?;
    }
    Ok(i32::from(!printed.bad_numbers.is_empty()))
}

/// `cat [-] [FILE...]`: copies stdin to stdout chunk by chunk; a file cannot be opened (no filesystem).
/// `yes [STRING...]`: prints the arguments joined by spaces (default `y`) and a newline, forever, in
/// chunks of whole lines of about 32 KiB; only a broken pipe or a signal ends it.
pub(super) async fn yes(ctx: &mut Ctx<'_>, args: &[String]) -> Status {
    let line = if args.is_empty() {
        "y\n".to_owned()
    } else {
        format!("{}\n", args.join(" "))
    };
    let chunk = Bytes::from(line.repeat((CHUNK / line.len()).max(1)));
    loop {
        // Writes to /dev/null never wait: give the runtime (and the signal watcher) a turn.
        tokio::task::consume_budget().await;
        ctx.output.out(chunk.clone()).await?;
    }
}

pub(super) async fn cat(ctx: &mut Ctx<'_>, args: &[String]) -> Status {
    if args.is_empty() {
        return copy_stdin(ctx).await;
    }
    let mut status = 0;
    for arg in args {
        if arg == "-" {
            copy_stdin(ctx).await?;
        } else if arg.starts_with('-') {
            ctx.output
                .err_line(&format!("cat: option not supported by the fake: {arg}"))
                .await?;
            return Ok(1);
        } else {
            ctx.output
                .err_line(&format!(
                    "cat: can't open '{arg}': No such file or directory"
                ))
                .await?;
            status = 1;
        }
    }
    Ok(status)
}

async fn copy_stdin(ctx: &mut Ctx<'_>) -> Status {
    while let Some(chunk) = ctx.stdin.next_chunk().await {
        ctx.output.out(chunk).await?;
    }
    Ok(0)
}

/// How much `head` copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Count {
    Lines(u64),
    Bytes(u64),
}

/// `head [-n N | -c N | -N]`: copies the first lines or bytes of stdin and leaves the rest unread for the
/// next command. Files are not supported (no filesystem).
pub(super) async fn head(ctx: &mut Ctx<'_>, args: &[String]) -> Status {
    let count = match head_count(args) {
        Ok(count) => count,
        Err(message) => {
            ctx.output.err_line(&format!("head: {message}")).await?;
            return Ok(1);
        }
    };
    let mut left = match count {
        Count::Lines(n) | Count::Bytes(n) => n,
    };
    while left > 0 {
        let Some(mut chunk) = ctx.stdin.next_chunk().await else {
            break;
        };
        let take = match count {
            Count::Bytes(_) => chunk.len().min(usize::try_from(left).unwrap_or(usize::MAX)),
            Count::Lines(_) => lines_prefix(&chunk, &mut left),
        };
        let rest = chunk.split_off(take);
        if let Count::Bytes(_) = count {
            left -= take as u64;
        }
        ctx.stdin.unread(rest);
        ctx.output.out(chunk).await?;
    }
    Ok(0)
}

/// The length of the prefix of `chunk` that holds at most `left` lines; counts them off `left`.
fn lines_prefix(chunk: &Bytes, left: &mut u64) -> usize {
    for (index, byte) in chunk.iter().enumerate() {
        if *byte == b'\n' {
            *left -= 1;
            if *left == 0 {
                return index + 1;
            }
        }
    }
    chunk.len()
}

fn head_count(args: &[String]) -> Result<Count, String> {
    let mut count = Count::Lines(10);
    let mut rest = args;
    while let Some((arg, tail)) = rest.split_first() {
        rest = tail;
        let (kind, value) = match arg.as_str() {
            "-n" | "-c" => {
                let Some((value, tail)) = rest.split_first() else {
                    return Err(format!("option requires an argument -- {}", &arg[1..]));
                };
                rest = tail;
                (&arg[1..], value.as_str())
            }
            a if a.starts_with("-n") || a.starts_with("-c") => (&a[1..2], &a[2..]),
            a if a.len() > 1
                && a.starts_with('-')
                && a[1..].bytes().all(|b| b.is_ascii_digit()) =>
            {
                ("n", &a[1..])
            }
            a if a.starts_with('-') && a != "-" => {
                return Err(format!("option not supported by the fake: {a}"))
            }
            file => return Err(format!("{file}: No such file or directory")),
        };
        let n = value
            .parse::<u64>()
            .map_err(|_| format!("invalid number '{value}'"))?;
        count = if kind == "n" {
            Count::Lines(n)
        } else {
            Count::Bytes(n)
        };
    }
    Ok(count)
}

/// `sleep DURATION...`: the sum of the durations, each a non-negative decimal number of seconds with an
/// optional suffix `s`, `m`, `h` or `d`. Signals interrupt it like any command.
pub(super) async fn sleep(ctx: &mut Ctx<'_>, args: &[String]) -> Status {
    if args.is_empty() {
        ctx.output.err_line("sleep: missing operand").await?;
        return Ok(1);
    }
    let mut total = Duration::ZERO;
    for arg in args {
        match parse_duration(arg) {
            Some(duration) => total = total.saturating_add(duration),
            None => {
                ctx.output
                    .err_line(&format!("sleep: invalid number '{arg}'"))
                    .await?;
                return Ok(1);
            }
        }
    }
    tokio::time::sleep(total).await;
    Ok(0)
}

fn parse_duration(arg: &str) -> Option<Duration> {
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

/// `env [-i] [NAME=VALUE...] [COMMAND [ARG...]]`: prints the environment sorted as `NAME=VALUE` lines, or
/// runs a command with the changed environment.
pub(super) async fn env(ctx: &mut Ctx<'_>, args: &[String]) -> Status {
    let mut env = ctx.env.clone();
    let mut rest = args;
    if rest.first().is_some_and(|a| a == "-i" || a == "-") {
        env = BTreeMap::new();
        rest = &rest[1..];
    }
    while let Some((name, value)) = rest.first().and_then(|a| a.split_once('=')) {
        env.insert(name.to_owned(), value.to_owned());
        rest = &rest[1..];
    }
    if let Some(option) = rest.first().filter(|a| a.starts_with('-')) {
        ctx.output
            .err_line(&format!("env: option not supported by the fake: {option}"))
            .await?;
        return Ok(125);
    }
    let Some((name, args)) = rest.split_first() else {
        let listing: String = env.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        ctx.output.out(listing).await?;
        return Ok(0);
    };
    let fds = ctx.output.fds;
    let mut child = ctx.child(fds, env);
    match child.find(name, Search::PreferApplets) {
        Found::Command(command) => run_command(&mut child, command, args).await,
        Found::NotSimulated(path) => not_simulated(&mut child, &path).await,
        Found::Missing => {
            let message = format!("env: can't execute '{name}': No such file or directory");
            child.output.err_line(&message).await?;
            Ok(NOT_FOUND_STATUS)
        }
    }
}

/// `id [-ugGnr] [USER]`: `uid=0 gid=0` (the image has no `/etc/passwd`, so no id has a name and no
/// user can be named).
pub(super) async fn id(ctx: &mut Ctx<'_>, args: &[String]) -> Status {
    let (user, group) = (ctx.identity.user, ctx.identity.group);
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
                    return usage(ctx, ID_USAGE).await;
                }
                'u' | 'g' | 'G' => which = Some(flag),
                'n' => names = true,
                'r' => {}
                other => {
                    ctx.output
                        .err_line(&format!("id: invalid option -- '{other}'"))
                        .await?;
                    return usage(ctx, ID_USAGE).await;
                }
            }
        }
    }
    if let Some(name) = operands.first() {
        ctx.output
            .err_line(&format!("id: unknown user {name}"))
            .await?;
        return Ok(1);
    }
    let number = match which {
        None if names => return usage(ctx, ID_USAGE).await,
        None => {
            ctx.output.out(format!("uid={user} gid={group}\n")).await?;
            return Ok(0);
        }
        Some('u') => user,
        Some(_) => group,
    };
    ctx.output.out(format!("{number}\n")).await?;
    if names {
        ctx.output
            .err_line(&format!("id: unknown ID {number}"))
            .await?;
        return Ok(1);
    }
    Ok(0)
}

/// A usage text on stderr, and the status of bad options.
pub(super) async fn usage(ctx: &mut Ctx<'_>, text: &str) -> Status {
    ctx.output.err(text.as_bytes().to_vec()).await?;
    Ok(BAD_USAGE_STATUS)
}

/// `hostname [-s | -f]`: the instance's name. Setting it is not permitted in a container.
pub(super) async fn hostname(ctx: &mut Ctx<'_>, args: &[String]) -> Status {
    match args.first().map(String::as_str) {
        None | Some("-s" | "-f") => {
            let line = format!("{}\n", ctx.identity.hostname);
            ctx.output.out(line).await?;
            Ok(0)
        }
        Some("-d") => Ok(0),
        Some(option) if option.starts_with('-') && option.len() > 1 => {
            let flag = option.chars().nth(1).unwrap_or('-');
            ctx.output
                .err_line(&format!("hostname: invalid option -- '{flag}'"))
                .await?;
            usage(ctx, HOSTNAME_USAGE).await
        }
        Some(_) => {
            ctx.output
                .err_line("hostname: sethostname: Operation not permitted")
                .await?;
            Ok(1)
        }
    }
}

/// `init`: busybox's init refuses to run other than as process 1.
pub(super) async fn init(ctx: &mut Ctx<'_>) -> Status {
    ctx.output.err_line("init: must be run as PID 1").await?;
    Ok(1)
}

/// `busybox [APPLET [ARG...]]`, `busybox --list`: runs one of its applets by name.
pub(super) async fn busybox(ctx: &mut Ctx<'_>, args: &[String]) -> Status {
    let Some((name, args)) = args.split_first() else {
        ctx.output.out(BUSYBOX_HELP.as_bytes().to_vec()).await?;
        return Ok(0);
    };
    if name == "--list" {
        let list = BUSYBOX_HELP
            .split_once("Currently defined functions:")
            .map(|(_, list)| list)
            .unwrap_or_default();
        let names: String = list
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|n| !n.is_empty())
            .map(|n| format!("{n}\n"))
            .collect();
        ctx.output.out(names).await?;
        return Ok(0);
    }
    match busybox_applet(name) {
        Some(command) => run_command(ctx, command, args).await,
        None if is_real_applet(name) => not_simulated(ctx, name).await,
        None => {
            ctx.output
                .err_line(&format!("{name}: applet not found"))
                .await?;
            Ok(NOT_FOUND_STATUS)
        }
    }
}

/// `pwd`: the working directory of the request.
pub(super) async fn pwd(ctx: &mut Ctx<'_>) -> Status {
    let line = format!("{}\n", ctx.identity.cwd);
    ctx.output.out(line).await?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn head_counts_accept_the_usual_spellings() {
        assert_eq!(head_count(&args(&[])), Ok(Count::Lines(10)));
        assert_eq!(head_count(&args(&["-n", "3"])), Ok(Count::Lines(3)));
        assert_eq!(head_count(&args(&["-n3"])), Ok(Count::Lines(3)));
        assert_eq!(head_count(&args(&["-c", "5"])), Ok(Count::Bytes(5)));
        assert_eq!(head_count(&args(&["-c5"])), Ok(Count::Bytes(5)));
        assert_eq!(head_count(&args(&["-4"])), Ok(Count::Lines(4)));
        assert!(head_count(&args(&["-n", "x"])).is_err());
        assert!(head_count(&args(&["-c"])).is_err());
        assert!(head_count(&args(&["file"])).is_err());
    }

    #[test]
    fn sleep_durations_are_fractional_seconds_with_optional_units() {
        assert_eq!(parse_duration("1.5"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration(".25"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("1d"), Some(Duration::from_secs(86400)));
        assert_eq!(
            parse_duration("99999999999999999999999d"),
            Some(Duration::MAX)
        );
        for bad in ["", ".", "abc", "-1", "1e3", "1.2.3", "inf", "NaN", "1x"] {
            assert_eq!(parse_duration(bad), None, "{bad:?}");
        }
    }
}
