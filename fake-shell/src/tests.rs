//! The shell and applets run end to end on the in-memory busybox image, each test named after what
//! the real daemon does (measured with Incus 6.0.4 on the `ci/busybox-image.sh` image).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;

use super::*;

struct Outcome {
    status: i32,
    stdout: String,
    stderr: String,
}

struct Running {
    handle: tokio::task::JoinHandle<i32>,
    stdin: Option<mpsc::Sender<Bytes>>,
    stdout: mpsc::Receiver<Bytes>,
    stderr: mpsc::Receiver<Bytes>,
    signals: mpsc::UnboundedSender<i32>,
}

/// The environment the daemon gives `user`'s command when the request sets none (the fake's
/// exec fills it in: `PATH`, `LANG=C.UTF-8`, and for root `HOME=/root` and `USER=root`).
fn daemon_environment(user: u32) -> BTreeMap<String, String> {
    let mut env = BTreeMap::from([
        ("PATH".to_owned(), DEFAULT_PATH.to_owned()),
        ("LANG".to_owned(), "C.UTF-8".to_owned()),
    ]);
    if user == 0 {
        env.insert("HOME".into(), "/root".into());
        env.insert("USER".into(), "root".into());
    }
    env
}

fn request(fs: Arc<MemoryFs>, argv: &[&str]) -> ExecRequest {
    ExecRequest {
        command: argv.iter().map(|s| s.to_string()).collect(),
        environment: daemon_environment(0),
        user: 0,
        group: 0,
        cwd: String::new(),
        fs,
        hostname: "c1".into(),
    }
}

fn start(req: ExecRequest) -> Running {
    let (stdin_tx, stdin) = mpsc::channel(4);
    let (stdout, stdout_rx) = mpsc::channel(4);
    let (stderr, stderr_rx) = mpsc::channel(4);
    let (signals_tx, signals) = mpsc::unbounded_channel();
    let io = ExecIo {
        stdin,
        stdout,
        stderr,
        signals,
    };
    Running {
        handle: tokio::spawn(run(req, io)),
        stdin: Some(stdin_tx),
        stdout: stdout_rx,
        stderr: stderr_rx,
        signals: signals_tx,
    }
}

async fn drain(rx: &mut mpsc::Receiver<Bytes>) -> Vec<u8> {
    let mut all = Vec::new();
    while let Some(chunk) = rx.recv().await {
        all.extend_from_slice(&chunk);
    }
    all
}

async fn finish(mut running: Running) -> Outcome {
    running.stdin.take();
    let (stdout, stderr) = tokio::join!(drain(&mut running.stdout), drain(&mut running.stderr));
    Outcome {
        status: running.handle.await.unwrap(),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

async fn exec_in(fs: &Arc<MemoryFs>, argv: &[&str]) -> Outcome {
    finish(start(request(Arc::clone(fs), argv))).await
}

async fn exec(argv: &[&str]) -> Outcome {
    exec_in(&MemoryFs::busybox(), argv).await
}

async fn sh_in(fs: &Arc<MemoryFs>, line: &str) -> Outcome {
    exec_in(fs, &["sh", "-c", line]).await
}

async fn sh(line: &str) -> Outcome {
    sh_in(&MemoryFs::busybox(), line).await
}

async fn sh_stdin(line: &str, input: &str) -> Outcome {
    let mut running = start(request(MemoryFs::busybox(), &["sh", "-c", line]));
    let stdin = running.stdin.take().unwrap();
    stdin.send(Bytes::from(input.to_owned())).await.unwrap();
    drop(stdin);
    finish(running).await
}

fn assert_outcome(outcome: &Outcome, status: i32, stdout: &str, stderr: &str) {
    assert_eq!(
        (
            outcome.status,
            outcome.stdout.as_str(),
            outcome.stderr.as_str()
        ),
        (status, stdout, stderr)
    );
}

#[tokio::test]
async fn the_guiding_session_of_tools_gives_what_the_daemon_gives() {
    let fs = MemoryFs::busybox();
    let out = sh_in(
        &fs,
        "umask 77 && mkdir -p \"$(echo ~/.tmp)\" && echo ok=$(pwd)",
    )
    .await;
    assert_outcome(&out, 0, "ok=/root\n", "");
    let meta = fs.lstat("/root/.tmp").unwrap();
    assert_eq!((meta.kind, meta.mode), (Kind::Directory, 0o700));
}

#[tokio::test]
async fn command_not_found_and_not_executable_are_silent_127_and_126_like_incus() {
    assert_outcome(&exec(&["uname"]).await, 127, "", "");
    assert_outcome(&exec(&["pwd"]).await, 127, "", "");
    assert_outcome(&exec(&["/tmp"]).await, 126, "", "");
    assert_outcome(&exec(&["/etc/inittab"]).await, 126, "", "");
}

#[tokio::test]
async fn a_shell_run_by_its_path_names_itself_by_that_path_as_busybox_does() {
    // Measured on the busybox image: `incus exec c1 -- /bin/sh -c /usr/bin/python3`.
    let out = exec(&["/bin/sh", "-c", "/usr/bin/python3; echo $0"]).await;
    assert_outcome(
        &out,
        0,
        "/bin/sh\n",
        "/bin/sh: /usr/bin/python3: not found\n",
    );
    let out = exec(&["/bin/sh", "-c", "/usr/bin/python3"]).await;
    assert_outcome(&out, 127, "", "/bin/sh: /usr/bin/python3: not found\n");
    let out = exec(&["sh", "-c", "nosuch; echo $0"]).await;
    assert_outcome(&out, 0, "sh\n", "sh: nosuch: not found\n");
}

#[tokio::test]
async fn ls_of_a_missing_file_fails_with_1_as_busybox_does() {
    let out = exec(&["ls", "/nope"]).await;
    assert_outcome(&out, 1, "", "ls: /nope: No such file or directory\n");
    let out = sh("ls / /nope >/dev/null; echo $?").await;
    assert_outcome(&out, 0, "1\n", "ls: /nope: No such file or directory\n");
}

#[tokio::test]
async fn the_shell_names_what_it_cannot_run_as_busybox_does() {
    let out = sh("/tmp; echo $?; nosuch; echo $?; /nope; echo $?; /etc/inittab; echo $?").await;
    assert_outcome(
        &out,
        0,
        "126\n127\n127\n126\n",
        "sh: /tmp: Permission denied\nsh: nosuch: not found\nsh: /nope: not found\nsh: /etc/inittab: Permission denied\n",
    );
}

#[tokio::test]
async fn cwd_and_home_are_the_daemons() {
    assert_outcome(
        &sh("pwd; echo $HOME $PWD").await,
        0,
        "/root\n/root /root\n",
        "",
    );
    let mut req = request(MemoryFs::busybox(), &["sh", "-c", "pwd"]);
    req.cwd = "/tmp".into();
    assert_outcome(&finish(start(req)).await, 0, "/tmp\n", "");
    let mut req = request(MemoryFs::busybox(), &["sh", "-c", "pwd"]);
    req.cwd = "/nope".into();
    assert_outcome(&finish(start(req)).await, 0, "/\n", "");
    let mut req = request(
        MemoryFs::busybox(),
        &["sh", "-c", "pwd; echo \"[$HOME]\"; id"],
    );
    req.user = 1000;
    req.environment = daemon_environment(1000);
    assert_outcome(&finish(start(req)).await, 0, "/\n[]\nuid=1000 gid=0\n", "");
}

#[tokio::test]
async fn a_pushed_script_runs_through_its_interpreter_and_path() {
    let fs = MemoryFs::busybox();
    fs.write(
        "/root/hello.sh",
        Bytes::from_static(b"#!/bin/sh\necho hello \"$1\" from $0\nexit 3\n"),
        false,
        0o755,
        Owner::default(),
    )
    .unwrap();
    assert_outcome(
        &exec_in(&fs, &["/root/hello.sh", "you"]).await,
        3,
        "hello you from /root/hello.sh\n",
        "",
    );
    fs.write(
        "/bin/greet",
        Bytes::from_static(b"#!/bin/sh\necho hi\n"),
        false,
        0o755,
        Owner::default(),
    )
    .unwrap();
    assert_outcome(&exec_in(&fs, &["greet"]).await, 0, "hi\n", "");
    fs.write(
        "/root/noexec.sh",
        Bytes::from_static(b"echo x\n"),
        false,
        0o644,
        Owner::default(),
    )
    .unwrap();
    assert_outcome(&exec_in(&fs, &["/root/noexec.sh"]).await, 126, "", "");
    assert_outcome(&sh_in(&fs, "sh /root/noexec.sh").await, 0, "x\n", "");
}

#[tokio::test]
async fn redirections_write_append_and_read_the_instances_files() {
    let fs = MemoryFs::busybox();
    let out = sh_in(
        &fs,
        "echo x > /tmp/out; echo y >> /tmp/out; cat < /tmp/out; wc -l < /tmp/out",
    )
    .await;
    assert_outcome(&out, 0, "x\ny\n2\n", "");
    assert_eq!(fs.read("/tmp/out").unwrap(), "x\ny\n");
    let out = sh_in(
        &fs,
        "ls /nope 2>/tmp/err; cat /tmp/err; echo a 2>&1 >/dev/null",
    )
    .await;
    assert_outcome(&out, 0, "ls: /nope: No such file or directory\n", "");
    let out = sh_in(&fs, "echo a > /nodir/x").await;
    assert_outcome(
        &out,
        1,
        "",
        "sh: can't create /nodir/x: nonexistent directory\n",
    );
    let out = sh_in(&fs, "cat < /nope").await;
    assert_outcome(
        &out,
        1,
        "",
        "sh: can't open '/nope': No such file or directory\n",
    );
}

#[tokio::test]
async fn the_posix_language_runs() {
    let out = sh("echo `echo a` $(echo b); (cd /tmp; pwd); pwd; for i in 1 2; do echo $i; done; if [ -d /tmp ]; then echo yes; fi; case ab in a*) echo A;; esac; f(){ echo f$1; return 3; }; f x; echo $?; x=1; export x; env | grep ^x; command -v ls; command -v cd; command -v nosuch; echo $?; type ls").await;
    assert_outcome(
        &out,
        0,
        "a b\n/tmp\n/root\n1\n2\nyes\nA\nfx\n3\nx=1\nls\ncd\n127\nls is ls\n",
        "",
    );
}

#[tokio::test]
async fn here_documents_expand_unless_quoted() {
    let out = sh("cat <<EOF\na $HOME\nEOF\ncat <<\"E\"\n$HOME\nE\n").await;
    assert_outcome(&out, 0, "a /root\n$HOME\n", "");
}

#[tokio::test]
async fn set_e_stops_at_a_failure_outside_conditions() {
    assert_outcome(&sh("set -e; false; echo no").await, 1, "", "");
    assert_outcome(
        &sh("set -e; false || true; if false; then :; fi; ! false; echo yes").await,
        0,
        "yes\n",
        "",
    );
    assert_outcome(&exec(&["sh", "-ec", "false; echo no"]).await, 1, "", "");
}

#[tokio::test]
async fn parameters_expand_with_the_posix_operators() {
    let out = sh("x=a/b/c.tar.gz; echo ${x#*/} ${x##*/} ${x%.*} ${x%%.*} ${#x} ${u:-d} ${u-e} ${x:+alt}; echo ${v:=set} $v; echo $((1 + 2 * (3 - 1))) $((7 % 3)); set -- p q; echo $# $1 \"$@\"").await;
    assert_outcome(
        &out,
        0,
        "b/c.tar.gz c.tar.gz a/b/c.tar a/b/c 12 d e alt\nset set\n5 1\n2 p p q\n",
        "",
    );
}

#[tokio::test]
async fn loops_break_continue_and_while_read() {
    let out = sh("i=0; while [ $i -lt 5 ]; do i=$((i+1)); [ $i = 2 ] && continue; [ $i = 4 ] && break; echo $i; done; printf 'a b\\nc d\\n' | while read x y; do echo \"$y-$x\"; done").await;
    assert_outcome(&out, 0, "1\n3\nb-a\nd-c\n", "");
}

#[tokio::test]
async fn pathname_expansion_lists_matching_files() {
    let fs = MemoryFs::busybox();
    let out = sh_in(
        &fs,
        "touch /tmp/a1 /tmp/a2 /tmp/b; echo /tmp/a*; echo /tmp/z*; cd /tmp && echo a?",
    )
    .await;
    assert_outcome(&out, 0, "/tmp/a1 /tmp/a2\n/tmp/z*\na1 a2\n", "");
}

#[tokio::test]
async fn file_applets_create_inspect_and_remove() {
    let fs = MemoryFs::busybox();
    let out = sh_in(
        &fs,
        "mkdir /root; mkdir -p /tmp/d/e && touch /tmp/d/f && chmod 600 /tmp/d/f && stat -c '%a %s %F' /tmp/d/f; \
         cp /etc/inittab /tmp/d/e/i && mv /tmp/d/e/i /tmp/d/j && ls /tmp/d; ln -s /tmp/d/j /tmp/l; readlink /tmp/l; \
         rm /tmp/d; rm -r /tmp/d; ls /tmp; rmdir /nope",
    )
    .await;
    assert_outcome(
        &out,
        1,
        "600 0 regular empty file\ne\nf\nj\n/tmp/d/j\nl\n",
        "mkdir: can't create directory '/root': File exists\nrm: '/tmp/d' is a directory\nrmdir: '/nope': No such file or directory\n",
    );
}

#[tokio::test]
async fn ls_long_recursive_and_directory_forms() {
    let fs = MemoryFs::busybox();
    let out = sh_in(
        &fs,
        "ls -R /etc; ls -d /tmp /root; ls -ld /tmp | cut -c1-10",
    )
    .await;
    assert_outcome(&out, 0, "/etc:\ninittab\n/root\n/tmp\ndrwxr-xr-x\n", "");
}

#[tokio::test]
async fn text_applets_transform_their_input() {
    let out = sh_stdin(
        "sort | uniq -c | sort -rn | head -n 1; echo abc | tr a-c A-C; echo 'a:b:c' | cut -d: -f2,3; echo hello | sed 's/l/L/g'; echo xyz | grep -c y; printf 'q\\n' | base64; echo cQo= | base64 -d",
        "b\na\nb\n",
    )
    .await;
    assert_outcome(&out, 0, "      2 b\nABC\nb:c\nheLLo\n1\ncQo=\nq\n", "");
}

#[tokio::test]
async fn checksums_match_the_published_values() {
    let out = sh("printf abc > /tmp/f; md5sum /tmp/f; sha1sum /tmp/f; sha256sum < /tmp/f").await;
    assert_outcome(
        &out,
        0,
        "900150983cd24fb0d6963f7d28e17f72  /tmp/f\na9993e364706816aba3e25717850c26c9cd0d89d  /tmp/f\nba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  -\n",
        "",
    );
}

#[tokio::test]
async fn find_xargs_and_test_work_together() {
    let out = sh("mkdir -p /tmp/t/u; touch /tmp/t/a.txt /tmp/t/u/b.txt; find /tmp/t -name '*.txt' | sort | xargs echo; find /tmp/t -type d; [ -f /tmp/t/a.txt ] && test ! -e /tmp/none && echo ok").await;
    assert_outcome(
        &out,
        0,
        "/tmp/t/a.txt /tmp/t/u/b.txt\n/tmp/t\n/tmp/t/u\nok\n",
        "",
    );
}

#[tokio::test]
async fn an_applet_busybox_has_but_the_fake_does_not_says_so() {
    let out = sh("vi").await;
    assert_outcome(&out, 126, "", "fake-incus: vi: not simulated by the fake\n");
}

#[tokio::test]
async fn a_background_job_is_refused_with_a_clear_message() {
    let out = sh("sleep 1 &").await;
    assert_eq!(out.status, 2);
    assert!(
        out.stderr.contains("background jobs (&) are not supported"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn kill_of_the_shell_itself_ends_the_program_like_the_signal() {
    assert_outcome(&sh("kill -0 $$ && echo alive").await, 0, "alive\n", "");
    assert_eq!(sh("kill $$; echo after").await.status, 143);
    assert_outcome(
        &sh("kill 99999").await,
        1,
        "",
        "sh: can't kill pid 99999: No such process\n",
    );
}

#[tokio::test]
async fn sigterm_interrupts_sleep_with_143() {
    let running = start(request(MemoryFs::busybox(), &["sleep", "100"]));
    running.signals.send(15).unwrap();
    assert_eq!(finish(running).await.status, 143);
}

#[tokio::test]
async fn a_closed_stdout_is_a_broken_pipe_ending_with_141() {
    let mut running = start(request(MemoryFs::busybox(), &["yes"]));
    running.stdout.recv().await.unwrap();
    drop(std::mem::replace(&mut running.stdout, mpsc::channel(1).1));
    let status = tokio::time::timeout(Duration::from_secs(10), running.handle)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status, 141);
}

#[tokio::test]
async fn pipelines_stream_and_a_finished_reader_stops_the_writer() {
    assert_outcome(
        &sh("yes | head -n 2; echo done").await,
        0,
        "y\ny\ndone\n",
        "",
    );
    assert_outcome(
        &sh("false | true; echo $?; true | false; echo $?").await,
        0,
        "0\n1\n",
        "",
    );
}

#[tokio::test]
async fn uname_and_hostname_describe_the_container() {
    let out = sh("uname; uname -s -n; hostname").await;
    assert_outcome(&out, 0, "Linux\nLinux c1\nc1\n", "");
}
