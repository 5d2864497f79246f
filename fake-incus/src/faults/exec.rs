//! Exec faults: what the command and the websockets of an exec session do.

use super::{millis, Fault, RuleError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const SIGKILL: i32 = 9;
/// The fds an exec session has.
const FDS: [&str; 4] = ["0", "1", "2", "control"];

/// How the command treats SIGKILL.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum KillPolicy {
    #[default]
    Obey,
    IgnoreFirst,
    IgnoreAll,
}

/// The exec faults of one request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ExecFaults {
    kill: KillPolicy,
    exit_after: Option<Duration>,
    drop_fd: Option<String>,
}

impl ExecFaults {
    pub(super) fn add(&mut self, fault: &Fault) -> Result<(), RuleError> {
        match fault {
            Fault::ExecIgnoreSigkill => self.kill = KillPolicy::IgnoreAll,
            Fault::ExecIgnoreFirstSigkill => self.kill = KillPolicy::IgnoreFirst,
            Fault::ExecExitAfter { ms } => self.exit_after = Some(millis(*ms)),
            Fault::ExecDropWebsocket { fd } => {
                if !FDS.contains(&fd.as_str()) {
                    return Err(RuleError::BadField {
                        kind: fault.kind(),
                        problem: format!("unknown fd {fd:?} (one of 0, 1, 2, control)"),
                    });
                }
                self.drop_fd = Some(fd.clone());
            }
            _ => {}
        }
        Ok(())
    }

    /// A fresh SIGKILL filter for one session.
    pub(crate) fn kill_filter(&self) -> KillFilter {
        KillFilter {
            ignore_all: self.kill == KillPolicy::IgnoreAll,
            ignore_next: AtomicBool::new(self.kill == KillPolicy::IgnoreFirst),
        }
    }

    /// Whether the websocket of `fd` is dropped right after it connects.
    pub(crate) fn drops(&self, fd: &str) -> bool {
        self.drop_fd.as_deref() == Some(fd)
    }

    /// Waits between the command's exit and the operation's end.
    pub(crate) async fn after_exit(&self) {
        if let Some(delay) = self.exit_after {
            tokio::time::sleep(delay).await;
        }
    }
}

/// Decides which signals reach the command (the "ignore SIGKILL" faults).
#[derive(Debug)]
pub(crate) struct KillFilter {
    ignore_all: bool,
    /// Set until the first SIGKILL has been ignored.
    ignore_next: AtomicBool,
}

impl KillFilter {
    /// Whether `signal` reaches the command.
    pub(crate) fn lets_through(&self, signal: i32) -> bool {
        if signal != SIGKILL {
            return true;
        }
        let ignored = self.ignore_all || self.ignore_next.swap(false, Ordering::SeqCst);
        if ignored {
            tracing::debug!("exec: SIGKILL ignored by fault");
        }
        !ignored
    }
}

/// Two exec faults that decide the same thing.
pub(super) fn conflicting(a: &str, b: &str) -> bool {
    let kill = ["exec_ignore_sigkill", "exec_ignore_first_sigkill"];
    kill.contains(&a) && kill.contains(&b)
}

/// Whether a rule for this method and path pattern can match `POST /1.0/instances/{n}/exec`.
pub(super) fn may_create(method: Option<&str>, pattern: &str) -> bool {
    let last = pattern.rsplit('/').next().unwrap_or_default();
    method.is_none_or(|m| m == "POST") && (last == "exec" || last.contains('*'))
}
