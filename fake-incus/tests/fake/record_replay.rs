//! Record and replay (`fake-incus record`, `fake-incus replay`): a session recorded through the
//! recorder in front of a fake replays against a fresh fake with no difference; against another
//! state it gives exactly the differences that state makes; the transcripts recorded from the
//! real daemon (`tests/data/transcripts/`) replay with no difference but the known ones.

#[path = "../transcripts/mod.rs"]
mod transcripts;

use fake_incus::client::{self, Request};
use fake_incus::record::Recorder;
use fake_incus::replay::{replay, replay_with, Pace};
use fake_incus::transcript::{self, FrameKind, Side, TranscriptError};
use fake_incus::{CaptureSource, FakeIncus, IncusLine, WAIT_ANSWERS_THE_OPERATION};
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use std::path::Path;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

/// Sends through the recorder's socket; panics on a transport error.
async fn send(socket: &Path, request: Request) -> client::Reply {
    client::send(socket, request).await.expect("an answer")
}

/// Waits for an operation through the recorder.
async fn wait(socket: &Path, started: &client::Reply) -> client::Reply {
    let op = started.operation().expect("an async answer");
    let done = send(socket, Request::get(&format!("{op}/wait?timeout=30"))).await;
    assert_eq!(done.metadata()["status"], "Success", "{:?}", done.json());
    done
}

type WsOverUnix = tokio_tungstenite::WebSocketStream<tokio::net::UnixStream>;

/// Starts `echo hello` on `c1` over exec websockets through the recorder and connects them in
/// the order of `fds`; returns the exec's answer and the websockets, in that order.
async fn start_echo(socket: &Path, fds: [&str; 4]) -> (client::Reply, Vec<WsOverUnix>) {
    let body = json!({"command": ["echo", "hello"], "wait-for-websocket": true,
        "interactive": false, "environment": {}});
    let started = send(socket, Request::post("/1.0/instances/c1/exec").json(&body)).await;
    assert_eq!(started.status(), 202, "{:?}", started.json());
    let op = started.operation().expect("an exec operation").to_string();
    let secrets = started.metadata()["metadata"]["fds"].clone();
    let mut sockets = Vec::new();
    for fd in fds {
        let secret = secrets[fd].as_str().expect("a secret");
        let stream = tokio::net::UnixStream::connect(socket)
            .await
            .expect("connect");
        let url = format!("ws://incus{op}/websocket?secret={secret}");
        let (ws, answer) = tokio_tungstenite::client_async(url, stream)
            .await
            .expect("upgrade through the recorder");
        assert_eq!(answer.status(), 101);
        sockets.push(ws);
    }
    (started, sockets)
}

/// Runs `echo hello` over exec websockets through the recorder; returns stdout.
async fn exec_over_websockets(socket: &Path) -> Vec<u8> {
    let (started, mut sockets) = start_echo(socket, ["0", "1", "2", "control"]).await;
    let mut stdout = Vec::new();
    let reader = &mut sockets[1];
    while let Ok(Some(Ok(message))) =
        tokio::time::timeout(Duration::from_secs(10), reader.next()).await
    {
        match message {
            Message::Binary(data) => stdout.extend_from_slice(&data),
            Message::Close(_) => break,
            _ => {}
        }
    }
    let done = wait(socket, &started).await;
    assert_eq!(done.metadata()["metadata"]["return"], 0);
    drop(sockets);
    stdout
}

/// Opens an SFTP session on `c1` through the recorder (the upgrade, then the client's INIT);
/// returns the type of the server's first packet.
async fn sftp_first_packet(socket: &Path) -> u8 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = crate::common::sftp_upgrade(socket, "/1.0/instances/c1/sftp").await;
    // SSH_FXP_INIT, version 3.
    stream
        .write_all(&[0, 0, 0, 5, 1, 0, 0, 0, 3])
        .await
        .expect("INIT");
    let mut length = [0u8; 4];
    stream.read_exact(&mut length).await.expect("a packet");
    let mut packet = vec![0u8; u32::from_be_bytes(length) as usize];
    stream.read_exact(&mut packet).await.expect("a packet");
    packet[0]
}

/// An everyday session, with the events websocket open throughout: create, start, exec, an
/// SFTP session, file push and pull, a snapshot, a config change with the ETag of a GET, stop
/// and delete.
async fn session(socket: &Path) {
    let stream = tokio::net::UnixStream::connect(socket)
        .await
        .expect("connect");
    let (mut events, answer) =
        tokio_tungstenite::client_async("ws://incus/1.0/events?type=operation", stream)
            .await
            .expect("the events websocket through the recorder");
    assert_eq!(answer.status(), 101);
    assert_eq!(send(socket, Request::get("/1.0")).await.status(), 200);
    let create = json!({"name": "c1", "source": {"type": "image", "alias": "busybox"}});
    let created = send(socket, Request::post("/1.0/instances").json(&create)).await;
    assert_eq!(created.status(), 202, "{:?}", created.json());
    wait(socket, &created).await;
    let start = json!({"action": "start", "timeout": 30});
    let started = send(socket, Request::put("/1.0/instances/c1/state").json(&start)).await;
    wait(socket, &started).await;
    assert_eq!(exec_over_websockets(socket).await, b"hello\n");
    assert_eq!(sftp_first_packet(socket).await, 2, "SSH_FXP_VERSION");
    let push = Request::post("/1.0/instances/c1/files?path=/root/hello.txt")
        .header("content-type", "application/octet-stream")
        .header("x-incus-type", "file")
        .body("hello from the session\n");
    assert_eq!(send(socket, push).await.status(), 200);
    let pulled = send(
        socket,
        Request::get("/1.0/instances/c1/files?path=/root/hello.txt"),
    )
    .await;
    assert_eq!(&pulled.bytes()[..], b"hello from the session\n");
    let snap = send(
        socket,
        Request::post("/1.0/instances/c1/snapshots").json(&json!({"name": "s1"})),
    )
    .await;
    wait(socket, &snap).await;
    let shown = send(socket, Request::get("/1.0/instances/c1")).await;
    let etag = shown.header("etag").expect("an ETag").to_string();
    let patch = Request::patch("/1.0/instances/c1")
        .header("If-Match", &etag)
        .json(&json!({"description": "recorded"}));
    assert_eq!(send(socket, patch).await.status(), 200);
    let missing = send(socket, Request::get("/1.0/instances/nope")).await;
    assert_eq!(missing.status(), 404);
    let stop = json!({"action": "stop", "force": true, "timeout": -1});
    let stopped = send(socket, Request::put("/1.0/instances/c1/state").json(&stop)).await;
    wait(socket, &stopped).await;
    let deleted = send(socket, Request::delete("/1.0/instances/c1")).await;
    wait(socket, &deleted).await;
    let first = tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .expect("an event");
    let event: serde_json::Value = match first {
        Some(Ok(Message::Text(text))) => serde_json::from_str(&text).expect("JSON"),
        other => panic!("an operation event: {other:?}"),
    };
    assert_eq!(event["type"], "operation");
    events.close(None).await.expect("close");
}

/// The exchanges of a transcript whose path ends with `suffix` that were upgraded.
fn upgraded<'a>(
    exchanges: &'a [transcript::Exchange],
    suffix: &str,
) -> Vec<&'a transcript::Exchange> {
    exchanges
        .iter()
        .filter(|e| e.websocket.is_some() && e.request.path.ends_with(suffix))
        .collect()
}

/// Records `session` through a recorder in front of a fresh fake; returns the transcript text.
async fn record_session(dir: &Path, body_limit: usize) -> String {
    let upstream = FakeIncus::builder().start().await.expect("fake");
    let source = CaptureSource::Unix(upstream.unix_socket().to_path_buf());
    record_session_from(&source, dir, body_limit).await
}

/// The fake's HTTPS listener, with the client certificate it trusts and its own pinned.
fn https_source(fake: &FakeIncus, pinned: &FakeIncus) -> CaptureSource {
    CaptureSource::Https {
        url: fake.https_url().expect("HTTPS on"),
        client_cert_pem: fake.client_cert_pem(),
        client_key_pem: fake.client_key_pem(),
        server_cert_pem: pinned.server_cert_pem(),
    }
}

/// Records `session` through a recorder in front of `upstream`; returns the transcript text.
async fn record_session_from(upstream: &CaptureSource, dir: &Path, body_limit: usize) -> String {
    let path = dir.join("session.jsonl");
    let recorder = Recorder::start_from(upstream, &dir.join("recorder.socket"), &path, body_limit)
        .await
        .expect("recorder");
    session(recorder.unix_socket()).await;
    let written = recorder.finish().await.expect("transcript");
    let text = std::fs::read_to_string(&path).expect("transcript file");
    assert_eq!(
        text.lines().count() as u64,
        written + 1,
        "a header, then each exchange"
    );
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_of_a_session_recorded_from_a_fake_against_a_fresh_fake_has_no_difference() {
    let dir = tempfile::tempdir().unwrap();
    let text = record_session(dir.path(), transcript::DEFAULT_BODY_LIMIT).await;
    let (header, exchanges) = transcript::parse(&text).expect("a transcript");
    assert_eq!(header.transcript_version, transcript::TRANSCRIPT_VERSION);
    // The transcript holds what the client sent and got, websockets with their frames.
    let exec_stdout: Vec<u8> = exchanges
        .iter()
        .filter_map(|e| e.websocket.as_ref())
        .flat_map(|ws| &ws.frames)
        .filter(|f| f.from == Side::Server && f.kind == FrameKind::Binary)
        .flat_map(|f| f.data.bytes().unwrap())
        .collect();
    assert_eq!(exec_stdout, b"hello\n");
    assert_eq!(upgraded(&exchanges, "/websocket").len(), 4);
    assert_eq!(upgraded(&exchanges, "/sftp").len(), 1);
    assert_eq!(upgraded(&exchanges, "/events").len(), 1);
    let push = exchanges
        .iter()
        .find(|e| e.request.method == "POST" && e.request.path.ends_with("/files"))
        .expect("the file push");
    assert_eq!(push.request.query, "path=/root/hello.txt");
    assert!(push
        .request
        .headers
        .contains(&("x-incus-type".into(), "file".into())));
    assert_eq!(
        push.request.body.text.as_deref(),
        Some("hello from the session\n")
    );

    let fresh = FakeIncus::builder().start().await.expect("fake");
    let report = replay(&exchanges, fresh.unix_socket())
        .await
        .expect("replay");
    assert_eq!(report.exchanges, exchanges.len());
    assert_eq!(report.replayed, exchanges.len());
    assert!(report.differences.is_empty(), "{}", report.text());
    // The replay reached the fresh fake with its own ids: the instance was made and deleted.
    assert_eq!(fresh.requests("POST", "/1.0/instances").len(), 1);
    assert_eq!(
        fresh.requests("GET", "/1.0/operations/*/websocket").len(),
        4
    );
    assert_eq!(
        fresh.requests("PATCH", "/1.0/instances/c1")[0].answer,
        fake_incus::Answer::Status { code: 200 }
    );
}

/// Reads a websocket until its end, answering a close frame as clients do; returns the data.
async fn read_to_end(ws: &mut WsOverUnix) -> Vec<u8> {
    let mut data = Vec::new();
    while let Ok(Some(Ok(message))) = tokio::time::timeout(Duration::from_secs(10), ws.next()).await
    {
        if let Message::Binary(bytes) = message {
            data.extend_from_slice(&bytes);
        }
    }
    data
}

/// Runs `echo hello` over exec websockets as the official client does: it connects `control`,
/// `0`, `1` and `2` in that order, ends stdin, reads stdout and stderr to their end, and reads
/// `control` until the server ends it (answering the close frame the recorder relays that end
/// as); returns stdout.
async fn exec_as_the_official_client(socket: &Path) -> Vec<u8> {
    let (started, mut sockets) = start_echo(socket, ["control", "0", "1", "2"]).await;
    let [control, stdin, stdout, stderr] = &mut sockets[..] else {
        unreachable!("four sockets")
    };
    stdin
        .send(Message::text(""))
        .await
        .expect("the end of stdin");
    let out = read_to_end(stdout).await;
    assert_eq!(read_to_end(stderr).await, b"");
    read_to_end(control).await;
    let done = wait(socket, &started).await;
    assert_eq!(done.metadata()["metadata"]["return"], 0);
    out
}

/// Records, through a recorder in front of a fresh fake, `runs` runs of `echo hello` by
/// [`exec_as_the_official_client`] on a new running `c1`; returns the exchanges.
async fn record_execs(dir: &Path, runs: usize) -> Vec<transcript::Exchange> {
    let upstream = FakeIncus::builder().start().await.expect("fake");
    let path = dir.join("execs.jsonl");
    let recorder = Recorder::start(
        upstream.unix_socket(),
        &dir.join("recorder.socket"),
        &path,
        transcript::DEFAULT_BODY_LIMIT,
    )
    .await
    .expect("recorder");
    let socket = recorder.unix_socket().to_path_buf();
    let create = json!({"name": "c1", "source": {"type": "image", "alias": "busybox"}});
    wait(
        &socket,
        &send(&socket, Request::post("/1.0/instances").json(&create)).await,
    )
    .await;
    let start = json!({"action": "start", "timeout": 30});
    let started = send(
        &socket,
        Request::put("/1.0/instances/c1/state").json(&start),
    )
    .await;
    wait(&socket, &started).await;
    for _ in 0..runs {
        assert_eq!(exec_as_the_official_client(&socket).await, b"hello\n");
    }
    recorder.finish().await.expect("transcript");
    let text = std::fs::read_to_string(&path).expect("transcript file");
    transcript::parse(&text).expect("a transcript").1
}

/// The exchanges that opened an exec's `control` websocket.
fn control_websockets(exchanges: &[transcript::Exchange]) -> Vec<&transcript::Exchange> {
    let secrets: Vec<String> = exchanges
        .iter()
        .filter(|e| e.request.method == "POST" && e.request.path.ends_with("/exec"))
        .filter_map(|e| e.response.body.text.as_deref())
        .filter_map(|text| serde_json::from_str::<serde_json::Value>(text).ok())
        .filter_map(|body| {
            body["metadata"]["metadata"]["fds"]["control"]
                .as_str()
                .map(String::from)
        })
        .collect();
    exchanges
        .iter()
        .filter(|e| e.websocket.is_some())
        .filter(|e| {
            secrets
                .iter()
                .any(|s| e.request.query == format!("secret={s}"))
        })
        .collect()
}

/// Replays `exchanges` against a fake that starts each command 300 ms after its websockets
/// attach (the recorded one: 25 ms); asserts that nothing differs.
async fn replays_against_a_slower_server_with_no_difference(exchanges: &[transcript::Exchange]) {
    let slower = FakeIncus::builder()
        .exec_start_delay(Duration::from_millis(300))
        .start()
        .await
        .unwrap();
    let report = replay(exchanges, slower.unix_socket()).await.unwrap();
    assert_eq!(report.replayed, exchanges.len());
    assert!(report.differences.is_empty(), "{}", report.text());
}

/// The official client answers the end of an exec's `control` (which the recorder relays as a
/// close frame) with a close frame of its own. A replay against a server slower than the
/// recorded one leaves that end to the server instead of sending the close at its recorded
/// moment, which came before that server had run the command: the daemon and the fake kill a
/// command whose `control` gets a close frame, and its output replayed empty (about one exec in
/// three of live replays on a loaded machine, whose fake starts a command 25 ms after its
/// websockets attach, about when the daemon's output had come).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_the_client_sent_in_answer_to_the_servers_end_is_left_to_the_replayed_servers_end()
{
    let dir = tempfile::tempdir().unwrap();
    let runs = 3;
    let exchanges = record_execs(dir.path(), runs).await;
    let controls = control_websockets(&exchanges);
    assert_eq!(controls.len(), runs, "one control websocket per exec");
    for control in controls {
        let ws = control.websocket.as_ref().expect("frames");
        assert_eq!(ws.ended_by, Some(Side::Server), "the server ended control");
        assert!(
            ws.frames
                .iter()
                .any(|f| f.from == Side::Client && f.kind == FrameKind::Close),
            "the client answered with a close frame"
        );
    }
    replays_against_a_slower_server_with_no_difference(&exchanges).await;
}

/// The official client goes away from an exec's `control` when it exits, once stdout and
/// stderr ended and the operation did; a loaded recorder may see that before the daemon's own
/// end of `control` (one exec in 20 of a live recording from Incus 7.0.2). A replay against a
/// server slower than the recorded one ends `control` at the recorded moment only once that
/// server has sent, on the exec's other websockets, what the recorded one had by then: sooner,
/// it would kill the command before it ran (the daemon and the fake kill a command whose
/// `control` closes), and its output replayed empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_the_client_left_once_the_others_ended_is_left_in_a_replay_once_they_ended() {
    let dir = tempfile::tempdir().unwrap();
    let runs = 3;
    let mut exchanges = record_execs(dir.path(), runs).await;
    // The transcript as the live one has it: the client went away from `control` first (no
    // close frame), after the other websockets' data and ends.
    let controls: Vec<u64> = control_websockets(&exchanges)
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(controls.len(), runs, "one control websocket per exec");
    for exchange in exchanges.iter_mut().filter(|e| controls.contains(&e.seq)) {
        let ws = exchange.websocket.as_mut().expect("frames");
        ws.frames.retain(|f| f.kind != FrameKind::Close);
        ws.ended_by = Some(Side::Client);
    }
    replays_against_a_slower_server_with_no_difference(&exchanges).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_against_another_state_reports_what_that_state_changes() {
    let dir = tempfile::tempdir().unwrap();
    let text = record_session(dir.path(), transcript::DEFAULT_BODY_LIMIT).await;
    let (_, exchanges) = transcript::parse(&text).unwrap();
    // A fake without the image the session launched from.
    let mut state = FakeIncus::builder().start().await.unwrap().dump_state();
    state["images"] = json!([]);
    let other = FakeIncus::builder().state(state).start().await.unwrap();
    let report = replay(&exchanges, other.unix_socket()).await.unwrap();
    // The creation is accepted either way (an operation); its operation fails here.
    let first = &report.differences[0];
    let creation = exchanges
        .iter()
        .find(|e| e.request.method == "POST" && e.request.path == "/1.0/instances")
        .unwrap();
    assert!(first.seq > creation.seq, "{}", report.text());
    assert!(first.path.contains("/wait"), "{}", report.text());
    // The failure shows as the wait's error, or, on a line whose wait answers the operation as
    // it ended, as the operation's status.
    let failed = if IncusLine::DEFAULT.has_extension(WAIT_ANSWERS_THE_OPERATION) {
        "metadata.status: value real \"Success\" vs fake \"Failure\""
    } else {
        "error: real \"\" vs fake"
    };
    assert!(
        report
            .differences
            .iter()
            .any(|d| d.seq == first.seq && d.what.starts_with(failed)),
        "{}",
        report.text()
    );
    // What depended on the instance differs too: its exec, files and snapshot.
    for path in [
        "/1.0/instances/c1/exec",
        "/1.0/instances/c1/files?path=/root/hello.txt",
    ] {
        assert!(
            report.differences.iter().any(|d| d.path == path),
            "no difference at {path}:\n{}",
            report.text()
        );
    }
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(
        json["differences"].as_array().map(Vec::len),
        Some(report.differences.len())
    );
    assert_eq!(json["differences"][0]["seq"], report.differences[0].seq);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_beyond_the_bound_are_cut_and_keep_the_size_and_digest_of_the_whole() {
    let dir = tempfile::tempdir().unwrap();
    let text = record_session(dir.path(), 8).await;
    let (header, exchanges) = transcript::parse(&text).unwrap();
    assert_eq!(header.body_limit, 8);
    let push = exchanges
        .iter()
        .find(|e| e.request.method == "POST" && e.request.path.ends_with("/files"))
        .unwrap();
    let body = &push.request.body;
    let whole = b"hello from the session\n";
    assert_eq!((body.size, body.truncated), (whole.len(), true));
    assert_eq!(body.text.as_deref(), Some("hello fr"));
    use sha2::Digest;
    assert_eq!(body.sha256, hex::encode(sha2::Sha256::digest(whole)));
    // A request whose body was cut is not sent again: the report says so.
    let fresh = FakeIncus::builder().start().await.unwrap();
    let report = replay(&exchanges, fresh.unix_socket()).await.unwrap();
    assert!(
        report
            .differences
            .iter()
            .any(|d| d.seq == push.seq && d.what.starts_with("not replayed")),
        "{}",
        report.text()
    );
    assert_eq!(
        report.replayed,
        exchanges.len()
            - report
                .differences
                .iter()
                .filter(|d| d.what.starts_with("not replayed"))
                .count()
    );
}

#[test]
fn a_transcript_of_another_version_or_shape_is_refused_with_a_clear_error() {
    let other = r#"{"transcript_version": 99, "upstream": "x", "started": "", "body_limit": 1}"#;
    assert!(matches!(
        transcript::parse(other),
        Err(TranscriptError::Version { found: 99 })
    ));
    assert!(matches!(
        transcript::parse(""),
        Err(TranscriptError::Line { line: 1, .. })
    ));
    let header = r#"{"transcript_version": 1, "upstream": "x", "started": "", "body_limit": 1}"#;
    let bad = format!("{header}\n{{\"seq\": \"one\"}}\n");
    let err = transcript::parse(&bad).unwrap_err();
    assert!(
        matches!(err, TranscriptError::Line { line: 2, .. }),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transcripts_recorded_from_the_real_daemon_replay_with_only_known_differences() {
    let found = transcripts::kept();
    assert!(!found.is_empty(), "no transcripts in {}", transcripts::DIR);
    let mut reports = Vec::new();
    for kept in found {
        let fake = kept.fake().await;
        // The daemon's pauses (a launch takes seconds) are cut: the fake needs none of them.
        let pace = Pace::AtMost(Duration::from_millis(20));
        let report = replay_with(&kept.exchanges, fake.unix_socket(), pace)
            .await
            .unwrap();
        assert_eq!(report.replayed, kept.exchanges.len(), "{}", kept.name);
        let unexpected = transcripts::unexpected_beside(&report, kept.known_beside());
        assert!(
            unexpected.is_empty(),
            "{} (Incus {}): unexpected differences:\n{}",
            kept.name,
            kept.line(),
            unexpected.join("\n")
        );
        reports.push(report);
    }
    for known in [transcripts::KNOWN, transcripts::KNOWN_7_0] {
        for stale in transcripts::unseen(known, &reports) {
            eprintln!(
                "no kept transcript shows the known difference {:?} at {:?}: remove it unless it is intermittent",
                stale.diff, stale.request
            );
        }
    }
}

#[test]
fn transcripts_are_kept_from_the_real_daemons_of_both_lines_and_name_no_path_of_the_recording_machine(
) {
    let found = transcripts::kept();
    let lines: Vec<IncusLine> = found.iter().map(|kept| kept.line()).collect();
    for line in [IncusLine::V6_0, IncusLine::V7_0] {
        assert!(lines.contains(&line), "no transcript of Incus {line}");
    }
    // A transcript holds what the daemon answered, and so the paths of its own layout (under
    // /var/lib/incus), never one of the machine it ran on (a home, a temporary or work
    // directory, a daemon tree set up elsewhere).
    for entry in std::fs::read_dir(transcripts::DIR).expect("the kept transcripts") {
        let path = entry.expect("an entry").path();
        let text = std::fs::read_to_string(&path).expect("text");
        for machine in ["/home/", "/root/", "/tmp/", "/srv/", "/work/"] {
            assert!(
                !text.contains(machine),
                "{} names a path of the recording machine ({machine}…)",
                path.display()
            );
        }
    }
}

#[test]
fn the_replay_command_reports_as_text_and_json_and_fails_on_a_difference() {
    let bin = env!("CARGO_BIN_EXE_fake-incus");
    let dir = Path::new(transcripts::DIR);
    // The kept session replayed against its capture without the image it launched from.
    let temp = tempfile::tempdir().unwrap();
    let capture = std::fs::read(dir.join("cli-session.state.json")).expect("the capture");
    let mut state: serde_json::Value = serde_json::from_slice(&capture).expect("JSON");
    state["images"] = json!([]);
    let imageless = temp.path().join("imageless.state.json");
    std::fs::write(&imageless, state.to_string()).expect("written");
    let run = |extra: &[&str]| {
        std::process::Command::new(bin)
            .arg("replay")
            .arg(dir.join("cli-session.jsonl"))
            .arg("--state")
            .arg(&imageless)
            .args(["--max-pause-ms", "20"])
            .args(extra)
            .output()
            .expect("fake-incus runs")
    };
    // The image's alias is unknown where the daemon knew it: exit status 1.
    let text = run(&[]);
    assert_eq!(text.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(stdout.starts_with("replay: "), "{stdout}");
    // (In the session's own project, whose name each recording draws anew.)
    assert!(
        stdout.lines().any(|line| {
            line.contains("/1.0/images/aliases/busybox?project=")
                && line.ends_with(": HTTP status: real 200 vs fake 404")
        }),
        "{stdout}"
    );
    let json = run(&["--json"]);
    assert_eq!(json.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(report["exchanges"], report["replayed"]);
    assert!(report["differences"][0]["what"].is_string());
    // Bad input: a clear error, exit status 1, nothing on stdout.
    let missing = std::process::Command::new(bin)
        .args(["replay", "no-such-transcript.jsonl"])
        .output()
        .expect("fake-incus runs");
    assert_eq!(missing.status.code(), Some(1));
    assert!(missing.stdout.is_empty());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no-such-transcript.jsonl"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorder_refuses_a_silent_upstream_and_a_dropped_one_removes_its_socket() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("recorder.socket");
    let transcript = dir.path().join("t.jsonl");
    let limit = transcript::DEFAULT_BODY_LIMIT;
    let silent = dir.path().join("nobody.socket");
    let refused = Recorder::start(&silent, &socket, &transcript, limit).await;
    assert!(
        matches!(
            refused,
            Err(fake_incus::record::RecordError::Upstream { .. })
        ),
        "{refused:?}"
    );
    assert!(
        !socket.exists(),
        "nothing listens when the upstream is silent"
    );
    let upstream = FakeIncus::builder().start().await.unwrap();
    let recorder = Recorder::start(upstream.unix_socket(), &socket, &transcript, limit)
        .await
        .unwrap();
    assert_eq!(send(&socket, Request::get("/1.0")).await.status(), 200);
    drop(recorder);
    assert!(!socket.exists());
    assert!(client::send(&socket, Request::get("/1.0")).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_recorded_from_an_https_upstream_replays_against_a_fresh_fake_with_no_difference()
{
    let dir = tempfile::tempdir().unwrap();
    let upstream = FakeIncus::builder().https(true).start().await.unwrap();
    let source = https_source(&upstream, &upstream);
    let text = record_session_from(&source, dir.path(), transcript::DEFAULT_BODY_LIMIT).await;
    let (header, exchanges) = transcript::parse(&text).expect("a transcript");
    assert_eq!(Some(header.upstream), upstream.https_url());
    // Everything went over HTTPS: the upstream saw the session, its upgrades included.
    assert_eq!(upstream.requests("POST", "/1.0/instances").len(), 1);
    assert_eq!(upgraded(&exchanges, "/websocket").len(), 4);
    assert_eq!(upgraded(&exchanges, "/sftp").len(), 1);
    assert_eq!(upgraded(&exchanges, "/events").len(), 1);
    let sftp = &upgraded(&exchanges, "/sftp")[0];
    let frames = &sftp.websocket.as_ref().expect("relayed").frames;
    assert!(
        frames
            .iter()
            .any(|f| f.from == Side::Server && f.kind == FrameKind::Raw),
        "the server's SFTP packets were relayed back over TLS"
    );
    let fresh = FakeIncus::builder().start().await.unwrap();
    let report = replay(&exchanges, fresh.unix_socket()).await.unwrap();
    assert_eq!(report.replayed, exchanges.len());
    assert!(report.differences.is_empty(), "{}", report.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorder_refuses_an_https_upstream_whose_certificate_is_not_the_pinned_one() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("recorder.socket");
    let upstream = FakeIncus::builder().https(true).start().await.unwrap();
    let other = FakeIncus::builder().https(true).start().await.unwrap();
    assert_ne!(upstream.server_cert_pem(), other.server_cert_pem());
    let refused = Recorder::start_from(
        &https_source(&upstream, &other),
        &socket,
        &dir.path().join("t.jsonl"),
        transcript::DEFAULT_BODY_LIMIT,
    )
    .await;
    match refused {
        Err(fake_incus::record::RecordError::Upstream { message, .. }) => assert!(
            message.contains("not the pinned one"),
            "a clear error: {message}"
        ),
        other => panic!("refused as not pinned: {other:?}"),
    }
    assert!(!socket.exists(), "nothing listens");
    assert!(
        upstream.requests("GET", "/1.0").is_empty(),
        "no request reached the upstream"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_record_command_records_an_https_upstream_for_socket_and_https_clients_and_refuses_bad_credentials_clearly(
) {
    use tokio::io::AsyncBufReadExt;
    let bin = env!("CARGO_BIN_EXE_fake-incus");
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: String| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let upstream = FakeIncus::builder().https(true).start().await.unwrap();
    let other = FakeIncus::builder().https(true).start().await.unwrap();
    let url = upstream.https_url().unwrap();
    let cert = file("client.crt", upstream.client_cert_pem());
    let key = file("client.key", upstream.client_key_pem());
    let pinned = file("server.crt", upstream.server_cert_pem());
    let wrong = file("other.crt", other.server_cert_pem());
    let socket = dir.path().join("recorder.socket");
    let transcript_path = dir.path().join("t.jsonl");
    let command = |upstream: &str, server_cert: Option<&Path>| {
        let mut command = tokio::process::Command::new(bin);
        command
            .args(["record", "--upstream", upstream, "--unix"])
            .arg(&socket)
            .arg("--transcript")
            .arg(&transcript_path)
            .arg("--client-cert")
            .arg(&cert)
            .arg("--client-key")
            .arg(&key)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        if let Some(server_cert) = server_cert {
            command.arg("--server-cert").arg(server_cert);
        }
        command
    };
    for (upstream, server_cert, says) in [
        (url.as_str(), Some(wrong.as_path()), "not the pinned one"),
        (url.as_str(), None, "--server-cert is required"),
        (
            upstream.unix_socket().to_str().unwrap(),
            Some(pinned.as_path()),
            "are for an https:// upstream",
        ),
    ] {
        let refused = command(upstream, server_cert).output().await.unwrap();
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(says), "{says}: {stderr}");
        assert!(refused.stdout.is_empty());
        assert!(!socket.exists(), "nothing listens");
    }

    // Clients reach this one over its socket and over HTTPS (its own certificates).
    let tls_dir = dir.path().join("tls");
    let mut child = command(&url, Some(&pinned))
        .args(["--https", "127.0.0.1:0", "--tls-dir"])
        .arg(&tls_dir)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next_line = async || {
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("a line in time")
            .unwrap()
            .expect("a line");
        serde_json::from_str::<serde_json::Value>(&line).unwrap()
    };
    let ready = next_line().await;
    assert_eq!(ready["unix_socket"], socket.to_str().unwrap());
    let listed = send(&socket, Request::get("/1.0/instances")).await;
    assert_eq!(listed.status(), 200);
    let read = |key: &str| std::fs::read_to_string(ready[key].as_str().expect(key)).expect(key);
    let address = ready["https_address"].as_str().unwrap().parse().unwrap();
    let over_https = https_call(
        address,
        (
            &read("client_cert"),
            &read("client_key"),
            &read("server_cert"),
        ),
        Request::get("/1.0/instances"),
    )
    .await;
    assert_eq!(over_https.status(), 200);
    let pid = child.id().unwrap().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    assert_eq!(next_line().await, json!({"exchanges": 2}));
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("exits")
        .unwrap();
    assert!(status.success(), "{status:?}");
    let text = std::fs::read_to_string(&transcript_path).unwrap();
    let (header, exchanges) = transcript::parse(&text).unwrap();
    assert_eq!(header.upstream, url);
    assert_eq!(exchanges[0].request.path, "/1.0/instances");
    assert_eq!(upstream.requests("GET", "/1.0/instances").len(), 2);
}

/// One request to an HTTPS listener at `address`, presenting `cert`/`key`, `server_cert`
/// pinned.
async fn https_call(
    address: std::net::SocketAddr,
    (cert, key, server_cert): (&str, &str, &str),
    request: Request,
) -> client::Reply {
    let config =
        incus_credentials::tls::client_config(cert, key, server_cert).expect("credentials");
    let tcp = tokio::net::TcpStream::connect(address)
        .await
        .expect("connect");
    let name = rustls_pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let tls = tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .expect("the handshake");
    let mut connection = client::Connection::over(tls).await.expect("HTTP");
    connection.send(request).await.expect("an answer")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorder_over_https_relays_only_the_client_certificate_it_trusts() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = FakeIncus::builder().start().await.unwrap();
    let path = dir.path().join("t.jsonl");
    let mut recorder = Recorder::start(
        upstream.unix_socket(),
        &dir.path().join("recorder.socket"),
        &path,
        transcript::DEFAULT_BODY_LIMIT,
    )
    .await
    .unwrap();
    let tls_dir = dir.path().join("tls");
    let address = recorder
        .listen_https("127.0.0.1:0".parse().unwrap(), &tls_dir)
        .await
        .unwrap();
    assert_ne!(address.port(), 0, "the bound port");
    let read = |name: &str| std::fs::read_to_string(tls_dir.join(name)).expect(name);
    let (cert, key, server_cert) = (read("client.crt"), read("client.key"), read("server.crt"));
    let listed = https_call(
        address,
        (&cert, &key, &server_cert),
        Request::get("/1.0/instances"),
    )
    .await;
    assert_eq!(listed.status(), 200, "{:?}", listed.json());
    assert_eq!(upstream.requests("GET", "/1.0/instances").len(), 1);

    // Another client certificate: refused, nothing forwarded.
    let stranger = FakeIncus::builder().start().await.unwrap();
    let refused = https_call(
        address,
        (
            &stranger.client_cert_pem(),
            &stranger.client_key_pem(),
            &server_cert,
        ),
        Request::get("/1.0/instances"),
    )
    .await;
    assert_eq!(refused.status(), 403);
    assert!(
        refused.json()["error"]
            .as_str()
            .unwrap_or_default()
            .contains("not the recorder's trusted one"),
        "{:?}",
        refused.json()
    );
    assert_eq!(upstream.requests("GET", "/1.0/instances").len(), 1);

    assert_eq!(recorder.finish().await.unwrap(), 1, "only the relayed one");
    let (_, exchanges) = transcript::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(exchanges[0].response.status, 200);
    assert!(
        tokio::net::TcpStream::connect(address).await.is_err(),
        "the HTTPS listener is closed"
    );
}
