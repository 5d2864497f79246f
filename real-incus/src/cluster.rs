//! Clusters: what the runner reads from a clustered server (`environment.server_clustered`, the
//! member it talks to, the members), the answers a cluster gives by design where a standalone daemon
//! differs, and which member each resource of the run landed on.
//!
//! Everything here is pure (tested without a daemon); the acceptance run feeds it what it read.
use incus_conformance::scenario::format::Expect;
use incus_conformance::scenario::matcher;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One member of the cluster, as `GET /1.0/cluster/members?recursion=1` lists it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberInfo {
    /// `server_name`.
    pub name: String,
    /// `url`, e.g. `https://10.0.0.2:8443`.
    pub url: String,
    /// `status`: `Online`, `Offline`, ...
    pub status: String,
}

/// The cluster the run talks to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterInfo {
    /// The member the runner talks to (`server_name` of `GET /1.0`).
    pub member: String,
    /// Every member, in the daemon's order.
    pub members: Vec<MemberInfo>,
}

impl ClusterInfo {
    /// Reads the cluster from `GET /1.0` and the metadata of `GET /1.0/cluster/members?recursion=1`;
    /// `None` for a standalone daemon (`server_clustered` false or absent).
    pub fn from_answers(server: &Value, members: &Value) -> Option<ClusterInfo> {
        if server["environment"]["server_clustered"] != Value::Bool(true) {
            return None;
        }
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        let members = members
            .as_array()
            .map(|list| {
                list.iter()
                    .map(|m| MemberInfo {
                        name: text(&m["server_name"]),
                        url: text(&m["url"]),
                        status: text(&m["status"]),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Some(ClusterInfo {
            member: text(&server["environment"]["server_name"]),
            members,
        })
    }

    /// An online member other than the one the runner talks to, for the instance that the exec,
    /// snapshot and operation checks run on (so that every one of them is forwarded).
    pub fn other_member(&self) -> Option<&str> {
        self.members
            .iter()
            .find(|m| m.name != self.member && m.status == "Online")
            .map(|m| m.name.as_str())
    }
}

/// An answer a cluster gives by design where a standalone daemon differs, accepted for one
/// scenario step when the target is clustered.
#[derive(Debug, Clone)]
pub struct ClusteredAnswer {
    /// The scenario (file stem).
    pub scenario: &'static str,
    /// The operation of the step.
    pub operation: &'static str,
    /// What Incus does in a cluster, and why.
    pub why: &'static str,
    /// What the clustered answer looks like.
    pub expect: fn() -> Expect,
}

fn unknown_alias_untargeted() -> Expect {
    Expect::native(500)
        .equals("/error/error_code", 500)
        .equals(
            "/error/message",
            "No fingerprint prefix specified for the image",
        )
        .present("/error/message")
}

/// The clustered answers that differ from a standalone daemon's by design (see the reference on
/// clusters): the one that the portable scenarios meet.
pub const CLUSTERED_ANSWERS: &[ClusteredAnswer] = &[ClusteredAnswer {
    scenario: "instance_create_unknown_alias_fails",
    operation: "incus_instance_create",
    why: "clustered: an untargeted create looks the image up for placement first, so an unknown \
          alias is a native 500 \"No fingerprint prefix specified for the image\" at once \
          (standalone: accepted, then the operation fails)",
    expect: unknown_alias_untargeted,
}];

/// When `output` of a step of `scenario` calling `operation` is the documented clustered answer,
/// the reason it is accepted; `None` otherwise (then the step's own expectations decide).
/// `schema` is the operation's output schema, which the answer must also match.
pub fn accepts_clustered_answer(
    scenario: &str,
    operation: &str,
    output: &Value,
    schema: Option<&Value>,
) -> Option<&'static str> {
    CLUSTERED_ANSWERS
        .iter()
        .filter(|a| a.scenario == scenario && a.operation == operation)
        .find(|a| matcher::mismatches(&(a.expect)(), output, schema).is_empty())
        .map(|a| a.why)
}

/// Where one resource of the run was seen to live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// What it is, e.g. `instance c1` or `operation 0b1c... (Executing command)`.
    pub resource: String,
    /// The cluster member (`location`).
    pub member: String,
    /// The check whose result showed it.
    pub seen_in: String,
}
