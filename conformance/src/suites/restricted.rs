//! Restricted create and update input: every restricted config key family and every device
//! other than a pool disk or a network nic is refused before any backend request unless the
//! host allows it, on both operations that take config and devices.

use std::sync::Arc;

use serde_json::{json, Value};

use super::session::with_session;
use super::session::Session;
use crate::runner::Check;
use crate::scenario::target::TargetFactory;

/// One key of each restricted family, with odd casings and deep suffixes.
const RESTRICTED_KEYS: &[&str] = &[
    "raw.lxc",
    "raw.idmap",
    "volatile.base_image",
    "volatile.eth0.hwaddr",
    "security.privileged",
    "security.idmap.isolated",
    "security.idmap.base",
    "security.syscalls.intercept.mknod",
    "security.syscalls.deny_default",
    "linux.kernel_modules",
];

/// Devices that are not a disk with a pool and no host-path source, nor a nic with a network
/// and no nictype or parent.
fn restricted_devices() -> Vec<Value> {
    vec![
        json!({"type": "disk", "path": "/srv", "source": "/srv"}),
        json!({"type": "disk", "pool": "default", "path": "/mnt", "source": "/etc"}),
        json!({"type": "disk", "path": "/data", "source": "vol1"}),
        json!({"type": "nic", "nictype": "bridged", "parent": "incusbr0"}),
        json!({"type": "nic", "network": "incusbr0", "nictype": "macvlan"}),
        json!({"type": "nic", "network": "incusbr0", "parent": "eth0"}),
        json!({"type": "nic", "name": "eth1"}),
        json!({"type": "unix-char", "path": "/dev/kvm"}),
        json!({"type": "gpu"}),
        json!({"type": "proxy", "listen": "tcp:0.0.0.0:80", "connect": "tcp:127.0.0.1:80"}),
        json!({"type": "usb"}),
        json!({}),
    ]
}

/// The two operations that take config and devices, with the rest of a valid input.
fn with_field(operation: &str, field: &str, value: Value) -> Value {
    let mut input = match operation {
        "incus_instance_create" => {
            json!({"name": "web", "source": {"type": "image", "alias": "busybox"}})
        }
        _ => json!({"name": "web"}),
    };
    input[field] = value;
    input
}

const OPERATIONS: [&str; 2] = ["incus_instance_create", "incus_instance_update"];

/// `restricted_input::denied_by_default::*`.
pub(crate) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    vec![
        with_session(
            "restricted_input::denied_by_default::every_restricted_config_key_is_refused".into(),
            factory,
            |session: &Session| {
                for operation in OPERATIONS {
                    for key in RESTRICTED_KEYS {
                        let config = json!({ *key: "1" });
                        refused(session, operation, with_field(operation, "config", config))?;
                    }
                }
                Ok(())
            },
        ),
        with_session(
            "restricted_input::denied_by_default::every_other_device_is_refused".into(),
            factory,
            |session: &Session| {
                for operation in OPERATIONS {
                    for device in restricted_devices() {
                        let devices = json!({ "dev0": device });
                        refused(
                            session,
                            operation,
                            with_field(operation, "devices", devices),
                        )?;
                    }
                }
                Ok(())
            },
        ),
        with_session(
            "restricted_input::denied_by_default::pool_disks_and_network_nics_are_not_restricted"
                .into(),
            factory,
            |session: &Session| {
                let devices = json!({
                    "root": {"type": "disk", "pool": "default", "path": "/"},
                    "data": {"type": "disk", "pool": "default", "path": "/data", "source": "vol1"},
                    "eth0": {"type": "nic", "network": "incusbr0", "name": "eth0"},
                });
                let config = json!({"limits.cpu": "1", "boot.autostart": "true", "user.raw": "x"});
                for operation in OPERATIONS {
                    let mut input = with_field(operation, "devices", devices.clone());
                    input["config"] = config.clone();
                    let called = session.call(operation, &["incus.write".to_owned()], input);
                    if called.error_kind() == Some("restricted_input") {
                        return Err(called.failure("plain devices and config were refused"));
                    }
                    called.schema_valid()?;
                }
                Ok(())
            },
        ),
    ]
}

fn refused(session: &Session, operation: &str, input: Value) -> Result<(), String> {
    session
        .call(operation, &["incus.write".to_owned()], input)
        .refused_before_backend("restricted_input")
}
