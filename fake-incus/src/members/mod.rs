//! The cluster's members as daemons: their listeners (bound at start and again when a member
//! comes back, closed when it dies), taking a member down and up, and the control socket's
//! `/cluster/...` endpoints. A top-floor module beside the server: it starts servers over the
//! app; the cluster's model (members, lives, placement) is [`crate::cluster`], below everything.

pub(crate) mod listeners;

use crate::app::App;
use std::sync::Arc;

/// [`crate::cluster::place_seeded`] on the app's cluster, if it is one (a state replaced while it runs).
pub(crate) fn place_seeded_on(app: &App, state: &mut crate::state::State) {
    if let Some(cluster) = app.cluster() {
        let names: Vec<String> = cluster.members.iter().map(|m| m.name.clone()).collect();
        crate::cluster::place_seeded(state, &names);
    }
}

/// `FakeIncus::member_down`: kills the member's daemon.
pub(crate) fn member_down(app: &App, name: &str) -> Result<(), String> {
    let cluster = app.cluster().ok_or("the fake is not a cluster")?;
    let index = cluster
        .index(name)
        .ok_or_else(|| format!("no member {name:?}"))?;
    if let Some(drawn) = cluster.kill(index) {
        // The seed and what it drew, so that a run can be replayed (`--seed`).
        tracing::info!(
            member = name,
            seed = cluster.timings.seed,
            heartbeat = ?drawn.heartbeat,
            offline = ?drawn.offline,
            back_online = ?drawn.back_online,
            "cluster member down"
        );
    }
    Ok(())
}

/// `FakeIncus::member_up`: starts the member's daemon again.
pub(crate) fn member_up(app: &Arc<App>, name: &str) -> Result<(), String> {
    let cluster = app.cluster().ok_or("the fake is not a cluster")?;
    let index = cluster
        .index(name)
        .ok_or_else(|| format!("no member {name:?}"))?;
    let Some(until) = cluster.revive(index, &app.shutdown) else {
        return Ok(());
    };
    // Its operations died with the daemon.
    app.operations
        .ops()
        .list
        .retain(|op| op.location.as_deref() != Some(name));
    listeners::start(app, cluster, index, until)
        .map_err(|e| format!("binding member {name}: {e}"))?;
    tracing::info!(member = name, "cluster member up");
    Ok(())
}

/// The control socket's `/cluster/...` endpoints: `(status, message)` on error.
pub(crate) fn control(
    app: &Arc<App>,
    method: &str,
    path: &str,
) -> Result<serde_json::Value, (u16, String)> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let not_clustered = || (404, "the fake is not a cluster".to_string());
    match (method, segs.as_slice()) {
        ("GET", ["cluster", "members"]) => {
            let members: Vec<serde_json::Value> = app
                .cluster()
                .map(|c| c.members.iter().map(|m| m.ready_json()).collect())
                .unwrap_or_default();
            Ok(serde_json::Value::Array(members))
        }
        ("POST", ["cluster", "members", name, action @ ("down" | "up")]) => {
            let cluster = app.cluster().ok_or_else(not_clustered)?;
            if cluster.index(name).is_none() {
                return Err((404, format!("no member {name:?}")));
            }
            let result = if *action == "down" {
                member_down(app, name)
            } else {
                member_up(app, name)
            };
            result.map(|()| serde_json::json!({})).map_err(|e| (500, e))
        }
        (_, ["cluster", "members", _, "down" | "up"] | ["cluster", "members"]) => {
            Err((405, format!("{method} is not supported on {path}")))
        }
        _ => Err((404, format!("no such control endpoint: {path}"))),
    }
}
