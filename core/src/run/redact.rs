//! What results never carry: credentials, each replaced by the one marker [`REDACTED`]; the guest's
//! data and other sessions' commands for a caller that cannot read them in the guest; and the
//! `used_by` entries of projects the host does not let the caller see.
//!
//! Which values are credentials is defined once, in `incus-credentials` (shared with the fake's
//! capture); this module says which results of which operation hold them, and what depends on the
//! reader ([`Reader`]): a caller with `incus.exec` sees `environment.*` and cloud-init values
//! (it could read them in the guest) and exec sessions' commands; every caller sees `used_by`
//! entries of the call's project and of the projects the host answered
//! [`Host::may_see_project`](crate::Host::may_see_project) for.
use std::collections::BTreeSet;

use serde_json::Value;

use crate::catalogue::Native;

use incus_credentials::redact::{
    guest_data, image, operation as operation_secrets, storage_pool, values,
};
pub use incus_credentials::redact::{network, server, REDACTED};

/// The project of a `used_by` entry that names none.
const DEFAULT_PROJECT: &str = "default";

/// Who reads a result, as far as what it may carry depends on the caller.
#[derive(Debug, Default)]
pub(crate) struct Reader {
    /// The caller holds `incus.exec`: it may read what the guest holds (`environment.*`,
    /// cloud-init data) and the commands of exec sessions.
    pub(crate) exec: bool,
    /// The projects whose resources `used_by` may name: the call's own, and those the host said
    /// the caller may see.
    pub(crate) projects: BTreeSet<String>,
}

/// Replaces what `reader` may not see in one native object of `native`'s result (a list item or
/// the `item` of a read). Returns whether anything changed.
pub(crate) fn item(native: Native, reader: &Reader, item: &mut Value) -> bool {
    let changed = match native {
        Native::ServerGet => server(item),
        Native::NetworkList | Native::NetworkGet => network(item),
        Native::StoragePoolList | Native::StoragePoolGet => storage_pool(item),
        Native::ImageList | Native::ImageGet => image(item),
        Native::OperationList | Native::OperationGet => operation(reader, item),
        Native::InstanceList
        | Native::InstanceGet
        | Native::InstanceSnapshotList
        | Native::InstanceSnapshotGet
        | Native::ProfileList
        | Native::ProfileGet => !reader.exec && guest_data(item),
        _ => false,
    };
    used_by(&reader.projects, item) | changed
}

/// Replaces what `reader` may not see in any other result of `native`: its `item`, and the
/// `operation` that mutations, waits, cancels and execs report.
pub(crate) fn object(native: Native, reader: &Reader, result: &mut Value) {
    if let Some(read) = result.get_mut("item") {
        item(native, reader, read);
    }
    if let Some(observed) = result.get_mut("operation") {
        operation(reader, observed);
    }
}

/// An operation object: its secrets and an exec session's environment values for every reader,
/// and an exec session's `command` for a reader without `incus.exec`.
fn operation(reader: &Reader, object: &mut Value) -> bool {
    let secrets = operation_secrets(object);
    let command = !reader.exec && object.pointer_mut("/metadata/command").is_some_and(values);
    secrets | command
}

/// Keeps the `used_by` entries whose every project is in `visible`. Returns whether any went.
fn used_by(visible: &BTreeSet<String>, object: &mut Value) -> bool {
    let Some(entries) = object.get_mut("used_by").and_then(Value::as_array_mut) else {
        return false;
    };
    let before = entries.len();
    entries.retain(|entry| {
        entry
            .as_str()
            .is_some_and(|entry| entry_projects(entry).all(|p| visible.contains(p.as_ref())))
    });
    entries.len() != before
}

/// The projects a `used_by` entry (`/1.0/instances/c1?project=other`) names, as Incus reads its
/// query (`project`, form-decoded; none or empty is project `default`). Every `project` parameter
/// counts, so an entry is kept only when all of them are visible.
pub(crate) fn entry_projects(entry: &str) -> impl Iterator<Item = std::borrow::Cow<'_, str>> {
    let query = entry
        .split_once('?')
        .map_or("", |(_, query)| query)
        .split('#')
        .next()
        .unwrap_or_default();
    let named: Vec<_> = url::form_urlencoded::parse(query.as_bytes())
        .filter(|(key, _)| key == "project")
        .map(|(_, value)| {
            if value.is_empty() {
                DEFAULT_PROJECT.into()
            } else {
                value
            }
        })
        .collect();
    let default = named.is_empty().then(|| DEFAULT_PROJECT.into());
    named.into_iter().chain(default)
}

/// Every project named by a `used_by` entry of `object`.
pub(crate) fn used_by_projects(object: &Value, into: &mut BTreeSet<String>) {
    let entries = object.get("used_by").and_then(Value::as_array);
    for entry in entries.into_iter().flatten().filter_map(Value::as_str) {
        into.extend(entry_projects(entry).map(std::borrow::Cow::into_owned));
    }
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (what results never carry); a promise of the
    //! whole `run()` or of the client against a fake Incus, seen through the public API, goes in
    //! `tests/integration`.

    use super::*;
    use serde_json::json;

    fn reader(exec: bool, projects: &[&str]) -> Reader {
        Reader {
            exec,
            projects: projects.iter().map(|p| (*p).to_owned()).collect(),
        }
    }

    #[test]
    fn every_result_that_reports_an_operation_is_redacted() {
        let mut result = json!({"status": "running", "operation": {"metadata": {"secret": "s"}}});
        object(Native::OperationWait, &Reader::default(), &mut result);
        assert_eq!(result["operation"]["metadata"]["secret"], REDACTED);
        let mut item = json!({"item": {"config": {"loki.auth.password": "p"}}});
        object(Native::ServerGet, &Reader::default(), &mut item);
        assert_eq!(item["item"]["config"]["loki.auth.password"], REDACTED);
    }

    #[test]
    fn an_exec_sessions_command_is_shown_only_to_a_caller_with_exec() {
        let session = json!({"metadata": {"command": ["curl", "-H", "token: t"],
            "environment": {"TOKEN": "t"}, "fds": {"0": "s"}, "return": 0}});
        for (exec, command) in [
            (false, json!([REDACTED, REDACTED, REDACTED])),
            (true, json!(["curl", "-H", "token: t"])),
        ] {
            let mut result = json!({"operation": session.clone()});
            object(Native::InstanceExec, &reader(exec, &[]), &mut result);
            let metadata = &result["operation"]["metadata"];
            assert_eq!(metadata["command"], command);
            assert_eq!(metadata["environment"]["TOKEN"], REDACTED);
            assert_eq!(metadata["return"], 0);
        }
    }

    #[test]
    fn guest_data_is_shown_only_to_a_caller_with_exec() {
        let instance = json!({"config": {"environment.TOKEN": "t"}});
        let mut shown = instance.clone();
        assert!(!item(Native::InstanceGet, &reader(true, &[]), &mut shown));
        assert_eq!(shown, instance);
        let mut hidden = instance.clone();
        assert!(item(Native::ProfileList, &reader(false, &[]), &mut hidden));
        assert_eq!(hidden["config"]["environment.TOKEN"], REDACTED);
    }

    #[test]
    fn used_by_keeps_only_entries_of_visible_projects() {
        let mut network = json!({"used_by": [
            "/1.0/instances/c1", "/1.0/instances/c2?project=team-a",
            "/1.0/instances/c3?project=other", "/1.0/profiles/p?project=",
            "/1.0/instances/c4?project=team-a&project=other", "/1.0/instances/c5?project=team%2Da",
            "/1.0/instances/c6?project=team-a#project=other", 7
        ]});
        let mut projects = BTreeSet::new();
        used_by_projects(&network, &mut projects);
        assert_eq!(
            projects,
            ["default", "other", "team-a"]
                .into_iter()
                .map(str::to_owned)
                .collect()
        );
        assert!(item(
            Native::NetworkGet,
            &reader(false, &["default", "team-a"]),
            &mut network
        ));
        assert_eq!(
            network["used_by"],
            json!([
                "/1.0/instances/c1",
                "/1.0/instances/c2?project=team-a",
                "/1.0/profiles/p?project=",
                "/1.0/instances/c5?project=team%2Da",
                "/1.0/instances/c6?project=team-a#project=other"
            ])
        );
    }
}
