//! A read-only relay in front of the daemon, for the inputs the core must refuse: the core under
//! test is bound to the relay's Unix socket, the relay notes every request it receives, forwards a
//! plain `GET` (through the admin client, to the daemon the run is pointed at) and answers anything
//! else itself, with a `403` error envelope, without forwarding it.
//!
//! So the refusal of a harmful input is established before anything that changes state can reach
//! the daemon: were the core to send the mutation, the relay would keep it from the daemon and the
//! case would fail on the notes ("blocked by the relay"). The notes are the evidence of what
//! reached the daemon, counted outside the core (no count the core reports is trusted).
//!
//! The socket lives in a fresh directory only the runner's user can enter (mode 0700), so no other
//! local user reads the daemon through it; the relay stops, and both are removed, when it is dropped.
use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rand::Rng as _;
use tokio::net::UnixListener;
use tokio::task::{JoinHandle, JoinSet};

use crate::admin::Admin;
use crate::report::Relayed;

type Notes = Arc<Mutex<Vec<Relayed>>>;

/// A running relay; dropped, it stops and removes its socket and directory.
pub(crate) struct ReadOnlyRelay {
    dir: PathBuf,
    socket: PathBuf,
    notes: Notes,
    accept: JoinHandle<()>,
}

impl Drop for ReadOnlyRelay {
    fn drop(&mut self) {
        self.accept.abort();
        let _ = std::fs::remove_file(&self.socket);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

impl ReadOnlyRelay {
    /// Listens on a socket in a fresh private directory under the system's temporary directory;
    /// forwards the `GET`s through `admin`.
    pub(crate) fn start(admin: Admin) -> std::io::Result<ReadOnlyRelay> {
        let suffix: u64 = rand::rng().random();
        let dir = std::env::temp_dir().join(format!("ioacc-relay-{suffix:016x}"));
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        let socket = dir.join("incus.socket");
        let listener = match UnixListener::bind(&socket) {
            Ok(listener) => listener,
            Err(e) => {
                let _ = std::fs::remove_dir(&dir);
                return Err(e);
            }
        };
        let notes = Notes::default();
        let accept = tokio::spawn(accept_loop(listener, Arc::new(admin), Arc::clone(&notes)));
        Ok(ReadOnlyRelay {
            dir,
            socket,
            notes,
            accept,
        })
    }

    /// The socket to bind the core to.
    pub(crate) fn socket(&self) -> &Path {
        &self.socket
    }

    /// The requests received since the last call, in order.
    pub(crate) fn take(&self) -> Vec<Relayed> {
        std::mem::take(&mut *self.notes.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Serves each connection in a task of its own; they all end with the loop (the set aborts them
/// when it is dropped).
async fn accept_loop(listener: UnixListener, admin: Arc<Admin>, notes: Notes) {
    let mut connections = JoinSet::new();
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!("relay: accept: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let (admin, notes) = (Arc::clone(&admin), Arc::clone(&notes));
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let (admin, notes) = (Arc::clone(&admin), Arc::clone(&notes));
                async move { Ok::<_, std::convert::Infallible>(answer(&admin, &notes, request).await) }
            });
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!("relay: connection: {e}");
            }
        });
        // Reap the connections that ended.
        while connections.try_join_next().is_some() {}
    }
}

/// Whether the relay forwards a request: a `GET` that asks for no protocol upgrade (a websocket
/// is only ever opened after a mutation, which never passes).
pub(crate) fn forwards(method: &Method, upgrade: bool) -> bool {
    method == Method::GET && !upgrade
}

/// Notes the request; forwards it when [`forwards`] says so, answers `403` otherwise.
async fn answer(admin: &Admin, notes: &Notes, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let method = request.method().clone();
    let path = request
        .uri()
        .path_and_query()
        .map_or_else(|| request.uri().path().to_owned(), ToString::to_string);
    let upgrade = request.headers().contains_key(http::header::UPGRADE);
    let forwarded = forwards(&method, upgrade);
    notes
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Relayed {
            method: method.to_string(),
            path: path.clone(),
            forwarded,
        });
    if !forwarded {
        return envelope(
            StatusCode::FORBIDDEN,
            &format!("read-only relay: {method} {path} was not forwarded to the daemon"),
        );
    }
    match admin.raw_get(&path).await {
        Ok(raw) => {
            let mut response = Response::new(Full::new(raw.body));
            *response.status_mut() =
                StatusCode::from_u16(raw.status).unwrap_or(StatusCode::BAD_GATEWAY);
            for (name, value) in raw.headers {
                if let Ok(value) = http::HeaderValue::from_str(&value) {
                    response.headers_mut().insert(name, value);
                }
            }
            response
        }
        Err(e) => envelope(
            StatusCode::BAD_GATEWAY,
            &format!("read-only relay: the daemon did not answer: {e}"),
        ),
    }
}

/// An Incus error envelope the relay answers itself.
fn envelope(status: StatusCode, message: &str) -> Response<Full<Bytes>> {
    let body = serde_json::json!({
        "type": "error", "status": "", "status_code": 0, "operation": "",
        "error_code": status.as_u16(), "error": message, "metadata": null,
    });
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoint::Endpoint;
    use fake_incus::FakeIncus;

    /// One request on a fresh connection to the relay: the status and the body.
    async fn send(socket: &Path, method: &str, path: &str, body: &str) -> (u16, String) {
        let stream = tokio::net::UnixStream::connect(socket)
            .await
            .expect("relay");
        let mut connection = fake_incus::client::Connection::over(stream)
            .await
            .expect("handshake");
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header("Host", "incus")
            .body(Bytes::from(body.to_owned()))
            .expect("request");
        let reply = connection.send(request).await.expect("answer");
        (
            reply.status(),
            String::from_utf8_lossy(reply.bytes()).into_owned(),
        )
    }

    #[tokio::test]
    async fn the_relay_forwards_gets_and_never_anything_else() {
        let fake = FakeIncus::builder().start().await.expect("fake");
        let admin = Admin::new(Endpoint::Unix(fake.unix_socket().to_path_buf())).expect("admin");
        let relay = ReadOnlyRelay::start(admin).expect("relay");
        let before = fake.journal().len();
        let (status, body) = send(relay.socket(), "GET", "/1.0/instances?recursion=1", "").await;
        assert_eq!(status, 200, "{body}");
        for method in ["POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"] {
            let (status, body) = send(
                relay.socket(),
                method,
                "/1.0/instances",
                r#"{"name": "x", "source": {"type": "none"}}"#,
            )
            .await;
            assert_eq!(status, 403, "{method}: {body}");
        }
        let notes = relay.take();
        assert_eq!(notes.len(), 7, "{notes:?}");
        assert_eq!(notes.iter().filter(|n| n.forwarded).count(), 1, "{notes:?}");
        let reached: Vec<String> = fake.journal()[before..]
            .iter()
            .map(|e| format!("{} {}", e.method, e.path))
            .collect();
        assert_eq!(
            reached,
            ["GET /1.0/instances"],
            "only the GET reached the daemon"
        );
        assert!(relay.take().is_empty(), "taken notes are gone");
    }

    #[test]
    fn a_websocket_upgrade_is_not_forwarded_even_as_a_get() {
        assert!(forwards(&Method::GET, false));
        assert!(!forwards(&Method::GET, true));
        assert!(!forwards(&Method::POST, false));
    }

    #[tokio::test]
    async fn the_relay_socket_is_private_and_removed_when_dropped() {
        use std::os::unix::fs::PermissionsExt as _;
        let fake = FakeIncus::builder().start().await.expect("fake");
        let admin = Admin::new(Endpoint::Unix(fake.unix_socket().to_path_buf())).expect("admin");
        let relay = ReadOnlyRelay::start(admin).expect("relay");
        let dir = relay.socket().parent().expect("dir").to_path_buf();
        let mode = std::fs::metadata(&dir).expect("dir").permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        drop(relay);
        assert!(!dir.exists());
    }
}
