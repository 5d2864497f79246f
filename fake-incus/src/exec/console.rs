//! Console sessions (`POST /1.0/instances/{name}/console`, type `console`), as the daemon runs
//! them for a container: a websocket operation with fds `0` (the terminal) and `control`. It
//! starts once `0` is attached (the daemon waits for it without a limit; `control` may come
//! before or after) and ends, successfully, when either socket closes (`incus console` detaches
//! by closing `control`), or when the operation is cancelled (a forced console takes over).
//! Control messages are recorded in the journal on the socket's upgrade entry; `window-resize`
//! is the only one the daemon acts on (it sizes the console).
//!
//! What answers on the console is what the image's init runs there ([`ConsoleProgram`]): busybox's
//! init reads `/etc/inittab`, and the busybox image's runs only `sleep` (nothing answers: the
//! terminal echoes what is typed), while an inittab with a `respawn` or `askfirst` shell on the
//! console gets an interactive `ash` ([`interpreter::interactive`]) over the instance's files.
//! Every newline leaving the console reaches the client as `\r\r\r\n`, as measured on the daemon
//! (the console's pty layers each add their carriage return).

use super::sockets::{writer, Out};
use super::{interpreter, Exec, ExecRequest, Socket, Ws};
use crate::journal::{ControlMessage, Journal};
use bytes::Bytes;
use futures_util::stream::SplitStream;
use futures_util::StreamExt;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

/// What the instance's init runs on its console.
pub(crate) enum ConsoleProgram {
    /// Nothing reads the console: the terminal only echoes what is typed.
    Echo,
    /// A shell: respawned when it ends; `ask_first` (`askfirst`) waits for Enter before each start.
    Shell { req: ExecRequest, ask_first: bool },
}

/// busybox init's `askfirst` message.
const ASK_FIRST: &str = "\nPlease press Enter to activate this console. ";

impl ConsoleProgram {
    /// What busybox's init runs on the console for this `/etc/inittab` (`None`: no inittab, as
    /// an image without one; init then runs nothing there either). `req` is the shell's start.
    pub(crate) fn from_inittab(inittab: Option<&str>, req: ExecRequest) -> Self {
        let entry = inittab.into_iter().flat_map(str::lines).find_map(|line| {
            let mut fields = line.splitn(4, ':');
            let (id, _runlevels, action, process) = (
                fields.next()?,
                fields.next()?,
                fields.next()?,
                fields.next()?,
            );
            let on_console = matches!(id.trim(), "" | "console" | "/dev/console");
            let program = process.trim().trim_start_matches('-');
            let name = program.split_whitespace().next()?.rsplit('/').next()?;
            let shell = matches!(name, "sh" | "ash");
            (on_console && shell && !line.trim_start().starts_with('#'))
                .then_some(action.trim())
                .filter(|action| matches!(*action, "respawn" | "askfirst"))
                .map(|action| action == "askfirst")
        });
        match entry {
            Some(ask_first) => ConsoleProgram::Shell { req, ask_first },
            None => ConsoleProgram::Echo,
        }
    }

    /// Runs on the console until `input` ends: reads what is typed, writes what is shown.
    async fn run(self, mut input: mpsc::Receiver<Bytes>, output: mpsc::Sender<Bytes>) {
        match self {
            ConsoleProgram::Echo => {
                while let Some(typed) = input.recv().await {
                    if output.send(terminal_echo(&typed)).await.is_err() {
                        return;
                    }
                }
            }
            ConsoleProgram::Shell { req, ask_first } => {
                let mut prompted = true;
                loop {
                    if ask_first && !wait_for_enter(&mut input, &output).await {
                        return;
                    }
                    let (shell_in, stdin) = mpsc::channel(16);
                    let (_signals_tx, signals) = mpsc::unbounded_channel();
                    let io = interpreter::ExecIo {
                        stdin,
                        stdout: output.clone(),
                        stderr: output.clone(),
                        signals,
                    };
                    let shell = tokio::spawn(interpreter::interactive(
                        req.clone(),
                        io,
                        prompted && !ask_first,
                    ));
                    prompted = false;
                    let aborter = shell.abort_handle();
                    tokio::pin!(shell);
                    let ended = loop {
                        tokio::select! {
                            _ = &mut shell => break false,
                            typed = input.recv() => match typed {
                                Some(typed) => { let _ = shell_in.send(typed).await; }
                                None => break true,
                            },
                        }
                    };
                    if ended {
                        aborter.abort();
                        return;
                    }
                }
            }
        }
    }
}

/// `askfirst`: the message, then what is typed is dropped until Enter. `false` when the input ends.
async fn wait_for_enter(input: &mut mpsc::Receiver<Bytes>, output: &mpsc::Sender<Bytes>) -> bool {
    if output
        .send(Bytes::from_static(ASK_FIRST.as_bytes()))
        .await
        .is_err()
    {
        return false;
    }
    while let Some(typed) = input.recv().await {
        if typed.iter().any(|b| matches!(b, b'\r' | b'\n')) {
            return true;
        }
    }
    false
}

/// What a terminal in canonical mode echoes: Enter as a newline, erase as `BS SP BS`, other
/// control characters as `^X`, the rest as typed.
fn terminal_echo(typed: &[u8]) -> Bytes {
    let mut shown = Vec::with_capacity(typed.len());
    for &byte in typed {
        match byte {
            b'\r' | b'\n' => shown.push(b'\n'),
            0x7f | 0x08 => shown.extend_from_slice(b"\x08 \x08"),
            b'\t' => shown.push(b'\t'),
            control if control < 0x20 => shown.extend_from_slice(&[b'^', control + 0x40]),
            other => shown.push(other),
        }
    }
    Bytes::from(shown)
}

/// Newlines as they reach the client from the console.
fn console_newlines(chunk: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(chunk.len() + 8);
    for &byte in chunk {
        if byte == b'\n' {
            out.extend_from_slice(b"\r\r\r\n");
        } else {
            out.push(byte);
        }
    }
    Bytes::from(out)
}

impl Exec {
    /// Registers the console session of operation `op_id` and starts it; returns the fds and
    /// their secrets.
    pub(crate) fn start_console_session(
        self: &Arc<Self>,
        op_id: &str,
        program: ConsoleProgram,
    ) -> serde_json::Value {
        let (fds, sockets) = self.register(op_id, &["0", "control"]);
        let exec = Arc::clone(self);
        let id = op_id.to_string();
        tokio::spawn(async move {
            run(&exec, &id, sockets, program).await;
            exec.sessions().remove(&id);
        });
        fds
    }
}

/// One console session, from its sockets' connection to the operation's end.
async fn run(
    exec: &Arc<Exec>,
    op_id: &str,
    mut sockets: mpsc::UnboundedReceiver<Socket>,
    program: ConsoleProgram,
) {
    let Some(cancelled) = exec
        .operations
        .ops()
        .get(op_id)
        .map(|op| op.cancelled.clone())
    else {
        return;
    };
    let done = exec.operations.shutdown.child_token();
    let detached = done.child_token();
    let (typed_tx, typed) = mpsc::channel(16);
    let mut typed_tx = Some(typed_tx);
    let mut console: Option<tokio::task::JoinHandle<()>> = None;
    let mut program = Some((program, typed));
    loop {
        tokio::select! {
            Some((fd, ws, seq)) = sockets.recv() => {
                let terminal = attach(exec, &fd, ws, seq, &done, &detached, &mut typed_tx);
                // The session's `0` attaches once (a second is dropped when it connects).
                if let Some((program, typed)) = program.take_if(|_| fd == "0") {
                    console = Some(tokio::spawn(show(program, typed, terminal)));
                }
            }
            () = detached.cancelled() => break,
            () = cancelled.notified() => {
                done.cancel();
                if let Some(console) = console {
                    console.abort();
                }
                return;
            }
            () = done.cancelled() => return,
        }
    }
    if let Some(console) = console {
        console.abort();
    }
    exec.operations.finish_operation(op_id, Ok(None));
    done.cancel();
}

/// Runs the console's program with its output sent to the terminal socket.
async fn show(program: ConsoleProgram, typed: mpsc::Receiver<Bytes>, terminal: mpsc::Sender<Out>) {
    let (output, mut shown) = mpsc::channel::<Bytes>(16);
    let pump = async move {
        while let Some(chunk) = shown.recv().await {
            if terminal
                .send(Out::Data(console_newlines(&chunk)))
                .await
                .is_err()
            {
                return;
            }
        }
    };
    futures_util::future::join(program.run(typed, output), pump).await;
}

/// Starts the writer and reader of a newly connected socket; returns the writer's queue. A
/// second socket for a fd already attached is closed at once (the session keeps the first).
fn attach(
    exec: &Arc<Exec>,
    fd: &str,
    ws: Ws,
    seq: u64,
    done: &CancellationToken,
    detached: &CancellationToken,
    typed: &mut Option<mpsc::Sender<Bytes>>,
) -> mpsc::Sender<Out> {
    let (sink, stream) = ws.split();
    let (out_tx, out_rx) = mpsc::channel(16);
    let (stream_back, stream_given) = oneshot::channel();
    let closer = done.child_token();
    tokio::spawn(writer(
        sink,
        out_rx,
        closer.clone(),
        stream_given,
        exec.operations.shutdown.clone(),
    ));
    let reader = ConsoleReader {
        fd: fd.to_owned(),
        journal: exec.journal.clone(),
        seq,
        typed: if fd == "0" { typed.take() } else { None },
        closer,
        detached: detached.clone(),
    };
    tokio::spawn(async move {
        let _ = stream_back.send(reader.run(stream).await);
    });
    out_tx
}

/// Reads what the client sends on one console socket.
struct ConsoleReader {
    fd: String,
    journal: Journal,
    seq: u64,
    /// Where typed bytes go (fd `0`).
    typed: Option<mpsc::Sender<Bytes>>,
    closer: CancellationToken,
    /// Cancelled when the client goes away from either socket.
    detached: CancellationToken,
}

impl ConsoleReader {
    /// Reads until the socket ends; gives the stream half back for the close.
    async fn run(self, mut stream: SplitStream<Ws>) -> SplitStream<Ws> {
        loop {
            let msg = tokio::select! {
                msg = stream.next() => msg,
                () = self.closer.cancelled() => break,
            };
            match msg {
                Some(Ok(Message::Binary(data))) => {
                    if let Some(typed) = &self.typed {
                        let _ = typed.send(data).await;
                    }
                }
                Some(Ok(Message::Text(text))) if self.fd == "control" => {
                    self.journal.add_control_message(
                        self.seq,
                        ControlMessage::new(text.as_str(), None, false),
                    );
                }
                Some(Ok(Message::Text(text))) => {
                    if let Some(typed) = &self.typed {
                        let _ = typed.send(Bytes::copy_from_slice(text.as_bytes())).await;
                    }
                }
                Some(Ok(Message::Close(_)) | Err(_)) | None => {
                    self.detached.cancel();
                    break;
                }
                Some(Ok(_)) => {}
            }
        }
        stream
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ExecRequest {
        ExecRequest {
            command: vec!["/bin/sh".into()],
            environment: Default::default(),
            user: 0,
            group: 0,
            cwd: "/".into(),
            fs: interpreter::MemoryFs::busybox(),
            hostname: "c1".into(),
        }
    }

    #[test]
    fn the_busybox_images_inittab_runs_nothing_on_the_console() {
        let inittab = "::sysinit:/bin/true\n::respawn:/bin/sleep 100000\n";
        assert!(matches!(
            ConsoleProgram::from_inittab(Some(inittab), request()),
            ConsoleProgram::Echo
        ));
        assert!(matches!(
            ConsoleProgram::from_inittab(None, request()),
            ConsoleProgram::Echo
        ));
    }

    #[test]
    fn a_respawned_or_askfirst_shell_on_the_console_answers() {
        for (inittab, ask) in [
            ("::respawn:-/bin/sh\n", false),
            ("console::askfirst:-/bin/ash\n", true),
        ] {
            match ConsoleProgram::from_inittab(Some(inittab), request()) {
                ConsoleProgram::Shell { ask_first, .. } => assert_eq!(ask_first, ask, "{inittab}"),
                ConsoleProgram::Echo => panic!("{inittab}: a shell runs on the console"),
            }
        }
        assert!(
            matches!(
                ConsoleProgram::from_inittab(
                    Some("tty2::respawn:/bin/sh\n#::respawn:/bin/sh\n"),
                    request()
                ),
                ConsoleProgram::Echo
            ),
            "another terminal's or a commented-out entry is not the console's"
        );
    }

    #[test]
    fn the_terminal_echoes_enter_as_a_newline_and_control_characters_as_carets() {
        assert_eq!(&terminal_echo(b"ab\r\x03\x7f")[..], b"ab\n^C\x08 \x08");
        assert_eq!(&console_newlines(b"hi\n")[..], b"hi\r\r\r\n");
    }
}
