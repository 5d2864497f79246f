//! The host a trial needs, as data: what each callback of the host answers, and the bounds of the
//! connection it binds calls to. The same data scripts a Rust host in-process ([`ScriptedHost`])
//! and travels over the wire to an implementation under test (`incus-operations-adapter/1`, see
//! `conformance/adapter-protocol/`).

use crate::runner::EXPECTED_PANIC;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use incus_operations::{
    Binding, BindingContext, Connection, Endpoint, Host, HostError, ImageRemote, RestrictedItem,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// What one host callback does when it is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// Allows: binding returns the trial's backend, authorize allows, image_remote looks the
    /// name up in the host's remotes, allow_restricted returns true.
    Allow,
    /// Refuses (a denial the host explains; `false` for allow_restricted).
    Deny,
    /// Fails (the host could not decide: its policy store is down).
    Fail,
    /// Crashes: the callback raises, panics or throws instead of returning.
    Crash,
    /// Never returns.
    Hang,
}

/// The host's `binding` callback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BindingBehaviour {
    /// What it does.
    pub answer: Answer,
    /// The project operations run in when the input names none (`default` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

impl Default for BindingBehaviour {
    fn default() -> Self {
        Self {
            answer: Answer::Allow,
            project: None,
        }
    }
}

/// A callback that only allows or not (`authorize`, `image_remote`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallbackBehaviour {
    /// What it does.
    pub answer: Answer,
}

impl Default for CallbackBehaviour {
    fn default() -> Self {
        Self {
            answer: Answer::Allow,
        }
    }
}

/// The host's `allow_restricted` callback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestrictedBehaviour {
    /// What it does (`deny` by default).
    pub answer: Answer,
    /// With `allow`: allow only when every restricted item matches one of these objects (an
    /// entry matches an item when each of its fields equals the item's field of that name; see
    /// [`restricted_item`] for an item's fields). Absent: `allow` allows every item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only: Option<Vec<Value>>,
}

impl Default for RestrictedBehaviour {
    fn default() -> Self {
        Self {
            answer: Answer::Deny,
            only: None,
        }
    }
}

/// An image server the host approves, by remote name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteSpec {
    /// The server URL.
    pub server: String,
    /// `simplestreams` or `incus`.
    pub protocol: String,
}

/// Everything a trial's host does, as data. The default is the reference host: binds every call
/// to the trial's backend in project `default`, authorizes everything, knows no image remote and
/// refuses restricted input.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostBehaviour {
    /// The `binding` callback.
    #[serde(default)]
    pub binding: BindingBehaviour,
    /// The `authorize` callback.
    #[serde(default)]
    pub authorize: CallbackBehaviour,
    /// The `image_remote` callback; with `allow` it answers from `image_remotes`.
    #[serde(default)]
    pub image_remote: CallbackBehaviour,
    /// The image remotes that exist, by name.
    #[serde(default)]
    pub image_remotes: BTreeMap<String, RemoteSpec>,
    /// The `allow_restricted` callback.
    #[serde(default)]
    pub allow_restricted: RestrictedBehaviour,
    /// The bound the implementation puts on each host callback, in milliseconds (its own
    /// default when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_timeout_ms: Option<u64>,
}

/// The bounds of the connection to Incus; an absent bound is the implementation's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionLimits {
    /// The bound on every native request, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The bound on an exec session, kill grace included, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_timeout_ms: Option<u64>,
    /// The bound on streamed bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_stream_bytes: Option<u64>,
}

impl ConnectionLimits {
    /// A connection to `endpoint` with these bounds (the core's defaults for absent ones).
    pub fn connection(&self, endpoint: Endpoint) -> Result<Connection, String> {
        let mut builder = Connection::builder(endpoint);
        if let Some(ms) = self.timeout_ms {
            builder = builder.timeout(Duration::from_millis(ms));
        }
        if let Some(ms) = self.stream_timeout_ms {
            builder = builder.stream_timeout(Duration::from_millis(ms));
        }
        if let Some(bytes) = self.max_stream_bytes {
            builder = builder.max_stream_bytes(bytes);
        }
        builder
            .build()
            .map_err(|e| format!("invalid connection: {e}"))
    }
}

/// A restricted item as the wire carries it: a JSON object that may gain fields, never lose
/// them. `{"kind": "config_key", "key": K, "value": V}` or
/// `{"kind": "device", "name": N, "type": T, "config": {...}}` (the device's whole config).
pub fn restricted_item(item: &RestrictedItem) -> Value {
    match item {
        RestrictedItem::ConfigKey { key, value, .. } => {
            json!({"kind": "config_key", "key": key, "value": value})
        }
        RestrictedItem::Device { name, config, .. } => json!({
            "kind": "device",
            "name": name,
            "type": item.device_type().unwrap_or_default(),
            "config": config,
        }),
        other => json!({"kind": "other", "debug": format!("{other:?}")}),
    }
}

/// Whether `entry` (of [`RestrictedBehaviour::only`]) matches `item` (a [`restricted_item`]).
fn matches(entry: &Value, item: &Value) -> bool {
    entry
        .as_object()
        .is_some_and(|fields| fields.iter().all(|(k, v)| item.get(k) == Some(v)))
}

/// What the callbacks of a [`ScriptedHost`] saw, in order.
#[derive(Debug, Default)]
pub struct HostLog {
    /// The callbacks, by name, in the order they ran.
    pub calls: Vec<&'static str>,
    /// The input `authorize` was last given.
    pub authorized_input: Option<Value>,
}

/// A Rust host that follows a [`HostBehaviour`], bound to one connection, and logs its callbacks.
/// The in-process suites script it; the reference adapter answers every wire request with it.
pub struct ScriptedHost {
    connection: Connection,
    behaviour: HostBehaviour,
    log: Arc<Mutex<HostLog>>,
}

/// The text of a scripted crash (the runner keeps quiet about it).
pub(crate) fn crash_message(callback: &str) -> String {
    format!("host callback {callback} {EXPECTED_PANIC}")
}

async fn act(callback: &'static str, answer: Answer) -> Result<(), HostError> {
    match answer {
        Answer::Allow => Ok(()),
        Answer::Deny => Err(HostError::Denied("scripted refusal".into())),
        Answer::Fail => Err(HostError::Failed("scripted failure".into())),
        Answer::Crash => panic!("{}", crash_message(callback)),
        Answer::Hang => std::future::pending().await,
    }
}

impl ScriptedHost {
    /// A host bound to `connection` that behaves as `behaviour` and logs into `log`.
    pub fn new(connection: Connection, behaviour: HostBehaviour, log: Arc<Mutex<HostLog>>) -> Self {
        Self {
            connection,
            behaviour,
            log,
        }
    }

    fn record(&self, call: &'static str) {
        self.log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .calls
            .push(call);
    }
}

impl Host for ScriptedHost {
    type Caller = ();

    async fn binding(&self, _caller: &(), _operation: &str) -> Result<Binding, HostError> {
        self.record("binding");
        act("binding", self.behaviour.binding.answer).await?;
        let mut context = BindingContext::default();
        if let Some(project) = &self.behaviour.binding.project {
            context = context.default_project(project.clone());
        }
        Ok(Binding::connection(self.connection.clone(), context))
    }

    async fn authorize(
        &self,
        _caller: &(),
        _operation: &str,
        input: &Value,
    ) -> Result<(), HostError> {
        self.log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .authorized_input = Some(input.clone());
        self.record("authorize");
        act("authorize", self.behaviour.authorize.answer).await
    }

    async fn image_remote(&self, _caller: &(), name: &str) -> Result<ImageRemote, HostError> {
        self.record("image_remote");
        act("image_remote", self.behaviour.image_remote.answer).await?;
        self.behaviour
            .image_remotes
            .get(name)
            .map(|r| ImageRemote::new(r.server.clone(), r.protocol.clone()))
            .ok_or_else(|| HostError::UnknownRemote(name.to_owned()))
    }

    async fn allow_restricted(
        &self,
        _caller: &(),
        _operation: &str,
        items: &[RestrictedItem],
    ) -> bool {
        self.record("allow_restricted");
        let behaviour = &self.behaviour.allow_restricted;
        if act("allow_restricted", behaviour.answer).await.is_err() {
            return false;
        }
        match &behaviour.only {
            None => true,
            Some(only) => items
                .iter()
                .map(restricted_item)
                .all(|item| only.iter().any(|entry| matches(entry, &item))),
        }
    }
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (the host a trial needs, as data); a promise
    //! of the harness seen from outside (its command line, certification, the wire) goes in
    //! `tests/harness`.

    use super::*;

    #[test]
    fn the_default_behaviour_is_the_reference_host_on_the_wire() {
        let wire = serde_json::to_value(HostBehaviour::default()).unwrap();
        assert_eq!(
            wire,
            json!({"binding": {"answer": "allow"}, "authorize": {"answer": "allow"},
                   "image_remote": {"answer": "allow"}, "image_remotes": {},
                   "allow_restricted": {"answer": "deny"}})
        );
        let back: HostBehaviour = serde_json::from_value(json!({})).unwrap();
        assert_eq!(back, HostBehaviour::default());
    }

    #[test]
    fn an_only_entry_matches_the_items_whose_fields_it_names() {
        let item = restricted_item(&RestrictedItem::config_key("raw.lxc", json!("x")));
        assert!(matches(&json!({"kind": "config_key"}), &item));
        assert!(matches(&json!({"key": "raw.lxc"}), &item));
        assert!(matches(&json!({"key": "raw.lxc", "value": "x"}), &item));
        assert!(!matches(&json!({"key": "raw.lxc", "value": "y"}), &item));
        assert!(!matches(&json!({"key": "raw.idmap"}), &item));
        assert!(!matches(&json!("raw.lxc"), &item));
        // A host can allow one exact host path: the device's whole config is on the wire.
        let disk = json!({"type": "disk", "source": "/srv/data", "path": "/data"});
        let item = restricted_item(&RestrictedItem::device("data", disk.clone()));
        assert!(matches(
            &json!({"kind": "device", "type": "disk", "config": disk}),
            &item
        ));
        let other = json!({"type": "disk", "source": "/etc", "path": "/data"});
        assert!(!matches(&json!({"config": other}), &item));
    }
}
