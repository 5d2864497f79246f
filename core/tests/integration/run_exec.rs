//! `incus_instance_exec` is exported only when its client evidence is complete: the stream
//! contract (stream:S01) must be certified. Until then `run` refuses it as an unknown
//! operation, before any backend request. The executor itself is tested below the gate in
//! `core/src/run/tests.rs` (ExecInstance, stream:S01).
use crate::run_support;

use run_support::{kind, Bench};
use serde_json::json;

#[tokio::test]
async fn exec_runs_only_once_its_evidence_exports_it() {
    let bench = Bench::start().await;
    let exported = incus_operations::fetch("incus_instance_exec").is_some();
    if exported {
        bench.running_instance("web").await;
    }
    let result = bench
        .call(
            "incus_instance_exec",
            json!({"name": "web", "command": ["sh", "-c", "echo hi; sleep 0.2"]}),
        )
        .await;
    let posts = bench.count("POST", "/1.0/instances/web/exec");
    if exported {
        assert_eq!(result["status"], "completed", "{result}");
        assert_eq!(posts, 1);
    } else {
        assert_eq!(kind(&result), "unknown_operation", "{result}");
        assert_eq!(posts, 0);
        assert!(bench.fake.journal().is_empty());
    }
}
