//! Exec through every check and its executor, below the export gate: the gate
//! keeps exec unexported until its stream contract is certified by the acceptance run, and these
//! tests exercise the run side of it over the fake Incus (ExecInstance, stream:S01).
use std::time::Duration;

use fake_incus::{FakeIncus, Fault, Rule};
use serde_json::{json, Value};

use super::pipeline::run_operation;
use super::RunOptions;
use crate::catalogue::{by_native, Native, Scope};
use crate::host::AllowAll;
use crate::{Connection, Endpoint};

const EXEC: Native = Native::InstanceExec;

struct Bench {
    fake: FakeIncus,
    host: AllowAll,
}

impl Bench {
    async fn start() -> Bench {
        Bench::with_stream_bytes(crate::DEFAULT_MAX_STREAM_BYTES).await
    }

    async fn with_stream_bytes(max_stream_bytes: u64) -> Bench {
        let fake = FakeIncus::builder().start().await.expect("fake starts");
        let connection = Connection::builder(Endpoint::unix(fake.unix_socket()))
            .timeout(Duration::from_secs(5))
            .max_stream_bytes(max_stream_bytes)
            .build()
            .expect("connection");
        Bench {
            fake,
            host: AllowAll::new(connection),
        }
    }

    /// Runs any catalogued operation, exported or not, and checks the output schema.
    async fn call(&self, native: Native, input: Value) -> Value {
        let descriptor = by_native(native);
        let name = descriptor.name();
        let options = RunOptions::new(
            &self.host,
            &(),
            [Scope::Read, Scope::Write, Scope::Exec, Scope::Delete],
        );
        let result = match run_operation(descriptor, input, &options).await {
            Ok(result) => result,
            Err(error) => error.to_result(),
        };
        let validator = jsonschema::validator_for(descriptor.output_schema()).expect("compiles");
        let errors: Vec<String> = validator
            .iter_errors(&result)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:?}\n{result}");
        result
    }

    async fn running(&self, name: &str) {
        let created = self
            .call(
                Native::InstanceCreate,
                json!({"name": name, "source": {"type": "image", "alias": "busybox"}, "start": true}),
            )
            .await;
        assert_eq!(created["status"], "completed", "{created}");
    }

    fn execs(&self, name: &str) -> usize {
        let path = format!("/1.0/instances/{name}/exec");
        self.fake.requests("POST", &path).len()
    }
}

/// Keeps the command alive briefly after its output, as the client's own exec tests do: the
/// fake can still drop frames queued at the moment a command exits.
fn settled(line: &str) -> Value {
    json!(["sh", "-c", format!("{line}; sleep 0.2")])
}

fn padded(size: usize) -> Value {
    let skeleton = json!({"name": "web", "command": ["true"], "pad": ""});
    let pad = size - serde_json::to_vec(&skeleton).unwrap().len();
    json!({"name": "web", "command": ["true"], "pad": "x".repeat(pad)})
}

#[tokio::test(start_paused = true)]
async fn exec_completes_with_exit_code_and_utf8_streams() {
    let bench = Bench::start().await;
    bench.running("web").await;
    let result = bench
        .call(EXEC, json!({"name": "web", "command": settled("cat; echo err >&2; sleep 0.2; exit 3"), "stdin": "hello\n", "environment": {"FOO": "bar"}}))
        .await;
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(result["exit_code"], 3);
    assert_eq!(
        result["stdout"],
        json!({"data": "hello\n", "encoding": "utf-8", "bytes": 6, "captured_bytes": 6, "truncated": false})
    );
    assert_eq!(result["stderr"]["data"], "err\n");
    assert_eq!(result["timeout_seconds"], 30);
    assert!(result["operation_id"].is_string());
    assert_eq!(bench.execs("web"), 1);
}

#[tokio::test(start_paused = true)]
async fn exec_output_that_is_not_utf8_is_base64() {
    let bench = Bench::start().await;
    bench.running("web").await;
    let result = bench
        .call(
            EXEC,
            json!({"name": "web", "command": settled("fake-bytes stdout ff fe 0a")}),
        )
        .await;
    assert_eq!(result["stdout"]["encoding"], "base64", "{result}");
    assert_eq!(result["stdout"]["data"], "//4K");
    assert_eq!(result["stdout"]["bytes"], 3);
}

#[tokio::test(start_paused = true)]
async fn exec_captures_the_first_64_kib_and_counts_the_rest() {
    let bench = Bench::start().await;
    bench.running("web").await;
    let result = bench
        .call(
            EXEC,
            json!({"name": "web", "command": settled("fake-flood stdout 200000")}),
        )
        .await;
    assert_eq!(result["status"], "completed");
    assert_eq!(result["stdout"]["bytes"], 200_000);
    assert_eq!(result["stdout"]["captured_bytes"], 65_536);
    assert_eq!(result["stdout"]["truncated"], true);
}

#[tokio::test(start_paused = true)]
async fn exec_past_its_duration_is_timed_out() {
    let bench = Bench::start().await;
    bench.running("web").await;
    let result = bench
        .call(
            EXEC,
            json!({"name": "web", "command": ["fake-hang"], "timeout_seconds": 1}),
        )
        .await;
    assert_eq!(result["status"], "timed_out", "{result}");
    assert_eq!(result["exit_code"], 137);
    assert_eq!(result["timeout_seconds"], 1);
}

#[tokio::test(start_paused = true)]
async fn exec_in_a_stopped_or_missing_instance_is_a_native_error() {
    let bench = Bench::start().await;
    let created = bench
        .call(
            Native::InstanceCreate,
            json!({"name": "web", "source": {"type": "image", "alias": "busybox"}}),
        )
        .await;
    assert_eq!(created["status"], "completed");
    let stopped = bench
        .call(EXEC, json!({"name": "web", "command": ["true"]}))
        .await;
    assert_eq!(stopped["error"]["kind"], "native", "{stopped}");
    assert_eq!(stopped["error"]["http_status"], 400);
    let missing = bench
        .call(EXEC, json!({"name": "nope", "command": ["true"]}))
        .await;
    assert_eq!(missing["error"]["http_status"], 404, "{missing}");
}

#[tokio::test(start_paused = true)]
async fn exec_without_a_decoded_answer_is_uncertain_and_not_resent() {
    let bench = Bench::start().await;
    bench.running("web").await;
    let _rule = bench
        .fake
        .add_rule(Rule::new("POST", "/1.0/instances/web/exec").fault(Fault::CloseAfterApply));
    let result = bench
        .call(EXEC, json!({"name": "web", "command": ["true"]}))
        .await;
    assert_eq!(result["status"], "uncertain", "{result}");
    assert_eq!(result["exit_code"], Value::Null);
    assert_eq!(result["operation_id"], Value::Null);
    let reason = result["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("transport error"), "{result}");
    assert_eq!(bench.execs("web"), 1);
}

#[tokio::test(start_paused = true)]
async fn exec_input_is_bounded_at_1_mib_and_stdin_at_64_kib_of_utf8() {
    let bench = Bench::start().await;
    let at = bench.call(EXEC, padded(1024 * 1024)).await;
    assert_eq!(
        at["error"]["kind"], "invalid_input",
        "at the bound the schema runs: {at:.200}"
    );
    let past = bench.call(EXEC, padded(1024 * 1024 + 1)).await;
    assert_eq!(past["error"]["kind"], "input_too_large");
    assert_eq!(past["error"]["limit"], 1024 * 1024);
    // 32 Ki two-byte characters are exactly 64 KiB; one more byte is over, though the schema
    // counts characters.
    let at = "é".repeat(32 * 1024);
    let over = format!("{at}x");
    let result = bench
        .call(
            EXEC,
            json!({"name": "web", "command": ["cat"], "stdin": over}),
        )
        .await;
    assert_eq!(result["error"]["kind"], "invalid_input", "{result:.200}");
    assert_eq!(result["error"]["pointer"], "/stdin");
    let empty = bench
        .call(EXEC, json!({"name": "web", "command": []}))
        .await;
    assert_eq!(empty["error"]["pointer"], "/command");
    assert!(bench.fake.journal().is_empty(), "no backend request");
    let fits = bench
        .call(
            EXEC,
            json!({"name": "web", "command": ["cat"], "stdin": at}),
        )
        .await;
    assert_eq!(
        fits["error"]["http_status"], 404,
        "64 KiB of stdin reaches Incus: {fits:.200}"
    );
}

#[tokio::test(start_paused = true)]
async fn exec_past_the_stream_total_is_output_limited() {
    // Half of max_stream_bytes is the stream total when it is below 64 MiB.
    let bench = Bench::with_stream_bytes(1024 * 1024).await;
    bench.running("web").await;
    let result = bench
        .call(
            EXEC,
            json!({"name": "web", "command": ["fake-flood", "stdout", "forever"]}),
        )
        .await;
    assert_eq!(result["status"], "output_limited", "{result:.300}");
    assert_eq!(result["exit_code"], 137);
    assert_eq!(result["stdout"]["captured_bytes"], 65_536);
    assert_eq!(result["stdout"]["truncated"], true);
}

#[tokio::test(start_paused = true)]
async fn exec_whose_exit_is_not_observed_is_running_with_its_operation() {
    let bench = Bench::start().await;
    bench.running("web").await;
    let _rule = bench
        .fake
        .add_rule(Rule::new("POST", "/1.0/instances/web/exec").fault(Fault::ExecIgnoreSigkill));
    let result = bench
        .call(
            EXEC,
            json!({"name": "web", "command": ["fake-hang"], "timeout_seconds": 1}),
        )
        .await;
    assert_eq!(result["status"], "running", "{result}");
    assert_eq!(result["exit_code"], Value::Null);
    assert!(result["operation_id"].is_string());
    assert_eq!(result["operation"]["id"], result["operation_id"]);
}

#[tokio::test(start_paused = true)]
async fn exec_cut_by_the_call_bound_while_its_request_is_in_flight_is_uncertain_and_not_resent() {
    let bench = Bench::start().await;
    bench.running("web").await;
    let _slow = bench
        .fake
        .add_rule(Rule::new("POST", "/1.0/instances/web/exec").fault(Fault::Delay { ms: 3000 }));
    let options =
        RunOptions::new(&bench.host, &(), [Scope::Exec]).call_timeout(Duration::from_millis(400));
    let input = json!({"name": "web", "command": ["true"]});
    let started = tokio::time::Instant::now();
    let result = run_operation(by_native(EXEC), input, &options)
        .await
        .expect("a result");
    let elapsed = u64::try_from(started.elapsed().as_millis()).unwrap();
    assert_eq!(result["status"], "uncertain", "{result}");
    let reason = result["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("400 ms"), "{result}");
    // Measured from the exec request to the cut, not frozen when the request was sent.
    let duration = result["duration_ms"].as_u64().unwrap_or(u64::MAX);
    assert!(duration <= elapsed, "{result} after {elapsed} ms");
    assert_eq!(bench.execs("web"), 1);
}
