//! Pipelines `a | b | c` in a shell script: every command runs at the same time, each one's stdout
//! feeding the next one's stdin through a bounded channel, so memory stays bounded whatever flows.
//!
//! When a reader ends, its end of the pipe is dropped: the writer's next write fails and it ends with
//! 141 (128+SIGPIPE), as a real process killed by a broken pipe. The pipeline's status is the last
//! command's.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;

use bytes::Bytes;
use futures_util::future::join_all;
use tokio::sync::mpsc::{self, Receiver, Sender};

use super::shell::{redirect, run_piped};
use super::streams::{Fds, Output, Sink, Status, Stdin, Streams};
use super::syntax::Command;
use super::{BoxedStatus, Ctx, Identity, BROKEN_PIPE_STATUS};

/// How many chunks (of at most 32 KiB) a pipe holds before its writer waits.
const PIPE_CHUNKS: usize = 4;

/// One command of a pipeline: its expanded words and its redirections.
pub(super) struct Stage<'s> {
    pub(super) argv: Vec<String>,
    pub(super) command: &'s Command,
}

/// What every command of the pipeline inherits from the shell.
struct Inherited<'a> {
    env: &'a BTreeMap<String, String>,
    identity: &'a Identity,
    ignoring_signals: &'a AtomicBool,
    depth: usize,
    /// `$?` before the pipeline, for a bare `exit`.
    last_status: i32,
}

/// Where a command of the pipeline reads: the shell's stdin (first command) or the previous pipe.
enum Input<'a> {
    Shell(&'a mut Stdin),
    Pipe(Receiver<Bytes>),
}

/// Runs the commands together and returns the last one's status. A broken pipe on the last command's
/// output ends the whole program, as for any command of the shell.
pub(super) async fn run(ctx: &mut Ctx<'_>, stages: Vec<Stage<'_>>, last_status: i32) -> Status {
    let inherited = Inherited {
        env: &ctx.env,
        identity: &ctx.identity,
        ignoring_signals: ctx.ignoring_signals,
        depth: ctx.depth,
        last_status,
    };
    let output = ctx.output;
    let (senders, receivers): (Vec<_>, Vec<_>) = (1..stages.len())
        .map(|_| mpsc::channel(PIPE_CHUNKS))
        .unzip();
    let inputs = std::iter::once(Input::Shell(&mut *ctx.stdin))
        .chain(receivers.into_iter().map(Input::Pipe));
    let pipes = senders.into_iter().map(Some).chain(std::iter::once(None));
    let last = stages.len().saturating_sub(1);
    let running: Vec<BoxedStatus<'_>> = stages
        .iter()
        .zip(inputs)
        .zip(pipes)
        .enumerate()
        .map(|(index, ((stage, input), pipe))| {
            let (streams, base) = stage_streams(output, pipe);
            let fds = redirect(base, stage.command);
            let argv = stage.argv.as_slice();
            let inherited = &inherited;
            Box::pin(async move {
                let status = run_stage(input, streams, fds, inherited, argv).await;
                if index == last {
                    status
                } else {
                    Ok(status.unwrap_or(BROKEN_PIPE_STATUS))
                }
            }) as BoxedStatus<'_>
        })
        .collect();
    join_all(running).await.pop().unwrap_or(Ok(0))
}

/// A command's own output channels and descriptors: fd 1 is the pipe to the next command (or the
/// shell's fd 1 for the last one), fd 2 the shell's fd 2. A descriptor the shell sends to `/dev/null`
/// stays null; its channel is then a placeholder clone that is never written to.
fn stage_streams(shell: Output<'_>, pipe: Option<Sender<Bytes>>) -> (Streams, Fds) {
    let sender = |sink: Sink| match sink {
        Sink::Stdout => Some(shell.streams.stdout.clone()),
        Sink::Stderr => Some(shell.streams.stderr.clone()),
        Sink::Null => None,
    };
    let out = pipe.or_else(|| sender(shell.fds.out));
    let err = sender(shell.fds.err);
    let fds = Fds {
        out: if out.is_some() {
            Sink::Stdout
        } else {
            Sink::Null
        },
        err: if err.is_some() {
            Sink::Stderr
        } else {
            Sink::Null
        },
    };
    let placeholder = || shell.streams.stderr.clone();
    let streams = Streams {
        stdout: out.unwrap_or_else(placeholder),
        stderr: err.unwrap_or_else(placeholder),
    };
    (streams, fds)
}

/// Runs one command; its streams and its end of the input pipe are dropped when it ends, which is what
/// its neighbours see as end of input or a broken pipe.
async fn run_stage(
    input: Input<'_>,
    streams: Streams,
    fds: Fds,
    inherited: &Inherited<'_>,
    argv: &[String],
) -> Status {
    let mut piped;
    let stdin = match input {
        Input::Shell(stdin) => stdin,
        Input::Pipe(receiver) => {
            piped = Stdin::new(receiver);
            &mut piped
        }
    };
    let mut ctx = Ctx {
        stdin,
        output: Output {
            streams: &streams,
            fds,
        },
        env: inherited.env.clone(),
        identity: inherited.identity.clone(),
        ignoring_signals: inherited.ignoring_signals,
        depth: inherited.depth,
    };
    run_piped(&mut ctx, argv, inherited.last_status).await
}
