//! End-to-end tests of `run`: a request in, streams and the exit status out.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::*;

/// A running program and the test's ends of its streams.
struct Running {
    stdin: Option<mpsc::Sender<Bytes>>,
    stdout: mpsc::Receiver<Bytes>,
    stderr: mpsc::Receiver<Bytes>,
    signals: mpsc::UnboundedSender<i32>,
    status: JoinHandle<i32>,
}

fn request(argv: &[&str]) -> ExecRequest {
    ExecRequest {
        command: argv.iter().map(|a| a.to_string()).collect(),
        environment: BTreeMap::new(),
        user: 0,
        group: 0,
        cwd: String::new(),
        rootfs: Rootfs::busybox(),
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
        stdin: Some(stdin_tx),
        stdout: stdout_rx,
        stderr: stderr_rx,
        signals: signals_tx,
        status: tokio::spawn(run(req, io)),
    }
}

/// What a finished program produced.
#[derive(Debug)]
struct Outcome {
    status: i32,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

impl Outcome {
    fn stdout(&self) -> &str {
        std::str::from_utf8(&self.stdout).unwrap()
    }
    fn stderr(&self) -> &str {
        std::str::from_utf8(&self.stderr).unwrap()
    }
}

impl Running {
    async fn finish(mut self) -> Outcome {
        drop(self.stdin.take());
        let (stdout, stderr) = tokio::join!(drain(&mut self.stdout), drain(&mut self.stderr));
        let status = self.status.await.unwrap();
        Outcome {
            status,
            stdout,
            stderr,
        }
    }
}

async fn drain(rx: &mut mpsc::Receiver<Bytes>) -> Vec<u8> {
    let mut all = Vec::new();
    while let Some(chunk) = rx.recv().await {
        all.extend_from_slice(&chunk);
    }
    all
}

async fn exec(argv: &[&str]) -> Outcome {
    start(request(argv)).finish().await
}

async fn exec_with_stdin(argv: &[&str], stdin: &[&str]) -> Outcome {
    let running = start(request(argv));
    let tx = running.stdin.clone().unwrap();
    let chunks: Vec<Bytes> = stdin
        .iter()
        .map(|s| Bytes::copy_from_slice(s.as_bytes()))
        .collect();
    tokio::spawn(async move {
        for chunk in chunks {
            let _ = tx.send(chunk).await;
        }
    });
    running.finish().await
}

async fn sh(line: &str) -> Outcome {
    exec(&["sh", "-c", line]).await
}

// --- simple commands -------------------------------------------------------------------------------

#[tokio::test]
async fn echo_prints_arguments_separated_by_spaces_with_a_newline() {
    let outcome = exec(&["echo", "a", "b c"]).await;
    assert_eq!((outcome.status, outcome.stdout()), (0, "a b c\n"));
}

#[tokio::test]
async fn echo_n_omits_the_newline_and_e_expands_escapes() {
    assert_eq!(exec(&["echo", "-n", "hi"]).await.stdout(), "hi");
    assert_eq!(exec(&["echo", "-e", "a\\tb"]).await.stdout(), "a\tb\n");
    assert_eq!(exec(&["echo", "a\\tb"]).await.stdout(), "a\\tb\n");
    assert_eq!(exec(&["echo", "-ne", "x\\x41"]).await.stdout(), "xA");
    assert_eq!(exec(&["echo", "-e", "a\\cb", "c"]).await.stdout(), "a");
    assert_eq!(exec(&["echo", "-x", "y"]).await.stdout(), "-x y\n");
}

#[tokio::test]
async fn printf_writes_its_format_and_fails_on_bad_numbers() {
    let outcome = exec(&["printf", "%s=%d\\n", "a", "1", "b", "x"]).await;
    assert_eq!(outcome.stdout(), "a=1\nb=0\n");
    assert_eq!(outcome.stderr(), "printf: invalid number 'x'\n");
    assert_eq!(outcome.status, 1);
    assert_eq!(exec(&["printf"]).await.status, 2);
    assert_eq!(exec(&["printf", "%y"]).await.status, 1);
}

#[tokio::test]
async fn true_and_false_return_0_and_1() {
    assert_eq!(exec(&["true", "ignored"]).await.status, 0);
    assert_eq!(exec(&["/bin/false"]).await.status, 1);
}

#[tokio::test]
async fn a_path_runs_only_where_the_image_holds_the_executable() {
    assert_eq!(exec(&["/bin/echo", "x"]).await.stdout(), "x\n");
    assert_eq!(exec(&["/bin/sh", "-c", "echo y"]).await.stdout(), "y\n");
    assert_eq!(exec(&["/usr/bin/echo", "x"]).await.status, 127);
    assert_eq!(exec(&["/opt/echo"]).await.status, 127);
}

#[tokio::test]
async fn command_not_found_returns_127_without_output_like_incus() {
    let outcome = exec(&["nosuch"]).await;
    assert_eq!(
        (outcome.status, outcome.stdout(), outcome.stderr()),
        (127, "", "")
    );
    assert_eq!(
        start_failure(&["nosuch".into()]),
        None,
        "it starts, then fails"
    );
    assert_eq!(exit_failure(127), Some("Command not found"));
    assert_eq!(exit_failure(126), Some("Command not executable"));
    assert_eq!(exit_failure(1), None);
}

#[tokio::test]
async fn exec_runs_only_what_the_busybox_image_holds() {
    for missing in ["pwd", "hostname", "cd", "grep", "init"] {
        let outcome = exec(&[missing]).await;
        let expected = if missing == "init" { 1 } else { 127 };
        assert_eq!(outcome.status, expected, "{missing}: {outcome:?}");
    }
    let outcome = exec(&["/sbin/init"]).await;
    assert_eq!(
        (outcome.status, outcome.stderr()),
        (1, "init: must be run as PID 1\n")
    );
    for present in ["ls", "dd", "id", "env", "head", "yes", "busybox"] {
        assert!(
            Identity::of(&request(&[present]))
                .rootfs
                .find_executable(present, DEFAULT_PATH, "/")
                .is_some(),
            "{present}"
        );
    }
}

#[tokio::test]
async fn an_image_that_declares_its_executables_runs_those_alone() {
    let mut req = request(&["pwd"]);
    req.rootfs = Rootfs::of_image(Some(&["/usr/bin/pwd".into(), "/bin/echo".into()]));
    assert_eq!(
        start(req.clone()).finish().await.stdout(),
        "/\n",
        "no /root in that image"
    );
    req.command = vec!["sh".into(), "-c".into(), "echo x".into()];
    assert_eq!(start(req.clone()).finish().await.status, 127, "no sh");
    req.command = vec!["/usr/bin/pwd".into()];
    assert_eq!(start(req).finish().await.status, 0);
}

#[tokio::test]
async fn an_executable_the_fake_cannot_simulate_is_not_executable() {
    let mut req = request(&["python3", "-V"]);
    req.rootfs = Rootfs::of_image(Some(&["/usr/bin/python3".into()]));
    let outcome = start(req).finish().await;
    assert_eq!(outcome.status, 126);
    assert_eq!(
        outcome.stderr(),
        "fake-incus: /usr/bin/python3: not simulated by the fake\n"
    );
    let outcome = exec(&["sh", "-c", "grep x"]).await;
    assert_eq!(outcome.status, 126, "a busybox applet the fake lacks");
}

#[tokio::test]
async fn an_empty_command_cannot_start() {
    assert_eq!(start_failure(&[]), Some(StartFailure::EmptyCommand));
    assert_eq!(exec(&[]).await.status, -1);
    assert_eq!(start_failure(&["echo".into()]), None);
}

#[tokio::test]
async fn exit_is_a_shell_builtin_not_a_program() {
    assert_eq!(exec(&["exit"]).await.status, 127);
}

#[tokio::test]
async fn env_prints_the_request_environment_over_incus_defaults_sorted() {
    let mut req = request(&["env"]);
    req.environment.insert("TERM".into(), "xterm".into());
    req.environment.insert("LANG".into(), "fr_FR.UTF-8".into());
    let outcome = start(req).finish().await;
    assert_eq!(
        outcome.stdout(),
        "HOME=/root\nLANG=fr_FR.UTF-8\nPATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n\
         TERM=xterm\nUSER=root\ncontainer=lxc\n"
    );
}

#[tokio::test]
async fn env_has_no_home_or_user_for_other_users() {
    let mut req = request(&["env"]);
    req.user = 1000;
    let outcome = start(req).finish().await;
    assert!(!outcome.stdout().contains("HOME="), "{}", outcome.stdout());
    assert!(!outcome.stdout().contains("USER="));
    assert!(outcome.stdout().contains("LANG=C.UTF-8\n"));
}

#[tokio::test]
async fn env_runs_a_command_with_assignments_and_can_clear() {
    let outcome = exec(&["env", "-i", "A=1", "env"]).await;
    assert_eq!(outcome.stdout(), "A=1\n");
    let outcome = exec(&["env", "nosuch"]).await;
    assert_eq!(outcome.status, 127);
    assert_eq!(
        outcome.stderr(),
        "env: can't execute 'nosuch': No such file or directory\n"
    );
}

#[test]
fn incus_environment_adds_defaults_only_where_absent() {
    let mut requested = BTreeMap::new();
    requested.insert("PATH".to_string(), "/x".to_string());
    let env = incus_environment(&requested, 0);
    assert_eq!(env["PATH"], "/x");
    assert_eq!(env["HOME"], "/root");
    assert_eq!(env["USER"], "root");
    assert_eq!(env["LANG"], "C.UTF-8");
    assert!(!env.contains_key("container"));
}

#[tokio::test]
async fn id_prints_busyboxs_numbers_without_names() {
    assert_eq!(exec(&["id"]).await.stdout(), "uid=0 gid=0\n");
    let mut req = request(&["id"]);
    req.user = 1000;
    req.group = 1001;
    assert_eq!(start(req).finish().await.stdout(), "uid=1000 gid=1001\n");
    assert_eq!(exec(&["id", "-u"]).await.stdout(), "0\n");
    assert_eq!(exec(&["id", "-G"]).await.stdout(), "0\n");
    let outcome = exec(&["id", "-un"]).await;
    assert_eq!(
        (outcome.status, outcome.stdout(), outcome.stderr()),
        (1, "0\n", "id: unknown ID 0\n")
    );
    let outcome = exec(&["id", "-n"]).await;
    assert_eq!(outcome.status, 1);
    assert!(
        outcome.stderr().starts_with(builtins::BANNER),
        "{outcome:?}"
    );
    assert!(outcome.stderr().contains("Usage: id [-ugGnr] [USER]"));
}

#[tokio::test]
async fn pwd_prints_the_cwd_or_the_users_home() {
    let pwd = |cwd: &str, user: u32| {
        let mut req = request(&["sh", "-c", "pwd"]);
        req.cwd = cwd.into();
        req.user = user;
        start(req).finish()
    };
    assert_eq!(pwd("", 0).await.stdout(), "/root\n");
    assert_eq!(pwd("/tmp", 0).await.stdout(), "/tmp\n");
    assert_eq!(pwd("/tmp/", 0).await.stdout(), "/tmp\n");
    assert_eq!(pwd("", 1000).await.stdout(), "/\n");
    assert_eq!(exec(&["busybox", "pwd"]).await.stdout(), "/root\n");
    assert_eq!(exec(&["env", "pwd"]).await.stdout(), "/root\n");
}

#[tokio::test]
async fn a_cwd_that_does_not_exist_starts_the_command_in_the_root() {
    let mut req = request(&["sh", "-c", "pwd; echo $PWD"]);
    req.cwd = "/nonexistent".into();
    assert_eq!(start(req).finish().await.stdout(), "/\n/\n");
}

#[tokio::test]
async fn pwd_run_directly_is_not_found_in_the_busybox_image() {
    let outcome = exec(&["pwd"]).await;
    assert_eq!(
        (outcome.status, outcome.stdout(), outcome.stderr()),
        (127, "", "")
    );
}

#[tokio::test]
async fn sh_builtins_and_busybox_applets_run_inside_sh() {
    let outcome = exec(&[
        "sh",
        "-c",
        "pwd; hostname; cd /tmp; pwd; echo $PWD; cd; pwd",
    ])
    .await;
    assert_eq!(outcome.stdout(), "/root\nc1\n/tmp\n/tmp\n/root\n");
    assert_eq!(outcome.status, 0);
    let outcome = exec(&["sh", "-c", "cd /nope; echo $?\ncd /nope"]).await;
    assert_eq!(outcome.stdout(), "2\n");
    assert_eq!(
        outcome.stderr(),
        "sh: cd: line 0: can't cd to /nope: No such file or directory\n\
         sh: cd: line 1: can't cd to /nope: No such file or directory\n"
    );
    assert_eq!(outcome.status, 2);
    let outcome = exec(&["sh", "-c", "/bin/nope; echo $?"]).await;
    assert_eq!(outcome.stderr(), "sh: /bin/nope: not found\n");
    assert_eq!(outcome.stdout(), "127\n");
}

#[tokio::test]
async fn hostname_is_the_instance_name() {
    assert_eq!(exec(&["busybox", "hostname"]).await.stdout(), "c1\n");
    assert_eq!(exec(&["env", "hostname"]).await.stdout(), "c1\n");
}

#[tokio::test]
async fn busybox_runs_its_applets_and_names_unknown_ones() {
    let outcome = exec(&["busybox", "nope"]).await;
    assert_eq!(
        (outcome.status, outcome.stderr()),
        (127, "nope: applet not found\n")
    );
    let outcome = exec(&["busybox"]).await;
    assert!(outcome.stdout().starts_with(builtins::BANNER));
    assert!(outcome
        .stdout()
        .contains("\twhoami, xargs, xxd, xz, xzcat, yes, zcat\n"));
    assert_eq!(exec(&["busybox", "echo", "hi"]).await.stdout(), "hi\n");
}

#[tokio::test]
async fn ls_lists_the_images_directories_one_name_per_line() {
    assert_eq!(
        exec(&["ls", "/"]).await.stdout(),
        "bin\ndev\netc\nproc\nroot\nsbin\nsys\ntmp\n"
    );
    assert_eq!(
        exec(&["ls", "/bin"]).await.stdout(),
        "busybox\ncat\ndd\necho\nenv\nfalse\nhead\nid\nls\nprintf\nsh\nsleep\ntrue\nyes\n"
    );
    assert_eq!(exec(&["ls"]).await.stdout(), "", "/root is empty");
    assert_eq!(exec(&["ls", "-a", "/tmp"]).await.stdout(), ".\n..\n");
    let outcome = exec(&["ls", "/bin/sh", "/nope", "/root"]).await;
    assert_eq!(
        (outcome.status, outcome.stdout(), outcome.stderr()),
        (
            1,
            "/bin/sh\n\n/root:\n",
            "ls: /nope: No such file or directory\n"
        )
    );
    let outcome = exec(&["ls", "/tmp", "/etc"]).await;
    assert_eq!(outcome.stdout(), "/etc:\ninittab\n\n/tmp:\n");
    let outcome = exec(&["ls", "-z"]).await;
    assert_eq!(outcome.status, 1);
    assert!(outcome
        .stderr()
        .starts_with("ls: invalid option -- 'z'\nBusyBox v1.35.0"));
}

#[tokio::test]
async fn dd_streams_zeros_and_prints_busyboxs_summary_on_stderr() {
    let outcome = exec(&["dd", "if=/dev/zero", "bs=4", "count=3"]).await;
    assert_eq!(outcome.stdout, vec![0; 12]);
    assert_eq!(outcome.stderr(), "3+0 records in\n3+0 records out\n");
    assert_eq!(outcome.status, 0);
    let outcome = exec(&["dd", "if=/dev/zero", "of=/dev/null", "bs=1M", "count=2"]).await;
    assert_eq!(
        (outcome.stdout.len(), outcome.stderr()),
        (0, "2+0 records in\n2+0 records out\n")
    );
    let outcome = exec(&["dd", "if=/dev/zero", "bs=100000", "count=1"]).await;
    assert_eq!(outcome.stdout.len(), 100_000);
    let outcome = exec(&["dd", "if=/dev/zero", "count=1", "status=none"]).await;
    assert_eq!((outcome.stdout.len(), outcome.stderr()), (512, ""));
    let outcome = exec(&["dd"]).await;
    assert_eq!(outcome.stderr(), "0+0 records in\n0+0 records out\n");
    let outcome = exec(&["dd", "if=/nope"]).await;
    assert_eq!(
        (outcome.status, outcome.stderr()),
        (1, "dd: can't open '/nope': No such file or directory\n")
    );
    let outcome = exec(&["dd", "bs=x"]).await;
    assert_eq!(
        (outcome.status, outcome.stderr()),
        (1, "dd: invalid number 'x'\n")
    );
    let outcome = exec(&["dd", "bogus=1"]).await;
    assert_eq!(outcome.status, 1);
    assert!(outcome.stderr().contains("Usage: dd [if=FILE] [of=FILE]"));
}

#[tokio::test]
async fn dd_counts_partial_records_of_stdin() {
    let running = start(request(&["dd", "bs=3"]));
    running
        .stdin
        .as_ref()
        .unwrap()
        .send(Bytes::from_static(b"abcd"))
        .await
        .unwrap();
    let outcome = running.finish().await;
    assert_eq!(outcome.stdout(), "abcd");
    assert_eq!(outcome.stderr(), "1+1 records in\n1+1 records out\n");
}

#[tokio::test]
async fn dd_from_dev_zero_without_count_ends_with_a_broken_pipe() {
    let outcome = exec(&["sh", "-c", "dd if=/dev/zero | head -c 70000"]).await;
    assert_eq!(outcome.stdout.len(), 70_000);
    assert_eq!(outcome.status, 0);
}

// --- stdin ------------------------------------------------------------------------------------------

#[tokio::test]
async fn cat_copies_stdin_to_stdout_until_eof() {
    let outcome = exec_with_stdin(&["cat"], &["hello ", "world\n"]).await;
    assert_eq!((outcome.status, outcome.stdout()), (0, "hello world\n"));
}

#[tokio::test]
async fn cat_of_a_file_fails_because_there_is_no_filesystem() {
    let outcome = exec(&["cat", "/etc/hostname"]).await;
    assert_eq!(outcome.status, 1);
    assert_eq!(
        outcome.stderr(),
        "cat: can't open '/etc/hostname': No such file or directory\n"
    );
}

#[tokio::test]
async fn head_copies_the_first_lines_or_bytes_and_leaves_the_rest() {
    let outcome = exec_with_stdin(&["head", "-n", "2"], &["a\nb", "\nc\n"]).await;
    assert_eq!(outcome.stdout(), "a\nb\n");
    let outcome = exec_with_stdin(&["head", "-c", "3"], &["ab", "cdef"]).await;
    assert_eq!(outcome.stdout(), "abc");
    let outcome = exec_with_stdin(&["sh", "-c", "head -n 1; echo --; cat"], &["1\n2\n3\n"]).await;
    assert_eq!(outcome.stdout(), "1\n--\n2\n3\n");
}

#[tokio::test]
async fn sh_without_c_reads_its_script_from_stdin() {
    let outcome = exec_with_stdin(&["sh"], &["echo one\n", "echo two >&2\nexit 4\n"]).await;
    assert_eq!(
        (outcome.status, outcome.stdout(), outcome.stderr()),
        (4, "one\n", "two\n")
    );
}

// --- sh -c --------------------------------------------------------------------------------------------

#[tokio::test]
async fn sh_runs_commands_joined_by_semicolons_and_conditions() {
    let outcome = sh("echo \"a;b\" && false || echo c; echo d").await;
    assert_eq!((outcome.status, outcome.stdout()), (0, "a;b\nc\nd\n"));
    assert_eq!(sh("false && echo no").await.status, 1);
    assert_eq!(sh("true || echo no; false").await.status, 1);
}

#[tokio::test]
async fn sh_redirects_stdout_to_stderr_for_one_command() {
    let outcome = sh("echo out; echo err >&2; echo both >&2 2>&1; echo back 2>&1 >&2").await;
    assert_eq!(outcome.stdout(), "out\nback\n");
    assert_eq!(outcome.stderr(), "err\nboth\n");
    let outcome = sh("printf %d x 2>&1; echo hidden >/dev/null").await;
    assert_eq!(outcome.stdout(), "0printf: invalid number 'x'\n");
    assert_eq!(outcome.stderr(), "");
}

#[tokio::test]
async fn sh_exit_ends_the_script_with_its_status_modulo_256() {
    let outcome = sh("echo a; exit 3; echo b").await;
    assert_eq!((outcome.status, outcome.stdout()), (3, "a\n"));
    assert_eq!(sh("exit 300").await.status, 44);
    assert_eq!(sh("false; exit").await.status, 1);
    let outcome = sh("exit abc").await;
    assert_eq!(
        (outcome.status, outcome.stderr()),
        (2, "sh: exit: Illegal number: abc\n")
    );
}

#[tokio::test]
async fn sh_expands_parameters_and_status() {
    let outcome = exec(&[
        "sh",
        "-c",
        "echo $HOME \"$0\" '$HOME' $1 ${2}; false; echo $?",
        "me",
        "one",
    ])
    .await;
    assert_eq!(outcome.stdout(), "/root me $HOME one\n1\n");
}

#[tokio::test]
async fn sh_env_shows_the_shell_variables_a_real_shell_adds() {
    let outcome = sh("env").await;
    assert!(
        outcome.stdout().contains("SHLVL=1\n"),
        "{}",
        outcome.stdout()
    );
    assert!(outcome.stdout().contains("PWD=/root\n"));
}

#[tokio::test]
async fn sh_unknown_command_prints_not_found_and_continues_with_127() {
    let outcome = sh("nosuch arg; echo $?").await;
    assert_eq!(outcome.stderr(), "sh: nosuch: not found\n");
    assert_eq!(outcome.stdout(), "127\n");
}

#[tokio::test]
async fn sh_with_unsupported_syntax_exits_2_with_a_syntax_error() {
    let outcome = sh("echo a & cat").await;
    assert_eq!(outcome.status, 2);
    assert_eq!(outcome.stdout(), "");
    assert!(
        outcome.stderr().starts_with("sh: syntax error: "),
        "{}",
        outcome.stderr()
    );
    let outcome = sh("echo 'open").await;
    assert_eq!(
        outcome.stderr(),
        "sh: syntax error: unterminated quoted string\n"
    );
}

#[tokio::test]
async fn sh_e_stops_at_the_first_failure_outside_conditions() {
    let outcome = exec(&[
        "sh",
        "-ec",
        "false || echo a; false && echo b; echo c; false; echo d",
    ])
    .await;
    assert_eq!((outcome.status, outcome.stdout()), (1, "a\nc\n"));
}

#[tokio::test]
async fn nested_sh_exit_only_ends_the_inner_shell() {
    let outcome = sh("sh -c 'exit 5'; echo $?").await;
    assert_eq!(outcome.stdout(), "5\n");
}

#[tokio::test]
async fn sh_usage_errors_exit_2() {
    assert_eq!(exec(&["sh", "-c"]).await.status, 2);
    let outcome = exec(&["sh", "script.sh"]).await;
    assert_eq!(outcome.status, 2);
    assert_eq!(
        outcome.stderr(),
        "sh: can't open 'script.sh': No such file or directory\n"
    );
}

// --- signals and sleep ------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn sleep_waits_the_fractional_duration() {
    let started = tokio::time::Instant::now();
    let outcome = exec(&["sleep", "1.5"]).await;
    assert_eq!(outcome.status, 0);
    assert_eq!(started.elapsed(), Duration::from_millis(1500));
}

#[tokio::test(start_paused = true)]
async fn sigterm_interrupts_sleep_with_143() {
    let running = start(request(&["sleep", "30"]));
    tokio::time::sleep(Duration::from_secs(1)).await;
    running.signals.send(15).unwrap();
    let started = tokio::time::Instant::now();
    let outcome = running.finish().await;
    assert_eq!(outcome.status, 143);
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[tokio::test]
async fn sigkill_ends_a_hanging_command_with_137() {
    let running = start(request(&["fake-hang"]));
    running.signals.send(9).unwrap();
    assert_eq!(running.finish().await.status, 137);
}

#[tokio::test]
async fn sigint_ends_a_shell_with_130() {
    let running = start(request(&[
        "sh",
        "-c",
        "echo started; fake-hang; echo never",
    ]));
    running.signals.send(2).unwrap();
    let outcome = running.finish().await;
    assert_eq!(outcome.status, 130);
    assert!(!outcome.stdout().contains("never"));
}

#[tokio::test(start_paused = true)]
async fn sigwinch_and_sigchld_are_ignored() {
    let running = start(request(&["sleep", "2"]));
    running.signals.send(28).unwrap();
    running.signals.send(17).unwrap();
    running.signals.send(0).unwrap();
    running.signals.send(99).unwrap();
    assert_eq!(running.finish().await.status, 0);
}

#[tokio::test(start_paused = true)]
async fn ignored_signals_leave_the_command_running_until_sigkill() {
    let running = start(request(&["fake-ignore-signals", "sleep", "5"]));
    tokio::time::sleep(Duration::from_millis(10)).await;
    running.signals.send(15).unwrap();
    running.signals.send(2).unwrap();
    let outcome = running.finish().await;
    assert_eq!(
        outcome.status, 0,
        "sleep ran to its end despite SIGTERM and SIGINT"
    );

    let running = start(request(&["fake-ignore-signals", "fake-hang"]));
    tokio::time::sleep(Duration::from_millis(10)).await;
    running.signals.send(15).unwrap();
    running.signals.send(9).unwrap();
    assert_eq!(running.finish().await.status, 137);
}

#[tokio::test]
async fn a_dropped_signal_sender_does_not_end_the_program() {
    let running = start(request(&["echo", "ok"]));
    let Running {
        stdin,
        stdout,
        stderr,
        signals,
        status,
    } = running;
    drop(signals);
    let outcome = Running {
        stdin,
        stdout,
        stderr,
        signals: mpsc::unbounded_channel().0,
        status,
    }
    .finish()
    .await;
    assert_eq!((outcome.status, outcome.stdout()), (0, "ok\n"));
}

// --- output volume and raw bytes ---------------------------------------------------------------------

#[tokio::test]
async fn flood_counts_exact_bytes_without_buffering_everything() {
    let mut running = start(request(&["fake-flood", "stdout", "1000000", "y"]));
    let mut total = 0;
    let mut largest = 0;
    while let Some(chunk) = running.stdout.recv().await {
        assert!(chunk.iter().all(|b| *b == b'y'));
        total += chunk.len();
        largest = largest.max(chunk.len());
    }
    assert_eq!(total, 1_000_000);
    assert_eq!(largest, 32 * 1024);
    assert_eq!(running.finish().await.status, 0);
}

#[tokio::test]
async fn flood_waits_for_the_reader_because_channels_are_bounded() {
    let mut running = start(request(&["fake-flood", "stderr", "forever"]));
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    // Channel capacity 4: the program is blocked on the fifth chunk, not running ahead.
    let mut queued = 0;
    while running.stderr.try_recv().is_ok() {
        queued += 1;
    }
    assert_eq!(queued, 4);
    running.signals.send(9).unwrap();
    assert_eq!(running.finish().await.status, 137);
}

#[tokio::test]
async fn a_closed_stdout_is_a_broken_pipe_ending_with_141() {
    let running = start(request(&["fake-flood", "stdout", "forever"]));
    let Running {
        stdin,
        stdout,
        stderr,
        signals,
        status,
    } = running;
    drop(stdout);
    let _keep = (stdin, stderr, signals);
    assert_eq!(status.await.unwrap(), 141);
}

#[tokio::test]
async fn fake_bytes_emits_non_utf8_bytes_exactly() {
    let outcome = exec(&["fake-bytes", "stdout", "ff", "fe00", "41"]).await;
    assert_eq!(
        (outcome.status, outcome.stdout),
        (0, vec![0xff, 0xfe, 0x00, 0x41])
    );
    assert_eq!(exec(&["fake-bytes", "stdout", "zz"]).await.status, 2);
    let outcome = exec(&["printf", "\\xff\\n"]).await;
    assert_eq!(outcome.stdout, vec![0xff, b'\n']);
}

#[tokio::test]
async fn a_flood_into_dev_null_still_yields_to_signals() {
    let running = start(request(&[
        "sh",
        "-c",
        "fake-flood stdout forever >/dev/null",
    ]));
    tokio::task::yield_now().await;
    running.signals.send(9).unwrap();
    assert_eq!(running.finish().await.status, 137);
}

#[tokio::test]
async fn flood_in_a_shell_follows_redirections() {
    let outcome = sh("fake-flood stdout 5 >&2").await;
    assert_eq!((outcome.stdout(), outcome.stderr()), ("", "xxxxx"));
}

// --- yes and pipelines -------------------------------------------------------------------------------

#[tokio::test]
async fn yes_repeats_y_until_its_reader_ends() {
    let outcome = sh("yes | head -c 100000").await;
    assert_eq!(outcome.status, 0);
    assert_eq!(outcome.stdout.len(), 100_000);
    assert_eq!(outcome.stdout, b"y\n".repeat(50_000));
}

#[tokio::test]
async fn yes_repeats_its_arguments_joined_by_spaces() {
    let outcome = sh("yes a  'b c' | head -n 2").await;
    assert_eq!((outcome.status, outcome.stdout()), (0, "a b c\na b c\n"));
}

#[tokio::test]
async fn yes_alone_streams_in_bounded_chunks_until_a_signal() {
    let mut running = start(request(&["yes"]));
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    let mut queued = 0;
    while let Ok(chunk) = running.stdout.try_recv() {
        assert!(chunk.len() <= 32 * 1024 && chunk.starts_with(b"y\ny\n"));
        queued += 1;
    }
    assert_eq!(queued, 4);
    running.signals.send(15).unwrap();
    assert_eq!(running.finish().await.status, 143);
}

#[tokio::test]
async fn pipeline_status_is_the_last_commands() {
    assert_eq!(sh("true | false").await.status, 1);
    assert_eq!(sh("false | true").await.status, 0);
    assert_eq!(sh("false | true | exit 7").await.status, 7);
}

#[tokio::test]
async fn connectors_bind_looser_than_pipes() {
    let outcome = sh("echo a | cat && echo b | cat; true | false || echo c | cat").await;
    assert_eq!((outcome.status, outcome.stdout()), (0, "a\nb\nc\n"));
}

#[tokio::test]
async fn pipes_carry_stdout_only_unless_stderr_is_redirected() {
    let outcome = sh("echo err >&2 | cat; fake-flood stderr 3 2>&1 | head -c 2").await;
    assert_eq!((outcome.stdout(), outcome.stderr()), ("xx", "err\n"));
}

#[tokio::test]
async fn the_first_command_of_a_pipeline_reads_the_shells_stdin() {
    let outcome = exec_with_stdin(&["sh", "-c", "cat | head -n 1; cat"], &["a\nb\n"]).await;
    assert_eq!((outcome.status, outcome.stdout()), (0, "a\n"));
}

#[tokio::test]
async fn an_unknown_command_in_a_pipeline_is_not_found_and_the_rest_runs() {
    let outcome = sh("nosuch | echo hi").await;
    assert_eq!(outcome.status, 0);
    assert_eq!(
        (outcome.stdout(), outcome.stderr()),
        ("hi\n", "sh: nosuch: not found\n")
    );
}

#[tokio::test]
async fn a_writer_whose_reader_ended_stops_and_the_script_goes_on() {
    let outcome = sh("yes | head -c 2000000 | head -c 3; echo \" $?\"").await;
    assert_eq!((outcome.status, outcome.stdout()), (0, "y\ny 0\n"));
}

#[tokio::test]
async fn a_closed_stdout_ends_every_command_of_a_pipeline_with_141() {
    let Running {
        stdin,
        stdout,
        stderr,
        signals,
        status,
    } = start(request(&["sh", "-c", "yes | cat | cat"]));
    drop(stdout);
    let _keep = (stdin, stderr, signals);
    assert_eq!(status.await.unwrap(), 141);
}

#[tokio::test]
async fn a_signal_ends_a_whole_pipeline() {
    let running = start(request(&[
        "sh",
        "-c",
        "yes | head -c 2000000 >/dev/null; sleep 30",
    ]));
    tokio::time::pause();
    running.signals.send(15).unwrap();
    let outcome = running.finish().await;
    assert_eq!(outcome.status, 143);
}
