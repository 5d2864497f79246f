//! Evidence: running operations never changes the client coverage ledgers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;

use super::with_session;
use crate::runner::Check;
use crate::scenario::target::TargetFactory;

/// The ledgers of the repository the harness was built from.
fn ledgers() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/evidence");
    ["coverage.json", "endpoint-inventory.json"]
        .iter()
        .map(|name| dir.join(name))
        .collect()
}

fn read_all(paths: &[PathBuf]) -> Result<Vec<Vec<u8>>, String> {
    paths
        .iter()
        .map(|p| std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display())))
        .collect()
}

/// One check: a run of successful operations leaves the ledgers byte for byte unchanged.
pub(crate) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    let name = "evidence::tools_not_coverage::operations_leave_the_ledgers_unchanged".to_owned();
    vec![with_session(name, factory, |session| {
        let paths = ledgers();
        let before = read_all(&paths)?;
        let write = ["incus.write".to_owned()];
        let read = ["incus.read".to_owned()];
        session.call(
            "incus_instance_create",
            &write,
            json!({"name": "web", "source": {"type": "image", "alias": "busybox"}}),
        );
        session.call("incus_instance_list", &read, json!({}));
        session.call("incus_server_get", &read, json!({}));
        if read_all(&paths)? == before {
            Ok(())
        } else {
            Err("running operations changed the coverage ledgers".into())
        }
    })]
}
