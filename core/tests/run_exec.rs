//! `incus_instance_exec`: the client's bounded exec, mapped to the exec result.
//!
//! Client evidence exercised through `run`: ExecInstance, stream:S01.
mod run_support;

use fake_incus::{Fault, Rule};
use run_support::{kind, Bench};
use serde_json::{json, Value};

async fn exec(bench: &Bench, input: Value) -> Value {
    bench.call("incus_instance_exec", input).await
}

#[tokio::test]
async fn exec_completes_with_exit_code_and_utf8_streams() {
    let bench = Bench::start().await;
    bench.running_instance("web").await;
    let result = exec(
        &bench,
        json!({"name": "web", "command": ["sh", "-c", "cat; echo err >&2; exit 3"], "stdin": "hello\n", "environment": {"FOO": "bar"}}),
    )
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
    assert_eq!(bench.count("POST", "/1.0/instances/web/exec"), 1);
}

#[tokio::test]
async fn exec_output_that_is_not_utf8_is_base64() {
    let bench = Bench::start().await;
    bench.running_instance("web").await;
    let result = exec(
        &bench,
        json!({"name": "web", "command": ["fake-bytes", "stdout", "ff", "fe", "0a"]}),
    )
    .await;
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(result["stdout"]["encoding"], "base64", "{result}");
    assert_eq!(result["stdout"]["data"], "//4K");
    assert_eq!(result["stdout"]["bytes"], 3);
}

#[tokio::test]
async fn exec_captures_the_first_64_kib_and_counts_the_rest() {
    let bench = Bench::start().await;
    bench.running_instance("web").await;
    let result = exec(
        &bench,
        json!({"name": "web", "command": ["fake-flood", "stdout", "200000"]}),
    )
    .await;
    assert_eq!(result["status"], "completed", "{result:.200}");
    assert_eq!(result["stdout"]["bytes"], 200_000);
    assert_eq!(result["stdout"]["captured_bytes"], 65_536);
    assert_eq!(result["stdout"]["truncated"], true);
}

#[tokio::test]
async fn exec_past_its_duration_is_timed_out() {
    let bench = Bench::start().await;
    bench.running_instance("web").await;
    let result = exec(
        &bench,
        json!({"name": "web", "command": ["fake-hang"], "timeout_seconds": 1}),
    )
    .await;
    assert_eq!(result["status"], "timed_out", "{result}");
    assert_eq!(result["exit_code"], 137);
    assert_eq!(result["timeout_seconds"], 1);
}

#[tokio::test]
async fn exec_in_a_stopped_instance_is_a_native_error() {
    let bench = Bench::start().await;
    bench.instance("web").await;
    let result = exec(&bench, json!({"name": "web", "command": ["true"]})).await;
    assert_eq!(kind(&result), "native", "{result}");
    assert_eq!(result["error"]["http_status"], 400);
    let missing = exec(&bench, json!({"name": "nope", "command": ["true"]})).await;
    assert_eq!(missing["error"]["http_status"], 404, "{missing}");
}

#[tokio::test]
async fn exec_without_a_decoded_answer_is_uncertain_and_not_resent() {
    let bench = Bench::start().await;
    bench.running_instance("web").await;
    let _rule = bench
        .fake
        .add_rule(Rule::new("POST", "/1.0/instances/web/exec").fault(Fault::CloseAfterApply));
    let result = exec(&bench, json!({"name": "web", "command": ["true"]})).await;
    assert_eq!(result["status"], "uncertain", "{result}");
    assert_eq!(result["exit_code"], Value::Null);
    assert_eq!(bench.count("POST", "/1.0/instances/web/exec"), 1);
}
