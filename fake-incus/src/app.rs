//! The application, the composition root: it makes the fake's parts and wires them (the state
//! store, operations, exec sessions, journal, fault rules, identity, settings, the files, the
//! state directory's committer), and keeps what takes more than one of them: a reset, a capture
//! of the whole state, the named snapshots, persistence. Every listener shares one.

use crate::exec::{Exec, ExecLogs};
use crate::faults::Faults;
use crate::journal::Journal;
use crate::operations::Operations;
use crate::persist::{Durability, Store};
use crate::state::files::Files;
use crate::state::store::{StateGuard, StateStore};
use crate::state::stored::{Stored, Versioned};
use crate::state::{Snapshot, State};
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long an exec over websockets waits, by default, between its last websocket attaching and
/// the command starting: the low end of the real daemon's 25-50 ms, so that the first output never
/// shares a read with the upgrade answer and clients that set up their readers after the upgrade
/// (pylxd with ws4py) see all of it, as against the daemon. See
/// `FakeIncusBuilder::exec_start_delay`.
pub const DEFAULT_EXEC_START_DELAY: std::time::Duration = std::time::Duration::from_millis(25);

/// Tunables fixed at start.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// How long a final operation stays visible.
    pub(crate) retention: Duration,
    /// How long exec waits for its websockets.
    pub(crate) exec_connect_timeout: Duration,
    /// How long exec waits, once its websockets are attached, before the command starts.
    pub(crate) exec_start_delay: Duration,
    /// `host:port` of the HTTPS listener, if any (for `GET /1.0`).
    pub(crate) https_address: Option<String>,
    /// How many journal entries are kept (0: none).
    pub(crate) journal_limit: usize,
    /// How long a connection may take to send a request head once its first byte arrived.
    pub(crate) header_read_timeout: Duration,
    /// How long a connection may stay open with no request in flight and nothing sent.
    pub(crate) idle_timeout: Duration,
    /// The Incus line the fake answers as.
    pub(crate) line: crate::line::IncusLine,
}

impl Settings {
    /// Whether the Incus line the fake answers as has this API extension: how every behaviour
    /// that differs between lines is chosen (as Incus's clients do, by `HasExtension`).
    pub(crate) fn has_extension(&self, name: &str) -> bool {
        self.line.has_extension(name)
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            retention: Duration::from_secs(5),
            exec_connect_timeout: Duration::from_secs(5),
            exec_start_delay: DEFAULT_EXEC_START_DELAY,
            https_address: None,
            journal_limit: crate::journal::DEFAULT_LIMIT,
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
            line: crate::line::IncusLine::DEFAULT,
        }
    }
}

/// The server's identity and the trusted client certificates.
#[derive(Debug, Default)]
pub(crate) struct Identity {
    pub(crate) server_cert_pem: String,
    pub(crate) server_fingerprint: String,
    pub(crate) trusted: Mutex<BTreeSet<String>>,
    /// The validity period of each trusted certificate that has one on record.
    pub(crate) validity: Mutex<std::collections::BTreeMap<String, crate::tls::Validity>>,
    /// The client certificates (DER) HTTPS peers presented lately, by fingerprint: what a trust
    /// token's redemption stores as the certificate (at most [`PRESENTED_KEPT`]).
    pub(crate) presented: Mutex<std::collections::VecDeque<(String, Vec<u8>)>>,
}

/// How many presented client certificates [`Identity::presented`] keeps.
const PRESENTED_KEPT: usize = 64;

impl Identity {
    /// Records the certificate an HTTPS peer presented (the oldest is forgotten past
    /// [`PRESENTED_KEPT`]).
    pub(crate) fn presented(&self, fingerprint: &str, der: &[u8]) {
        let mut presented = self
            .presented
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        presented.retain(|(fp, _)| fp != fingerprint);
        presented.push_back((fingerprint.to_owned(), der.to_vec()));
        while presented.len() > PRESENTED_KEPT {
            presented.pop_front();
        }
    }
    /// The certificate (DER) a peer with this fingerprint presented, if it is still kept.
    pub(crate) fn presented_certificate(&self, fingerprint: &str) -> Option<Vec<u8>> {
        self.presented
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .find(|(fp, _)| fp == fingerprint)
            .map(|(_, der)| der.clone())
    }
    /// Whether the certificate with this fingerprint is trusted now: in the trust store and
    /// inside its validity period.
    pub(crate) fn is_trusted(&self, fingerprint: &str) -> bool {
        let known = self
            .trusted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(fingerprint);
        known
            && self
                .validity
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(fingerprint)
                .is_none_or(crate::tls::Validity::contains_now)
    }

    /// Trusts a certificate (PEM) and records its validity period; returns its fingerprint.
    pub(crate) fn trust_pem(&self, pem: &str) -> Result<String, crate::tls::TlsError> {
        let fingerprint = crate::tls::fingerprint_pem(pem)?;
        let validity = crate::tls::validity_pem(pem)?;
        self.validity
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(fingerprint.clone(), validity);
        self.trusted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(fingerprint.clone());
        Ok(fingerprint)
    }
}

/// Everything a request handler can reach.
pub(crate) struct App {
    /// The live state and its snapshots.
    store: Arc<StateStore>,
    /// The start state (resources and files), what a reset returns to.
    initial: Stored,
    /// Operations: their registry, events, work and expiry.
    pub(crate) operations: Arc<Operations>,
    /// Exec sessions and recorded exec output.
    pub(crate) exec: Arc<Exec>,
    pub(crate) journal: Journal,
    /// The instances' file trees (beside the state, in its dump; cleared by a reset).
    files: Arc<Mutex<Files>>,
    /// The named snapshots of the whole state (control `POST /snapshots/NAME`).
    saved: Mutex<std::collections::BTreeMap<String, Saved>>,
    /// The committer of `--state-dir`, when the state is kept on disk.
    persist: std::sync::OnceLock<Arc<Durability>>,
    pub(crate) faults: Faults,
    pub(crate) identity: Identity,
    pub(crate) settings: Settings,
    pub(crate) shutdown: CancellationToken,
    /// The cluster this app simulates, set once at start (unset: a standalone daemon).
    pub(crate) cluster: std::sync::OnceLock<Arc<crate::cluster::Cluster>>,
}

impl App {
    /// The tests' constructor; the fake starts through [`App::start`].
    #[cfg(test)]
    pub(crate) fn new(state: State, identity: Identity, settings: Settings) -> Arc<Self> {
        Self::start(
            Stored {
                state,
                ..Stored::default()
            },
            identity,
            settings,
        )
    }

    /// [`App::new`] with files as well: `stored` is the start state a reset returns to.
    pub(crate) fn start(stored: Stored, identity: Identity, settings: Settings) -> Arc<Self> {
        let Stored { state, files, .. } = stored;
        let shutdown = CancellationToken::new();
        let journal = Journal::new(settings.journal_limit);
        let store = Arc::new(StateStore::new(state.clone(), settings.line));
        let operations = Operations::new(
            Arc::clone(&store),
            settings.retention,
            shutdown.clone(),
            settings.line,
        );
        let exec = Exec::new(
            Arc::clone(&operations),
            journal.clone(),
            settings.exec_connect_timeout,
            settings.exec_start_delay,
        );
        let app = Arc::new(Self {
            initial: Stored {
                state: state.clone(),
                files: files.clone(),
                operations: Vec::new(),
                incus_version: None,
            },
            store,
            operations,
            exec,
            journal,
            files: Arc::new(Mutex::new(files)),
            saved: Mutex::default(),
            persist: std::sync::OnceLock::new(),
            faults: Faults::default(),
            identity,
            settings,
            shutdown,
            cluster: std::sync::OnceLock::new(),
        });
        app.trust_store(&app.initial.state);
        app
    }

    /// Whether the Incus line the fake answers as has this API extension (see
    /// [`Settings::has_extension`]).
    pub(crate) fn has_extension(&self, name: &str) -> bool {
        self.settings.has_extension(name)
    }

    /// The cluster, when the fake simulates one.
    pub(crate) fn cluster(&self) -> Option<&Arc<crate::cluster::Cluster>> {
        self.cluster.get()
    }

    /// The live state, locked, for a change (or a read that must see the live state). Never
    /// hold it across an `.await`. A change made through the guard is published as a new
    /// snapshot when the guard is dropped, before the lock is released.
    pub(crate) fn state(&self) -> StateGuard<'_> {
        self.store.lock()
    }

    /// The state as of the last change, for reading without locks: no writer or reader waits
    /// for what is done with it.
    pub(crate) fn snapshot(&self) -> Arc<Snapshot> {
        self.store.snapshot()
    }

    /// The recorded exec output, locked. Never hold it across an `.await`.
    pub(crate) fn exec_logs(&self) -> MutexGuard<'_, ExecLogs> {
        self.exec.logs()
    }

    /// The instances' file trees, locked. Never hold it across an `.await`, and never take the
    /// state lock while holding it (it is taken inside the state lock by operations). Mutable
    /// access counts as a change (see [`App::mark`]).
    pub(crate) fn files(&self) -> FilesGuard<'_> {
        FilesGuard(
            self.files
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// One instance's files as exec reaches them.
    pub(crate) fn instance_fs(
        &self,
        project: &str,
        instance: &str,
    ) -> crate::state::files::InstanceFs {
        crate::state::files::InstanceFs::new(Arc::clone(&self.files), project, instance)
    }

    /// Back to the state the fake started with; operations (and the task-mode commands they
    /// run), recorded exec output and journal are cleared.
    pub(crate) fn reset(&self) {
        self.return_to(self.initial.clone());
    }

    /// [`App::reset`] to `stored` instead of the start state.
    fn return_to(&self, stored: Stored) {
        self.load(stored);
        self.operations.ops().list.clear();
        self.exec_logs().clear();
        self.exec.clear_sessions();
        self.journal.clear();
    }

    /// Replaces the state and the files (control socket `PUT /state`, a start from
    /// `--state-dir`); the operations of `stored` are not loaded.
    pub(crate) fn load(&self, stored: Stored) {
        let mut state = self.state();
        *state = stored.state;
        self.trust_store(&state);
        self.files().replace(stored.files);
    }

    /// Trusts the certificates of the trust store `state` holds (`/1.0/certificates`), as the
    /// daemon trusts the certificates in its database again after a restart.
    fn trust_store(&self, state: &State) {
        let stored = state.objects.get("certificate").into_iter().flatten();
        for pem in stored.filter_map(|o| o.value["certificate"].as_str()) {
            if let Err(error) = self.identity.trust_pem(pem) {
                tracing::warn!(%error, "a certificate of the trust store could not be trusted");
            }
        }
    }

    /// How many changes the state and the files have seen: it only grows, and a change is
    /// counted before its lock is released.
    pub(crate) fn mark(&self) -> u64 {
        let files = self.files().version();
        self.snapshot().generation + files
    }

    /// The whole state, taken at one moment (under the state lock, then the files' and the
    /// operations'), with its mark.
    pub(crate) fn capture(&self) -> (u64, Stored) {
        let state = self.state();
        let generation = self.snapshot().generation;
        let files = self.files().clone();
        let operations = self
            .operations
            .ops()
            .list
            .iter()
            .map(|op| op.to_json())
            .collect();
        let stored = Stored {
            state: State::clone(&state),
            files,
            operations,
            incus_version: Some(self.settings.line.server_version().to_string()),
        };
        drop(state);
        (generation + stored.files.version(), stored)
    }

    /// The state format of the whole state (`GET /state`).
    pub(crate) fn dump(&self) -> Value {
        self.capture().1.to_json()
    }

    /// Keeps the state in `dir` from now on: loads what the directory holds (when it holds a
    /// state) and starts the committer. Called once, before the listeners serve.
    pub(crate) fn persist_in(self: &Arc<Self>, dir: &std::path::Path) -> Result<(), PersistError> {
        let io = |error: std::io::Error| PersistError::Io {
            path: dir.to_path_buf(),
            error,
        };
        let began = std::time::Instant::now();
        let (store, existing) = Store::open(dir).map_err(io)?;
        let loaded = existing.is_some();
        if let Some(bytes) = existing {
            let stored = Stored::from_slice(&bytes, Versioned::Required).map_err(|e| {
                PersistError::Format {
                    path: dir.join(crate::persist::FILE),
                    problem: e.to_string(),
                }
            })?;
            tracing::info!(
                instances = stored.state.instances.len(),
                bytes = bytes.len(),
                elapsed_us = began.elapsed().as_micros() as u64,
                "state loaded"
            );
            self.load(stored);
        }
        let mark = self.mark();
        if !loaded {
            // The directory holds a state from the start, so that a fake killed before its
            // first change restarts from its seed.
            store.write(&self.capture().1.to_vec()).map_err(io)?;
        }
        let read = Arc::downgrade(self);
        let take = Arc::downgrade(self);
        let durability = Durability::start(
            store,
            mark,
            Box::new(move || read.upgrade().map_or(0, |app| app.mark())),
            Box::new(move || {
                let (mark, stored) = take.upgrade()?.capture();
                Some((mark, stored.to_vec()))
            }),
        )
        .map_err(io)?;
        let _ = self.persist.set(durability);
        let app = Arc::downgrade(self);
        self.exec.report_when_durable(Arc::new(move || {
            let app = app.upgrade();
            Box::pin(async move {
                match app {
                    Some(app) => app.durable().await,
                    None => Ok(()),
                }
            })
        }));
        Ok(())
    }

    /// Waits until every change made so far is on disk (at once without `--state-dir`). An
    /// answer that reports or depends on a change is sent only after this.
    pub(crate) async fn durable(&self) -> Result<(), String> {
        match self.persist.get() {
            Some(durability) => durability.wait(self.mark()).await,
            None => Ok(()),
        }
    }

    /// Writes the state one last time (the fake is stopping).
    pub(crate) fn persist_final(&self) {
        if let Some(durability) = self.persist.get() {
            durability.finish(|| {
                let (mark, stored) = self.capture();
                Some((mark, stored.to_vec()))
            });
        }
    }

    /// Saves the whole state (resources and files; shared copy-on-write, so this costs a few
    /// pointer copies per instance) under `name`, replacing a snapshot of that name.
    pub(crate) fn save_snapshot(&self, name: &str) -> Result<(), SnapshotError> {
        check_snapshot_name(name)?;
        let (_, stored) = self.capture();
        let saved = Saved {
            instances: stored.state.instances.len(),
            stored,
        };
        self.saved().insert(name.to_string(), saved);
        Ok(())
    }

    /// Returns to a named snapshot, as [`App::reset`] returns to the start state.
    pub(crate) fn restore_snapshot(&self, name: &str) -> Result<(), SnapshotError> {
        let saved = self
            .saved()
            .get(name)
            .map(|s| s.stored.clone())
            .ok_or_else(|| SnapshotError::NotFound(name.to_string()))?;
        self.return_to(saved);
        Ok(())
    }

    /// Forgets a named snapshot.
    pub(crate) fn delete_snapshot(&self, name: &str) -> Result<(), SnapshotError> {
        self.saved()
            .remove(name)
            .map(|_| ())
            .ok_or_else(|| SnapshotError::NotFound(name.to_string()))
    }

    /// The named snapshots: name and how many instances each holds, by name.
    pub(crate) fn snapshots(&self) -> Vec<(String, usize)> {
        self.saved()
            .iter()
            .map(|(name, saved)| (name.clone(), saved.instances))
            .collect()
    }

    fn saved(&self) -> MutexGuard<'_, std::collections::BTreeMap<String, Saved>> {
        self.saved
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A named snapshot of the whole state.
#[derive(Debug)]
struct Saved {
    stored: Stored,
    instances: usize,
}

/// Why a named snapshot could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// No snapshot has this name.
    #[error("no snapshot named {0:?}")]
    NotFound(String),
    /// The name is empty, too long or holds something other than letters, digits, `-`, `_`, `.`.
    #[error("invalid snapshot name {0:?} (1-64 letters, digits, '-', '_' or '.')")]
    BadName(String),
}

fn check_snapshot_name(name: &str) -> Result<(), SnapshotError> {
    let good = (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if good {
        Ok(())
    } else {
        Err(SnapshotError::BadName(name.to_string()))
    }
}

/// Why `--state-dir` could not be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PersistError {
    /// The directory or its file could not be read or written.
    #[error("{}: {error}", path.display())]
    Io {
        path: std::path::PathBuf,
        error: std::io::Error,
    },
    /// The file is not a state this fake reads.
    #[error("{}: {problem}", path.display())]
    Format {
        path: std::path::PathBuf,
        problem: String,
    },
}

/// The files, locked; mutable access counts a change.
pub(crate) struct FilesGuard<'a>(MutexGuard<'a, Files>);

impl std::ops::Deref for FilesGuard<'_> {
    type Target = Files;
    fn deref(&self) -> &Files {
        &self.0
    }
}

impl std::ops::DerefMut for FilesGuard<'_> {
    fn deref_mut(&mut self) -> &mut Files {
        self.0.touch();
        &mut self.0
    }
}
