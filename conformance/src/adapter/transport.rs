//! How the harness reaches an adapter: its standard input and output (a pool of adapter
//! processes, one request in flight per process), or HTTP.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::scenario::target::BoxFuture;

/// The longest the harness waits for one answer before it gives the adapter up (and kills its
/// process): well past every bound of every trial (the longest exec trial takes 8 s).
pub const CALL_BOUND: Duration = Duration::from_secs(120);

/// How long an adapter process gets to exit once its standard input is closed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// Why an adapter gave no answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The adapter command is empty or badly quoted.
    #[error("the adapter command {0:?} cannot be split into words")]
    Command(String),
    /// The adapter process did not start.
    #[error("cannot start the adapter {command:?}: {error}")]
    Spawn {
        /// The command.
        command: String,
        /// Why.
        error: std::io::Error,
    },
    /// The request could not be written.
    #[error("cannot write to the adapter: {0}")]
    Write(std::io::Error),
    /// The adapter closed its output (it exited or crashed).
    #[error("the adapter closed its output without answering ({0})")]
    Closed(String),
    /// No answer within the bound.
    #[error("the adapter gave no answer within {0:?}")]
    Timeout(Duration),
    /// The answer is not JSON.
    #[error("the adapter's answer is not JSON: {0}")]
    NotJson(String),
    /// The HTTP exchange failed.
    #[error("HTTP exchange with the adapter failed: {0}")]
    Http(String),
    /// The blocking exchange could not run.
    #[error("the exchange task failed: {0}")]
    Task(String),
}

/// Carries one request (a JSON text) to the adapter and returns its answer.
pub trait Transport: Send + Sync {
    /// Sends `request`, returns the JSON value the adapter answered.
    fn exchange(&self, request: String) -> BoxFuture<'_, Result<Value, TransportError>>;
}

/// Splits an adapter command into words: whitespace separates, `'...'` and `"..."` quote, `\`
/// escapes the next character outside single quotes.
pub fn split_command(command: &str) -> Result<Vec<String>, TransportError> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = command.chars();
    let bad = || TransportError::Command(command.to_owned());
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next().ok_or_else(bad)? {
                        '\'' => break,
                        c => w.push(c),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next().ok_or_else(bad)? {
                        '"' => break,
                        '\\' => w.push(chars.next().ok_or_else(bad)?),
                        c => w.push(c),
                    }
                }
            }
            '\\' => word
                .get_or_insert_with(String::new)
                .push(chars.next().ok_or_else(bad)?),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    if words.is_empty() {
        return Err(bad());
    }
    Ok(words)
}

/// Adapter processes started from one command; each answers one request at a time, and idle ones
/// are reused. A process that fails an exchange is killed and replaced.
pub struct StdioAdapter {
    pool: Arc<Pool>,
}

struct Pool {
    command: String,
    words: Vec<String>,
    bound: Duration,
    idle: Mutex<Vec<Process>>,
}

/// One adapter process: its handle, its input, and its output's lines (read by a thread).
struct Process {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl StdioAdapter {
    /// Adapters started with `command` (split into words, not run by a shell).
    pub fn new(command: &str) -> Result<Self, TransportError> {
        Ok(Self {
            pool: Arc::new(Pool {
                command: command.to_owned(),
                words: split_command(command)?,
                bound: CALL_BOUND,
                idle: Mutex::new(Vec::new()),
            }),
        })
    }

    /// Starts one process now, so that a command that cannot start is reported before any trial.
    pub fn check_start(&self) -> Result<(), TransportError> {
        let process = self.pool.spawn()?;
        self.pool.release(process);
        Ok(())
    }
}

impl Pool {
    fn spawn(&self) -> Result<Process, TransportError> {
        let spawn_error = |error| TransportError::Spawn {
            command: self.command.clone(),
            error,
        };
        let mut child = Command::new(&self.words[0])
            .args(&self.words[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(spawn_error)?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let (send, lines) = mpsc::channel();
        if let Some(stdout) = stdout {
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if send.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        Ok(Process {
            child,
            stdin,
            lines,
        })
    }

    fn take(&self) -> Result<Process, TransportError> {
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match idle {
            Some(process) => Ok(process),
            None => self.spawn(),
        }
    }

    fn release(&self, process: Process) {
        self.idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(process);
    }

    fn exchange(&self, request: &str) -> Result<Value, TransportError> {
        let mut process = self.take()?;
        let answer = process.exchange(request, self.bound);
        match &answer {
            Ok(_) => self.release(process),
            // A process that hangs will not read the end of its input either.
            Err(TransportError::Timeout(_)) => {
                let _ = process.child.kill();
            }
            Err(_) => {}
        }
        // A failed process is dropped: closed, then killed if it does not exit.
        answer
    }
}

impl Process {
    fn exchange(&mut self, request: &str, bound: Duration) -> Result<Value, TransportError> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| TransportError::Closed("no standard input".into()))?;
        stdin
            .write_all(request.as_bytes())
            .and_then(|()| stdin.write_all(b"\n"))
            .and_then(|()| stdin.flush())
            .map_err(TransportError::Write)?;
        let deadline = Instant::now() + bound;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.trim().is_empty() => continue,
                Ok(line) => {
                    return serde_json::from_str(&line).map_err(|e| {
                        TransportError::NotJson(format!(
                            "{e}: {}",
                            crate::scenario::matcher::short(&Value::String(line))
                        ))
                    })
                }
                Err(RecvTimeoutError::Timeout) => return Err(TransportError::Timeout(bound)),
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self
                        .child
                        .try_wait()
                        .ok()
                        .flatten()
                        .map_or("still running".to_owned(), |s| s.to_string());
                    return Err(TransportError::Closed(status));
                }
            }
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let until = Instant::now() + EXIT_GRACE;
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Transport for StdioAdapter {
    fn exchange(&self, request: String) -> BoxFuture<'_, Result<Value, TransportError>> {
        let pool = Arc::clone(&self.pool);
        Box::pin(async move {
            tokio::task::spawn_blocking(move || pool.exchange(&request))
                .await
                .map_err(|e| TransportError::Task(e.to_string()))?
        })
    }
}

/// An adapter that runs as a service: each request is POSTed to its URL (plain HTTP/1.1, one
/// connection per request), the response body is the answer.
pub struct HttpAdapter {
    uri: hyper::Uri,
    authority: String,
    bound: Duration,
}

impl HttpAdapter {
    /// An adapter at `url` (`http://HOST:PORT/PATH`).
    pub fn new(url: &str) -> Result<Self, TransportError> {
        let bad =
            |why: &str| TransportError::Http(format!("{url:?} is not a usable adapter URL: {why}"));
        let uri: hyper::Uri = url.parse().map_err(|e| bad(&format!("{e}")))?;
        if uri.scheme_str() != Some("http") {
            return Err(bad("only http:// is supported"));
        }
        let authority = uri.authority().ok_or_else(|| bad("no host"))?;
        let authority = format!(
            "{}:{}",
            authority.host(),
            authority.port_u16().unwrap_or(80)
        );
        Ok(Self {
            uri,
            authority,
            bound: CALL_BOUND,
        })
    }

    async fn post(&self, request: String) -> Result<Value, TransportError> {
        use http_body_util::{BodyExt, Full};
        let http = |e: &dyn std::fmt::Display| TransportError::Http(e.to_string());
        let stream = tokio::net::TcpStream::connect(&self.authority)
            .await
            .map_err(|e| http(&e))?;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(|e| http(&e))?;
        tokio::spawn(connection);
        let post = hyper::Request::post(self.uri.clone())
            .header(hyper::header::HOST, &self.authority)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(bytes::Bytes::from(request)))
            .map_err(|e| http(&e))?;
        let response = sender.send_request(post).await.map_err(|e| http(&e))?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| http(&e))?
            .to_bytes();
        if !status.is_success() {
            return Err(TransportError::Http(format!(
                "status {status}: {}",
                String::from_utf8_lossy(&body)
            )));
        }
        serde_json::from_slice(&body).map_err(|e| TransportError::NotJson(e.to_string()))
    }
}

impl Transport for HttpAdapter {
    fn exchange(&self, request: String) -> BoxFuture<'_, Result<Value, TransportError>> {
        Box::pin(async move {
            tokio::time::timeout(self.bound, self.post(request))
                .await
                .map_err(|_| TransportError::Timeout(self.bound))?
        })
    }
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (how the harness reaches an adapter); a
    //! promise of the harness seen from outside (its command line, certification, the wire) goes in
    //! `tests/harness`.

    use super::*;

    #[test]
    fn adapter_commands_split_like_a_shell_line() {
        assert_eq!(
            split_command("python3  'my adapter.py' --x \"a \\\"b\\\"\" c\\ d").unwrap(),
            ["python3", "my adapter.py", "--x", "a \"b\"", "c d"]
        );
        assert!(split_command("   ").is_err());
        assert!(split_command("python3 'open").is_err());
    }
}
