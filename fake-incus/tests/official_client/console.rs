//! `incus console` against the fake, on a terminal (`script` gives the client a pty, as a user's
//! terminal would: the client refuses to run without one): it attaches, what is typed reaches the
//! console and what the console shows comes back, and ctrl+a q detaches. Each expectation was
//! taken from a real 6.0.4 daemon with the busybox test image.

use crate::cli::{setup, Cli, NO_CLIENT};
use crate::ignorable::trial;
use libtest_mimic::{Completion, Trial};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

pub(crate) fn trials() -> Vec<Trial> {
    vec![
        trial(
            "official_client_console_attaches_types_reads_and_detaches",
            official_client_console_attaches_types_reads_and_detaches,
        ),
        trial(
            "official_client_console_refuses_as_the_daemon",
            official_client_console_refuses_as_the_daemon,
        ),
    ]
}

/// Why the console trials cannot run here.
const NO_SCRIPT: &str = "needs `script` (util-linux) to give `incus console` a terminal";

/// The client's banner once attached.
const BANNER: &str = "To detach from the console, press: <ctrl>+a q\n\r";

/// `incus console NAME` on a pty, driven through `script`'s stdin and stdout.
struct Terminal {
    child: Child,
    typed: ChildStdin,
    shown: ChildStdout,
    seen: Vec<u8>,
}

impl Terminal {
    /// Starts `incus console NAME` under `script`; `None` when `script` is not installed.
    fn open(cli: &Cli, name: &str) -> Option<Self> {
        let command = format!("{} console {name}", cli.binary.display());
        let mut child = Command::new("script")
            .args(["-qfec", &command, "/dev/null"])
            .env("INCUS_SOCKET", &cli.socket)
            .env("INCUS_CONF", cli.conf.path())
            .env_remove("INCUS_DIR")
            .env_remove("INCUS_REMOTE")
            .env_remove("INCUS_PROJECT")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .ok()?;
        let typed = child.stdin.take()?;
        let shown = child.stdout.take()?;
        Some(Self {
            child,
            typed,
            shown,
            seen: Vec::new(),
        })
    }

    async fn type_in(&mut self, text: &[u8]) {
        self.typed
            .write_all(text)
            .await
            .expect("the terminal reads");
        self.typed.flush().await.expect("the terminal reads");
    }

    /// Everything shown since the last call, up to and including `wanted`; panics after 20 s.
    async fn shown_until(&mut self, wanted: &str) -> String {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        let mut buf = [0u8; 4096];
        loop {
            let text = String::from_utf8_lossy(&self.seen).into_owned();
            if let Some(at) = text.find(wanted) {
                let end = at + wanted.len();
                self.seen.drain(..end.min(self.seen.len()));
                return text[..end].to_owned();
            }
            match tokio::time::timeout_at(deadline, self.shown.read(&mut buf)).await {
                Ok(Ok(n)) if n > 0 => self.seen.extend_from_slice(&buf[..n]),
                other => panic!("{wanted:?} never shown ({other:?}); shown: {text:?}"),
            }
        }
    }

    /// ctrl+a q. The client looks at the first byte of each read only: `^A` and `q` must arrive
    /// in two reads; when they came in one, `q` was dropped and the escape is armed, so a second
    /// `q` detaches. Returns the client's exit status.
    async fn detach(mut self) -> Option<i32> {
        self.type_in(b"\x01").await;
        self.type_in(b"q").await;
        let first = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
        let status = match first {
            Ok(status) => status,
            Err(_) => {
                self.type_in(b"q").await;
                tokio::time::timeout(Duration::from_secs(20), self.child.wait())
                    .await
                    .expect("incus console detaches")
            }
        };
        status.expect("incus console's status").code()
    }
}

/// Attach to the busybox image's console (its init runs only `sleep` there: what is typed is
/// echoed by the terminal, nothing answers), then to one whose inittab respawns a shell (the
/// shell runs the line on the instance's files), each detached with ctrl+a q.
async fn official_client_console_attaches_types_reads_and_detaches() -> Completion {
    let fake = crate::cli::fake_builder()
        .start()
        .await
        .expect("fake starts");
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    cli.ok(&["launch", "busybox", "c1"]).await;
    let Some(mut terminal) = Terminal::open(&cli, "c1") else {
        return Completion::ignored_with(NO_SCRIPT);
    };
    terminal.shown_until(BANNER).await;
    terminal.type_in(b"\r").await;
    terminal.type_in(b"echo hi-$((1+2))\r").await;
    assert_eq!(
        terminal.shown_until("echo hi-$((1+2))\r\r\r\n").await,
        "\r\r\r\necho hi-$((1+2))\r\r\r\n",
        "the daemon's console for this image: the echo only"
    );
    assert_eq!(terminal.detach().await, Some(0), "detached");

    let dir = tempfile::tempdir().expect("temp dir");
    let inittab = dir.path().join("inittab");
    std::fs::write(&inittab, "::sysinit:/bin/true\n::respawn:-/bin/sh\n").expect("write");
    let local = inittab.to_str().expect("utf-8 path");
    cli.ok(&["file", "push", local, "c1/etc/inittab"]).await;
    cli.ok(&["restart", "c1"]).await;
    let mut terminal = Terminal::open(&cli, "c1").expect("script ran before");
    terminal.shown_until(BANNER).await;
    terminal.type_in(b"\r").await;
    terminal.shown_until("/ # \x1b[6n").await;
    terminal.type_in(b"echo hi-$((1+2)) > /tmp/out\r").await;
    terminal.shown_until("/ # \x1b[6n").await;
    terminal.type_in(b"cat /tmp/out\r").await;
    assert_eq!(
        terminal.shown_until("/ # \x1b[6n").await,
        "cat /tmp/out\r\r\r\nhi-3\r\r\r\n/ # \x1b[6n",
        "the line's echo, its output and the next prompt, as on the daemon"
    );
    assert_eq!(terminal.detach().await, Some(0), "detached");
    let pulled = cli.ok(&["exec", "c1", "--", "cat", "/tmp/out"]).await;
    assert_eq!(
        pulled, "hi-3\n",
        "the console's shell wrote the instance's file"
    );
    Completion::Completed
}

/// A stopped instance's console and a VGA console of a container are refused with the daemon's
/// texts (before any terminal is needed).
async fn official_client_console_refuses_as_the_daemon() -> Completion {
    let fake = crate::cli::fake_builder()
        .start()
        .await
        .expect("fake starts");
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    cli.ok(&["init", "busybox", "off"]).await;
    cli.ok(&["launch", "busybox", "on"]).await;
    let stopped = cli.run(&["console", "off", "--show-log"]).await;
    assert!(
        stopped.status.success(),
        "the log of a stopped instance reads"
    );
    let vga = cli.run(&["console", "on", "--type", "vga"]).await;
    assert_eq!(
        String::from_utf8_lossy(&vga.stderr),
        "Error: VGA console is only supported by virtual machines\n"
    );
    let Some(mut terminal) = Terminal::open(&cli, "off") else {
        return Completion::ignored_with(NO_SCRIPT);
    };
    // What the terminal shows before the error (line ends of the pty) varies with timing.
    let shown = terminal.shown_until("Error: Instance is not running").await;
    assert!(
        shown.contains("Error: Instance is not running"),
        "shown: {shown:?}"
    );
    Completion::Completed
}
