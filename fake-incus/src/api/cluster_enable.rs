//! `PUT /1.0/cluster` (`api.ClusterPut`): enable clustering (bootstrap a cluster of one, or join
//! one) or disable it, with the daemon's checks in its order (`cmd/incusd/api_cluster.go`, the
//! same in 6.0 and 7.0).
//!
//! What the daemon then does to itself the fake does not: it becomes a cluster, or joins or
//! leaves one, only when it starts (`fake-incus serve --cluster`). So a bootstrap or a join
//! that the daemon would start is an operation that fails and says so, and a clustered member
//! asked to leave answers 501 with the reason; everything refused before that is the daemon's
//! answer. Disabling clustering on a standalone fake answers as the daemon does (`{}`; the
//! daemon then restarts itself, with nothing to undo).

use super::{parse_body, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use crate::operations::OpSpec;
use crate::state::State;
use serde::Deserialize;
use std::collections::BTreeMap;

/// Why the fake's operation fails where the daemon would bootstrap or join.
const AT_START_ONLY: &str =
    "fake-incus forms a cluster only when it starts (fake-incus serve --cluster NAMES)";

/// `api.ClusterPut`: the fields the handler reads (others are ignored, as Go ignores them).
#[derive(Deserialize)]
struct ClusterPut {
    #[serde(default, deserialize_with = "super::null_default")]
    server_name: String,
    #[serde(default, deserialize_with = "super::null_default")]
    enabled: bool,
    #[serde(default, deserialize_with = "super::null_default")]
    cluster_address: String,
    #[serde(default, deserialize_with = "super::null_default")]
    cluster_certificate: String,
    #[serde(default, deserialize_with = "super::null_default")]
    server_address: String,
}

/// `PUT /1.0/cluster`; `clustered` when the fake simulates a cluster.
pub(super) fn put(ctx: &Ctx, clustered: bool, body: &[u8]) -> ApiResult {
    let req: ClusterPut = parse_body(body)?;
    if req.server_name.is_empty() && req.enabled {
        return Err(ApiError::bad_request(
            "ServerName is required when enabling clustering",
        ));
    }
    if !req.server_name.is_empty() && !req.enabled {
        return Err(ApiError::bad_request(
            "ServerName must be empty when disabling clustering",
        ));
    }
    if req.server_name.starts_with('@') {
        return Err(ApiError::bad_request("ServerName may not start with \"@\""));
    }
    if !req.enabled {
        if clustered {
            return Err(ApiError::new(
                501,
                "fake-incus: a member leaves its cluster only when the fake stops",
            ));
        }
        // A standalone daemon resets its (local) cluster database and restarts.
        ctx.applied();
        return Ok(envelope::empty());
    }
    if req.cluster_address.is_empty() {
        bootstrap(ctx, clustered)
    } else {
        join(ctx, clustered, &req)
    }
}

/// A cluster of one: its address is `cluster.https_address`, else `core.https_address`, which
/// must then name a host (the daemon's error quotes the empty cluster address).
fn bootstrap(ctx: &Ctx, clustered: bool) -> ApiResult {
    if !clustered {
        let config = &ctx.app.snapshot().state.server_config;
        let cluster_address = config.get("cluster.https_address").map(String::as_str);
        let https_address = config.get("core.https_address").map(String::as_str);
        if cluster_address.unwrap_or_default().is_empty()
            && is_wildcard(https_address.unwrap_or_default())
        {
            return Err(ApiError::internal(
                "Cannot use wildcard core.https_address \"\" for cluster.https_address. Please specify a new cluster.https_address or core.https_address",
            ));
        }
    }
    // A member already holds the cluster's certificate: the daemon's bootstrap stops there.
    let why = if clustered {
        "Inconsistent state: found leftover cluster certificate"
    } else {
        AT_START_ONLY
    };
    failing(ctx, "Creating bootstrap node", why)
}

fn join(ctx: &Ctx, clustered: bool, req: &ClusterPut) -> ApiResult {
    if req.cluster_certificate.is_empty() {
        return Err(ApiError::bad_request(
            "No target cluster member certificate provided",
        ));
    }
    if clustered {
        return Err(ApiError::bad_request("This server is already clustered"));
    }
    if req.server_address.is_empty() {
        return Err(ApiError::bad_request(
            "No server address provided for this member",
        ));
    }
    failing(ctx, "Joining cluster", AT_START_ONLY)
}

/// The daemon's `IsWildCardAddress`: no host, `0.0.0.0` or `::` (a bare port is no host).
fn is_wildcard(address: &str) -> bool {
    let host = match address.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(':') && port.chars().all(|c| c.is_ascii_digit()) => {
            host
        }
        _ => address,
    };
    matches!(
        host.trim_start_matches('[').trim_end_matches(']'),
        "" | "0.0.0.0" | "::"
    )
}

/// The server's operation (`resources: {"cluster": []}`) that fails with `why`.
fn failing(ctx: &Ctx, description: &'static str, why: &'static str) -> ApiResult {
    let spec = OpSpec {
        resources: BTreeMap::from([("cluster".to_string(), Vec::new())]),
        ..OpSpec::task("default", description, String::new())
    };
    let op = ctx.start_task(
        spec,
        Box::new(move |_: &mut State| Err(ApiError::internal(why))),
    );
    Ok(envelope::operation_created(op))
}

#[cfg(test)]
mod tests {
    use super::is_wildcard;

    #[test]
    fn a_wildcard_address_is_one_without_a_host_as_the_daemon_reads_it() {
        for wildcard in [
            "",
            ":8443",
            "0.0.0.0",
            "0.0.0.0:8443",
            "[::]",
            "[::]:8443",
            "::",
        ] {
            assert!(is_wildcard(wildcard), "{wildcard}");
        }
        for named in [
            "127.0.0.1",
            "127.0.0.1:8443",
            "[::1]:8443",
            "host.example:8443",
        ] {
            assert!(!is_wildcard(named), "{named}");
        }
    }
}
