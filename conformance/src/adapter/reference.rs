//! The reference adapter: the core itself behind `incus-operations-adapter/1`, each request run
//! through `run()` with a [`ScriptedHost`] that follows the request's host behaviour.
//! `incus-conformance adapter` serves it on standard input and output; `--listen ADDR` over HTTP.

use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use incus_operations::{RunOptions, Scope};
use serde_json::{json, Value};

use super::protocol::{AdapterError, CallRequest, PROTOCOL};
use crate::scenario::host::{HostLog, ScriptedHost};

/// The answer to one request line: the operation's result, or an adapter error when the line is
/// not a request of this protocol.
pub async fn answer(line: &str) -> Value {
    match parse(line) {
        Ok(request) => call(request).await,
        Err(message) => adapter_error(message),
    }
}

fn adapter_error(message: String) -> Value {
    serde_json::to_value(AdapterError {
        adapter_error: message,
    })
    .unwrap_or_else(|_| json!({}))
}

fn parse(line: &str) -> Result<CallRequest, String> {
    let request: CallRequest =
        serde_json::from_str(line).map_err(|e| format!("not a call request: {e}"))?;
    if request.protocol != PROTOCOL {
        return Err(format!("protocol {:?} is not {PROTOCOL}", request.protocol));
    }
    Ok(request)
}

/// Runs one request through the core.
pub async fn call(request: CallRequest) -> Value {
    let connection = match request
        .backend
        .endpoint()
        .and_then(|endpoint| request.backend.limits.connection(endpoint))
    {
        Ok(connection) => connection,
        Err(message) => return adapter_error(message),
    };
    let log = Arc::new(Mutex::new(HostLog::default()));
    let host = ScriptedHost::new(connection, request.host.clone(), log);
    // Scope strings that name no scope grant nothing.
    let scopes: Vec<Scope> = request
        .scopes
        .iter()
        .filter_map(|s| Scope::parse(s))
        .collect();
    let mut options = RunOptions::new(&host, &(), scopes);
    if let Some(ms) = request.host.callback_timeout_ms {
        options = options.callback_timeout(Duration::from_millis(ms));
    }
    incus_operations::run(&request.operation, request.input, options).await
}

/// Serves requests from `input`, one JSON line each, answering each on `output` before reading
/// the next, until `input` ends.
pub fn serve_lines(input: impl BufRead, mut output: impl Write) -> std::io::Result<()> {
    crate::runner::quiet_expected_panics();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    for line in input.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let result = runtime.block_on(answer(&line));
        serde_json::to_writer(&mut output, &result)?;
        output.write_all(b"\n")?;
        output.flush()?;
    }
    Ok(())
}

/// Serves requests over HTTP on `address` until the process ends: `POST` any path with a request
/// as the body answers with the result; `GET` answers `{"protocol": PROTOCOL}`. The first line
/// written to standard output is the URL served (useful with port 0).
pub fn serve_http(address: std::net::SocketAddr) -> std::io::Result<()> {
    crate::runner::quiet_expected_panics();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(address).await?;
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "http://{}/", listener.local_addr()?)?;
        stdout.flush()?;
        drop(stdout);
        loop {
            let (stream, _) = listener.accept().await?;
            tokio::spawn(async move {
                let service = hyper::service::service_fn(respond);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    })
}

type HttpBody = http_body_util::Full<bytes::Bytes>;

async fn respond(
    request: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<HttpBody>, std::convert::Infallible> {
    use http_body_util::BodyExt;
    let (status, value) = match *request.method() {
        hyper::Method::POST => match request.into_body().collect().await {
            Ok(body) => {
                let text = String::from_utf8_lossy(&body.to_bytes()).into_owned();
                (hyper::StatusCode::OK, answer(&text).await)
            }
            Err(e) => (
                hyper::StatusCode::BAD_REQUEST,
                adapter_error(format!("cannot read the request body: {e}")),
            ),
        },
        hyper::Method::GET => (hyper::StatusCode::OK, json!({"protocol": PROTOCOL})),
        _ => (
            hyper::StatusCode::METHOD_NOT_ALLOWED,
            adapter_error("POST a request, or GET the protocol".into()),
        ),
    };
    let mut response = hyper::Response::new(HttpBody::new(bytes::Bytes::from(value.to_string())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    Ok(response)
}
