//! Operation faults: how the operation a request creates behaves (its length, failure, whether
//! it can be cancelled). They apply to task operations and to exec operations alike.

use super::{millis, Fault};
use crate::envelope::ApiError;
use std::time::Duration;
use tokio::sync::Notify;

/// A fault on the operation the request creates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OperationFault {
    /// The work runs after this long (0: at once).
    Duration(Duration),
    /// The operation fails with this `err`; its work does not run.
    Fail(String),
    /// The operation stays `Running`.
    NeverFinish,
    /// `may_cancel: false` (the default anyway).
    NotCancellable,
    /// `may_cancel: true`, and it never finishes on its own.
    Cancellable,
    /// The work runs once a wait request for the operation is in flight.
    FinishDuringWait,
}

impl OperationFault {
    pub(super) fn from_fault(fault: &Fault) -> Option<Self> {
        Some(match fault {
            Fault::OperationDuration { ms } => Self::Duration(millis(*ms)),
            Fault::OperationFail { message } => Self::Fail(message.clone()),
            Fault::OperationNeverFinish => Self::NeverFinish,
            Fault::OperationNotCancellable => Self::NotCancellable,
            Fault::OperationCancellable => Self::Cancellable,
            Fault::OperationFinishDuringWait => Self::FinishDuringWait,
            _ => return None,
        })
    }

    /// Whether the operation reports `may_cancel: true`.
    pub(crate) fn may_cancel(&self) -> bool {
        matches!(self, Self::Cancellable)
    }

    /// The error the operation fails with instead of running its work.
    pub(crate) fn failure(&self) -> Option<ApiError> {
        match self {
            Self::Fail(message) => Some(ApiError::internal(message.clone())),
            _ => None,
        }
    }
}

/// Waits until the operation's work may run: `default` when no fault shapes it (zero: yield
/// once), the fault's length, forever, or until a wait request is in flight.
pub(crate) async fn pace(fault: Option<&OperationFault>, default: Duration, wait_started: &Notify) {
    match fault {
        Some(OperationFault::Duration(length)) => tokio::time::sleep(*length).await,
        Some(OperationFault::NeverFinish | OperationFault::Cancellable) => {
            std::future::pending().await
        }
        Some(OperationFault::FinishDuringWait) => {
            wait_started.notified().await;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        _ if default.is_zero() => tokio::task::yield_now().await,
        _ => tokio::time::sleep(default).await,
    }
}

/// Whether requests with this method can create an operation (`None`: any method). Reads
/// (`GET`, `HEAD`) and the synchronous `PATCH` never do.
pub(super) fn may_create(method: Option<&str>) -> bool {
    method.is_none_or(|m| matches!(m, "POST" | "PUT" | "DELETE"))
}
