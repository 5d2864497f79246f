//! Operations (Go: `GetOperations`, `GetOperation`, `GetOperationWait`, `DeleteOperation`).
//!
//! The wait endpoint answers HTTP 200 even when the wait times out or the operation failed,
//! with an error envelope (reference §6.7); [`WaitOutcome`] tells the three cases apart.

use http::Method;
use serde_json::Value;
use tokio::time::Instant;

use super::error::ClientError;
use super::query::{target, Envelope, ListItem, Single};
use super::Client;

/// The error text of a wait that ended before the operation did.
const WAIT_DEADLINE_EXCEEDED: &str = "context deadline exceeded";

/// What a server-side wait observed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum WaitOutcome {
    /// The operation is final (`Success`, `Cancelled`, ...): the native operation object.
    Final(Value),
    /// An error envelope that is not the wait's deadline: the operation failed (Incus 6.0
    /// returns only its error, not the object; 7.0 answers the failed object, a [`Self::Final`]),
    /// or, on a cluster, a forwarded wait broke
    /// ([`Client::wait_failure_is_outcome`] tells which may be).
    Failed { error_code: i64, message: String },
    /// The wait ended first; the operation is still running.
    NotFinished,
}

impl Client {
    /// `GET /1.0/operations?recursion=1`: the status-keyed groups flattened into one list,
    /// groups and items in native order.
    pub(crate) async fn get_operations(&self, project: &str) -> Result<Vec<ListItem>, ClientError> {
        let groups = self
            .query_value(target(
                &["1.0", "operations"],
                &[("recursion", "1"), ("project", project)],
            ))
            .await?
            .value;
        flatten_groups(groups)
    }

    /// `GET /1.0/operations?project=P` (no recursion): the ids of the operations Incus lists for
    /// the project, read from their URLs. Incus looks an operation id up in every project, so
    /// this list is how a caller learns which project an operation belongs to (the operation
    /// object has no project field in 6.0.4).
    pub(crate) async fn get_operation_ids(
        &self,
        project: &str,
    ) -> Result<Vec<String>, ClientError> {
        let groups = self
            .query_value(target(&["1.0", "operations"], &[("project", project)]))
            .await?
            .value;
        flatten_groups(groups)?
            .into_iter()
            .map(|item| operation_id_of(&item.value))
            .collect()
    }

    /// `GET /1.0/operations/{id}`.
    pub(crate) async fn get_operation(
        &self,
        project: &str,
        id: &str,
    ) -> Result<Single, ClientError> {
        self.query_value(operation_target(project, id, &[])).await
    }

    /// `GET /1.0/operations/{id}/wait?timeout=N`, bounded by the connection's timeout.
    /// Pass a `timeout_seconds` from [`super::effective_wait`] so the wait ends first.
    pub(crate) async fn get_operation_wait(
        &self,
        project: &str,
        id: &str,
        timeout_seconds: u64,
    ) -> Result<WaitOutcome, ClientError> {
        let deadline = Instant::now() + self.connection.timeout();
        self.get_operation_wait_until(project, id, timeout_seconds, deadline)
            .await
    }

    /// As [`Client::get_operation_wait`], with an earlier local deadline allowed.
    pub(crate) async fn get_operation_wait_until(
        &self,
        project: &str,
        id: &str,
        timeout_seconds: u64,
        deadline: Instant,
    ) -> Result<WaitOutcome, ClientError> {
        let deadline = deadline.min(Instant::now() + self.connection.timeout());
        let seconds = timeout_seconds.to_string();
        let target = target(
            &["1.0", "operations", id, "wait"],
            &[("timeout", &seconds), ("project", project)],
        );
        let reply = self
            .exchange_envelope(Method::GET, target, None, None, deadline)
            .await?;
        match reply.envelope {
            Envelope::Sync(operation) if is_final(&operation) => Ok(WaitOutcome::Final(operation)),
            Envelope::Sync(operation) if operation.is_object() => Ok(WaitOutcome::NotFinished),
            Envelope::Error { message, .. }
                if reply.http_status == 200 && message == WAIT_DEADLINE_EXCEEDED =>
            {
                Ok(WaitOutcome::NotFinished)
            }
            Envelope::Error {
                error_code,
                message,
            } if reply.http_status == 200 => Ok(WaitOutcome::Failed {
                error_code,
                message,
            }),
            Envelope::Error {
                error_code,
                message,
            } => Err(ClientError::Native {
                http_status: reply.http_status,
                error_code,
                message,
            }),
            _ => Err(ClientError::invalid_response(
                "the operation wait answered neither an operation nor an error",
            )),
        }
    }

    /// Whether a failure envelope from a wait is the operation's own outcome.
    ///
    /// A wait answers HTTP 200 with an error envelope both when the operation failed (its `err`)
    /// and when the wait itself broke after the headers were sent. A standalone server answers
    /// every wait itself (Incus 6.0.4 `operationWaitGet` forwards a wait only to another
    /// cluster member), and its own wait breaks only at the deadline (`context deadline
    /// exceeded`), so there any other error envelope is the operation's failure. A cluster
    /// member may have forwarded the wait to the member that runs the operation, and that
    /// forward breaks with a Go transport error ("unexpected EOF" when the member goes down)
    /// in the same envelope: only a read of the operation shows the outcome there. Discovery's
    /// `environment.server_clustered` says which; when it is missing, the wait may have been
    /// forwarded.
    pub(crate) fn wait_failure_is_outcome(&self) -> bool {
        self.server
            .pointer("/environment/server_clustered")
            .and_then(Value::as_bool)
            == Some(false)
    }

    /// `DELETE /1.0/operations/{id}`: asks Incus to cancel the operation (200 `{}` when
    /// accepted; 400 when it cannot be cancelled or is already final).
    pub(crate) async fn delete_operation(
        &self,
        project: &str,
        id: &str,
    ) -> Result<(), ClientError> {
        self.query_empty(
            Method::DELETE,
            operation_target(project, id, &[]),
            None,
            None,
        )
        .await
    }
}

/// Whether a native operation object is in a final state (`status_code >= 200`).
pub(crate) fn is_final(operation: &Value) -> bool {
    operation
        .get("status_code")
        .and_then(Value::as_i64)
        .is_some_and(|code| code >= 200)
}

fn operation_target(project: &str, id: &str, tail: &[&str]) -> String {
    let mut segments = vec!["1.0", "operations", id];
    segments.extend_from_slice(tail);
    target(&segments, &[("project", project)])
}

/// The id at the end of an operation URL (`/1.0/operations/{id}`, a query string allowed).
fn operation_id_of(url: &Value) -> Result<String, ClientError> {
    url.as_str()
        .and_then(|url| url.split(['?', '#']).next())
        .and_then(|path| path.strip_prefix("/1.0/operations/"))
        .filter(|id| !id.is_empty() && !id.contains('/'))
        .map(str::to_owned)
        .ok_or_else(|| {
            ClientError::invalid_response("an operation list entry is not an operation URL")
        })
}

fn flatten_groups(groups: Value) -> Result<Vec<ListItem>, ClientError> {
    let Value::Object(groups) = groups else {
        return Err(ClientError::invalid_response(
            "the operation list is not an object keyed by status",
        ));
    };
    let mut items = Vec::new();
    for (_status, group) in groups {
        let Value::Array(group) = group else {
            return Err(ClientError::invalid_response(
                "an operation group is not a list",
            ));
        };
        items.extend(group.into_iter().map(ListItem::new));
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (operations (Go); a promise of the whole
    //! `run()` or of the client against a fake Incus, seen through the public API, goes in
    //! `tests/integration`.

    use super::*;
    use serde_json::json;

    #[test]
    fn groups_flatten_in_native_order() {
        let groups = json!({"running": [{"id": "b"}, {"id": "a"}], "success": [{"id": "c"}]});
        let ids: Vec<_> = flatten_groups(groups)
            .unwrap()
            .into_iter()
            .map(|item| item.value["id"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(ids, ["b", "a", "c"]);
        assert!(flatten_groups(json!([])).is_err());
        assert!(flatten_groups(json!({"running": {}})).is_err());
    }

    #[test]
    fn operation_ids_are_read_from_their_urls() {
        assert_eq!(
            operation_id_of(&json!(
                "/1.0/operations/37e88fd3-c0b4-44fd-b4e1-97436b0af51f"
            ))
            .unwrap(),
            "37e88fd3-c0b4-44fd-b4e1-97436b0af51f"
        );
        assert_eq!(
            operation_id_of(&json!("/1.0/operations/ab?project=p")).unwrap(),
            "ab"
        );
        for bad in [
            json!("/1.0/instances/c1"),
            json!("/1.0/operations/"),
            json!({"id": "x"}),
        ] {
            assert!(operation_id_of(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn final_means_status_code_200_or_more() {
        assert!(is_final(&json!({"status_code": 200})));
        assert!(is_final(&json!({"status_code": 401})));
        assert!(!is_final(&json!({"status_code": 103})));
        assert!(!is_final(&json!({})));
    }
}
