//! The listeners' own defences: connection time limits (idle connections and slow request
//! heads are closed, requests in flight are not), accept loops that back off when file
//! descriptors run out, and the answers to malformed requests.

use crate::common;

use fake_incus::FakeIncus;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

const IDLE: Duration = Duration::from_millis(400);
const HEADER: Duration = Duration::from_millis(300);

async fn fake() -> FakeIncus {
    crate::common::builder()
        .idle_timeout(IDLE)
        .header_read_timeout(HEADER)
        .start()
        .await
        .expect("fake starts")
}

#[tokio::test]
async fn connection_that_sends_nothing_is_closed_after_the_idle_timeout() {
    let fake = fake().await;
    let mut stream = UnixStream::connect(fake.unix_socket()).await.unwrap();
    let started = Instant::now();
    let got = common::read_to_close(&mut stream, Duration::from_secs(5))
        .await
        .expect("closed by the fake");
    assert!(got.is_empty());
    assert!(started.elapsed() >= IDLE - Duration::from_millis(50));
}

#[tokio::test]
async fn partial_request_head_is_closed_after_the_header_read_timeout_even_if_dribbled() {
    let fake = fake().await;
    let stream = UnixStream::connect(fake.unix_socket()).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let started = Instant::now();
    let dribble = tokio::spawn(async move {
        writer
            .write_all(b"GET /1.0 HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            .await?;
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            writer.write_all(b"a").await?;
        }
        Ok::<(), std::io::Error>(())
    });
    let mut buf = [0u8; 1024];
    let read = tokio::time::timeout(Duration::from_secs(4), reader.read(&mut buf))
        .await
        .expect("closed before the client finished dribbling");
    assert!(matches!(read, Ok(0) | Err(_)), "no answer, only a close");
    let elapsed = started.elapsed();
    assert!(
        elapsed >= HEADER - Duration::from_millis(50) && elapsed < Duration::from_secs(3),
        "{elapsed:?}"
    );
    assert!(dribble.await.unwrap().is_err(), "the writer saw the close");
}

#[tokio::test]
async fn keep_alive_connection_is_closed_when_idle_after_an_answer() {
    let fake = fake().await;
    let mut stream = UnixStream::connect(fake.unix_socket()).await.unwrap();
    stream
        .write_all(b"GET /1.0/instances HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let started = Instant::now();
    let got = common::read_to_close(&mut stream, Duration::from_secs(5))
        .await
        .expect("closed by the fake after the answer");
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        text.to_ascii_lowercase().contains("content-length: "),
        "a complete answer keeps its length while it is counted in flight: {text}"
    );
    assert!(started.elapsed() >= IDLE - Duration::from_millis(50));
}

#[tokio::test]
async fn request_in_flight_is_not_cut_by_the_idle_timeout() {
    use fake_incus::{Fault, Rule};
    let fake = fake().await;
    let _slow = fake
        .add_rule(Rule::new("POST", "/1.0/instances").fault(Fault::OperationDuration { ms: 1500 }));
    let body = serde_json::json!({"name": "c1", "source": {"type": "none"}});
    let created = common::unix(&fake, "POST", "/1.0/instances", Some(body)).await;
    let op = created.json()["operation"].as_str().unwrap().to_string();
    let mut stream = UnixStream::connect(fake.unix_socket()).await.unwrap();
    let request =
        format!("GET {op}/wait?timeout=10 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let started = Instant::now();
    let got = common::read_to_close(&mut stream, Duration::from_secs(10))
        .await
        .expect("answered");
    let text = String::from_utf8_lossy(&got);
    assert!(
        started.elapsed() > IDLE * 2,
        "the wait lasted longer than the idle timeout"
    );
    assert!(text.contains("\"status\":\"Success\""), "{text}");
}

/// CPU time (user + system, in clock ticks) a process has used so far.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which is in parentheses): state is field 3; utime and
    // stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[tokio::test]
async fn accept_loop_backs_off_when_file_descriptors_run_out() {
    use tokio::io::AsyncBufReadExt;
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("incus.socket");
    let script = format!(
        "ulimit -n 64 && exec \"$0\" serve --unix '{}'",
        socket.display()
    );
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_fake-incus"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("sh runs");
    let pid = child.id().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("ready in time")
        .unwrap()
        .expect("a ready line");
    // More connections than the fake has descriptors left: the rest wait in the backlog.
    let mut held = Vec::new();
    for _ in 0..100 {
        held.push(UnixStream::connect(&socket).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = cpu_ticks(pid);
    let window = Instant::now();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let used = cpu_ticks(pid) - before;
    let wall_ticks = window.elapsed().as_millis() as u64 / 10;
    assert!(
        used * 5 < wall_ticks,
        "the fake used {used} of {wall_ticks} ticks while it could not accept"
    );
    drop(held);
    // Once descriptors are free again it serves.
    let reply = tokio::time::timeout(
        Duration::from_secs(10),
        common::unix_at(&socket, "GET", "/1.0", None, &[]),
    )
    .await
    .expect("served after the backoff");
    assert_eq!(reply.status(), 200);
    child.kill().await.unwrap();
}

/// Sends raw bytes on a fresh Unix connection and returns everything the fake answered.
async fn raw(fake: &FakeIncus, request: &str) -> String {
    let mut stream = UnixStream::connect(fake.unix_socket()).await.unwrap();
    // The fake may answer and close before a long request is all sent.
    let _ = stream.write_all(request.as_bytes()).await;
    let got = common::read_to_close(&mut stream, Duration::from_secs(5))
        .await
        .expect("answered and closed");
    String::from_utf8_lossy(&got).into_owned()
}

/// The accept loop serves one connection itself (no other worker woken for it) and spawns the
/// others: a connection left open there, half a request head sent, holds up no other, and is
/// answered once its head is complete.
#[tokio::test]
async fn a_connection_left_open_holds_up_no_other() {
    let fake = crate::common::builder().start().await.unwrap();
    let mut first = UnixStream::connect(fake.unix_socket()).await.unwrap();
    first
        .write_all(b"GET /1.0 HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let _idle = UnixStream::connect(fake.unix_socket()).await.unwrap();
    for _ in 0..3 {
        let request = "GET /1.0 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        let answer = tokio::time::timeout(Duration::from_secs(5), raw(&fake, request))
            .await
            .expect("answered while the first connection is open");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
    first.write_all(b"Connection: close\r\n\r\n").await.unwrap();
    let got = common::read_to_close(&mut first, Duration::from_secs(5))
        .await
        .expect("answered and closed");
    let got = String::from_utf8_lossy(&got);
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
}

/// The daemon's Unix socket speaks HTTP/1.1 only (HTTP/2 is offered over TLS through ALPN):
/// Go's server reads the HTTP/2 connection preface as a request for `*`, answers the top-level
/// 404 and closes (checked on the daemon's Unix socket).
#[tokio::test]
async fn http2_preface_on_the_unix_socket_gets_the_daemons_404_and_close() {
    let fake = crate::common::builder().start().await.unwrap();
    let answer = raw(&fake, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 404 Not Found\r\n"), "{answer}");
    for header in [
        "Content-Type: application/json\r\n",
        "X-Content-Type-Options: nosniff\r\n",
        "Content-Length: 114\r\n",
        "Connection: close\r\n",
        "Date: ",
    ] {
        assert!(answer.contains(header), "{header:?} in {answer}");
    }
    assert!(
        answer.ends_with("\r\n\r\n{\"type\":\"error\",\"status\":\"\",\"status_code\":0,\"operation\":\"\",\"error_code\":404,\"error\":\"not found\",\"metadata\":null}\n\n"),
        "{answer}"
    );
    // Nothing reached the API: the answer is Go's server's, before any route.
    assert!(fake.journal().is_empty(), "{:?}", fake.journal());
}

/// The daemon writes an error envelope with `fmt.Fprintln` of the encoder's newline-terminated
/// JSON: its error bodies end with two newlines (114 bytes for the top-level 404), its sync
/// bodies with one (checked on the daemon's Unix socket).
#[tokio::test]
async fn error_bodies_end_with_two_newlines_and_sync_bodies_with_one() {
    let fake = crate::common::builder().start().await.unwrap();
    let close = "Host: x\r\nConnection: close\r\n\r\n";
    let not_found = raw(&fake, &format!("GET /nope HTTP/1.1\r\n{close}")).await;
    assert!(not_found.starts_with("HTTP/1.1 404"), "{not_found}");
    assert!(not_found.contains("content-length: 114\r\n"), "{not_found}");
    assert!(not_found.ends_with("\"metadata\":null}\n\n"), "{not_found}");
    let missing = raw(
        &fake,
        &format!("GET /1.0/instances/nope HTTP/1.1\r\n{close}"),
    )
    .await;
    assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");
    assert!(missing.ends_with("}\n\n"), "{missing}");
    let sync = raw(&fake, &format!("GET /1.0/networks HTTP/1.1\r\n{close}")).await;
    assert!(sync.starts_with("HTTP/1.1 200"), "{sync}");
    assert!(sync.ends_with("]}\n") && !sync.ends_with("\n\n"), "{sync}");
}

/// Malformed requests answered as Incus 6.0.4 answers them (each checked on the daemon's Unix
/// socket): status line, body form (JSON envelope or Go's plain text) and error text.
#[tokio::test]
async fn malformed_requests_get_the_daemons_answers() {
    let fake = crate::common::builder().start().await.unwrap();
    let close = "Connection: close\r\n";
    let cases: Vec<(String, &str, &str)> = vec![
        (format!("FOO /1.0 HTTP/1.1\r\nHost: x\r\n{close}\r\n"), "HTTP/1.1 404", r#""error":"Method \"FOO\" not found""#),
        (format!("FOO /1.0/instances HTTP/1.1\r\nHost: x\r\n{close}\r\n"), "HTTP/1.1 404", r#""error":"Method \"FOO\" not found""#),
        (format!("get /1.0 HTTP/1.1\r\nHost: x\r\n{close}\r\n"), "HTTP/1.1 404", r#""error":"Method \"get\" not found""#),
        (format!("FOO / HTTP/1.1\r\nHost: x\r\n{close}\r\n"), "HTTP/1.1 200", r#""metadata":["/1.0"]"#),
        (format!("FOO /nope HTTP/1.1\r\nHost: x\r\n{close}\r\n"), "HTTP/1.1 404", r#""error":"not found""#),
        (format!("OPTIONS /1.0/instances HTTP/1.1\r\nHost: x\r\n{close}\r\n"), "HTTP/1.1 200", "content-length: 0"),
        (format!("GET /1.0 HTTP/1.1\r\n{close}\r\n"), "HTTP/1.1 400 Bad Request: missing required Host header", "\r\n\r\n400 Bad Request: missing required Host header"),
        (format!("GET /1.0/instances HTTP/1.1\r\nHost: x\r\nHost: y\r\n{close}\r\n"), "HTTP/1.1 400 Bad Request", "\r\n\r\n400 Bad Request"),
        (format!("POST /1.0/instances HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n{close}\r\n0\r\n\r\n"), "HTTP/1.1 501", "\r\n\r\nUnsupported transfer encoding"),
        (format!("POST /1.0/instances HTTP/1.1\r\nHost: x\r\nExpect: bogus\r\nContent-Length: 2\r\n{close}\r\n{{}}"), "HTTP/1.1 417", "content-length: 0"),
        (format!("POST /1.0/instances HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n{close}\r\nzz\r\n{{}}\r\n0\r\n\r\n"), "HTTP/1.1 400", r#""error":"invalid byte in chunk length""#),
        (format!("POST /1.0/instances HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n{close}\r\nffffffffffffffffff\r\n{{}}\r\n0\r\n\r\n"), "HTTP/1.1 400", r#""error":"http chunk length too large""#),
        // The value is complete before the framing breaks: the daemon goes on with it.
        (format!("POST /1.0/instances HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n{close}\r\n2\r\n{{}}XX0\r\n\r\n"), "HTTP/1.1 400", r#""error":"Unknown source type ""#),
    ];
    let post = |body: &[u8]| {
        let mut request = format!("POST /1.0/instances HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{close}\r\n", body.len()).into_bytes();
        request.extend_from_slice(body);
        String::from_utf8_lossy(&request).into_owned()
    };
    let bad_name = r#""error":"Invalid instance name: Name can only contain alphanumeric and hyphen characters""#;
    let mut cases = cases;
    // Requests that do not parse get Go's own plain-text answers.
    let plain = |status: &'static str| (status, status.trim_start_matches("HTTP/1.1 "));
    for (request, (status, body)) in [
        (
            "GET /1.0 HTTP/9.9\r\nHost: x\r\n\r\n".to_string(),
            plain("HTTP/1.1 505 HTTP Version Not Supported: unsupported protocol version"),
        ),
        (
            "GET /1.0 HTTP/2.0\r\nHost: x\r\n\r\n".to_string(),
            plain("HTTP/1.1 505 HTTP Version Not Supported: unsupported protocol version"),
        ),
        (
            "GARBAGE\r\n\r\n".to_string(),
            plain("HTTP/1.1 400 Bad Request"),
        ),
        (
            "GET /1.0 HTTP/1.1\r\nHost: x\r\nBadHeader\r\n\r\n".to_string(),
            plain("HTTP/1.1 400 Bad Request"),
        ),
        (
            "GET /1.0 HTTP/1.1\r\nHost: x\r\nBad Name: y\r\n\r\n".to_string(),
            plain("HTTP/1.1 400 Bad Request: invalid header name"),
        ),
        (
            "POST /1.0/instances HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n".to_string(),
            plain("HTTP/1.1 400 Bad Request"),
        ),
        (
            "GET /1.0 HTTP/1.1\r\nHost: x\r\nX-Big: ".to_string()
                + &"a".repeat(1_100_000)
                + "\r\n\r\n",
            plain("HTTP/1.1 431 Request Header Fields Too Large"),
        ),
    ] {
        let answer = raw(&fake, &request).await;
        assert!(answer.starts_with(&format!("{status}\r\n")), "{answer}");
        assert!(answer.ends_with(&format!("\r\n\r\n{body}")), "{answer}");
        assert!(
            answer.contains("Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"),
            "{answer}"
        );
    }
    for request in [
        "POST /1.0/instances HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n{}",
        "POST /1.0/instances HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n",
    ] {
        let answer = raw(&fake, request).await;
        assert!(
            answer.starts_with("HTTP/1.1 501 Not Implemented\r\n"),
            "{answer}"
        );
        assert!(
            answer.ends_with("\r\n\r\nUnsupported transfer encoding"),
            "{answer}"
        );
    }
    cases.extend([
        // The last duplicate wins: the instance is dup2.
        (
            post(br#"{"name":"dup1","name":"dup2","source":{"type":"none"}}"#),
            "HTTP/1.1 202",
            r#""instances":["/1.0/instances/dup2"]"#,
        ),
        // Lone surrogates and invalid UTF-8 become U+FFFD, which the name check refuses.
        (
            post(br#"{"name":"a\ud800b","source":{"type":"none"}}"#),
            "HTTP/1.1 400",
            bad_name,
        ),
        (
            post(br#"{"name":"lsd1","description":"a\udc00","source":{"type":"none"}}"#),
            "HTTP/1.1 202",
            r#""instances":["/1.0/instances/lsd1"]"#,
        ),
        (
            post(br#"null"#),
            "HTTP/1.1 400",
            r#""error":"Unknown source type ""#,
        ),
        (
            post(br#"[]"#),
            "HTTP/1.1 400",
            r#""error":"json: cannot unmarshal array into Go value of type api.InstancesPost""#,
        ),
        (
            post(b"{\"name\":\"a\x01b\"}"),
            "HTTP/1.1 400",
            r#""error":"invalid character '\\x01' in string literal""#,
        ),
        (
            post(br#"{"name":"a\qb"}"#),
            "HTTP/1.1 400",
            r#""error":"invalid character 'q' in string escape code""#,
        ),
        (
            post("\u{feff}{}".as_bytes()),
            "HTTP/1.1 400",
            "\"error\":\"invalid character '\u{ef}' looking for beginning of value\"",
        ),
    ]);
    for (request, status, text) in cases {
        let answer = raw(&fake, &request).await;
        let lower = answer.to_ascii_lowercase();
        assert!(answer.starts_with(status), "{request:?}\n{answer}");
        assert!(
            answer.contains(text) || lower.contains(text),
            "{request:?}\n{answer}"
        );
        if text.starts_with("\r\n\r\n") {
            assert!(
                lower.contains("content-type: text/plain; charset=utf-8"),
                "{answer}"
            );
        }
    }
}
