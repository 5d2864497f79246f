//! `incus exec` against the fake answers as against the real daemon with the busybox test image:
//! the same output, messages and exit status (each expectation was taken from a real 6.0.4 daemon).

use crate::cli::{setup, NO_CLIENT};
use crate::ignorable::trial;
use libtest_mimic::{Completion, Trial};

pub(crate) fn trials() -> Vec<Trial> {
    vec![
        trial(
            "official_client_exec_runs_only_what_the_image_holds",
            official_client_exec_runs_only_what_the_image_holds,
        ),
        trial(
            "official_client_exec_runs_busyboxs_commands_as_the_real_daemon",
            official_client_exec_runs_busyboxs_commands_as_the_real_daemon,
        ),
        trial(
            "official_client_file_push_then_exec_runs_the_pushed_script",
            official_client_file_push_then_exec_runs_the_pushed_script,
        ),
        trial(
            "pylxd_execute_gets_stdout_and_stderr_of_every_exec",
            pylxd_execute_gets_stdout_and_stderr_of_every_exec,
        ),
    ]
}

/// `incus exec c1 ARGS...`: (stdout, stderr, exit status).
async fn exec(cli: &crate::cli::Cli, args: &[&str]) -> (Vec<u8>, String, Option<i32>) {
    let mut all = vec!["exec", "c1"];
    all.extend_from_slice(args);
    let out = cli.run(&all).await;
    (
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code(),
    )
}

fn answer(stdout: &[u8], stderr: &str, status: i32) -> (Vec<u8>, String, Option<i32>) {
    (stdout.to_vec(), stderr.to_owned(), Some(status))
}

/// The CI idioms: `file push` then `exec` runs the pushed script, `exec` writing a file then `file pull`
/// reads it; a directory is not executable; `--cwd` and the home as the daemon sets them.
async fn official_client_file_push_then_exec_runs_the_pushed_script() -> Completion {
    let fake = crate::cli::fake_builder().start().await.unwrap();
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    cli.ok(&["launch", "busybox", "c1"]).await;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("s.sh");
    std::fs::write(&script, "#!/bin/sh\necho pushed $1\n").unwrap();
    let local = script.to_str().unwrap();
    cli.ok(&["file", "push", "--mode", "0755", local, "c1/root/s.sh"])
        .await;
    assert_eq!(
        exec(&cli, &["--", "/root/s.sh", "x"]).await,
        answer(b"pushed x\n", "", 0)
    );
    assert_eq!(
        exec(
            &cli,
            &["--", "sh", "-c", "./s.sh y; ls -l s.sh | cut -c1-10"]
        )
        .await,
        answer(b"pushed y\n-rwxr-xr-x\n", "", 0)
    );
    assert_eq!(
        exec(&cli, &["--", "sh", "-c", "echo x > /tmp/out"]).await,
        answer(b"", "", 0)
    );
    assert_eq!(cli.ok(&["file", "pull", "c1/tmp/out", "-"]).await, "x\n");
    assert_eq!(
        exec(&cli, &["--", "/tmp"]).await,
        answer(b"", "Error: Command not executable\n", 126)
    );
    assert_eq!(
        exec(&cli, &["--cwd", "/tmp", "--", "sh", "-c", "pwd"]).await,
        answer(b"/tmp\n", "", 0)
    );
    let session = "umask 77 && mkdir -p \"$(echo ~/.tmp)\" && echo ok=$(pwd)";
    assert_eq!(
        exec(&cli, &["--", "sh", "-c", session]).await,
        answer(b"ok=/root\n", "", 0)
    );
    Completion::Completed
}

async fn official_client_exec_runs_only_what_the_image_holds() -> Completion {
    let fake = crate::cli::fake_builder().start().await.unwrap();
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    cli.ok(&["launch", "busybox", "c1"]).await;
    let not_found = answer(b"", "Error: Command not found\n", 127);
    assert_eq!(exec(&cli, &["--", "pwd"]).await, not_found, "no /bin/pwd");
    assert_eq!(exec(&cli, &["-T", "--", "pwd"]).await, not_found);
    assert_eq!(exec(&cli, &["--", "sh", "-c", "exit 127"]).await, not_found);
    assert_eq!(
        exec(&cli, &["--", "sh", "-c", "pwd"]).await,
        answer(b"/root\n", "", 0),
        "sh's built-in"
    );
    assert_eq!(
        exec(&cli, &["--cwd", "/nonexistent", "--", "sh", "-c", "pwd"]).await,
        answer(b"/\n", "", 0),
        "a missing directory starts the command in /"
    );
    assert_eq!(
        exec(&cli, &["--", "busybox", "nope"]).await,
        answer(
            b"",
            "nope: applet not found\nError: Command not found\n",
            127
        )
    );
    assert_eq!(
        exec(&cli, &["--", "env", "nope"]).await,
        answer(
            b"",
            "env: can't execute 'nope': No such file or directory\nError: Command not found\n",
            127
        )
    );
    Completion::Completed
}

async fn official_client_exec_runs_busyboxs_commands_as_the_real_daemon() -> Completion {
    let fake = crate::cli::fake_builder().start().await.unwrap();
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    cli.ok(&["launch", "busybox", "c1"]).await;
    assert_eq!(
        exec(&cli, &["--", "ls", "/"]).await,
        answer(b"bin\ndev\netc\nproc\nroot\nsbin\nsys\ntmp\n", "", 0)
    );
    assert_eq!(
        exec(&cli, &["--", "id"]).await,
        answer(b"uid=0 gid=0\n", "", 0)
    );
    assert_eq!(
        exec(&cli, &["--", "dd", "if=/dev/zero", "bs=4", "count=3"]).await,
        answer(&[0; 12], "3+0 records in\n3+0 records out\n", 0)
    );
    assert_eq!(
        exec(&cli, &["--", "sh", "-c", "hostname"]).await,
        answer(b"c1\n", "", 0)
    );
    assert_eq!(
        exec(&cli, &["--", "/sbin/init"]).await,
        answer(b"", "init: must be run as PID 1\n", 1)
    );
    Completion::Completed
}

/// pylxd's `execute` against the fake, as its users call it: it reads stdout and stderr over ws4py
/// websockets that it sets up after the upgrade, so it loses output when a command's frames (and the
/// close) come before that; the real daemon's start delay leaves it the time. The Python is
/// `PYLXD_PYTHON` (default `python3`); where it cannot import pylxd the trial is ignored.
const PYLXD_SCRIPT: &str = r#"
import sys
from pylxd import Client
instance = Client(endpoint=sys.argv[1]).instances.get("c1")
lost = 0
for _ in range(int(sys.argv[2])):
    r = instance.execute(["sh", "-c", "echo out; echo err >&2; exit 3"])
    if (r.exit_code, r.stdout, r.stderr) != (3, "out\n", "err\n"):
        lost += 1
        print(repr(r))
print("lost", lost)
"#;

async fn pylxd_execute_gets_stdout_and_stderr_of_every_exec() -> Completion {
    let python = std::env::var("PYLXD_PYTHON").unwrap_or_else(|_| "python3".into());
    let probe = tokio::process::Command::new(&python)
        .args(["-c", "import pylxd"])
        .output()
        .await;
    if !probe.is_ok_and(|out| out.status.success()) {
        return Completion::ignored_with(format!(
            "needs pylxd importable by {python} (set PYLXD_PYTHON to a Python that has it)"
        ));
    }
    let fake = crate::cli::fake_builder()
        .state(serde_json::json!({"instances": [{"name": "c1", "status": "Running"}]}))
        .start()
        .await
        .unwrap();
    let run = tokio::process::Command::new(&python)
        .arg("-c")
        .arg(PYLXD_SCRIPT)
        .arg(fake.unix_socket())
        .arg("30")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(120), run)
        .await
        .expect("pylxd finishes within 120 s")
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.ends_with("lost 0\n"),
        "pylxd lost output:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Completion::Completed
}
