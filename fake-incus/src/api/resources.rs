//! `GET /1.0/resources` and `GET /1.0/storage-pools/{pool}/resources`: the host's hardware and
//! a pool's space. The fake's host is the one a real cluster member described
//! (`resources.json`: the `metadata` of `GET /1.0/resources?target=m3` on a real 3-member
//! Incus 6.0.4 cluster: a 2-core x86_64 container host). On a cluster `?target=` picks the
//! member (an unknown one is 404 `Cluster member not found`, a member down answers as every
//! request routed to it does); every member shows the same host.

use crate::line::IncusLine;
use serde_json::{json, Map, Value};

/// The host's hardware (`GET /1.0/resources`'s metadata) as the daemon of `line` reports it:
/// 7.0's adds the serial devices (`resources_serial`: none here), each CPU socket's address
/// sizes (`resources_cpu_address_sizes`, the host's 48 bits) and each core's cluster
/// (`resources_cpu_cluster`), in the daemon's key order.
pub(super) fn host(line: IncusLine) -> Value {
    let mut host: Value = serde_json::from_str(include_str!("resources.json")).unwrap_or_default();
    let sockets = host["cpu"]["sockets"].as_array_mut().into_iter().flatten();
    for socket in sockets {
        if line.has_extension("resources_cpu_cluster") {
            let cores = socket["cores"].as_array_mut().into_iter().flatten();
            for core in cores {
                if let Some(fields) = core.as_object_mut() {
                    let mut ordered = Map::new();
                    for (key, value) in std::mem::take(fields) {
                        let after_core = key == "core";
                        ordered.insert(key, value);
                        if after_core {
                            ordered.insert("cluster".into(), json!(0));
                        }
                    }
                    *fields = ordered;
                }
            }
        }
        if line.has_extension("resources_cpu_address_sizes") {
            socket["address_sizes"] = json!({"physical_bits": 48, "virtual_bits": 48});
        }
    }
    if line.has_extension("resources_serial") {
        host["serial"] = json!({"devices": [], "total": 0});
    }
    host
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
