//! The live state behind its one lock, and the snapshot readers take: the ground floor every
//! writer (a handler, an operation's work) and every reader goes through.
//!
//! Writers hold the lock briefly (never across an `.await`); a change made through the guard is
//! published as a new [`Snapshot`] when the guard is dropped, before the lock is released.
//! Readers take the last published snapshot without waiting for any writer.

use super::{Snapshot, State};
use crate::line::IncusLine;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

/// The live state and its last published snapshot.
pub(crate) struct StateStore {
    state: Mutex<State>,
    snapshot: RwLock<Arc<Snapshot>>,
}

impl StateStore {
    /// A store holding `state`, published as the daemon of `line` shows it.
    pub(crate) fn new(state: State, line: IncusLine) -> Self {
        Self {
            snapshot: RwLock::new(Arc::new(Snapshot::new(state.clone(), line))),
            state: Mutex::new(state),
        }
    }

    /// The live state, locked, for a change (or a read that must see the live state). Never
    /// hold it across an `.await`.
    pub(crate) fn lock(&self) -> StateGuard<'_> {
        StateGuard {
            state: self
                .state
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
            snapshot: &self.snapshot,
            changed: false,
        }
    }

    /// The state as of the last change, for reading without locks.
    pub(crate) fn snapshot(&self) -> Arc<Snapshot> {
        Arc::clone(
            &self
                .snapshot
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

/// The live state, locked; mutable access marks it changed, and dropping a changed guard
/// publishes the next [`Snapshot`].
pub(crate) struct StateGuard<'a> {
    state: MutexGuard<'a, State>,
    snapshot: &'a RwLock<Arc<Snapshot>>,
    changed: bool,
}

impl std::ops::Deref for StateGuard<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        &self.state
    }
}

impl std::ops::DerefMut for StateGuard<'_> {
    fn deref_mut(&mut self) -> &mut State {
        self.changed = true;
        &mut self.state
    }
}

impl Drop for StateGuard<'_> {
    fn drop(&mut self) {
        if !self.changed {
            return;
        }
        let previous = Arc::clone(
            &self
                .snapshot
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        let next = Arc::new(previous.next(&self.state));
        let replaced = std::mem::replace(
            &mut *self
                .snapshot
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
            next,
        );
        // The old snapshot (and the JSON only it holds) is freed here, outside the read lock.
        drop((previous, replaced));
    }
}
