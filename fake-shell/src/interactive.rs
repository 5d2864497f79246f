//! `ash` reading a terminal, as busybox's shell runs on a console: it prints its prompt, edits the
//! line the user types (echoing it, as its line editing does), and runs each line in the same
//! shell, so `cd` and variables last from one line to the next. It ends with `exit` or with
//! Ctrl-D on an empty line.
//!
//! What is simplified: a line is one complete command (no `PS2` continuation), a command's stdin is
//! empty (what is typed while it runs waits for the next prompt), Ctrl-C cancels the line being
//! typed, and escape sequences the terminal sends (the answer to the cursor query of the prompt,
//! arrow keys) are dropped.

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::io::{input_of, Fds, Sink};
use crate::shell::{Shell, Stop, USAGE_STATUS};
use crate::{first_process, syntax, ExecIo, ExecRequest};

/// What busybox's line editing sends after the prompt: a cursor position query (`ESC [ 6 n`).
pub const PROMPT_QUERY: &str = "\x1b[6n";

/// A typed line longer than this is cut (busybox's line editing keeps at most this much too).
const MAX_LINE: usize = 4096;

/// Runs an interactive `ash` on a terminal whose input is `io.stdin` and output `io.stdout` (what
/// it echoes, prompts and what commands print; `io.stderr` gets their errors). Returns the
/// shell's exit status. `req.command` is not used: the shell is the program. `prompted`: the
/// terminal already shows the prompt (a console attached to a shell that waits for input), so the
/// first one is not printed again.
pub async fn interactive(req: ExecRequest, io: ExecIo, prompted: bool) -> i32 {
    let ExecIo {
        mut stdin,
        stdout,
        stderr,
        signals: _,
    } = io;
    let fds = Fds::standard(
        input_of(Bytes::new()),
        Sink::Chan(stdout.clone()),
        Sink::Chan(stderr),
    );
    let (mut shell, _killed) = first_process(&req, fds);
    let mut editor = LineEditor::default();
    let mut show_prompt = !prompted;
    loop {
        let prompt = format!("{}{PROMPT_QUERY}", prompt(&shell));
        if show_prompt && stdout.send(Bytes::from(prompt)).await.is_err() {
            return shell.status;
        }
        show_prompt = true;
        let Some(line) = editor.read_line(&mut stdin, &stdout).await else {
            return shell.status;
        };
        if run_line(&mut shell, &line).await.is_err() {
            return shell.status;
        }
    }
}

/// busybox's default prompt for `ash`, `\w \$ `: the directory (`~` for `HOME` unless `HOME` is
/// `/`), then `#` for root and `$` for anyone else.
fn prompt(shell: &Shell) -> String {
    let home = shell.var("HOME").unwrap_or_default();
    let cwd = shell.cwd.as_str();
    let shown = match cwd.strip_prefix(home) {
        Some(rest) if home.len() > 1 && (rest.is_empty() || rest.starts_with('/')) => {
            format!("~{rest}")
        }
        _ => cwd.to_owned(),
    };
    let mark = if shell.m.user == 0 { '#' } else { '$' };
    format!("{shown} {mark} ")
}

/// Runs one typed line; `Err` when the shell ends (`exit`, or its output is gone).
async fn run_line(shell: &mut Shell, line: &str) -> Result<(), Stop> {
    if line.trim().is_empty() {
        return Ok(());
    }
    let list = match syntax::parse(line) {
        Ok(list) => list,
        Err(error) => {
            shell
                .err_line(&format!("sh: syntax error: {error}"))
                .await?;
            shell.status = USAGE_STATUS;
            return Ok(());
        }
    };
    shell.line = 1;
    match shell.run_list(&list).await {
        Ok(()) | Err(Stop::Return | Stop::Break(_) | Stop::Continue(_)) => Ok(()),
        Err(stop @ (Stop::Exit | Stop::BrokenPipe)) => Err(stop),
    }
}

/// The line being typed, and what was typed after it.
#[derive(Default)]
struct LineEditor {
    pending: Vec<u8>,
}

/// Ctrl-C, Ctrl-D, backspace (BS and DEL), escape.
const INTR: u8 = 0x03;
const EOF: u8 = 0x04;
const BS: u8 = 0x08;
const DEL: u8 = 0x7f;
const ESC: u8 = 0x1b;

impl LineEditor {
    /// Reads and echoes one line; `None` at end of input or Ctrl-D on an empty line.
    async fn read_line(
        &mut self,
        input: &mut mpsc::Receiver<Bytes>,
        echo: &mpsc::Sender<Bytes>,
    ) -> Option<String> {
        let mut line: Vec<u8> = Vec::new();
        loop {
            if self.pending.is_empty() {
                self.pending = input.recv().await?.to_vec();
                continue;
            }
            let byte = self.pending.remove(0);
            let shown: &[u8] = match byte {
                b'\r' | b'\n' => {
                    echo.send(Bytes::from_static(b"\n")).await.ok()?;
                    return Some(String::from_utf8_lossy(&line).into_owned());
                }
                INTR => {
                    line.clear();
                    echo.send(Bytes::from_static(b"^C\n")).await.ok()?;
                    return Some(String::new());
                }
                EOF if line.is_empty() => return None,
                BS | DEL => match line.pop() {
                    Some(_) => b"\x08 \x08",
                    None => b"",
                },
                ESC => {
                    self.drop_escape_sequence();
                    b""
                }
                byte if byte >= 0x20 || byte == b'\t' => {
                    if line.len() >= MAX_LINE {
                        continue;
                    }
                    line.push(byte);
                    &[byte][..]
                }
                _ => b"",
            };
            if !shown.is_empty() {
                echo.send(Bytes::copy_from_slice(shown)).await.ok()?;
            }
        }
    }

    /// Drops the rest of an escape sequence (`ESC [ … final`, `ESC O x`, or `ESC x`) from what
    /// was typed.
    fn drop_escape_sequence(&mut self) {
        let end = match self.pending.first() {
            Some(b'[') => self
                .pending
                .iter()
                .skip(1)
                .position(|b| (0x40..=0x7e).contains(b))
                .map_or(self.pending.len(), |i| i + 2),
            Some(b'O') => 2.min(self.pending.len()),
            Some(_) => 1,
            None => 0,
        };
        self.pending.drain(..end);
    }
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (`ash` reading a terminal, as busybox's
    //! shell runs on a console); a command run through the fake's exec goes in fake-incus's tests.

    use super::*;
    use crate::MemoryFs;
    use std::collections::BTreeMap;

    fn request() -> ExecRequest {
        ExecRequest {
            command: Vec::new(),
            environment: BTreeMap::from([("HOME".to_owned(), "/".to_owned())]),
            user: 0,
            group: 0,
            cwd: "/".to_owned(),
            fs: MemoryFs::busybox(),
            hostname: "c1".to_owned(),
        }
    }

    /// Types `typed` into an interactive shell and returns everything it showed.
    async fn session(typed: &[&str]) -> (String, i32) {
        session_from(typed, false).await
    }

    async fn session_from(typed: &[&str], prompted: bool) -> (String, i32) {
        let (in_tx, stdin) = mpsc::channel(64);
        let (stdout, mut out_rx) = mpsc::channel(64);
        let (stderr, mut err_rx) = mpsc::channel(64);
        let (_signal_tx, signals) = mpsc::unbounded_channel();
        for chunk in typed {
            in_tx
                .send(Bytes::copy_from_slice(chunk.as_bytes()))
                .await
                .expect("the shell reads");
        }
        drop(in_tx);
        let io = ExecIo {
            stdin,
            stdout,
            stderr,
            signals,
        };
        let collect = async {
            let mut shown = Vec::new();
            let (mut out_open, mut err_open) = (true, true);
            while out_open || err_open {
                tokio::select! {
                    chunk = out_rx.recv(), if out_open => match chunk {
                        Some(chunk) => shown.extend_from_slice(&chunk),
                        None => out_open = false,
                    },
                    chunk = err_rx.recv(), if err_open => match chunk {
                        Some(chunk) => shown.extend_from_slice(&chunk),
                        None => err_open = false,
                    },
                }
            }
            String::from_utf8(shown).expect("utf-8")
        };
        let (status, shown) = tokio::join!(interactive(request(), io, prompted), collect);
        (shown, status)
    }

    #[tokio::test]
    async fn a_typed_line_is_echoed_run_and_followed_by_the_prompt() {
        let (shown, status) = session(&["echo hi-$((1+2))\r"]).await;
        assert_eq!(
            shown, "/ # \x1b[6necho hi-$((1+2))\nhi-3\n/ # \x1b[6n",
            "prompt, echo, output, prompt"
        );
        assert_eq!(
            status, 0,
            "end of input ends the shell with the last status"
        );
    }

    #[tokio::test]
    async fn the_shell_keeps_its_directory_and_variables_between_lines() {
        let (shown, _) = session(&["cd /tmp\r", "X=5\r", "echo $X $PWD\r", "exit 3\r"]).await;
        assert!(shown.contains("5 /tmp\n"), "{shown:?}");
        assert!(
            shown.contains("/tmp # "),
            "the prompt names the directory: {shown:?}"
        );
    }

    #[tokio::test]
    async fn a_terminal_that_shows_the_prompt_already_gets_the_next_one_only() {
        let (shown, _) = session_from(&["\r"], true).await;
        assert_eq!(shown, "\n/ # \x1b[6n");
    }

    #[tokio::test]
    async fn exit_ends_the_shell_with_its_status() {
        let (_, status) = session(&["exit 3\r", "echo never\r"]).await;
        assert_eq!(status, 3);
    }

    #[tokio::test]
    async fn backspace_ctrl_c_and_terminal_answers_edit_the_line() {
        let (shown, _) = session(&["echo abX\x7fc\x1b[24;5R\r", "junk\x03", "\x04"]).await;
        assert!(shown.contains("echo abX\x08 \x08c\nabc\n"), "{shown:?}");
        assert!(shown.contains("junk^C\n/ # "), "{shown:?}");
    }

    #[tokio::test]
    async fn a_syntax_error_is_reported_and_the_shell_goes_on() {
        let (shown, _) = session(&["if\r", "echo after\r"]).await;
        assert!(shown.contains("sh: syntax error"), "{shown:?}");
        assert!(shown.contains("after\n"), "{shown:?}");
    }
}
