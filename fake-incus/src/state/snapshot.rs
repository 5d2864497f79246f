//! The read side of the state: an immutable [`Snapshot`] published after every change.
//!
//! Readers clone the current `Arc<Snapshot>` (the only moment they touch a lock) and do all their
//! work on it, so a slow reader never holds up a writer or another reader. Each instance's JSON
//! (its URL, its object, its full object, its state and its ETag) is rendered at most once per
//! change, on first use, and reused by later snapshots for as long as the instance is the same.
//!
//! "The same" is decided by address: instances are shared `Arc`s and every change goes through
//! [`std::sync::Arc::make_mut`], which copies an instance that the previous snapshot still holds.
//! So an instance at the address the previous snapshot knew is unchanged. Its JSON also depends on
//! the profiles (the expanded config and devices, the ETag) and on the projects (which project's
//! profiles apply); when either differs from the previous snapshot, nothing is reused.

use super::{Instance, State};
use crate::line::IncusLine;
use bytes::Bytes;
use http::HeaderValue;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

/// How many whole answers one snapshot keeps (see [`Snapshot::answer`]); past that, answers
/// are built per request, so a client naming ever new keys cannot grow the fake's memory.
pub(crate) const ANSWERS_KEPT: usize = 32;

/// The instance JSON of one instance, rendered on first use (the bytes are exactly what
/// `serde_json::to_vec` writes for the corresponding [`Instance`] method's value).
#[derive(Default)]
pub(crate) struct Rendered {
    url: OnceLock<Bytes>,
    object: OnceLock<Bytes>,
    full: OnceLock<Bytes>,
    state: OnceLock<Bytes>,
    etag: OnceLock<String>,
    /// The whole answer of `GET /1.0/instances/{name}` (see [`InstanceView::get_answer`]).
    get: OnceLock<Prebuilt>,
}

/// The state as it was after one change, with its rendering caches.
pub(crate) struct Snapshot {
    /// The state (instances shared with the live state and with other snapshots).
    pub(crate) state: State,
    /// Counts the changes since start (0 = the state the app was created with).
    pub(crate) generation: u64,
    /// The Incus line whose daemon renders it.
    pub(crate) line: IncusLine,
    /// One entry per `state.instances` entry, same order.
    rendered: Vec<Arc<Rendered>>,
    /// (project, name) -> index in `state.instances`, built on first lookup.
    index: OnceLock<HashMap<(String, String), usize>>,
    /// Whatever else is derived from this snapshot only (see [`Snapshot::derived`]).
    derived: OnceLock<Derived>,
    /// Whole answers under their keys, at most [`ANSWERS_KEPT`] (see [`Snapshot::answer`]).
    answers: RwLock<Vec<(AnswerKey, Prebuilt)>>,
}

/// The key a whole answer is kept under: a few strings (see [`Snapshot::answer`]).
type AnswerKey = Box<[Box<str>]>;

/// A whole answer body (envelope included) and its `ETag` header, sent again as they are.
#[derive(Clone)]
pub(crate) struct Prebuilt {
    /// The body.
    pub(crate) body: Bytes,
    /// The `ETag` header, if the answer has one.
    pub(crate) etag: Option<HeaderValue>,
}

/// Bytes computed once per snapshot by a reader outside `state/` (the server endpoint keeps the
/// pieces of its answer here) and an ETag.
pub(crate) struct Derived {
    /// The pieces, in the reader's own order.
    pub(crate) parts: Vec<Bytes>,
    /// The ETag that goes with them.
    pub(crate) etag: String,
}

/// One instance of a snapshot and its rendered JSON.
pub(crate) struct InstanceView<'a> {
    /// The instance.
    pub(crate) instance: &'a Instance,
    state: &'a State,
    rendered: &'a Rendered,
    line: IncusLine,
}

impl Snapshot {
    /// The first snapshot, as the daemon of `line` renders it: nothing rendered yet.
    pub(crate) fn new(state: State, line: IncusLine) -> Self {
        let rendered = state.instances.iter().map(|_| Arc::default()).collect();
        Self {
            state,
            generation: 0,
            line,
            rendered,
            index: OnceLock::new(),
            derived: OnceLock::new(),
            answers: RwLock::default(),
        }
    }

    /// The snapshot after a change: `state` is the changed state, `self` the snapshot before.
    /// Instances that did not change keep their rendered JSON. Cost: one pointer copy per
    /// instance plus a hash map of the previous addresses when instances moved; no JSON.
    pub(crate) fn next(&self, state: &State) -> Self {
        let state = state.clone();
        let context_kept =
            state.profiles == self.state.profiles && state.projects == self.state.projects;
        let rendered = if context_kept {
            self.carry_over(&state)
        } else {
            state.instances.iter().map(|_| Arc::default()).collect()
        };
        Self {
            state,
            generation: self.generation + 1,
            line: self.line,
            rendered,
            index: OnceLock::new(),
            derived: OnceLock::new(),
            answers: RwLock::default(),
        }
    }

    fn carry_over(&self, state: &State) -> Vec<Arc<Rendered>> {
        let previous = &self.state.instances;
        let mut by_address: Option<HashMap<*const Instance, usize>> = None;
        state
            .instances
            .iter()
            .enumerate()
            .map(|(i, instance)| {
                if previous.get(i).is_some_and(|p| Arc::ptr_eq(p, instance)) {
                    return Arc::clone(&self.rendered[i]);
                }
                let map = by_address.get_or_insert_with(|| {
                    previous
                        .iter()
                        .enumerate()
                        .map(|(j, p)| (Arc::as_ptr(p), j))
                        .collect()
                });
                match map.get(&Arc::as_ptr(instance)) {
                    Some(&j) => Arc::clone(&self.rendered[j]),
                    None => Arc::default(),
                }
            })
            .collect()
    }

    /// The instances of these projects, in state order.
    pub(crate) fn instances_in<'a>(
        &'a self,
        projects: &'a [String],
    ) -> impl Iterator<Item = InstanceView<'a>> + 'a {
        self.state
            .instances
            .iter()
            .zip(&self.rendered)
            .filter(move |(i, _)| projects.contains(&i.project))
            .map(|(instance, rendered)| InstanceView {
                instance,
                state: &self.state,
                rendered,
                line: self.line,
            })
    }

    /// One instance by project and name.
    pub(crate) fn instance(&self, project: &str, name: &str) -> Option<InstanceView<'_>> {
        let index = self.index.get_or_init(|| {
            self.state
                .instances
                .iter()
                .enumerate()
                .map(|(i, instance)| ((instance.project.clone(), instance.name.clone()), i))
                .collect()
        });
        // A lookup key without allocating would need a borrowed-pair key type; two small
        // strings per lookup cost far less than the request around them.
        let &i = index.get(&(project.to_string(), name.to_string()))?;
        Some(InstanceView {
            instance: &self.state.instances[i],
            state: &self.state,
            rendered: &self.rendered[i],
            line: self.line,
        })
    }

    /// The bytes derived from this snapshot alone, made by the first caller that asks for them
    /// (one user: the server endpoint).
    pub(crate) fn derived(&self, make: impl FnOnce(&State) -> Derived) -> &Derived {
        self.derived.get_or_init(|| make(&self.state))
    }

    /// The whole answer kept under `key` for this snapshot, made by `make` when there is none.
    /// At most [`ANSWERS_KEPT`] keys are kept; an answer past them is made every time. The
    /// answer must depend only on this snapshot and the key (its users: the server endpoint,
    /// keyed by user, authentication method and project; the instance list at recursion 0, keyed
    /// by its projects).
    pub(crate) fn answer(&self, key: &[&str], make: impl FnOnce() -> Prebuilt) -> Prebuilt {
        let same = |kept: &[Box<str>]| {
            kept.len() == key.len() && kept.iter().zip(key).all(|(a, b)| **a == **b)
        };
        let answers = self
            .answers
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, found)) = answers.iter().find(|(kept, _)| same(kept)) {
            return found.clone();
        }
        drop(answers);
        let made = make();
        let mut answers = self
            .answers
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if answers.len() < ANSWERS_KEPT && !answers.iter().any(|(kept, _)| same(kept)) {
            let kept = key.iter().map(|part| Box::from(*part)).collect();
            answers.push((kept, made.clone()));
        }
        made
    }

    /// How many answers this snapshot keeps now.
    #[cfg(test)]
    pub(crate) fn answers_kept(&self) -> usize {
        self.answers
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }
}

impl<'a> InstanceView<'a> {
    /// `"<url>"`: the instance's URL as a JSON string (recursion 0).
    pub(crate) fn url_json(&self) -> &'a Bytes {
        let (instance, rendered) = (self.instance, self.rendered);
        rendered
            .url
            .get_or_init(|| to_bytes(&Value::String(instance.url())))
    }

    /// The object of `GET /1.0/instances/{name}` (recursion 1).
    pub(crate) fn object_json(&self) -> &'a Bytes {
        let (instance, state, rendered) = (self.instance, self.state, self.rendered);
        rendered
            .object
            .get_or_init(|| to_bytes(&instance.to_json(state)))
    }

    /// The object with state, snapshots and backups (recursion 2).
    pub(crate) fn full_json(&self) -> &'a Bytes {
        let (instance, state, rendered, line) =
            (self.instance, self.state, self.rendered, self.line);
        rendered
            .full
            .get_or_init(|| to_bytes(&instance.to_full_json(state, line)))
    }

    /// The object of `GET /1.0/instances/{name}/state`.
    pub(crate) fn state_json(&self) -> &'a Bytes {
        let (instance, rendered, line) = (self.instance, self.rendered, self.line);
        rendered
            .state
            .get_or_init(|| to_bytes(&instance.state_json(line)))
    }

    /// The daemon's ETag of the instance.
    pub(crate) fn etag(&self) -> &'a str {
        let (instance, state, rendered) = (self.instance, self.state, self.rendered);
        rendered.etag.get_or_init(|| instance.etag(state))
    }

    /// The whole answer of `GET /1.0/instances/{name}` (recursion 0): `make` builds it from
    /// [`Self::object_json`] and [`Self::etag`] on first use; later requests send the same bytes
    /// and header value again.
    pub(crate) fn get_answer(&self, make: impl FnOnce(&Bytes, &str) -> Prebuilt) -> &'a Prebuilt {
        let rendered = self.rendered;
        rendered
            .get
            .get_or_init(|| make(self.object_json(), self.etag()))
    }

    /// The state the instance belongs to (for values that are not cached).
    pub(crate) fn state(&self) -> &'a State {
        self.state
    }
}

fn to_bytes(value: &Value) -> Bytes {
    Bytes::from(serde_json::to_vec(value).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state_with(names: &[&str]) -> State {
        let mut state = State::default_state();
        for name in names {
            state
                .instances
                .push(Arc::new(Instance::from_image(name, "default", None)));
        }
        state
    }

    fn rendered_ptr(snapshot: &Snapshot, name: &str) -> *const Rendered {
        let view = snapshot.instance("default", name).expect("instance");
        std::ptr::from_ref(view.rendered)
    }

    #[test]
    fn unchanged_instances_keep_their_rendered_json_across_snapshots() {
        let mut state = state_with(&["a", "b", "c"]);
        let first = Snapshot::new(state.clone(), IncusLine::V6_0);
        let before = first
            .instance("default", "b")
            .expect("b")
            .object_json()
            .clone();
        if let Some(a) = state.instance_mut("default", "a") {
            a.description = "changed".into();
        }
        state.instances.retain(|i| i.name != "c");
        let second = first.next(&state);
        assert_eq!(second.generation, 1);
        assert_eq!(rendered_ptr(&first, "b"), rendered_ptr(&second, "b"));
        assert_ne!(rendered_ptr(&first, "a"), rendered_ptr(&second, "a"));
        assert!(second.instance("default", "c").is_none());
        let after = second
            .instance("default", "b")
            .expect("b")
            .object_json()
            .clone();
        assert_eq!(
            before.as_ptr(),
            after.as_ptr(),
            "the bytes are reused, not rebuilt"
        );
        let a = second.instance("default", "a").expect("a");
        assert_eq!(a.object_json(), &to_bytes(&a.instance.to_json(&state)));
    }

    #[test]
    fn a_moved_instance_keeps_its_rendered_json() {
        let mut state = state_with(&["a", "b"]);
        let first = Snapshot::new(state.clone(), IncusLine::V6_0);
        let b = rendered_ptr(&first, "b");
        state.instances.swap(0, 1);
        assert_eq!(rendered_ptr(&first.next(&state), "b"), b);
    }

    #[test]
    fn a_profile_change_renders_every_instance_again() {
        let mut state = state_with(&["a"]);
        let first = Snapshot::new(state.clone(), IncusLine::V6_0);
        let old = first
            .instance("default", "a")
            .expect("a")
            .object_json()
            .clone();
        state.profiles[0]
            .config
            .insert("limits.cpu".into(), "2".into());
        let second = first.next(&state);
        let view = second.instance("default", "a").expect("a");
        assert_ne!(view.object_json(), &old);
        assert!(String::from_utf8_lossy(view.object_json()).contains("limits.cpu"));
    }

    #[test]
    fn rendered_bytes_are_what_serde_writes_for_each_form() {
        let mut state = state_with(&["a"]);
        if let Some(a) = state.instance_mut("default", "a") {
            a.power_on();
            a.snapshots.push(a.take_snapshot("s0", false, None));
        }
        let snapshot = Snapshot::new(state.clone(), IncusLine::V6_0);
        let view = snapshot.instance("default", "a").expect("a");
        let instance = state.instance("default", "a").expect("a");
        assert_eq!(view.url_json(), &to_bytes(&Value::String(instance.url())));
        assert_eq!(
            view.full_json(),
            &to_bytes(&instance.to_full_json(&state, IncusLine::V6_0))
        );
        assert_eq!(
            view.state_json(),
            &to_bytes(&instance.state_json(IncusLine::V6_0))
        );
        assert_eq!(view.etag(), instance.etag(&state));
    }
}
