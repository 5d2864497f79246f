//! What a cluster's database holds about its members besides their daemons' lives: the cluster
//! groups, each member's config, roles, description, failure domain and groups, and whether it
//! is evacuated. Part of the state (so the state dump, `reset`, named snapshots and
//! `--state-dir` carry them); absent on a standalone daemon. The placement rules that read them
//! are [`crate::cluster`]'s.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// The group every member starts in; it cannot be renamed or deleted.
pub(crate) const DEFAULT_GROUP: &str = "default";

/// Whether `role` is one of the database roles (`database`, `database-leader`,
/// `database-standby`): the cluster gives them, so a record never holds them.
pub(crate) fn database_role(role: &str) -> bool {
    role.starts_with("database")
}

/// One member's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct MemberRecord {
    /// The member's name (`server_name`).
    pub(crate) name: String,
    /// `scheduler.instance` and `user.*` keys.
    pub(crate) config: BTreeMap<String, String>,
    /// Roles besides the database roles (`event-hub`, `ovn-chassis`), in the order given.
    pub(crate) roles: Vec<String>,
    pub(crate) description: String,
    pub(crate) failure_domain: String,
    /// Its groups, in the order they were given (at least one).
    pub(crate) groups: Vec<String>,
    /// `EVACUATED` (`incus cluster evacuate`), until restored.
    pub(crate) evacuated: bool,
}

impl Default for MemberRecord {
    fn default() -> Self {
        Self::new("")
    }
}

impl MemberRecord {
    /// A member as it joins: no config, in the default group and failure domain.
    pub(crate) fn new(name: &str) -> Self {
        Self {
            name: name.to_string(),
            config: BTreeMap::new(),
            roles: Vec::new(),
            description: String::new(),
            failure_domain: "default".into(),
            groups: vec![DEFAULT_GROUP.into()],
            evacuated: false,
        }
    }
}

/// A cluster group (its members are the members whose record names it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Group {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) description: String,
}

/// The records of every member (in the cluster's member order) and the groups (in creation
/// order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Records {
    pub(crate) members: Vec<MemberRecord>,
    pub(crate) groups: Vec<Group>,
}

impl Default for Records {
    fn default() -> Self {
        Self {
            members: Vec::new(),
            groups: vec![Group {
                name: DEFAULT_GROUP.into(),
                description: "Default cluster group".into(),
            }],
        }
    }
}

impl Records {
    pub(crate) fn group(&self, name: &str) -> Option<&Group> {
        self.groups.iter().find(|g| g.name == name)
    }

    /// The member's record (a member with none yet has a new member's).
    pub(crate) fn member(&self, name: &str) -> Cow<'_, MemberRecord> {
        self.members
            .iter()
            .find(|m| m.name == name)
            .map_or_else(|| Cow::Owned(MemberRecord::new(name)), Cow::Borrowed)
    }

    /// The member's record for a change (made for it if it has none yet).
    pub(crate) fn member_mut(&mut self, name: &str) -> &mut MemberRecord {
        let index = match self.members.iter().position(|m| m.name == name) {
            Some(index) => index,
            None => {
                self.members.push(MemberRecord::new(name));
                self.members.len() - 1
            }
        };
        &mut self.members[index]
    }

    /// Whether the member is evacuated.
    pub(crate) fn evacuated(&self, name: &str) -> bool {
        self.members.iter().any(|m| m.name == name && m.evacuated)
    }

    /// The names of the members in group `name`, in member order.
    pub(crate) fn group_members(&self, name: &str) -> Vec<String> {
        self.members
            .iter()
            .filter(|m| m.groups.iter().any(|g| g == name))
            .map(|m| m.name.clone())
            .collect()
    }

    /// Makes the records those of exactly `names`, in that order: a member without a record
    /// gets a new member's; records of other names go (a state seeded for another cluster).
    pub(crate) fn fit(&mut self, names: &[String]) {
        let mut members: Vec<MemberRecord> =
            names.iter().map(|n| self.member(n).into_owned()).collect();
        std::mem::swap(&mut self.members, &mut members);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fitting_keeps_known_members_records_in_cluster_order_and_adds_new_ones() {
        let mut records = Records::default();
        records.member_mut("m2").evacuated = true;
        records.member_mut("gone").description = "x".into();
        records.fit(&["m1".to_string(), "m2".to_string()]);
        let names: Vec<&str> = records.members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["m1", "m2"]);
        assert!(records.evacuated("m2") && !records.evacuated("m1"));
        assert_eq!(records.group_members(DEFAULT_GROUP), ["m1", "m2"]);
    }
}
