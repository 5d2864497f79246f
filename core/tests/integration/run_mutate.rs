//! Mutations and `incus_operation_wait`: completed, failed, running and uncertain exactly as the
//! spec defines them; one native request, never resent; the effective wait.
//!
//! Client evidence exercised through `run`: CreateInstance, UpdateInstanceState, CreateInstanceSnapshot, UpdateInstance (restore),
//! DeleteInstanceSnapshot, DeleteInstance, DeleteImage, GetOperationWait.
use crate::run_support;

use std::time::Duration;

use fake_incus::{Fault, Rule};
use incus_operations::{AllowAll, Client, RunOptions};
use run_support::{assert_valid, kind, Bench, ALL};
use serde_json::{json, Value};

fn create(name: &str) -> Value {
    json!({"name": name, "source": {"type": "image", "alias": "busybox"}})
}

fn assert_completed(result: &Value) {
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(result["operation"]["status"], "Success", "{result}");
    assert!(result["operation_id"].is_string(), "{result}");
    assert_eq!(
        result["operation"]["id"], result["operation_id"],
        "{result}"
    );
    assert_eq!(result["wait_error"], Value::Null, "{result}");
}

#[tokio::test(start_paused = true)]
async fn every_mutation_completes_and_is_sent_once() {
    let bench = Bench::start().await;
    let images = bench.call("incus_image_list", json!({})).await;
    let fingerprint = images["items"][0]["fingerprint"]
        .as_str()
        .unwrap()
        .to_owned();
    let steps: [(&str, Value, &str, &str); 8] = [
        (
            "incus_instance_create",
            create("web"),
            "POST",
            "/1.0/instances",
        ),
        (
            "incus_instance_state_update",
            json!({"name": "web", "action": "start"}),
            "PUT",
            "/1.0/instances/web/state",
        ),
        (
            "incus_instance_snapshot_create",
            json!({"instance": "web", "snapshot": "snap0"}),
            "POST",
            "/1.0/instances/web/snapshots",
        ),
        (
            "incus_instance_snapshot_restore",
            json!({"instance": "web", "snapshot": "snap0", "confirm": "web/snap0"}),
            "PUT",
            "/1.0/instances/web",
        ),
        (
            "incus_instance_snapshot_delete",
            json!({"instance": "web", "snapshot": "snap0", "confirm": "web/snap0"}),
            "DELETE",
            "/1.0/instances/web/snapshots/snap0",
        ),
        (
            "incus_instance_state_update",
            json!({"name": "web", "action": "stop", "force": true}),
            "PUT",
            "/1.0/instances/web/state",
        ),
        (
            "incus_instance_delete",
            json!({"name": "web", "confirm": "web"}),
            "DELETE",
            "/1.0/instances/web",
        ),
        (
            "incus_image_delete",
            json!({"fingerprint": fingerprint, "confirm": fingerprint}),
            "DELETE",
            &format!("/1.0/images/{fingerprint}"),
        ),
    ];
    let mut sent = std::collections::HashMap::new();
    for (name, input, method, path) in steps {
        let result = bench.call(name, input).await;
        assert_completed(&result);
        assert_eq!(
            result["waited_seconds"], 4,
            "min(10, floor(5000/1000) - 1): {result}"
        );
        *sent.entry((method, path.to_owned())).or_insert(0) += 1;
        assert_eq!(
            bench.count(method, path),
            sent[&(method, path.to_owned())],
            "{name} sent once"
        );
    }
    let gone = bench
        .call("incus_instance_get", json!({"name": "web"}))
        .await;
    assert_eq!(gone["error"]["http_status"], 404, "{gone}");
}

#[tokio::test(start_paused = true)]
async fn waited_seconds_is_the_effective_wait() {
    let bench = Bench::start().await;
    for (wait, expected) in [(0, 0), (2, 2), (4, 4), (60, 4)] {
        let result = bench
            .call("incus_instance_create", json!({"name": format!("w{wait}"), "source": {"type": "image", "alias": "busybox"}, "wait_seconds": wait}))
            .await;
        assert_eq!(result["waited_seconds"], expected, "{result}");
        let query = bench
            .fake
            .journal()
            .into_iter()
            .rev()
            .find(|entry| entry.path.ends_with("/wait"))
            .and_then(|entry| entry.query)
            .unwrap_or_default();
        assert!(query.contains(&format!("timeout={expected}")), "{query}");
    }
    let long = Bench::with_timeout(
        crate::run_support::fake_builder(),
        Duration::from_millis(61_000),
    )
    .await;
    let result = long
        .call("incus_instance_create", json!({"name": "w", "source": {"type": "image", "alias": "busybox"}, "wait_seconds": 60}))
        .await;
    assert_eq!(result["waited_seconds"], 60, "{result}");
}

#[tokio::test(start_paused = true)]
async fn a_failing_operation_is_failed_with_the_native_error() {
    let bench = Bench::start().await;
    let _rule =
        bench.fake.add_rule(
            Rule::new("POST", "/1.0/instances").fault(Fault::OperationFail {
                message: "disk full".into(),
            }),
        );
    let result = bench.call("incus_instance_create", create("web")).await;
    assert_eq!(result["status"], "failed", "{result}");
    assert_eq!(result["wait_error"], "disk full", "{result}");
    assert_eq!(result["operation"]["status"], "Failure", "{result}");
    assert_eq!(bench.count("POST", "/1.0/instances"), 1);
    // A duplicate name fails inside the operation, as on a real Incus.
    drop(_rule);
    bench.instance("dup").await;
    let duplicate = bench.call("incus_instance_create", create("dup")).await;
    assert_eq!(duplicate["status"], "failed", "{duplicate}");
    assert!(duplicate["wait_error"]
        .as_str()
        .is_some_and(|e| !e.is_empty()));
}

#[tokio::test(start_paused = true)]
async fn an_operation_not_finished_within_the_wait_is_running() {
    let bench = Bench::start().await;
    let _rule = bench.fake.add_rule(
        Rule::new("POST", "/1.0/instances/*/snapshots").fault(Fault::OperationNeverFinish),
    );
    bench.instance("web").await;
    for wait in [0, 1] {
        let result = bench
            .call(
                "incus_instance_snapshot_create",
                json!({"instance": "web", "snapshot": format!("s{wait}"), "wait_seconds": wait}),
            )
            .await;
        assert_eq!(result["status"], "running", "{result}");
        assert_eq!(result["waited_seconds"], wait, "{result}");
        let id = result["operation_id"].as_str().unwrap().to_owned();
        assert_eq!(result["operation"]["id"], id.as_str());
        // Nothing is cancelled and nothing is resent.
        let waited = bench
            .call(
                "incus_operation_wait",
                json!({"operation_id": id, "wait_seconds": 0}),
            )
            .await;
        assert_eq!(waited["status"], "running", "{waited}");
    }
    assert_eq!(bench.count("POST", "/1.0/instances/web/snapshots"), 2);
    assert!(bench
        .fake
        .journal()
        .iter()
        .all(|entry| entry.method != "DELETE"));
}

#[tokio::test(start_paused = true)]
async fn a_local_wait_deadline_reports_running_and_cancels_nothing() {
    let bench = Bench::with_timeout(
        crate::run_support::fake_builder(),
        Duration::from_millis(2500),
    )
    .await;
    let _never = bench
        .fake
        .add_rule(Rule::new("POST", "/1.0/instances").fault(Fault::OperationNeverFinish));
    let _slow_wait = bench
        .fake
        .add_rule(Rule::new("GET", "/1.0/operations/*/wait").fault(Fault::Stall));
    let result = bench.call("incus_instance_create", create("web")).await;
    assert_eq!(result["status"], "running", "{result}");
    assert_eq!(result["waited_seconds"], 1);
    assert!(result["wait_error"].is_string(), "{result}");
    assert_eq!(bench.count("POST", "/1.0/instances"), 1);
    assert!(bench
        .fake
        .journal()
        .iter()
        .all(|entry| entry.method != "DELETE"));
}

#[tokio::test(start_paused = true)]
async fn a_request_that_may_have_been_applied_without_an_answer_is_uncertain() {
    for fault in [
        Fault::CloseAfterApply,
        Fault::GarbageBody,
        Fault::TruncatedBody,
    ] {
        let bench = Bench::start().await;
        let label = format!("{fault:?}");
        let _rule = bench
            .fake
            .add_rule(Rule::new("POST", "/1.0/instances").fault(fault));
        let result = bench.call("incus_instance_create", create("web")).await;
        assert_eq!(result["status"], "uncertain", "{label}: {result}");
        assert_eq!(result["operation_id"], Value::Null);
        assert_eq!(result["operation"], Value::Null);
        assert_eq!(result["waited_seconds"], 0);
        let posts = bench.fake.requests("POST", "/1.0/instances");
        assert_eq!(posts.len(), 1, "{label}: never resent");
        assert!(posts[0].applied, "{label}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_native_rejection_before_acceptance_is_a_native_error() {
    let bench = Bench::start().await;
    let _rule = bench
        .fake
        .add_rule(Rule::new("POST", "/1.0/instances").fault(Fault::Error {
            status: 403,
            message: "not authorized".into(),
        }));
    let result = bench.call("incus_instance_create", create("web")).await;
    assert_eq!(kind(&result), "native", "{result}");
    assert_eq!(result["error"]["http_status"], 403);
    assert_eq!(result["error"]["error_code"], 403);
    assert_eq!(result["error"]["message"], "not authorized");
    drop(_rule);
    bench.running_instance("up").await;
    let running = bench
        .call(
            "incus_instance_delete",
            json!({"name": "up", "confirm": "up"}),
        )
        .await;
    assert_eq!(kind(&running), "native", "{running}");
    assert_eq!(running["error"]["http_status"], 400);
    assert_eq!(bench.count("DELETE", "/1.0/instances/up"), 1);
}

#[tokio::test(start_paused = true)]
async fn a_client_binding_is_used_as_discovered_and_a_mutation_surely_not_sent_is_transport() {
    let bench = Bench::start().await;
    let client = Client::connect(bench.connection.clone())
        .await
        .expect("discovered");
    // A discovered client binding is used as it is: no second discovery.
    let bound = AllowAll::client(client.clone());
    let listed = incus_operations::run(
        "incus_instance_list",
        json!({}),
        RunOptions::new(&bound, &(), ALL),
    )
    .await;
    assert_valid("incus_instance_list", &listed);
    assert_eq!(listed["count"], 0, "{listed}");
    assert_eq!(
        bench.count("GET", "/1.0"),
        1,
        "only the host's own discovery"
    );
    drop(bench);
    let host = AllowAll::client(client);
    let result = incus_operations::run(
        "incus_instance_create",
        create("web"),
        RunOptions::new(&host, &(), ALL),
    )
    .await;
    assert_valid("incus_instance_create", &result);
    assert_eq!(kind(&result), "transport", "{result}");
}

#[tokio::test(start_paused = true)]
async fn operation_wait_reports_the_observed_outcome() {
    let bench = Bench::start().await;
    let never = bench.fake.add_rule(
        Rule::new("POST", "/1.0/instances")
            .nth(1)
            .fault(Fault::OperationNeverFinish),
    );
    let running = bench.call("incus_instance_create", json!({"name": "a", "source": {"type": "image", "alias": "busybox"}, "wait_seconds": 0})).await;
    drop(never);
    let id = running["operation_id"].as_str().unwrap().to_owned();
    let waited = bench
        .call(
            "incus_operation_wait",
            json!({"operation_id": id, "wait_seconds": 1}),
        )
        .await;
    assert_eq!(waited["status"], "running", "{waited}");
    assert_eq!(waited["waited_seconds"], 1);
    assert_eq!(waited["wait_error"], "context deadline exceeded");

    let done = bench.call("incus_instance_create", create("b")).await;
    let id = done["operation_id"].as_str().unwrap().to_owned();
    let waited = bench
        .call("incus_operation_wait", json!({"operation_id": id}))
        .await;
    assert_completed(&waited);

    let _fail =
        bench.fake.add_rule(
            Rule::new("POST", "/1.0/instances").fault(Fault::OperationFail {
                message: "no space".into(),
            }),
        );
    let failed = bench.call("incus_instance_create", json!({"name": "c", "source": {"type": "image", "alias": "busybox"}, "wait_seconds": 0})).await;
    let id = failed["operation_id"].as_str().unwrap().to_owned();
    let waited = bench
        .call("incus_operation_wait", json!({"operation_id": id}))
        .await;
    assert_eq!(waited["status"], "failed", "{waited}");
    assert_eq!(waited["wait_error"], "no space");

    let unknown = bench
        .call(
            "incus_operation_wait",
            json!({"operation_id": "00000000-0000-4000-8000-000000000000"}),
        )
        .await;
    assert_eq!(kind(&unknown), "native", "{unknown}");
    assert_eq!(unknown["error"]["http_status"], 404);
}

/// Every mutation, with the request it sends.
fn mutations(fingerprint: &str) -> Vec<(&'static str, Value, &'static str, String)> {
    vec![
        (
            "incus_instance_create",
            create("web2"),
            "POST",
            "/1.0/instances".into(),
        ),
        (
            "incus_instance_delete",
            json!({"name": "web", "confirm": "web"}),
            "DELETE",
            "/1.0/instances/web".into(),
        ),
        (
            "incus_instance_state_update",
            json!({"name": "web", "action": "start"}),
            "PUT",
            "/1.0/instances/web/state".into(),
        ),
        (
            "incus_instance_snapshot_create",
            json!({"instance": "web", "snapshot": "s1"}),
            "POST",
            "/1.0/instances/web/snapshots".into(),
        ),
        (
            "incus_instance_snapshot_delete",
            json!({"instance": "web", "snapshot": "snap0", "confirm": "web/snap0"}),
            "DELETE",
            "/1.0/instances/web/snapshots/snap0".into(),
        ),
        (
            "incus_instance_snapshot_restore",
            json!({"instance": "web", "snapshot": "snap0", "confirm": "web/snap0"}),
            "PUT",
            "/1.0/instances/web".into(),
        ),
        (
            "incus_image_delete",
            json!({"fingerprint": fingerprint, "confirm": fingerprint}),
            "DELETE",
            format!("/1.0/images/{fingerprint}"),
        ),
    ]
}

#[tokio::test(start_paused = true)]
async fn every_mutation_reports_uncertain_running_and_failed_and_is_sent_once() {
    let faults = [
        (Fault::CloseAfterApply, "uncertain"),
        (Fault::OperationNeverFinish, "running"),
        (
            Fault::OperationFail {
                message: "scripted failure".into(),
            },
            "failed",
        ),
    ];
    for (fault, status) in faults {
        let probe = Bench::start().await;
        let images = probe.call("incus_image_list", json!({})).await;
        let fingerprint = images["items"][0]["fingerprint"]
            .as_str()
            .unwrap()
            .to_owned();
        drop(probe);
        for (name, mut input, method, path) in mutations(&fingerprint) {
            let bench = Bench::start().await;
            bench.instance("web").await;
            let snapshot = bench
                .call(
                    "incus_instance_snapshot_create",
                    json!({"instance": "web", "snapshot": "snap0"}),
                )
                .await;
            assert_eq!(snapshot["status"], "completed", "{snapshot}");
            let before = bench.count(method, &path);
            let _rule = bench
                .fake
                .add_rule(Rule::new(method, &path).fault(fault.clone()));
            input["wait_seconds"] = json!(1);
            let result = bench.call(name, input).await;
            assert_eq!(result["status"], status, "{name} with {fault:?}: {result}");
            assert_eq!(
                bench.count(method, &path),
                before + 1,
                "{name} with {fault:?}: sent once"
            );
            if status != "uncertain" {
                assert!(result["operation_id"].is_string(), "{result}");
            }
        }
    }
}

/// Issue 10 item 7: the whole call is bounded, not only each request. The fake delays one request
/// past the bound; the call ends at the bound and reports what may have happened, never resending.
mod call_bound {
    use std::time::Duration;

    use tokio::time::Instant;

    use fake_incus::{Fault, Rule};
    use serde_json::{json, Value};

    use crate::run_support::{call_bounded, kind, Bench};

    const BOUND: Duration = Duration::from_millis(400);
    /// How long past the bound a cut call may take to return.
    const SLACK: Duration = Duration::from_millis(1500);

    fn delay(method: &str, path: &str) -> Rule {
        Rule::new(method, path).fault(Fault::Delay { ms: 3000 })
    }

    async fn bounded(bench: &Bench, name: &str, input: Value) -> Value {
        let started = Instant::now();
        let result = call_bounded(&bench.host(), name, input, BOUND).await;
        let elapsed = started.elapsed();
        assert!(elapsed < BOUND + SLACK, "{name} took {elapsed:?}: {result}");
        assert!(elapsed >= BOUND, "{name} ended before its bound: {result}");
        result
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_cut_before_anything_that_changes_state_is_a_timeout_error() {
        let bench = Bench::start().await;
        let _slow = bench.fake.add_rule(delay("GET", "/1.0"));
        let input = json!({"name": "web", "source": {"type": "image", "alias": "busybox"}});
        let result = bounded(&bench, "incus_instance_create", input).await;
        assert_eq!(kind(&result), "timeout", "{result}");
        assert_eq!(bench.count("POST", "/1.0/instances"), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_mutation_cut_while_its_request_is_in_flight_is_uncertain_and_not_resent() {
        let bench = Bench::start().await;
        let _slow = bench.fake.add_rule(delay("POST", "/1.0/instances"));
        let input = json!({"name": "web", "source": {"type": "image", "alias": "busybox"}});
        let result = bounded(&bench, "incus_instance_create", input).await;
        assert_eq!(result["status"], "uncertain", "{result}");
        assert_eq!(result["operation_id"], Value::Null);
        let reason = result["wait_error"].as_str().unwrap_or_default();
        assert!(reason.contains("400 ms"), "{result}");
        assert_eq!(bench.count("POST", "/1.0/instances"), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_mutation_cut_during_its_wait_is_running_with_its_operation() {
        let bench = Bench::start().await;
        let _slow = bench.fake.add_rule(
            Rule::new("POST", "/1.0/instances").fault(Fault::OperationDuration { ms: 3000 }),
        );
        let input = json!({"name": "web", "source": {"type": "image", "alias": "busybox"}, "wait_seconds": 4});
        let result = bounded(&bench, "incus_instance_create", input).await;
        assert_eq!(result["status"], "running", "{result}");
        assert!(result["operation_id"].is_string(), "{result}");
        assert_eq!(
            result["operation"]["id"], result["operation_id"],
            "{result}"
        );
        assert_eq!(result["waited_seconds"], 4);
        assert_eq!(bench.count("POST", "/1.0/instances"), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn an_update_or_cancel_cut_while_in_flight_is_uncertain_with_the_bound_as_reason() {
        let bench = Bench::start().await;
        bench.instance("web").await;
        {
            let _slow = bench.fake.add_rule(delay("PATCH", "/1.0/instances/web"));
            let input = json!({"name": "web", "description": "late"});
            let result = bounded(&bench, "incus_instance_update", input).await;
            assert_eq!(result["status"], "uncertain", "{result}");
            assert!(result["reason"]
                .as_str()
                .unwrap_or_default()
                .contains("bound"));
            assert_eq!(bench.count("PATCH", "/1.0/instances/web"), 1);
        }
        let _cancellable = bench
            .fake
            .add_rule(Rule::new("POST", "/1.0/instances").fault(Fault::OperationCancellable));
        let running = bench
            .call("incus_instance_create", json!({"name": "d", "source": {"type": "image", "alias": "busybox"}, "wait_seconds": 0}))
            .await;
        let id = running["operation_id"]
            .as_str()
            .expect("operation id")
            .to_owned();
        let path = format!("/1.0/operations/{id}");
        let _slow = bench.fake.add_rule(delay("DELETE", &path));
        let result = bounded(
            &bench,
            "incus_operation_cancel",
            json!({"operation_id": id}),
        )
        .await;
        assert_eq!(result["status"], "uncertain", "{result}");
        assert!(result["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("bound"));
        assert_eq!(bench.count("DELETE", &path), 1);
    }
}

/// The HTTP 200 error envelope a wait answers when it is cut short (Incus's forwarding on a
/// cluster: the member that runs the operation went down).
fn cut_wait() -> Fault {
    Fault::Respond {
        status: 200,
        headers: Default::default(),
        body: json!({"type": "error", "status": "", "status_code": 0, "operation": "",
                     "error_code": 500, "error": "unexpected EOF", "metadata": null})
        .to_string(),
        apply: false,
    }
}

#[tokio::test(start_paused = true)]
async fn a_wait_cut_short_while_the_operation_runs_is_running_not_failed() {
    let bench = Bench::start().await;
    bench.instance("web").await;
    let _never = bench.fake.add_rule(
        Rule::new("POST", "/1.0/instances/web/snapshots").fault(Fault::OperationNeverFinish),
    );
    let _cut = bench
        .fake
        .add_rule(Rule::new("GET", "/1.0/operations/*/wait").fault(cut_wait()));
    let snapshot = json!({"instance": "web", "snapshot": "s0"});
    let result = bench.call("incus_instance_snapshot_create", snapshot).await;
    assert_eq!(result["status"], "running", "{result}");
    assert_eq!(result["wait_error"], "unexpected EOF", "{result}");
    assert_eq!(result["operation"]["status"], "Running", "{result}");
    let id = result["operation_id"].as_str().unwrap().to_owned();
    let waited = bench
        .call("incus_operation_wait", json!({"operation_id": id}))
        .await;
    assert_eq!(waited["status"], "running", "{waited}");
    assert_eq!(bench.count("POST", "/1.0/instances/web/snapshots"), 1);
}

/// On a cluster member a wait may have been forwarded to the member that runs the operation,
/// and a forward that breaks answers the same HTTP 200 error envelope as a failure: when the
/// operation cannot be read back either, the outcome was not observed.
#[tokio::test(start_paused = true)]
async fn a_cut_wait_on_a_cluster_whose_operation_cannot_be_read_is_running_not_failed() {
    let builder = crate::run_support::fake_builder()
        .cluster(["m1", "m2", "m3"])
        .cluster_timings(fake_incus::ClusterTimings::fast())
        .state(json!({"instances": [{"name": "web", "status": "Stopped", "location": "m2"}]}));
    let bench = Bench::with(builder).await;
    let _never = bench.fake.add_rule(
        Rule::new("POST", "/1.0/instances/web/snapshots").fault(Fault::OperationNeverFinish),
    );
    let _cut = bench
        .fake
        .add_rule(Rule::new("GET", "/1.0/operations/*/wait").fault(cut_wait()));
    let _unreadable = bench
        .fake
        .add_rule(Rule::new("GET", "/1.0/operations/*").fault(Fault::Error {
            status: 500,
            message: "Missing event connection with target cluster member".into(),
        }));
    let snapshot = json!({"instance": "web", "snapshot": "s1"});
    let result = bench.call("incus_instance_snapshot_create", snapshot).await;
    assert_eq!(result["status"], "running", "{result}");
    assert_eq!(result["wait_error"], "unexpected EOF", "{result}");
    assert_eq!(result["operation"]["status"], "Running", "{result}");
    assert_eq!(bench.count("POST", "/1.0/instances/web/snapshots"), 1);
}

/// The read that follows a failure envelope: stalled (answers nothing until the connection's
/// timeout), reset, or refused by Incus.
fn unreadable_operation() -> [Fault; 3] {
    [
        Fault::Stall,
        Fault::Reset,
        Fault::Error {
            status: 500,
            message: "Server isn't ready yet".into(),
        },
    ]
}

/// Safety, results say what was observed: a standalone server answers every wait itself, so a
/// wait that answers the operation's failure (`disk full`) observed the outcome. When the read
/// of the operation that follows stalls, breaks or is refused, every async mutation is still
/// `failed` with that error, `operation` is `null` (no object that still says `Running`), and the
/// mutation is sent once and the operation read once.
#[tokio::test(start_paused = true)]
async fn safety_observed_a_failure_the_wait_reports_is_failed_when_the_read_back_stalls() {
    let probe = Bench::start().await;
    let images = probe.call("incus_image_list", json!({})).await;
    let fingerprint = images["items"][0]["fingerprint"]
        .as_str()
        .unwrap()
        .to_owned();
    drop(probe);
    for (index, (name, mut input, method, path)) in mutations(&fingerprint).into_iter().enumerate()
    {
        let read_fault = unreadable_operation()[index % 3].clone();
        let bench =
            Bench::with_timeout(crate::run_support::fake_builder(), Duration::from_secs(2)).await;
        bench.instance("web").await;
        let snapshot = bench
            .call(
                "incus_instance_snapshot_create",
                json!({"instance": "web", "snapshot": "snap0"}),
            )
            .await;
        assert_eq!(snapshot["status"], "completed", "{snapshot}");
        let before = bench.count(method, &path);
        let _fail = bench
            .fake
            .add_rule(Rule::new(method, &path).fault(Fault::OperationFail {
                message: "disk full".into(),
            }));
        let _read = bench
            .fake
            .add_rule(Rule::new("GET", "/1.0/operations/*").fault(read_fault.clone()));
        input["wait_seconds"] = json!(1);
        let result = bench.call(name, input).await;
        let case = format!("{name} with the read {read_fault:?}: {result}");
        assert_eq!(result["status"], "failed", "{case}");
        assert_eq!(result["wait_error"], "disk full", "{case}");
        assert_eq!(result["operation"], Value::Null, "{case}");
        let id = result["operation_id"].as_str().expect("operation id");
        assert_eq!(bench.count(method, &path), before + 1, "{case}: sent once");
        let read = format!("/1.0/operations/{id}");
        assert_eq!(bench.count("GET", &read), 1, "{case}: read once");
        assert_eq!(bench.count("GET", &format!("{read}/wait")), 1, "{case}");

        // incus_operation_wait on the same operation sees the same failure.
        let waited = bench
            .call(
                "incus_operation_wait",
                json!({"operation_id": id, "wait_seconds": 1}),
            )
            .await;
        assert_eq!(waited["status"], "failed", "{name}: {waited}");
        assert_eq!(waited["wait_error"], "disk full", "{name}: {waited}");
        assert_eq!(
            bench.count(method, &path),
            before + 1,
            "{case}: never resent"
        );
    }
}

/// When the call's own bound passes during that read, the failure already observed is what the
/// call reports, not `running`.
#[tokio::test(start_paused = true)]
async fn safety_observed_a_failure_observed_before_the_call_bound_is_reported_as_failed() {
    let bench =
        Bench::with_timeout(crate::run_support::fake_builder(), Duration::from_secs(5)).await;
    let _fail =
        bench.fake.add_rule(
            Rule::new("POST", "/1.0/instances").fault(Fault::OperationFail {
                message: "disk full".into(),
            }),
        );
    let _stall = bench
        .fake
        .add_rule(Rule::new("GET", "/1.0/operations/*").fault(Fault::Stall));
    let result = run_support::call_bounded(
        &bench.host(),
        "incus_instance_create",
        create("web"),
        Duration::from_millis(1500),
    )
    .await;
    assert_eq!(result["status"], "failed", "{result}");
    assert_eq!(result["wait_error"], "disk full", "{result}");
    assert_eq!(result["operation"], Value::Null, "{result}");
    assert_eq!(bench.count("POST", "/1.0/instances"), 1);
}

#[tokio::test(start_paused = true)]
async fn member_down_during_the_wait_on_a_cluster_is_running_not_failed() {
    let builder = crate::run_support::fake_builder()
        .cluster(["m1", "m2", "m3"])
        .cluster_timings(fake_incus::ClusterTimings::fast())
        .state(json!({"instances": [{"name": "web", "status": "Running", "location": "m2"}]}));
    let bench = Bench::with(builder).await;
    let _never = bench
        .fake
        .add_rule(Rule::new("PUT", "/1.0/instances/web/state").fault(Fault::OperationNeverFinish));
    let stop = json!({"name": "web", "action": "stop", "wait_seconds": 3});
    let call = bench.call("incus_instance_state_update", stop);
    let down = async {
        // Bounded: the wait through m1 on m2's operation comes within the call's first steps.
        for _ in 0..2500 {
            let waiting = !bench
                .fake
                .requests("GET", "/1.0/operations/*/wait")
                .is_empty();
            if waiting {
                bench.fake.member_down("m2").expect("m2 goes down");
                return;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        panic!("the wait never came");
    };
    let (result, ()) = tokio::join!(call, down);
    assert_eq!(result["status"], "running", "{result}");
    assert!(result["operation_id"].is_string(), "{result}");
    assert_eq!(bench.count("PUT", "/1.0/instances/web/state"), 1);
}
