//! `GET /1.0/resources` and `GET /1.0/storage-pools/{pool}/resources`: the host's hardware and
//! a pool's space. The fake's host is the one a real cluster member described
//! (`resources.json`: the `metadata` of `GET /1.0/resources?target=m3` on a real 3-member
//! Incus 6.0.4 cluster: a 2-core x86_64 container host). On a cluster `?target=` picks the
//! member (an unknown one is 404 `Cluster member not found`, a member down answers as every
//! request routed to it does); every member shows the same host.

use serde_json::{json, Value};

/// The host's hardware (`GET /1.0/resources`'s metadata).
pub(super) fn host() -> Value {
    serde_json::from_str(include_str!("resources.json")).unwrap_or_default()
}

/// The filesystem the member's `dir` pool (and so every instance's root) lives on: bytes and
/// inodes, in use and in all. SFTP's `statvfs@openssh.com` reports the same numbers.
pub(super) const SPACE_USED: u64 = 34_389_626_880;
pub(super) const SPACE_TOTAL: u64 = 270_553_174_016;
pub(super) const INODES_USED: u64 = 480_375;
pub(super) const INODES_TOTAL: u64 = 16_777_216;

/// A pool's space and inodes as the member's `dir` pool reports them.
pub(super) fn pool_usage() -> Value {
    json!({"space": {"used": SPACE_USED, "total": SPACE_TOTAL},
           "inodes": {"used": INODES_USED, "total": INODES_TOTAL}})
}
