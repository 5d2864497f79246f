//! The commands that look at the instance's file system: `ls` (names only, from the image's
//! directories) and `dd` (from stdin, `/dev/zero` or `/dev/null`, to stdout or `/dev/null`). Messages
//! and formats follow busybox 1.35 as built in the reference image.

use bytes::Bytes;

use super::builtins::usage;
use super::rootfs::Entry;
use super::streams::{BrokenPipe, Status, CHUNK};
use super::Ctx;

const LS_USAGE: &str = include_str!("busybox/ls-usage.txt");
const DD_USAGE: &str = include_str!("busybox/dd-usage.txt");

/// `ls [-1aA] [FILE...]`: one name per line (standard output is never a terminal here), sorted. Several
/// operands: files first, then each directory under a `DIR:` heading, separated by blank lines.
pub(super) async fn ls(ctx: &mut Ctx<'_>, args: &[String]) -> Status {
    let mut all = false;
    let mut operands: Vec<&String> = Vec::new();
    let mut options_done = false;
    for arg in args {
        let flags = arg
            .strip_prefix('-')
            .filter(|f| !f.is_empty() && !options_done);
        let Some(flags) = flags else {
            operands.push(arg);
            continue;
        };
        if flags == "-" {
            options_done = true;
            continue;
        }
        for flag in flags.chars() {
            match flag {
                '1' | 'A' => {}
                'a' => all = true,
                other if LS_FLAGS.contains(other) => {
                    let message = format!("ls: option -{other} is not simulated by the fake");
                    ctx.output.err_line(&message).await?;
                    return Ok(2);
                }
                other => {
                    ctx.output
                        .err_line(&format!("ls: invalid option -- '{other}'"))
                        .await?;
                    return usage(ctx, LS_USAGE).await;
                }
            }
        }
    }
    let default = ".".to_string();
    if operands.is_empty() {
        operands.push(&default);
    }
    operands.sort();
    let rootfs = std::sync::Arc::clone(&ctx.identity.rootfs);
    let cwd = ctx.identity.cwd.clone();
    let mut status = 0;
    let mut files = String::new();
    let mut dirs = Vec::new();
    for operand in &operands {
        match rootfs.kind(&cwd, operand) {
            Entry::Missing => {
                let message = format!("ls: {operand}: No such file or directory");
                ctx.output.err_line(&message).await?;
                status = 1;
            }
            Entry::File => files.push_str(&format!("{operand}\n")),
            Entry::Dir => dirs.push(*operand),
        }
    }
    let headings = operands.len() > 1;
    let mut listing = files;
    for dir in dirs {
        if headings {
            if !listing.is_empty() {
                listing.push('\n');
            }
            listing.push_str(&format!("{dir}:\n"));
        }
        if all {
            listing.push_str(".\n..\n");
        }
        for name in rootfs.list(&cwd, dir).unwrap_or_default() {
            listing.push_str(&name);
            listing.push('\n');
        }
    }
    if !listing.is_empty() {
        ctx.output.out(listing).await?;
    }
    Ok(status)
}

/// The options of busybox's `ls` that the fake does not simulate.
const LS_FLAGS: &str = "CxdLHRFplinshrSXvctuw";

/// Where `dd` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Input {
    Stdin,
    Zero,
    Null,
}

/// Where `dd` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Output {
    Stdout,
    Stderr,
    Null,
}

/// The operands of `dd`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DdArgs {
    input: Input,
    output: Output,
    ibs: u64,
    obs: u64,
    count: Option<u64>,
    skip: u64,
    quiet: bool,
}

/// Why `dd` cannot start, and what it prints.
#[derive(Debug, Clone, PartialEq, Eq)]
enum DdError {
    Usage,
    Message(String),
}

/// `dd [if=F] [of=F] [bs=N] [ibs=N] [obs=N] [count=N] [skip=N] [status=none|noxfer]`: copies blocks and
/// prints `N+P records in` / `N+P records out` on stderr (this build has no byte-count line). Blocks from
/// stdin are read whole (as with `iflag=fullblock`), so the counts do not depend on how input arrives.
pub(super) async fn dd(ctx: &mut Ctx<'_>, args: &[String]) -> Status {
    let dd = match dd_args(ctx, args) {
        Ok(dd) => dd,
        Err(DdError::Usage) => return usage(ctx, DD_USAGE).await,
        Err(DdError::Message(message)) => {
            ctx.output.err_line(&format!("dd: {message}")).await?;
            return Ok(1);
        }
    };
    let mut skip = dd.skip.saturating_mul(dd.ibs);
    while skip > 0 && dd.input == Input::Stdin {
        let Some(block) = read_block(ctx, skip.min(CHUNK as u64)).await else {
            break;
        };
        skip -= block.len() as u64;
    }
    let (mut full_in, mut partial_in, mut total) = (0_u64, 0_u64, 0_u64);
    while dd.count.is_none_or(|count| full_in + partial_in < count) {
        let length = match dd.input {
            Input::Null => 0,
            Input::Zero => {
                write_zeros(ctx, dd.output, dd.ibs).await?;
                dd.ibs
            }
            Input::Stdin => {
                let mut length = 0;
                while length < dd.ibs {
                    let want = (dd.ibs - length).min(CHUNK as u64);
                    let Some(block) = read_block(ctx, want).await else {
                        break;
                    };
                    length += block.len() as u64;
                    write(ctx, dd.output, block).await?;
                }
                length
            }
        };
        if length == 0 {
            break;
        }
        total += length;
        if length == dd.ibs {
            full_in += 1;
        } else {
            partial_in += 1;
        }
    }
    let (full_out, partial_out) = if dd.ibs == dd.obs {
        (full_in, partial_in)
    } else {
        (total / dd.obs, u64::from(total % dd.obs != 0))
    };
    if !dd.quiet {
        let summary =
            format!("{full_in}+{partial_in} records in\n{full_out}+{partial_out} records out\n");
        ctx.output.err(summary.into_bytes()).await?;
    }
    Ok(0)
}

fn dd_args(ctx: &Ctx<'_>, args: &[String]) -> Result<DdArgs, DdError> {
    let mut dd = DdArgs {
        input: Input::Stdin,
        output: Output::Stdout,
        ibs: 512,
        obs: 512,
        count: None,
        skip: 0,
        quiet: false,
    };
    let mut bs = None;
    for arg in args {
        let Some((key, value)) = arg.split_once('=') else {
            return Err(DdError::Usage);
        };
        match key {
            "if" => dd.input = dd_input(ctx, value)?,
            "of" => dd.output = dd_output(value)?,
            "bs" => bs = Some(block_size(value)?),
            "ibs" => dd.ibs = block_size(value)?,
            "obs" => dd.obs = block_size(value)?,
            "count" => dd.count = Some(dd_number(value)?),
            "skip" => dd.skip = dd_number(value)?,
            "seek" => {
                return Err(DdError::Message(
                    "seek= is not simulated by the fake".into(),
                ))
            }
            "status" => match value {
                "none" => dd.quiet = true,
                "noxfer" | "progress" => {}
                _ => return Err(DdError::Message(format!("invalid status '{value}'"))),
            },
            "conv" | "iflag" | "oflag" => {
                for flag in value.split(',') {
                    let known = matches!(
                        (key, flag),
                        ("conv", "notrunc" | "noerror" | "fsync")
                            | ("iflag", "fullblock" | "direct")
                            | ("oflag", "direct" | "append")
                    );
                    if !known {
                        return Err(DdError::Message(format!(
                            "{key}={flag} is not simulated by the fake"
                        )));
                    }
                }
            }
            _ => return Err(DdError::Usage),
        }
    }
    if let Some(bs) = bs {
        dd.ibs = bs;
        dd.obs = bs;
    }
    Ok(dd)
}

fn dd_input(ctx: &Ctx<'_>, file: &str) -> Result<Input, DdError> {
    match file {
        "/dev/zero" => Ok(Input::Zero),
        "/dev/null" => Ok(Input::Null),
        "/dev/stdin" | "-" => Ok(Input::Stdin),
        _ => match ctx.identity.rootfs.kind(&ctx.identity.cwd, file) {
            Entry::Missing => Err(DdError::Message(format!(
                "can't open '{file}': No such file or directory"
            ))),
            Entry::Dir => Err(DdError::Message(format!("{file}: Is a directory"))),
            Entry::File => Err(DdError::Message(format!(
                "reading '{file}' is not simulated by the fake"
            ))),
        },
    }
}

fn dd_output(file: &str) -> Result<Output, DdError> {
    match file {
        "/dev/null" => Ok(Output::Null),
        "/dev/stdout" | "-" => Ok(Output::Stdout),
        "/dev/stderr" => Ok(Output::Stderr),
        _ => Err(DdError::Message(format!(
            "writing '{file}' is not simulated by the fake"
        ))),
    }
}

/// A count: a decimal number with busybox's suffixes (`c` 1, `w` 2, `b` 512, `kB` 1000, `k` 1024,
/// `MB`, `M`, `GB`, `G`).
fn dd_number(value: &str) -> Result<u64, DdError> {
    const SUFFIXES: &[(&str, u64)] = &[
        ("kB", 1000),
        ("MB", 1000 * 1000),
        ("GB", 1000 * 1000 * 1000),
        ("c", 1),
        ("w", 2),
        ("b", 512),
        ("k", 1024),
        ("K", 1024),
        ("M", 1024 * 1024),
        ("G", 1024 * 1024 * 1024),
    ];
    let invalid = || DdError::Message(format!("invalid number '{value}'"));
    let (digits, factor) = SUFFIXES
        .iter()
        .find_map(|(suffix, factor)| value.strip_suffix(suffix).map(|d| (d, *factor)))
        .unwrap_or((value, 1));
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(factor))
        .ok_or_else(invalid)
}

/// A block size: a count of at least 1 byte (busybox refuses 0 as an invalid number).
fn block_size(value: &str) -> Result<u64, DdError> {
    match dd_number(value)? {
        0 => Err(DdError::Message(format!("invalid number '{value}'"))),
        size => Ok(size),
    }
}

/// At most `want` bytes of stdin; `None` at end of input.
async fn read_block(ctx: &mut Ctx<'_>, want: u64) -> Option<Bytes> {
    let mut chunk = ctx.stdin.next_chunk().await?;
    let take = chunk.len().min(usize::try_from(want).unwrap_or(usize::MAX));
    let rest = chunk.split_off(take);
    ctx.stdin.unread(rest);
    Some(chunk)
}

async fn write(ctx: &mut Ctx<'_>, output: Output, bytes: Bytes) -> Result<(), BrokenPipe> {
    match output {
        Output::Stdout => ctx.output.out(bytes).await,
        Output::Stderr => ctx.output.err(bytes).await,
        Output::Null => Ok(()),
    }
}

/// One block of zeros, in chunks of at most [`CHUNK`] bytes.
async fn write_zeros(ctx: &mut Ctx<'_>, output: Output, length: u64) -> Result<(), BrokenPipe> {
    static ZEROS: [u8; CHUNK] = [0; CHUNK];
    let mut left = length;
    while left > 0 {
        // Writes to /dev/null never wait: give the runtime (and the signal watcher) a turn.
        tokio::task::consume_budget().await;
        let n = left.min(CHUNK as u64);
        let n_bytes = usize::try_from(n).unwrap_or(CHUNK);
        write(ctx, output, Bytes::from_static(&ZEROS[..n_bytes])).await?;
        left -= n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dd_numbers_take_busyboxs_suffixes() {
        assert_eq!(dd_number("12"), Ok(12));
        assert_eq!(dd_number("2w"), Ok(4));
        assert_eq!(dd_number("1b"), Ok(512));
        assert_eq!(dd_number("1kB"), Ok(1000));
        assert_eq!(dd_number("1k"), Ok(1024));
        assert_eq!(dd_number("2M"), Ok(2 << 20));
        assert_eq!(dd_number("1GB"), Ok(1_000_000_000));
        for bad in ["", "x", "1x", "-1", "k", "99999999999999999999G"] {
            assert!(dd_number(bad).is_err(), "{bad}");
        }
        assert!(block_size("0").is_err());
    }
}
