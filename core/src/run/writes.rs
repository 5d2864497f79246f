//! What create, update and state changes may write, beyond the operation's own scope. These are
//! the safety rules of `SECURITY.md`; several go beyond the specification's letter, where it would
//! let an agent do what its grant does not allow.
//!
//! Before any backend request (step 5 of `run`, with the restricted-input rule):
//! - an update that sets `ephemeral: true` needs `incus.delete`: Incus deletes an ephemeral
//!   instance, with its snapshots, when it stops (a guest's own power-off included);
//! - guest-code config keys (see [`restricted`]) need `incus.exec`: the guest runs them as root;
//! - restricted config keys and devices need the host's `allow_restricted`, which receives each
//!   item with its value.
//!
//! After discovery, before the mutation, with documented reads in the call's project:
//! - create without `profiles`: Incus would apply the source image's `profiles` (or `default`;
//!   `cmd/incusd/instances_post.go`). The core reads them (a local alias: `GET
//!   /1.0/images/aliases?recursion=1`, then `GET /1.0/images/{fingerprint}`; a local fingerprint:
//!   the image only; an empty instance or a host-approved remote: no read, `default`) and sends that
//!   list explicitly, so Incus applies exactly the profiles checked;
//! - create and update with profiles: `GET /1.0/profiles/{name}` for each; their effective config
//!   and devices pass the same guest-code and restricted rules (update without `profiles` keeps the
//!   instance's, and adds nothing);
//! - stop, for a caller without `incus.delete`: `GET /1.0/instances/{name}`; stopping an ephemeral
//!   instance deletes it, so it needs `incus.delete`. Restart does not delete (Incus clears the
//!   flag for the restart), and start, freeze and unfreeze never do, so they read nothing.
use serde_json::Value;

use super::callback::bounded;
use super::input::{Action, InstanceWrites, Source, StateUpdate};
use super::native::Input;
use super::restricted::{self, Findings};
use super::results::{read_error, RunError};
use super::RunOptions;
use crate::catalogue::{Descriptor, Scope};
use crate::client::{Client, ClientError};
use crate::host::RestrictedItem;

/// The profile Incus applies when neither the input nor the source image names any.
const DEFAULT_PROFILE: &str = "default";

/// The rules on the input alone, before any backend request.
pub(crate) async fn check_input<C: Send + Sync>(
    descriptor: &Descriptor,
    input: &Input,
    options: &RunOptions<'_, C>,
) -> Result<(), RunError> {
    let writes = match input {
        Input::InstanceCreate(create) => create.writes(),
        Input::InstanceUpdate(update) => {
            if update.ephemeral == Some(true) {
                let name = &update.name;
                require(
                    options,
                    Scope::Delete,
                    format!(
                        "setting ephemeral on instance {name:?} makes Incus delete it, with its snapshots, when it next stops"
                    ),
                )?;
            }
            update.writes()
        }
        _ => return Ok(()),
    };
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
    match input {
        Input::InstanceCreate(create) => {
            if create.profiles.is_none() {
                create.profiles = Some(implied_profiles(client, project, &create.source).await?);
            }
            check_profiles(descriptor, client, project, create.writes(), options).await
        }
        Input::InstanceUpdate(update) => {
            check_profiles(descriptor, client, project, update.writes(), options).await
        }
        Input::InstanceStateUpdate(state) => check_stop(client, project, state, options).await,
        _ => Ok(()),
    }
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

/// The profiles the input lists, read in the call's project, pass the guest-code and restricted
/// rules as Incus expands them.
async fn check_profiles<C: Send + Sync>(
    descriptor: &Descriptor,
    client: &Client,
    project: &str,
    writes: InstanceWrites<'_>,
    options: &RunOptions<'_, C>,
) -> Result<(), RunError> {
    let Some(names) = writes.profiles else {
        return Ok(());
    };
    let mut profiles = Vec::with_capacity(names.len());
    for name in names {
        let profile = client
            .get_profile(project, name)
            .await
            .map_err(read_error)?;
        profiles.push((name.clone(), profile.value));
    }
    let (found, from) = restricted::profile_findings(&profiles, writes);
    check_findings(descriptor, found, options, |key| {
        format!(
            " from profile {:?}",
            from.get(key).map(String::as_str).unwrap_or_default()
        )
    })
    .await
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

/// Guest code needs `incus.exec`; restricted items need the host's yes. `origin` names where a
/// key or device came from (empty for the input itself).
async fn check_findings<C: Send + Sync>(
    descriptor: &Descriptor,
    found: Findings,
    options: &RunOptions<'_, C>,
    origin: impl Fn(&str) -> String,
) -> Result<(), RunError> {
    if found.is_empty() {
        return Ok(());
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
            format!("config keys {keys} are code that the guest runs as root"),
        )?;
    }
    if found.restricted.is_empty() {
        return Ok(());
    }
    let described = found
        .restricted
        .iter()
        .map(|item| {
            let key = match item {
                RestrictedItem::ConfigKey { key, .. } => key,
                RestrictedItem::Device { name, .. } => name,
            };
            format!("{}{}", restricted::describe_item(item), origin(key))
        })
        .collect::<Vec<_>>()
        .join(", ");
    approve_restricted(descriptor, &found.restricted, described, options).await
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
