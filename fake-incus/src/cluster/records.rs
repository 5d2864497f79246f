//! The placement rules that read what the cluster's database holds about its members (the
//! records, kept in the state: [`crate::state::member_records`]), as Incus 6.0.4 applies them
//! (`GetCandidateMembers`: evacuated, offline and `scheduler.instance: manual` members are never
//! picked; `group` members only for a `@group` target of theirs).

pub(crate) use crate::state::member_records::{Group, MemberRecord, Records, DEFAULT_GROUP};
use std::collections::BTreeMap;

/// What a placement asks for.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Want<'a> {
    /// A `@group` target: only its members (and its `scheduler.instance: group` members).
    pub(crate) group: Option<&'a str>,
    /// Only members of this group, without making it a target (an evacuated instance's
    /// `volatile.cluster.group`).
    pub(crate) within: Option<&'a str>,
    /// Never this member (where the instance already is).
    pub(crate) not: Option<&'a str>,
}

/// Whether member `record` may take an instance placed without naming it.
pub(crate) fn candidate(record: &MemberRecord, want: &Want<'_>) -> bool {
    let in_group = |group: &str| record.groups.iter().any(|g| g == group);
    let scheduler = record.config.get("scheduler.instance").map(String::as_str);
    !record.evacuated
        && scheduler != Some("manual")
        && (scheduler != Some("group") || want.group.is_some_and(in_group))
        && want.group.is_none_or(in_group)
        && want.within.is_none_or(in_group)
}

/// Checks a member's `config` as the daemon does (`user.*` and `scheduler.instance`
/// `all|group|manual`); the error is the daemon's text.
pub(crate) fn config_problem(config: &BTreeMap<String, String>) -> Option<String> {
    config.iter().find_map(|(key, value)| {
        if key.starts_with("user.") {
            return None;
        }
        if key != "scheduler.instance" {
            return Some(format!("Invalid cluster configuration key {key:?}"));
        }
        (!["", "all", "group", "manual"].contains(&value.as_str()))
            .then(|| format!("Invalid cluster configuration key {key:?} value"))
    })
}

/// The roles a member may be given besides the database roles.
pub(crate) fn known_role(role: &str) -> bool {
    [
        "event-hub",
        "ovn-chassis",
        "database",
        "database-leader",
        "database-standby",
    ]
    .contains(&role)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(key: &str, value: &str) -> MemberRecord {
        let mut record = MemberRecord::default();
        record.config.insert(key.into(), value.into());
        record
    }

    #[test]
    fn manual_members_and_evacuated_members_are_never_placed_on() {
        let any = Want::default();
        assert!(candidate(&MemberRecord::default(), &any));
        assert!(!candidate(&with("scheduler.instance", "manual"), &any));
        let group = Want {
            group: Some(DEFAULT_GROUP),
            ..Want::default()
        };
        assert!(!candidate(&with("scheduler.instance", "manual"), &group));
        let evacuated = MemberRecord {
            evacuated: true,
            ..MemberRecord::default()
        };
        assert!(!candidate(&evacuated, &any));
    }

    #[test]
    fn group_members_take_only_their_groups_targets() {
        let member = with("scheduler.instance", "group");
        assert!(!candidate(&member, &Want::default()));
        let own = Want {
            group: Some(DEFAULT_GROUP),
            ..Want::default()
        };
        assert!(candidate(&member, &own));
        let other = Want {
            group: Some("g1"),
            ..Want::default()
        };
        assert!(!candidate(&MemberRecord::default(), &other));
    }

    #[test]
    fn member_config_is_checked_with_the_daemons_texts() {
        let config = |k: &str, v: &str| BTreeMap::from([(k.to_string(), v.to_string())]);
        assert_eq!(config_problem(&config("user.x", "1")), None);
        assert_eq!(config_problem(&config("scheduler.instance", "group")), None);
        assert_eq!(
            config_problem(&config("foo", "bar")).as_deref(),
            Some("Invalid cluster configuration key \"foo\"")
        );
        assert_eq!(
            config_problem(&config("scheduler.instance", "bogus")).as_deref(),
            Some("Invalid cluster configuration key \"scheduler.instance\" value")
        );
    }
}
