//! What results never carry: credentials, each replaced by the one marker [`REDACTED`].
//!
//! Which values are credentials is defined once, in `incus-credentials` (shared with the fake's
//! capture); this module says which results of which operation hold them. Instance, profile,
//! project, image, storage pool and volume configuration hold no credential key in 6.0.4 (their
//! schemas have no password, token or private key), so their results pass unchanged.
use serde_json::Value;

use crate::catalogue::Native;

use incus_credentials::redact::operation;
pub use incus_credentials::redact::{network, server, REDACTED};

/// How each item of `native`'s list result is redacted, if it holds credentials.
pub(crate) fn list_item(native: Native) -> Option<fn(&mut Value) -> bool> {
    match native {
        Native::NetworkList => Some(network),
        Native::OperationList => Some(operation),
        _ => None,
    }
}

/// Replaces the credentials in any other result of `native`: its `item`, and the `operation`
/// that mutations, waits, cancels and execs report.
pub(crate) fn object(native: Native, result: &mut Value) {
    let redact_item: Option<fn(&mut Value) -> bool> = match native {
        Native::ServerGet => Some(server),
        Native::NetworkGet => Some(network),
        Native::OperationGet => Some(operation),
        _ => None,
    };
    if let (Some(redact), Some(item)) = (redact_item, result.get_mut("item")) {
        redact(item);
    }
    if let Some(observed) = result.get_mut("operation") {
        operation(observed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_result_that_reports_an_operation_is_redacted() {
        let mut result = json!({"status": "running", "operation": {"metadata": {"secret": "s"}}});
        object(Native::OperationWait, &mut result);
        assert_eq!(result["operation"]["metadata"]["secret"], REDACTED);
        let mut item = json!({"item": {"config": {"loki.auth.password": "p"}}});
        object(Native::ServerGet, &mut item);
        assert_eq!(item["item"]["config"]["loki.auth.password"], REDACTED);
        assert!(list_item(Native::NetworkList).is_some());
        assert!(list_item(Native::InstanceList).is_none());
    }
}
