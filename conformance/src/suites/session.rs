//! One target for one trial, with a runtime to drive it from synchronous code (property tests).

use std::future::Future;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::runner::Check;
use crate::scenario::format::FakeSetup;
use crate::scenario::matcher;
use crate::scenario::target::{Request, Target, TargetFactory};

/// A started target and the runtime it lives on.
pub(crate) struct Session {
    runtime: tokio::runtime::Runtime,
    target: Box<dyn Target>,
}

/// One call: the result and the requests the backend received during it (if it records them).
#[derive(Debug, Clone)]
pub(crate) struct Called {
    pub(crate) operation: String,
    pub(crate) scopes: Vec<String>,
    pub(crate) input: Value,
    pub(crate) result: Value,
    pub(crate) requests: Option<Vec<Request>>,
    pub(crate) output_schema: Option<Value>,
}

impl Session {
    /// Starts a target with `setup` on a runtime of its own.
    pub(crate) fn start(
        factory: &Arc<dyn TargetFactory>,
        setup: &FakeSetup,
    ) -> Result<Self, String> {
        let runtime = trial_runtime(factory.virtual_time())?;
        let target = runtime.block_on(factory.start(setup))?;
        Ok(Self { runtime, target })
    }

    /// Now on the trial's clock (virtual or real, as its runtime runs).
    pub(crate) fn now(&self) -> tokio::time::Instant {
        let _entered = self.runtime.enter();
        tokio::time::Instant::now()
    }

    /// Installs a fault rule on the target from now on.
    pub(crate) fn add_fault(&self, rule: &Value) -> Result<(), String> {
        self.target.add_fault(rule)
    }

    /// Sends one native request straight to the backend (setup the catalogue cannot make) and
    /// returns its envelope; an error unless it answered `expected_status`.
    pub(crate) fn native(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        expected_status: u16,
    ) -> Result<Value, String> {
        let (status, envelope) = self
            .runtime
            .block_on(self.target.native(method, path, body))?;
        if status != expected_status {
            return Err(format!(
                "setup {method} {path} answered {status}, not {expected_status}: {envelope}"
            ));
        }
        Ok(envelope)
    }

    /// Whether the backend's `GET /1.0` lists the API extension `name` (read natively, outside
    /// any call): how a trial's expectation follows the Incus line it runs against, as Incus's
    /// own clients decide, never by a version number.
    pub(crate) fn server_has_extension(&self, name: &str) -> Result<bool, String> {
        Ok(self.server_extensions()?.iter().any(|e| e == name))
    }

    /// The API extensions the backend's `GET /1.0` lists (read natively, outside any call).
    pub(crate) fn server_extensions(&self) -> Result<Vec<String>, String> {
        let server = self.native("GET", "/1.0", None, 200)?;
        Ok(server
            .pointer("/metadata/api_extensions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect())
    }

    /// Calls `operation` and collects what happened.
    pub(crate) fn call(&self, operation: &str, scopes: &[String], input: Value) -> Called {
        let before = self.target.journal().map(|j| j.len());
        let result = self
            .runtime
            .block_on(self.target.call(operation, scopes, input.clone()));
        let requests = self
            .target
            .journal()
            .zip(before)
            .map(|(all, before)| all.get(before..).unwrap_or_default().to_vec());
        Called {
            operation: operation.to_owned(),
            scopes: scopes.to_vec(),
            input,
            result,
            requests,
            output_schema: self.target.output_schema(operation),
        }
    }
}

/// A check whose body runs against one target started with the default state.
pub(crate) fn with_session(
    name: String,
    factory: &Arc<dyn TargetFactory>,
    body: impl FnOnce(&Session) -> Result<(), String> + Send + 'static,
) -> Check {
    let factory = Arc::clone(factory);
    Check::new(name, move || {
        let session = Session::start(&factory, &FakeSetup::default())?;
        body(&session)
    })
}

/// The runtime of one trial (trials run on libtest-mimic's threads, each on a current-thread
/// runtime of its own), on virtual time when `virtual_time` and the run was not asked for real
/// time (`--real-time`).
///
/// Virtual time is tokio's paused clock: it stands still while any task can run and jumps to
/// the next timer once every task waits, so the fake's durations and stalls and the core's
/// bounds (all on [`tokio::time`]) cost no real time and fire in the order their deadlines
/// give. It holds for a trial whose fake and host both run on this runtime and talk over
/// sockets of this process: before each jump the runtime polls its sockets, and a task that
/// poll wakes runs before the clock moves (tokio 1.53.3 and later), so an answer the fake has
/// written is read before a bound that falls later. A backend with a clock of its own (an
/// adapter in another process, a real Incus) needs real time: `virtual_time` is false for it.
pub(crate) fn trial_runtime(virtual_time: bool) -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(virtual_time && !crate::runner::real_time())
        .build()
        .map_err(|e| format!("cannot start a runtime for the trial: {e}"))
}

/// Runs a trial's async body, whose fakes and hosts are all in this process, on a runtime of
/// its own.
pub(crate) fn block_on<F>(body: F) -> Result<(), String>
where
    F: Future<Output = Result<(), String>>,
{
    block_on_value(body)
}

/// Runs an async body that yields a value, its fakes and hosts all in this process, on a
/// runtime of its own.
pub(crate) fn block_on_value<T, F>(body: F) -> Result<T, String>
where
    F: Future<Output = Result<T, String>>,
{
    trial_runtime(true)?.block_on(body)
}

impl Called {
    /// `/error/kind`, if the result is an error.
    pub(crate) fn error_kind(&self) -> Option<&str> {
        self.result.pointer("/error/kind").and_then(Value::as_str)
    }

    /// The result validates against the operation's output schema.
    pub(crate) fn schema_valid(&self) -> Result<(), String> {
        let errors = matcher::schema_errors(&self.result, self.output_schema.as_ref());
        if errors.is_empty() {
            Ok(())
        } else {
            Err(self.failure(&errors.join("; ")))
        }
    }

    /// The call was refused with `kind`, schema-valid, before any backend request.
    pub(crate) fn refused_before_backend(&self, kind: &str) -> Result<(), String> {
        if self.error_kind() != Some(kind) {
            return Err(self.failure(&format!("expected error kind {kind}")));
        }
        self.no_backend_request()?;
        self.schema_valid()
    }

    /// The call failed with `kind`, in a schema-valid result.
    pub(crate) fn error_is(&self, kind: &str) -> Result<(), String> {
        if self.error_kind() != Some(kind) {
            return Err(self.failure(&format!("expected error kind {kind}")));
        }
        self.schema_valid()
    }

    /// How many requests of `method` on a path matching `pattern` (`*`: one segment, `**`:
    /// anything) reached the backend during the call; `None` when the backend keeps no journal.
    pub(crate) fn sent(&self, method: &str, pattern: &str) -> Option<usize> {
        self.requests.as_ref().map(|requests| {
            requests
                .iter()
                .filter(|r| r.method == method && fake_incus::path_matches(pattern, &r.path))
                .count()
        })
    }

    /// The call sent no request to the backend (when the backend records requests).
    pub(crate) fn no_backend_request(&self) -> Result<(), String> {
        match &self.requests {
            Some(requests) if !requests.is_empty() => Err(self.failure(&format!(
                "expected no backend request, got {}",
                requests
                    .iter()
                    .map(|r| format!("{} {}", r.method, r.path))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
            _ => Ok(()),
        }
    }

    /// A failure message that ends with this call as a scenario file, ready to replay.
    pub(crate) fn failure(&self, problem: &str) -> String {
        format!(
            "{problem}\n  result: {}\n  reproducer (scenario file; add the expectation that failed):\n{}",
            matcher::short(&self.result),
            self.reproducer(problem)
        )
    }

    /// This call as a scenario (see `scenarios/README.md`), described by the problem.
    pub(crate) fn reproducer(&self, problem: &str) -> String {
        let scenario = json!({
            "name": "reproducer",
            "description": format!("Failing case found by the conformance run: {problem}"),
            "clauses": [],
            "steps": [{
                "operation": self.operation,
                "scopes": self.scopes,
                "input": self.input,
                "expect": {"schema_valid": true}
            }]
        });
        serde_json::to_string_pretty(&scenario).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (one target for one trial, with a runtime to
    //! drive it from synchronous code (property tests)); a promise of the harness seen from outside
    //! (its command line, certification, the wire) goes in `tests/harness`.

    use std::time::Duration;

    use fake_incus::{FakeIncus, Fault, Rule};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::UnixStream;

    use super::trial_runtime;

    const GET: &[u8] = b"GET /1.0 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

    /// An answer the fake has written is read before a later bound of its client fires, even
    /// when that bound is the next timer and the client reads on a task of its own.
    #[test]
    fn virtual_time_reads_an_answer_in_flight_before_the_clock_jumps() {
        let runtime = trial_runtime(true).unwrap();
        runtime.block_on(async {
            let fake = FakeIncus::builder().start().await.unwrap();
            for _ in 0..20 {
                let mut stream = UnixStream::connect(fake.unix_socket()).await.unwrap();
                let started = tokio::time::Instant::now();
                let reader = tokio::spawn(async move {
                    stream.write_all(GET).await.unwrap();
                    let mut answer = Vec::new();
                    stream.read_to_end(&mut answer).await.unwrap();
                    answer
                });
                let answer = tokio::time::timeout(Duration::from_secs(30), reader)
                    .await
                    .expect("the answer came within the bound")
                    .unwrap();
                assert!(answer.starts_with(b"HTTP/1.1 200"));
                assert_eq!(started.elapsed(), Duration::ZERO, "no time passed");
            }
        });
    }

    /// A request the fake never answers holds nothing back: the client's bound passes at its
    /// virtual instant, at once in real time.
    #[test]
    fn virtual_time_reaches_a_bound_that_nothing_answers_before() {
        let runtime = trial_runtime(true).unwrap();
        let real = std::time::Instant::now();
        let took = runtime.block_on(async {
            let fake = FakeIncus::builder()
                .rule(Rule::new("GET", "/1.0").fault(Fault::Stall))
                .start()
                .await
                .unwrap();
            let mut stream = UnixStream::connect(fake.unix_socket()).await.unwrap();
            stream.write_all(GET).await.unwrap();
            let started = tokio::time::Instant::now();
            let mut byte = [0u8; 1];
            let read = tokio::time::timeout(Duration::from_secs(600), stream.read(&mut byte));
            assert!(read.await.is_err(), "a stall never answers");
            started.elapsed()
        });
        assert_eq!(took, Duration::from_secs(600));
        assert!(real.elapsed() < Duration::from_secs(60));
    }
}
