//! Commands that exist only in the fake, for testing clients: they flood output, emit raw bytes, ignore
//! signals or never exit. All are named `fake-…` so they cannot be mistaken for real programs.

use std::sync::atomic::Ordering;

use bytes::Bytes;

use crate::io::CHUNK;
use crate::shell::{Boxed, Search, Shell, Status};

/// A test command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FakeCommand {
    Flood,
    Bytes,
    Hang,
    IgnoreSignals,
}

/// The test command of that name.
pub(crate) fn find(name: &str) -> Option<FakeCommand> {
    Some(match name {
        "fake-flood" => FakeCommand::Flood,
        "fake-bytes" => FakeCommand::Bytes,
        "fake-hang" => FakeCommand::Hang,
        "fake-ignore-signals" => FakeCommand::IgnoreSignals,
        _ => return None,
    })
}

impl FakeCommand {
    pub(crate) fn run<'a>(self, process: &'a mut Shell, args: &'a [String]) -> Boxed<'a, Status> {
        Box::pin(async move {
            match self {
                FakeCommand::Flood => flood(process, args).await,
                FakeCommand::Bytes => bytes(process, args).await,
                FakeCommand::Hang => hang().await,
                FakeCommand::IgnoreSignals => ignore_signals(process, args).await,
            }
        })
    }
}

/// Exit status for a test command used wrongly.
const USAGE_STATUS: i32 = 2;

/// Which output descriptor a test command writes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    Stdout,
    Stderr,
}

fn stream(name: &str) -> Option<Stream> {
    match name {
        "stdout" => Some(Stream::Stdout),
        "stderr" => Some(Stream::Stderr),
        _ => None,
    }
}

/// How many bytes `fake-flood` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Amount {
    Bytes(u64),
    Forever,
}

/// `fake-flood stdout|stderr N|forever [BYTE]`: writes N copies of BYTE (a single character, or `0xHH`;
/// default `x`) in chunks of 32 KiB, never holding more than one chunk.
async fn flood(ctx: &mut Shell, args: &[String]) -> Status {
    let Some((target, amount, byte)) = flood_args(args) else {
        let usage = "fake-flood: usage: fake-flood stdout|stderr N|forever [BYTE]";
        ctx.err_line(usage).await?;
        return Ok(USAGE_STATUS);
    };
    let chunk = Bytes::from(vec![byte; CHUNK]);
    let mut left = amount;
    loop {
        let size = match left {
            Amount::Forever => CHUNK,
            Amount::Bytes(0) => return Ok(0),
            Amount::Bytes(n) => {
                let size = usize::try_from(n).unwrap_or(CHUNK).min(CHUNK);
                left = Amount::Bytes(n - size as u64);
                size
            }
        };
        // Writes to /dev/null never wait: give the runtime (and the signal watcher) a turn.
        tokio::task::consume_budget().await;
        let piece = chunk.slice(..size);
        match target {
            Stream::Stdout => ctx.out(piece).await?,
            Stream::Stderr => ctx.err(piece).await?,
        }
    }
}

fn flood_args(args: &[String]) -> Option<(Stream, Amount, u8)> {
    let (target, amount, byte) = match args {
        [target, amount] => (target, amount, None),
        [target, amount, byte] => (target, amount, Some(byte)),
        _ => return None,
    };
    let amount = match amount.as_str() {
        "forever" => Amount::Forever,
        n => Amount::Bytes(n.parse().ok()?),
    };
    let byte = match byte.map(String::as_str) {
        None => b'x',
        Some(hex) if hex.len() == 4 && hex.starts_with("0x") => {
            u8::from_str_radix(&hex[2..], 16).ok()?
        }
        Some(single) if single.len() == 1 => single.as_bytes()[0],
        Some(_) => return None,
    };
    Some((stream(target)?, amount, byte))
}

/// `fake-bytes stdout|stderr HEX...`: writes the bytes spelled by the hexadecimal arguments (any bytes,
/// e.g. invalid UTF-8 such as `ff fe`), concatenated, in one write.
async fn bytes(ctx: &mut Shell, args: &[String]) -> Status {
    let decoded = args.split_first().and_then(|(target, hex)| {
        let pieces: Option<Vec<Vec<u8>>> = hex.iter().map(|h| hex::decode(h).ok()).collect();
        Some((stream(target)?, pieces?.concat()))
    });
    let Some((target, bytes)) = decoded else {
        let usage = "fake-bytes: usage: fake-bytes stdout|stderr HEX...";
        ctx.err_line(usage).await?;
        return Ok(USAGE_STATUS);
    };
    match target {
        Stream::Stdout => ctx.out(bytes).await?,
        Stream::Stderr => ctx.err(bytes).await?,
    }
    Ok(0)
}

/// `fake-hang`: never exits and reads nothing; only a signal ends it.
async fn hang() -> Status {
    std::future::pending().await
}

/// `fake-ignore-signals COMMAND [ARG...]`: runs the command while every signal except SIGKILL is
/// ignored, for the rest of the program (like `trap '' …` in a shell).
async fn ignore_signals(ctx: &mut Shell, args: &[String]) -> Status {
    if args.is_empty() {
        let usage = "fake-ignore-signals: usage: fake-ignore-signals COMMAND [ARG...]";
        ctx.err_line(usage).await?;
        return Ok(USAGE_STATUS);
    }
    ctx.m.ignoring.store(true, Ordering::SeqCst);
    ctx.run_argv(args, Search::Program).await
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (commands that exist only in the fake, for
    //! testing clients); a command run through the fake's exec goes in fake-incus's tests.

    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flood_arguments_name_the_stream_the_amount_and_the_byte() {
        assert_eq!(
            flood_args(&args(&["stdout", "10"])),
            Some((Stream::Stdout, Amount::Bytes(10), b'x'))
        );
        assert_eq!(
            flood_args(&args(&["stderr", "forever", "0xff"])),
            Some((Stream::Stderr, Amount::Forever, 0xff))
        );
        assert_eq!(
            flood_args(&args(&["stdout", "1", "y"])),
            Some((Stream::Stdout, Amount::Bytes(1), b'y'))
        );
        for bad in [
            &["stdin", "1"][..],
            &["stdout", "-1"],
            &["stdout", "1", "yy"],
            &["stdout"],
        ] {
            assert_eq!(flood_args(&args(bad)), None, "{bad:?}");
        }
    }
}
