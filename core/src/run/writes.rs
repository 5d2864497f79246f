//! What create, update, restore and state changes may write, beyond the operation's own scope.
//! These are the safety rules of `SECURITY.md`; several go beyond the specification's letter, where
//! it would let an agent do what its grant does not allow.
//!
//! Before any backend request (step 5 of `run`, with the restricted-input rule):
//! - a create or an update that sets `ephemeral: true` needs `incus.delete`: Incus deletes an
//!   ephemeral instance, with its snapshots, when it stops (a guest's own power-off included);
//! - every config key and device of the input is judged by name and value ([`restricted`]): a value
//!   outside its rule is `invalid_input`, guest-code and secret keys need `incus.exec`, restricted
//!   items (host-impact values past their bound included) need the host's `allow_restricted`, which
//!   receives each item with its value.
//!
//! After discovery, before the mutation, with documented reads in the call's project:
//! - create without `profiles`: Incus would apply the source image's `profiles` (or `default`;
//!   `cmd/incusd/instances_post.go`). The core reads them (a local alias: `GET
//!   /1.0/images/aliases?recursion=1`, then `GET /1.0/images/{fingerprint}`; a local fingerprint:
//!   the image only; an empty instance or a host-approved remote: no read, `default`) and sends that
//!   list explicitly, so Incus applies exactly the profiles checked;
//! - create and update with profiles: `GET /1.0/profiles/{name}` for each; their effective config
//!   and devices pass the same rules (update without `profiles` keeps the instance's, and adds
//!   nothing);
//! - the network of each plain nic, once per network (`GET /1.0/networks/{name}`): only a managed
//!   bridge or OVN network is plain;
//! - keys and fields of a newer Incus line are plain only where discovery's `api_extensions` lists
//!   the extension that introduced them;
//! - restore: `GET` of the snapshot, then its profiles: what Incus writes back is judged like a
//!   create of it (`volatile.*` excepted);
//! - snapshot create without a name: `GET /1.0/instances/{name}`; its `snapshots.pattern` must be of
//!   the safe grammar;
//! - stop, for a caller without `incus.delete`: `GET /1.0/instances/{name}`; stopping an ephemeral
//!   instance deletes it, so it needs `incus.delete`. Restart does not delete (Incus clears the
//!   flag for the restart), and start, freeze and unfreeze never do, so they read nothing.
use std::collections::HashMap;

use serde_json::Value;

use super::callback::bounded;
use super::input::{Action, InstanceWrites, SnapshotRestore, Source, StateUpdate};
use super::native::Input;
use super::restricted::{self, Findings, Origin, Restricted};
use super::results::{read_error, RunError};
use super::values;
use super::RunOptions;
use crate::catalogue::{Descriptor, Scope};
use crate::client::{Client, ClientError};
use crate::host::RestrictedItem;

/// The profile Incus applies when neither the input nor the source image names any.
const DEFAULT_PROFILE: &str = "default";

/// The prefix of the keys Incus keeps for itself.
const VOLATILE: &str = "volatile.";

/// The rules on the input alone, before any backend request.
pub(crate) async fn check_input<C: Send + Sync>(
    descriptor: &Descriptor,
    input: &Input,
    options: &RunOptions<'_, C>,
) -> Result<(), RunError> {
    let (ephemeral, name, writes) = match input {
        Input::InstanceCreate(create) => (create.ephemeral, &create.name, create.writes()),
        Input::InstanceUpdate(update) => (update.ephemeral, &update.name, update.writes()),
        Input::InstanceSnapshotCreate(snapshot) => {
            return match snapshot.snapshot.as_deref().map(values::snapshot_name) {
                Some(Err(message)) => Err(RunError::InvalidInput {
                    message,
                    pointer: "/snapshot".into(),
                }),
                _ => Ok(()),
            };
        }
        _ => return Ok(()),
    };
    if ephemeral == Some(true) {
        require(
            options,
            Scope::Delete,
            format!(
                "setting ephemeral on instance {name:?} makes Incus delete it, with its snapshots, when it next stops"
            ),
        )?;
    }
    let found = Findings::of_writes(writes);
    check_findings(descriptor, found, options, |_| String::new()).await
}

/// The rules that need Incus's view, after discovery and before the mutation. A create without
/// `profiles` gets the checked, implied list made explicit, so that it is the list sent.
pub(crate) async fn check_applied<C: Send + Sync>(
    descriptor: &Descriptor,
    client: &Client,
    project: &str,
    input: &mut Input,
    options: &RunOptions<'_, C>,
) -> Result<(), RunError> {
    let reads = Reads {
        descriptor,
        client,
        project,
        options,
    };
    match input {
        Input::InstanceCreate(create) => {
            if create.profiles.is_none() {
                create.profiles = Some(implied_profiles(client, project, &create.source).await?);
            }
            reads
                .applied(create.writes(), Origin::Input, Findings::default())
                .await
        }
        Input::InstanceUpdate(update) => {
            reads
                .applied(update.writes(), Origin::Input, Findings::default())
                .await?;
            reads
                .what_an_update_leaves(&update.name, update.writes())
                .await
        }
        Input::InstanceStateUpdate(state) => check_stop(client, project, state, options).await,
        Input::InstanceSnapshotRestore(restore) => reads.restore(restore).await,
        Input::InstanceSnapshotCreate(snapshot) if snapshot.snapshot.is_none() => {
            reads.unnamed_snapshot(&snapshot.instance).await
        }
        _ => Ok(()),
    }
}

/// The reads of the last check, in the call's project.
struct Reads<'a, 'o, C> {
    descriptor: &'a Descriptor,
    client: &'a Client,
    project: &'a str,
    options: &'a RunOptions<'o, C>,
}

impl<C: Send + Sync> Reads<'_, '_, C> {
    /// What a write applies beside its own keys and devices, judged: its profiles (one read each),
    /// the networks of its plain nics (one read each), and the API extensions its keys and fields
    /// need. `own` is the call's own config and devices: the input (judged before any request, so
    /// only its extensions and nics are looked at here) or a snapshot being restored.
    async fn applied(
        &self,
        own: InstanceWrites<'_>,
        origin: Origin,
        extra: Findings,
    ) -> Result<(), RunError> {
        let mut found = Findings::scan(own.config, own.devices, origin);
        if origin == Origin::Input {
            // Judged by `check_input`; only what needs Incus's view is left.
            found.restricted.clear();
            found.guest_code.clear();
            found.invalid.clear();
        }
        found.extend(extra);
        let mut from: HashMap<String, String> = HashMap::new();
        if let Some(names) = own.profiles {
            let mut profiles = Vec::with_capacity(names.len());
            for name in names {
                let profile = self
                    .client
                    .get_profile(self.project, name)
                    .await
                    .map_err(read_error)?;
                profiles.push((name.clone(), profile.value));
            }
            let (from_profiles, origins, merged) = restricted::profile_findings(&profiles, own);
            found.extend(from_profiles);
            from = origins;
            // A frequent schedule or its expiry that comes from a profile.
            if let Some((key, why)) = restricted::schedule_reach(&merged, false) {
                // A key set to "" is unset: the profile's value applies.
                let own_keys = own
                    .config
                    .into_iter()
                    .flatten()
                    .filter(|(_, v)| v.as_str() != Some(""))
                    .map(|(k, _)| k);
                let stated: Vec<&String> = own_keys.collect();
                let from_profile = ["snapshots.schedule", "snapshots.expiry"]
                    .iter()
                    .any(|k| merged.contains_key(*k) && !stated.iter().any(|s| s == k));
                if from_profile || origin == Origin::Applied {
                    found.restricted.push(Restricted {
                        item: RestrictedItem::config_key(
                            key.clone(),
                            merged.get(&key).cloned().unwrap_or(Value::Null),
                        ),
                        why: Some(why),
                    });
                }
            }
        } else if origin == Origin::Applied {
            if let Some((key, why)) = own
                .config
                .and_then(|c| restricted::schedule_reach(c, false))
            {
                let value = own.config.and_then(|c| c.get(&key)).cloned();
                found.restricted.push(Restricted {
                    item: RestrictedItem::config_key(key, value.unwrap_or(Value::Null)),
                    why: Some(why),
                });
            }
        }
        self.gate(&mut found);
        self.networks(&mut found).await?;
        check_findings(self.descriptor, found, self.options, |name| {
            from.get(name)
                .map(|profile| format!(" from profile {profile:?}"))
                .unwrap_or_default()
        })
        .await
    }

    /// Items that need an API extension the server does not report are unknown to it:
    /// restricted there.
    fn gate(&self, found: &mut Findings) {
        let reported = self.client.server().get("api_extensions");
        let has = |extension: &str| {
            reported
                .and_then(Value::as_array)
                .is_some_and(|list| list.iter().any(|e| e.as_str() == Some(extension)))
        };
        for gated in std::mem::take(&mut found.gated) {
            if !has(gated.extension) {
                let name = restricted::item_name(&gated.item).to_owned();
                found.restricted.push(Restricted {
                    item: gated.item,
                    why: Some(format!(
                        "{name} needs the API extension {}, which this server does not report",
                        gated.extension
                    )),
                });
            }
        }
    }

    /// Each network a plain nic names, read once: a nic on anything but a managed bridge or OVN
    /// network is restricted (on a physical network Incus moves the host's uplink into the guest;
    /// macvlan and SR-IOV networks attach to the host's own interfaces).
    async fn networks(&self, found: &mut Findings) -> Result<(), RunError> {
        let mut kinds: HashMap<String, Option<String>> = HashMap::new();
        for nic in std::mem::take(&mut found.nics) {
            if !kinds.contains_key(&nic.network) {
                let network = self
                    .client
                    .get_network(self.project, &nic.network)
                    .await
                    .map_err(read_error)?
                    .value;
                let managed = network.get("managed") == Some(&Value::Bool(true));
                let kind = network.get("type").and_then(Value::as_str);
                let plain = managed && matches!(kind, Some("bridge" | "ovn"));
                let verdict = (!plain).then(|| {
                    let kind = kind.unwrap_or("unknown");
                    let managed = if managed { "managed" } else { "unmanaged" };
                    format!(
                        "network {:?} is an {managed} {kind:?} network, not a managed bridge or OVN network",
                        nic.network
                    )
                });
                kinds.insert(nic.network.clone(), verdict);
            }
            if let Some(Some(why)) = kinds.get(&nic.network) {
                found.restricted.push(Restricted {
                    item: RestrictedItem::device(nic.name, nic.device),
                    why: Some(why.clone()),
                });
            }
        }
        Ok(())
    }

    /// A restore writes the snapshot's config, devices and profiles back into the instance (Incus
    /// `Restore`: `LocalConfig`, `LocalDevices`, `Profiles`), so they are read (one read of the
    /// snapshot) and judged as a create of them would be.
    async fn restore(&self, restore: &SnapshotRestore) -> Result<(), RunError> {
        let read = self
            .client
            .get_instance_snapshot(self.project, &restore.instance, &restore.snapshot)
            .await;
        // No such snapshot: nothing to bring back; Incus fails the restore itself.
        let Some(snapshot) = found(read)? else {
            return Ok(());
        };
        let map = |field: &str| snapshot.get(field).and_then(Value::as_object);
        // `volatile.*` is Incus's own record of the instance (its image, idmap, MAC addresses),
        // written by Incus and restored as it was; no caller can write it without the host.
        let config: Option<serde_json::Map<String, Value>> = map("config").map(|config| {
            config
                .iter()
                .filter(|(key, _)| !key.starts_with(VOLATILE))
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect()
        });
        let profiles: Option<Vec<String>> = match snapshot.get("profiles") {
            None | Some(Value::Null) => None,
            Some(Value::Array(names)) => Some(
                names
                    .iter()
                    .map(|name| {
                        name.as_str().map(str::to_owned).ok_or_else(|| {
                            RunError::InvalidResponse(
                                "the snapshot has a profile name that is not a string".into(),
                            )
                        })
                    })
                    .collect::<Result<_, _>>()?,
            ),
            Some(_) => {
                return Err(RunError::InvalidResponse(
                    "the snapshot has profiles that are not a list".into(),
                ))
            }
        };
        let own = InstanceWrites {
            config: config.as_ref(),
            devices: map("devices"),
            profiles: profiles.as_deref(),
        };
        let mut idmap = Findings::default();
        if let Some(why) = map("config").and_then(empty_idmap) {
            let value = map("config")
                .and_then(|c| c.get("volatile.idmap.next"))
                .cloned()
                .unwrap_or(Value::Null);
            idmap.restricted.push(Restricted {
                item: RestrictedItem::config_key("volatile.idmap.next", value),
                why: Some(why),
            });
        }
        self.applied(own, Origin::Applied, idmap).await
    }

    /// What an update leaves in force that it does not write itself, read from the instance
    /// (`GET /1.0/instances/{name}`, only when needed):
    /// - a key the update unsets (`""`) without naming `profiles` falls back to the value of the
    ///   instance's profiles (each read, `GET /1.0/profiles/{name}`), judged as applied: an
    ///   instance's own override of a profile's value is the operator's, and unsetting it must
    ///   not bring in what a write could not set (a host-impact value past its bound, a pattern
    ///   outside the grammar, a frequent schedule without its expiry);
    /// - a `snapshots.schedule` that fires, set without a `snapshots.pattern` in the same write,
    ///   names its snapshots by the instance's pattern (possibly set past the core), which must be
    ///   of the safe grammar, as for an unnamed snapshot.
    async fn what_an_update_leaves(
        &self,
        instance: &str,
        own: InstanceWrites<'_>,
    ) -> Result<(), RunError> {
        let config = own.config.cloned().unwrap_or_default();
        let text = |key: &str| config.get(key).and_then(Value::as_str);
        let unset: Vec<&String> = config
            .iter()
            .filter(|(_, value)| value.as_str() == Some(""))
            .map(|(key, _)| key)
            .collect();
        let unsets = !unset.is_empty() && own.profiles.is_none();
        let fires = text("snapshots.schedule").is_some_and(|schedule| {
            !schedule.is_empty()
                && !schedule
                    .split(", ")
                    .all(|trigger| trigger.eq_ignore_ascii_case("@never"))
        });
        let pattern_stated = text("snapshots.pattern").is_some_and(|p| !p.is_empty());
        let names_by_pattern = fires && !pattern_stated;
        if !unsets && !names_by_pattern {
            return Ok(());
        }
        let object = self
            .client
            .get_instance(self.project, instance)
            .await
            .map_err(read_error)?
            .value;
        let local = object.get("config").and_then(Value::as_object);
        let mut found = Findings::default();
        let mut from: HashMap<String, String> = HashMap::new();
        // The profiles' values the instance keeps, as Incus expands them.
        let mut fallback: serde_json::Map<String, Value> = serde_json::Map::new();
        if unsets {
            let names: Vec<String> = match object.get("profiles") {
                Some(Value::Array(names)) => names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
                _ => Vec::new(),
            };
            for name in &names {
                let profile = self
                    .client
                    .get_profile(self.project, name)
                    .await
                    .map_err(read_error)?
                    .value;
                for (key, value) in profile
                    .get("config")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                {
                    fallback.insert(key.clone(), value.clone());
                    from.insert(key.clone(), name.clone());
                }
            }
            let revealed: serde_json::Map<String, Value> = unset
                .iter()
                .filter_map(|key| {
                    fallback
                        .get(*key)
                        .map(|value| ((*key).clone(), value.clone()))
                })
                .filter(|(_, value)| value.as_str() != Some(""))
                .collect();
            found.extend(Findings::scan(Some(&revealed), None, Origin::Applied));
            // The schedule and expiry the instance ends up with, when the update touches them.
            let touched = ["snapshots.schedule", "snapshots.expiry"]
                .iter()
                .any(|key| config.contains_key(*key));
            if touched {
                let mut effective = fallback.clone();
                effective.extend(
                    local
                        .into_iter()
                        .flatten()
                        .map(|(k, v)| (k.clone(), v.clone())),
                );
                for (key, value) in &config {
                    match value.as_str() {
                        Some("") => match fallback.get(key) {
                            Some(value) => effective.insert(key.clone(), value.clone()),
                            None => effective.remove(key),
                        },
                        _ => effective.insert(key.clone(), value.clone()),
                    };
                }
                if let Some((key, why)) = restricted::schedule_reach(&effective, false) {
                    let value = effective.get(&key).cloned().unwrap_or(Value::Null);
                    found.restricted.push(Restricted {
                        item: RestrictedItem::config_key(key, value),
                        why: Some(why),
                    });
                }
            }
        }
        if names_by_pattern {
            // The pattern after the update: the instance's own, else (unset, or none) the
            // profiles' it falls back to, else what the instance expands to now.
            let pattern = if text("snapshots.pattern") == Some("") && unsets {
                fallback.get("snapshots.pattern").cloned()
            } else {
                local
                    .and_then(|c| c.get("snapshots.pattern"))
                    .or_else(|| object.pointer("/expanded_config/snapshots.pattern"))
                    .cloned()
            };
            let text = pattern.as_ref().and_then(Value::as_str).unwrap_or_default();
            if let Err(why) = values::snapshot_pattern(text) {
                found.restricted.push(Restricted {
                    item: RestrictedItem::config_key(
                        "snapshots.pattern",
                        pattern.clone().unwrap_or(Value::Null),
                    ),
                    why: Some(format!(
                        "instance {instance:?} would name its scheduled snapshots by its {why}"
                    )),
                });
            }
        }
        check_findings(self.descriptor, found, self.options, |name| {
            from.get(name)
                .filter(|_| unset.iter().any(|key| *key == name))
                .map(|profile| format!(" from profile {profile:?}"))
                .unwrap_or_default()
        })
        .await
    }

    /// A snapshot created without a name is named by the instance's `snapshots.pattern`: one
    /// read of the instance, whose expanded pattern must be of the safe grammar.
    async fn unnamed_snapshot(&self, instance: &str) -> Result<(), RunError> {
        let object = self
            .client
            .get_instance(self.project, instance)
            .await
            .map_err(read_error)?
            .value;
        let pattern = object
            .pointer("/expanded_config/snapshots.pattern")
            .or_else(|| object.pointer("/config/snapshots.pattern"))
            .cloned();
        let text = pattern.as_ref().and_then(Value::as_str).unwrap_or_default();
        let Err(why) = values::snapshot_pattern(text) else {
            return Ok(());
        };
        let mut found = Findings::default();
        found.restricted.push(Restricted {
            item: RestrictedItem::config_key("snapshots.pattern", pattern.unwrap_or(Value::Null)),
            why: Some(format!(
                "instance {instance:?} names unnamed snapshots by its {why}; name the snapshot"
            )),
        });
        check_findings(self.descriptor, found, self.options, |_| String::new()).await
    }
}

/// Whether a container snapshot's ID map is empty, and why that matters: Incus 6.0.4 starts a
/// container with the ID map `volatile.idmap.next` names (else `volatile.idmap.current`, else
/// `volatile.last_state.idmap`; `NextIdmap`, `initLXC`), and an empty map means no user namespace:
/// the container runs privileged. A snapshot taken while the container was privileged (through a
/// profile since changed) keeps that map, and a restore writes it back, with no
/// `security.privileged` in sight (seen on the real 6.0.4: `uid_map` `0 0 4294967295` after the
/// restore; 7.0.2 recomputes the map at start). `None` for a snapshot without these keys (a VM)
/// or with a non-empty map.
fn empty_idmap(config: &serde_json::Map<String, Value>) -> Option<String> {
    let map = [
        "volatile.idmap.next",
        "volatile.idmap.current",
        "volatile.last_state.idmap",
    ]
    .iter()
    .find_map(|key| config.get(*key).map(|value| (*key, value)));
    let (key, value) = map?;
    let entries = value
        .as_str()
        .and_then(|text| serde_json::from_str::<Value>(text).ok());
    let nonempty = matches!(entries, Some(Value::Array(ref list)) if !list.is_empty());
    (!nonempty).then(|| {
        format!(
            "the snapshot's ID map ({key}) is empty or unreadable: restored, the container would run without a user namespace, as a privileged container"
        )
    })
}

/// The profiles Incus applies to a create that names none: the local source image's, else
/// `default` (an unknown alias or image, an empty instance, or a remote image, whose cached copy
/// the core cannot see: `default` is then sent and checked).
async fn implied_profiles(
    client: &Client,
    project: &str,
    source: &Source,
) -> Result<Vec<String>, RunError> {
    let default = || vec![DEFAULT_PROFILE.to_owned()];
    if source.source_type != "image" || source.remote.is_some() {
        return Ok(default());
    }
    let fingerprint = match (&source.fingerprint, &source.alias) {
        (Some(fingerprint), _) => fingerprint.clone(),
        (None, Some(alias)) => match alias_target(client, project, alias).await? {
            Some(target) => target,
            None => return Ok(default()),
        },
        (None, None) => return Ok(default()),
    };
    let Some(image) = found(client.get_image(project, &fingerprint).await)? else {
        return Ok(default());
    };
    match image.get("profiles") {
        None | Some(Value::Null) => Ok(default()),
        Some(Value::Array(names)) => names
            .iter()
            .map(|name| {
                name.as_str().map(str::to_owned).ok_or_else(|| {
                    RunError::InvalidResponse(format!(
                        "image {fingerprint} has a profile name that is not a string"
                    ))
                })
            })
            .collect(),
        Some(_) => Err(RunError::InvalidResponse(format!(
            "image {fingerprint} has profiles that are not a list"
        ))),
    }
}

/// The fingerprint a local alias points at (`None`: no such alias), from the project's alias list
/// (`GET /1.0/images/aliases?recursion=1`, the read of `incus_image_alias_list`).
async fn alias_target(
    client: &Client,
    project: &str,
    alias: &str,
) -> Result<Option<String>, RunError> {
    let aliases = client
        .get_image_aliases(project)
        .await
        .map_err(read_error)?;
    let Some(entry) = aliases
        .iter()
        .find(|entry| entry.value.get("name").and_then(Value::as_str) == Some(alias))
    else {
        return Ok(None);
    };
    match entry.value.get("target").and_then(Value::as_str) {
        Some(target) => Ok(Some(target.to_owned())),
        None => Err(RunError::InvalidResponse(format!(
            "image alias {alias:?} has no target"
        ))),
    }
}

/// A read's value, `None` when Incus answers 404, the error otherwise.
fn found(read: Result<crate::client::Single, ClientError>) -> Result<Option<Value>, RunError> {
    match read {
        Ok(single) => Ok(Some(single.value)),
        Err(ClientError::Native {
            http_status: 404, ..
        }) => Ok(None),
        Err(error) => Err(read_error(error)),
    }
}

/// A stop by a caller without `incus.delete` reads the instance: stopping an ephemeral one
/// deletes it.
async fn check_stop<C: Send + Sync>(
    client: &Client,
    project: &str,
    state: &StateUpdate,
    options: &RunOptions<'_, C>,
) -> Result<(), RunError> {
    if state.action() != Action::Stop || options.scopes.contains(&Scope::Delete) {
        return Ok(());
    }
    let instance = client
        .get_instance(project, &state.name)
        .await
        .map_err(read_error)?;
    if instance.value.get("ephemeral") == Some(&Value::Bool(true)) {
        let name = &state.name;
        return Err(RunError::ScopeNeeded {
            scope: Scope::Delete.as_str().to_owned(),
            reason: format!(
                "instance {name:?} is ephemeral: Incus deletes it, with its snapshots, when it stops"
            ),
        });
    }
    Ok(())
}

/// Values outside their rules are invalid input; guest code needs `incus.exec`; restricted items
/// need the host's yes. `origin` names where a key or device came from (empty for the call's own).
async fn check_findings<C: Send + Sync>(
    descriptor: &Descriptor,
    found: Findings,
    options: &RunOptions<'_, C>,
    origin: impl Fn(&str) -> String,
) -> Result<(), RunError> {
    if found.is_empty() {
        return Ok(());
    }
    if let Some(invalid) = found.invalid.into_iter().next() {
        return Err(RunError::InvalidInput {
            message: invalid.message,
            pointer: invalid.pointer,
        });
    }
    if !found.guest_code.is_empty() {
        let keys = found
            .guest_code
            .iter()
            .map(|key| format!("{key:?}{}", origin(key)))
            .collect::<Vec<_>>()
            .join(", ");
        require(
            options,
            Scope::Exec,
            format!("config keys {keys} are code or credentials that the guest takes as root"),
        )?;
    }
    if found.restricted.is_empty() {
        return Ok(());
    }
    let described = found
        .restricted
        .iter()
        .map(|found| {
            let name = restricted::item_name(&found.item);
            format!("{}{}", restricted::describe(found), origin(name))
        })
        .collect::<Vec<_>>()
        .join(", ");
    let items: Vec<RestrictedItem> = found.restricted.into_iter().map(|r| r.item).collect();
    approve_restricted(descriptor, &items, described, options).await
}

/// The caller holds `scope`, or the call is refused with `scope_missing` saying why.
fn require<C>(options: &RunOptions<'_, C>, scope: Scope, reason: String) -> Result<(), RunError> {
    if options.scopes.contains(&scope) {
        Ok(())
    } else {
        Err(RunError::ScopeNeeded {
            scope: scope.as_str().to_owned(),
            reason,
        })
    }
}

/// Asks the host, bounded, whether it allows these restricted items.
async fn approve_restricted<C: Send + Sync>(
    descriptor: &Descriptor,
    items: &[RestrictedItem],
    described: String,
    options: &RunOptions<'_, C>,
) -> Result<(), RunError> {
    let allowed = options
        .host
        .allow_restricted(options.caller, descriptor.name(), items);
    match bounded(options.callback_timeout, allowed).await {
        Ok(true) => Ok(()),
        Ok(false) => Err(RunError::RestrictedInput(described)),
        Err(failure) => Err(RunError::RestrictedInput(format!(
            "{described} (allow_restricted {failure})"
        ))),
    }
}
