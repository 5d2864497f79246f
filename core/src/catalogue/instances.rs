//! Instance operations: list, get, create, update, delete, state get/update and exec.

use serde_json::json;

use super::schema::{self, Object};
use super::{Confirmation, Native, Scope, Spec};

pub(super) fn specs() -> Vec<Spec> {
    vec![
        list(),
        get(),
        create(),
        update(),
        delete(),
        state_get(),
        state_update(),
        exec(),
    ]
}

fn name() -> serde_json::Value {
    schema::instance_name("Instance name.")
}

fn list() -> Spec {
    Spec {
        name: "incus_instance_list",
        title: "List instances",
        description: concat!(
            "Lists the containers and virtual machines of a project (native instance objects: name, status, type, config, devices, profiles, ...).",
            list_returns!(),
            guest_data_note!(),
            project_note!()
        ),
        example: json!({"project": "default", "limit": 20}),
        resource: "instance",
        scope: Scope::Read,
        native: Native::InstanceList,
        confirmation: None,
        requires: &["GetInstances"],
        input: Object::new().optional("limit", schema::limit()),
        success: schema::list_success(),
    }
}

fn get() -> Spec {
    Spec {
        name: "incus_instance_get",
        title: "Get an instance",
        description: concat!(
            "Reads one instance (container or virtual machine) by name, with its native ETag for a later conditional incus_instance_update.",
            " Returns {\"item\": <native instance>, \"etag\": <string or null>}. A missing instance is a native error with http_status 404. Results are at most 256 KiB of JSON (output_limit otherwise).",
            guest_data_note!(),
            project_note!()
        ),
        example: json!({"name": "web"}),
        resource: "instance",
        scope: Scope::Read,
        native: Native::InstanceGet,
        confirmation: None,
        requires: &["GetInstance"],
        input: Object::new().required("name", name()),
        success: schema::item_with_etag_success(),
    }
}

fn create() -> Spec {
    let source = Object::new()
        .required(
            "type",
            json!({"enum": ["image", "none"], "description": "image: from an image (alias or fingerprint); none: an empty instance."}),
        )
        .optional(
            "alias",
            json!({
                "type": "string",
                "description": "Image alias on the local server or on source.remote (for example busybox or debian/12).",
                "minLength": 1,
                "maxLength": 255,
                "pattern": "^[^\\s]+$",
            }),
        )
        .optional("fingerprint", schema::fingerprint_prefix())
        .optional(
            "remote",
            json!({
                "type": "string",
                "description": "Name of a host-approved image server (for example images); never a URL.",
                "minLength": 1,
                "maxLength": 64,
                "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]*$",
            }),
        )
        .keyword(
            "if",
            json!({"properties": {"type": {"const": "image"}}, "required": ["type"]}),
        )
        .keyword(
            "then",
            json!({"anyOf": [{"required": ["alias"]}, {"required": ["fingerprint"]}]}),
        )
        .build();
    Spec {
        name: "incus_instance_create",
        title: "Create an instance",
        description: concat!(
            "Creates a container or virtual machine from an image (source.alias or source.fingerprint, optionally on a host-approved source.remote named by the host) or empty (source.type none), with native config, devices, profiles, description and ephemeral. Set start to start it once created.",
            " Safety (SECURITY.md): every config value and device field is checked by its key's rule, and a value outside it (a device name Incus 7.0 refuses, a snapshots.pattern outside the safe grammar, a malformed number, ...) is invalid_input. Config keys outside Incus's plain instance keys (raw.*, volatile.*, security.privileged, security.idmap.*, security.syscalls.*, linux.kernel_modules, security.nesting, nvidia.*, unknown keys, keys of a newer Incus whose API extension the server does not report, ...), host-impact values past their bound (limits.kernel.* that raise a host limit, boot.host_shutdown_timeout over 300, a schedule more often than hourly without a short expiry, ...) and devices other than a pool disk (no host-path source) or a nic on a managed bridge or OVN network (read), each with only its type's allowed keys (no ipv4.routes*, ipv6.routes*, host_name, hwaddr, vlan, security.*, limits.* on a nic), are refused with restricted_input unless the host allows them; guest-code keys (cloud-init.*, environment.*, user.user-data, user.vendor-data, user.meta-data, user.network-config, smbios11.*, ...) also need incus.exec, and ephemeral true also needs incus.delete (scope_missing). The same holds for the profiles the instance gets: without profiles, the source image's profiles (or default) are read, checked and sent explicitly.",
            " A duplicate name or an unknown alias is reported by Incus inside the operation (status failed).",
            mutation_returns!(),
            project_note!()
        ),
        example: json!({
            "name": "web",
            "source": {"type": "image", "alias": "busybox"},
            "config": {"limits.cpu": "1"},
            "start": true,
            "wait_seconds": 30
        }),
        resource: "instance",
        scope: Scope::Write,
        native: Native::InstanceCreate,
        confirmation: None,
        requires: &["CreateInstance", "GetOperationWait"],
        input: Object::new()
            .required("name", name())
            .required("source", source)
            .optional(
                "type",
                json!({"enum": ["container", "virtual-machine"], "description": "Instance type; container when absent."}),
            )
            .optional("config", schema::config())
            .optional("devices", schema::devices())
            .optional("profiles", schema::profiles())
            .optional("description", schema::description())
            .optional("ephemeral", schema::ephemeral())
            .optional(
                "instance_type",
                json!({"type": "string", "description": "Cloud instance type (for example t2.micro or c2-m4), mapped by Incus to limits.", "minLength": 1, "maxLength": 64, "pattern": "^[A-Za-z0-9][A-Za-z0-9_.:-]*$"}),
            )
            .optional(
                "start",
                json!({"type": "boolean", "description": "Start the instance once created."}),
            )
            .optional("wait_seconds", schema::wait_seconds()),
        success: schema::mutation_success(),
    }
}

fn update() -> Spec {
    let writable = ["config", "devices", "profiles", "description", "ephemeral"];
    let any_writable: Vec<serde_json::Value> = writable
        .iter()
        .map(|field| json!({"required": [field]}))
        .collect();
    Spec {
        name: "incus_instance_update",
        title: "Update an instance's config, devices, profiles, description or ephemeral flag",
        description: concat!(
            "Sends one conditional PATCH of only the given fields: config keys are added or overwritten (a key set to \"\" is removed, so a profile's value for it applies, and is judged: without profiles in the input, the instance and its profiles are read first), devices are merged by name, profiles are replaced, description and ephemeral are set. The current description is kept when description is absent.",
            " Pass etag from incus_instance_get to refuse the update if the instance changed since (a native error with http_status 412); without etag the current ETag is read first.",
            " Safety (SECURITY.md): the value rules of incus_instance_create apply (invalid_input), and its restricted config keys, values and devices, in the input or in the profiles it names, are refused with restricted_input unless the host allows them; guest-code keys (cloud-init.*, environment.*, user.user-data, ...) also need incus.exec, and ephemeral true also needs incus.delete, since Incus deletes an ephemeral instance when it stops (scope_missing).",
            " Returns {\"status\": \"completed\"|\"uncertain\", \"etag_source\": \"input\"|\"read\", \"etag\": <the ETag sent>}; uncertain means the PATCH may have been applied but no response was decoded (nothing is resent), and then \"reason\" says why.",
            project_note!()
        ),
        example: json!({"name": "web", "config": {"limits.memory": "512MiB"}}),
        resource: "instance",
        scope: Scope::Write,
        native: Native::InstanceUpdate,
        confirmation: None,
        requires: &["PatchInstance", "GetInstance"],
        input: Object::new()
            .required("name", name())
            .optional("etag", schema::etag())
            .optional("config", schema::config())
            .optional("devices", schema::devices())
            .optional("profiles", schema::profiles())
            .optional("description", schema::description())
            .optional("ephemeral", schema::ephemeral())
            .keyword("anyOf", json!(any_writable)),
        success: schema::update_success(),
    }
}

fn delete() -> Spec {
    Spec {
        name: "incus_instance_delete",
        title: "Delete a stopped instance and its snapshots",
        description: concat!(
            "Deletes an instance with all its snapshots. Destructive: confirm must repeat the instance name exactly (for name web, confirm web); anything else, such as \"yes\", is refused before any request. Incus refuses a running instance (native error, http_status 400): stop it first with incus_instance_state_update.",
            mutation_returns!(),
            project_note!()
        ),
        example: json!({"name": "web", "confirm": "web"}),
        resource: "instance",
        scope: Scope::Delete,
        native: Native::InstanceDelete,
        confirmation: Some(Confirmation::InstanceName),
        requires: &["DeleteInstance", "GetOperationWait"],
        input: Object::new()
            .required("name", name())
            .optional("wait_seconds", schema::wait_seconds()),
        success: schema::mutation_success(),
    }
}

fn state_get() -> Spec {
    Spec {
        name: "incus_instance_state_get",
        title: "Get an instance's runtime state",
        description: concat!(
            "Reads the runtime state of one instance: status, pid, processes, CPU, memory, disk and network (addresses and counters; null when stopped).",
            item_returns!(),
            project_note!()
        ),
        example: json!({"name": "web"}),
        resource: "instance",
        scope: Scope::Read,
        native: Native::InstanceStateGet,
        confirmation: None,
        requires: &["GetInstanceState"],
        input: Object::new().required("name", name()),
        success: schema::item_success(),
    }
}

fn state_update() -> Spec {
    Spec {
        name: "incus_instance_state_update",
        title: "Start, stop, restart, freeze or unfreeze an instance",
        description: concat!(
            "Changes an instance's run state with action start, stop, restart, freeze or unfreeze. For stop and restart, timeout is the clean-shutdown time in seconds (0 or force true kills at once; a negative timeout means 600). stateful saves or restores the runtime state where supported.",
            " Starting a running instance or stopping a stopped one fails inside the operation (status failed).",
            " Safety (SECURITY.md): Incus deletes an ephemeral instance, with its snapshots, when it stops, so a stop by a caller without incus.delete first reads the instance and is refused with scope_missing if it is ephemeral (restart does not delete).",
            mutation_returns!(),
            project_note!()
        ),
        example: json!({"name": "web", "action": "stop", "timeout": 30, "wait_seconds": 40}),
        resource: "instance",
        scope: Scope::Write,
        native: Native::InstanceStateUpdate,
        confirmation: None,
        requires: &["UpdateInstanceState", "GetOperationWait"],
        input: Object::new()
            .required("name", name())
            .required(
                "action",
                json!({"enum": ["start", "stop", "restart", "freeze", "unfreeze"]}),
            )
            .optional(
                "force",
                json!({"type": "boolean", "description": "Kill instead of a clean shutdown (stop, restart)."}),
            )
            .optional(
                "stateful",
                json!({"type": "boolean", "description": "Save (stop) or restore (start) the runtime state."}),
            )
            .optional(
                "timeout",
                json!({"type": "integer", "description": "Clean-shutdown time in seconds for stop and restart; negative means 600.", "minimum": -1, "maximum": 600}),
            )
            .optional("wait_seconds", schema::wait_seconds()),
        success: schema::mutation_success(),
    }
}

fn exec() -> Spec {
    Spec {
        name: "incus_instance_exec",
        title: "Run one noninteractive command in a running instance",
        description: concat!(
            "Runs one command (argv, no shell unless you call one, no PTY, nothing recorded) in a running instance and collects its exit code, stdout and stderr.",
            " Bounds: command is 1 to 64 arguments of at most 4096 characters; environment at most 64 variables; stdin at most 64 KiB of UTF-8, then closed; timeout_seconds default 30, at most 300 (also capped by the host connection's stream timeout minus a 5 s kill grace). The serialized input is at most 1 MiB.",
            " Returns {\"status\", \"exit_code\", \"stdout\", \"stderr\", \"duration_ms\", \"timeout_seconds\", \"operation_id\", \"operation\"}. Each stream is {\"data\", \"encoding\": \"utf-8\"|\"base64\" (base64 when not UTF-8), \"bytes\" (total seen), \"captured_bytes\" (first 64 KiB), \"truncated\"}.",
            " status: completed (the command exited on its own and the exit was observed; a nonzero exit_code is not an error; the SIGKILL sent at the duration may have found it already exiting, then exit_code is not 137), timed_out (SIGKILL sent once at the duration ended it), output_limited (SIGKILL sent once past 64 MiB of output, or half the connection's max_stream_bytes), failed (the operation ended in failure without an exit code; \"reason\" is Incus's error), running (exit not observed; use operation_id), uncertain (the request may have started the command but no response was decoded; \"reason\" says why when it is known). Nothing is resent.",
            project_note!()
        ),
        example: json!({
            "name": "web",
            "command": ["sh", "-c", "uname -a"],
            "environment": {"LANG": "C.UTF-8"},
            "timeout_seconds": 20
        }),
        resource: "instance",
        scope: Scope::Exec,
        native: Native::InstanceExec,
        confirmation: None,
        requires: &["ExecInstance", "stream:S01"],
        input: Object::new()
            .required("name", name())
            .required(
                "command",
                json!({
                    "type": "array",
                    "description": "argv: the program and its arguments.",
                    "minItems": 1,
                    "maxItems": schema::MAX_ARGUMENTS,
                    "items": {"type": "string", "maxLength": schema::MAX_ARGUMENT_CHARS},
                }),
            )
            .optional(
                "environment",
                json!({
                    "type": "object",
                    "description": "Extra environment variables, over Incus's defaults.",
                    "maxProperties": schema::MAX_ENVIRONMENT_VARIABLES,
                    "propertyNames": {"minLength": 1, "maxLength": 255, "pattern": "^[^=]+$"},
                    "additionalProperties": {"type": "string", "maxLength": schema::MAX_ARGUMENT_CHARS},
                }),
            )
            .optional(
                "cwd",
                json!({"type": "string", "description": "Working directory inside the instance.", "minLength": 1, "maxLength": 4096, "pattern": "^/"}),
            )
            .optional(
                "user",
                json!({"type": "integer", "description": "User ID to run as inside the instance.", "minimum": 0, "maximum": 4294967295u64}),
            )
            .optional(
                "group",
                json!({"type": "integer", "description": "Group ID to run as inside the instance.", "minimum": 0, "maximum": 4294967295u64}),
            )
            .optional(
                "stdin",
                json!({"type": "string", "description": "Text sent to the command's stdin, then closed (at most 64 KiB of UTF-8).", "maxLength": schema::MAX_STDIN_BYTES}),
            )
            .optional(
                "timeout_seconds",
                json!({
                    "type": "integer",
                    "description": "Duration bound; the command is killed once when it is reached.",
                    "minimum": 1,
                    "maximum": schema::MAX_TIMEOUT_SECONDS,
                    "default": schema::DEFAULT_TIMEOUT_SECONDS,
                }),
            ),
        success: schema::exec_success(),
    }
}
