//! The clause registry: every rule of the specification that a test checks, with the exact
//! spec sentence it comes from, and the generator of `CLAUSES.md`.
//!
//! A clause id is `area::clause`; tests are named `area::clause::case`, and scenario files list
//! the clause ids they check. Several clauses may quote the same sentence when it holds several
//! rules. Sentences are quoted verbatim (table rows as written, whitespace that the spec's
//! inline code swallowed restored); they use the spec's Elixir vocabulary: `run/3` is
//! `run(name, input, options)`, a behaviour is the `Host` trait, a raising or exiting callback is
//! one that panics or errors.

use std::collections::BTreeMap;

/// One rule of the specification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Clause {
    /// `area::clause`.
    pub(crate) id: &'static str,
    /// The spec sentence (or table row) the rule comes from.
    pub(crate) sentence: &'static str,
}

impl Clause {
    /// The area: the part of the id before `::`.
    pub(crate) fn area(&self) -> &'static str {
        self.id.split("::").next().unwrap_or(self.id)
    }
}

const fn clause(id: &'static str, sentence: &'static str) -> Clause {
    Clause { id, sentence }
}

const CALLBACK_FAILURE: &str = "A missing, raising, exiting or malformed callback denies the call \
before any backend request; tool input cannot name a socket, URL, credential, owner or host path.";

const CHECK_ORDER: &str = "run/3 checks, in order: scope, input schema and byte bounds, \
confirmation, restricted input, binding/2, authorize/3, image remote resolution and then discovery \
(when the binding returned a connection and context).";

/// Every registered clause, grouped by area in spec order.
pub(crate) const CLAUSES: &[Clause] = &[
    // Catalogue
    clause("catalogue::canonical_names", "Opsmaru.Incus.Operations defines each agent-facing Incus operation once: a canonical incus_<resource>_<verb> name, input/output JSON schemas, a required scope, a destructive-confirmation rule and bounds."),
    clause("catalogue::public_contract", "Macus and central Opsmaru expose the same descriptors, so names and schemas are public contract from the first consumer pin."),
    clause("catalogue::no_side_effects", "Nothing here starts a process, endpoint, task store or connection."),
    clause("catalogue::synchronous", "Every operation runs synchronously through the public Opsmaru.Incus client."),
    clause("catalogue::table", "| Operation | Scope | Confirmation (confirm must repeat) | Client evidence |"),
    clause("catalogue::pinned_fixture", "The full schemas, titles, descriptions and bounds are pinned in test/fixtures/incus/operations-catalogue.json; Operations.describe/1 returns the same data at runtime."),
    clause("catalogue::deferred_operations", "Not exported (Operations.unavailable/0): incus_instance_copy, incus_instance_rename and incus_instance_move, deferred by scope (user decision 2026-11-04), not for missing evidence."),
    clause("catalogue::streaming_excluded", "Events, console attachment and file or image binary transfer are excluded because they need streaming beyond a bounded result."),
    // Evidence gate
    clause("evidence::tools_not_coverage", "Tool success is not client coverage: priv/incus/coverage.json and the endpoint ledgers are unchanged by tools."),
    clause("evidence::named_requirements", "Each descriptor names the client requirements it uses: a native method, a helper (helper:connect) or a streaming contract (stream:S01)."),
    clause("evidence::compile_time", "Opsmaru.Incus.Operations.Evidence reads endpoint-inventory.json and coverage.json at compile time."),
    clause("evidence::requirement_evidence", "A requirement has evidence only when every endpoint row mapping it is behavior-complete under a completion record (a stream contract must be certified) and its Go coverage entry, where one exists, names an implementation and evidence files."),
    clause("evidence::gate", "all/0 exports only descriptors whose requirements all have evidence; any other descriptor is listed by unavailable/0 with its missing requirements."),
    clause("evidence::fixtures", "| Fixtures | test/operations_*_test.exs over fake Unix and mutual HTTPS Incus | run by mise run check |"),
    // Scopes
    clause("scopes::read", "incus.read | server, instance, snapshot, image, project, profile, network, storage and operation inspection; operation get/wait |"),
    clause("scopes::write", "incus.write | instance create/update/state, snapshot create, operation cancel |"),
    clause("scopes::exec", "incus.exec | bounded guest exec |"),
    clause("scopes::delete", "incus.delete | instance, snapshot and image deletion; snapshot restore |"),
    clause("scopes::host_verified", "Scopes are the host-verified grants; they never come from tool input."),
    clause("scopes::per_operation", "If one tool fronts many operations, pass the caller's verified scopes to run/3: it enforces each operation's own scope, so access to the fronting tool does not grant every operation."),
    // Confirmation
    clause("confirmation::exact_resource", "A destructive operation also requires confirm to repeat the affected resource exactly (web, web/snap0 or the full 64-character image fingerprint)."),
    clause("confirmation::inferred_consent", "Inferred consent such as \"yes\" is refused."),
    // Bounds
    clause("byte_bounds::input", "| Input | 16 KiB for reads, 64 KiB for mutations, 1 MiB for exec |"),
    clause("inspection::output_bound", "| Tool output | 256 KiB of JSON |"),
    clause("inspection::list_limit", "| List items | 100 by default, at most 500 (limit) |"),
    clause("timeouts::wait_bounds", "| Mutation and operation wait | 10 s by default, at most 60 s (wait_seconds) |"),
    clause("exec::duration_bounds", "| Exec duration | 30 s by default, at most 300 s (timeout_seconds) |"),
    clause("exec::argv_environment", "| Exec argv / environment | 64 arguments of at most 4096 characters; 64 variables |"),
    clause("exec::stdin_bound", "| Exec stdin | 64 KiB UTF-8 |"),
    clause("exec::capture", "| Exec capture | first 64 KiB per stream, the rest counted |"),
    clause("exec::stream_total", "| Exec stream total | 64 MiB, or half the connection's max_stream_bytes |"),
    clause("inspection::native_order", "Lists keep native order and report the native total (count) and truncated."),
    clause("inspection::truncation", "A list that exceeds the output bound drops items from the end; a single item that alone exceeds it fails with output_limit."),
    clause("timeouts::request_bound", "Every native request is bounded by the host connection's timeout."),
    clause("timeouts::effective_wait", "The effective server-side wait is min(wait_seconds, floor(timeout / 1000) - 1), reported as waited_seconds; configure at least 61 s to allow the full 60 s wait."),
    clause("timeouts::exec_duration_cap", "The exec duration is likewise capped at stream_timeout minus the 5 s kill grace and reported as timeout_seconds."),
    // Host binding and check order
    clause("binding::trusted_backend", "The trusted backend for this caller: a discovered client, or a connection and context that the operation discovers after authorization."),
    clause("authorization::validated_input", "Validated, normalized input, including any native \"project\"."),
    clause("image_remote::host_approved", "Optional: host-approved image servers, named in input only by remote name."),
    clause("restricted_input::allow_callback", "Optional: allow restricted config keys or devices."),
    clause("check_order::sequence", CHECK_ORDER),
    clause("discovery::after_authorization", CHECK_ORDER),
    clause("authorization::project_after_authorization", "The native project is selected only after authorization."),
    clause("binding::callback_failure_denies", CALLBACK_FAILURE),
    clause("authorization::callback_failure_denies", CALLBACK_FAILURE),
    clause("input::no_endpoint_names", CALLBACK_FAILURE),
    clause("restricted_input::denied_by_default", "Restricted create/update input, denied unless allow_restricted?/3 returns true: config keys raw.*, volatile.*, security.privileged, security.idmap.*, security.syscalls.* and linux.kernel_modules; any device except a disk with a pool and no host-path source, or a nic with a network and no nictype or parent."),
    // Results
    clause("results::match_output_schema", "Success results are JSON objects; failures are {\"error\": {\"kind\", \"message\", ...}} and match each tool's output schema."),
    clause("inspection::shapes", "Inspection: {\"items\", \"count\", \"truncated\"} or {\"item\"}; incus_instance_get adds the native etag."),
    clause("inspection::passthrough", "Native data, including VM-shaped instances and unknown fields, passes through unchanged."),
    clause("mutation::shape", "Mutations: {\"status\", \"operation_id\", \"operation\", \"waited_seconds\", \"wait_error\"}."),
    clause("mutation::statuses", "completed and failed mean the native outcome was observed; running means it was not observed within the wait (including a local wait deadline, which never cancels anything); uncertain means the request may have been accepted but no response was decoded."),
    clause("mutation::never_resent", "Nothing is resent automatically."),
    clause("mutation::native_rejection", "A native rejection before acceptance is an error with http_status, error_code and the native message."),
    clause("update::conditional_patch", "incus_instance_update sends a conditional PATCH of only the given fields."),
    clause("update::etag_source", "Without etag it reads the current ETag first; etag_source says which."),
    clause("cancel::statuses", "incus_operation_cancel reads the operation first and reports already_final, unsupported (may_cancel is false), requested (one native DELETE was accepted) or uncertain."),
    clause("cancel::completion_authoritative", "Completion stays authoritative."),
    clause("exec::noninteractive", "incus_instance_exec runs one noninteractive command (no PTY, no recorded output)."),
    clause("exec::encoding", "Output is returned as UTF-8, or base64 when it is not UTF-8, with byte counts and a truncated flag per stream."),
    clause("exec::kill", "At the duration, or past the stream total, a short-lived process linked to the call sends SIGKILL once over the control channel and collection has 5 s to observe the exit (timed_out or output_limited)."),
    clause("exec::unobserved_exit", "An exit not observed is running with the operation identity."),
    // Exposing operations
    clause("exposure::no_protocol_binding", "The library ships no protocol binding."),
    clause("exposure::host_builds_tools", "A host builds its own over all/0, fetch/1, describe/1 and run/3, for example one tool per operation, or a search tool over describe/1 plus an execute tool that calls run/3."),
    // Safety: rules of SECURITY.md. Each quotes the rule; one beyond the specification's letter says
    // so and why ("Beyond the specification: ...").
    // Safety: what create, update and state changes may write (suites/safety/grants.rs)
    clause("safety::ephemeral_update_needs_delete", "Beyond the specification: an incus_instance_update that sets ephemeral to true needs incus.delete as well as incus.write (scope_missing otherwise, before any backend request), since Incus deletes an ephemeral instance, with its snapshots, when it next stops."),
    clause("safety::ephemeral_stop_needs_delete", "Beyond the specification: an incus_instance_state_update stop by a caller without incus.delete first reads the instance (GET /1.0/instances/{name}, one read) and is refused with scope_missing when it is ephemeral, since Incus deletes it when it stops; restart (Incus clears the flag for it), start, freeze and unfreeze read nothing and are not refused."),
    clause("safety::implied_profiles_checked", "Beyond the specification: a create that names no profiles gets the profiles Incus would apply (the local source image's profiles, read as GET /1.0/images/aliases?recursion=1 for an alias, then GET /1.0/images/{fingerprint}, in the call's project, else default); they are read and checked like named profiles and sent explicitly, so restricted config or devices never arrive through a profile the input does not name."),
    clause("safety::config_keys_allowlisted", "Beyond the specification: only instance config keys of Incus 6.0.4's key list that stay inside the instance pass without the host; besides the specification's raw.*, volatile.*, security.privileged, security.idmap.*, security.syscalls.* and linux.kernel_modules, the keys security.nesting, security.guestapi.images, nvidia.* and any key Incus does not know are restricted items, in the input and in the profiles the call applies."),
    clause("safety::device_keys_allowlisted", "Beyond the specification: a disk with a pool and a nic with a network are plain only with their type's allowed keys from Incus 6.0.4's device schemas; a nic's ipv4.routes, ipv6.routes, *.routes.external, host_name, hwaddr, vlan, security.*, limits.* and any other key, a disk's host path, propagation, raw.mount.options, shift, recursive or ceph.* make the device a restricted item."),
    clause("safety::guest_code_needs_exec", "Beyond the specification: config keys whose value the guest runs as root (cloud-init.user-data, cloud-init.vendor-data, cloud-init.network-config, user.user-data, user.vendor-data, user.network-config, user.meta-data, environment.*, which bash and the dynamic loader run at every exec and in init, and from Incus 7.0 oci.entrypoint, oci.cwd, oci.uid, oci.gid, initial.secureboot.*, initial.nvram.*) and the credentials the guest takes (smbios11.*, systemd.credential.*) need incus.exec as well as incus.write, in the input (before any backend request) and in the profiles the call applies or the snapshot it restores (after their reads); scope_missing otherwise."),
    // Safety: the value rules (suites/safety/values.rs; the cases in conformance/data/safety-values.json)
    clause("safety::snapshot_pattern_grammar", "Beyond the specification: snapshots.pattern passes only in a small grammar whose every rendering is a valid Incus 7.0 snapshot name (literal ASCII letters, digits, -, _ and ., {{ creation_date|date:\"L\" }} with a layout of the numeric tokens 2006 01 02 15 04 05 and separators, %d at most once; starting and ending with a letter, digit, date or %d; at most 64 bytes rendered): outside it, invalid_input before any backend request in the input, a restricted item from a profile or a restored snapshot, and a snapshot created without a name first reads the instance (one read) and is refused when the pattern Incus would render is outside it, as is an incus_instance_update that sets a snapshots.schedule that fires without a snapshots.pattern in the same write (scheduled snapshots are named by the same pattern; one read of the instance). Incus 6.0.4 names an unnamed snapshot .. for the pattern .., and deleting that instance deleted every container snapshot of the pool."),
    clause("safety::snapshot_names_by_incus_7", "Beyond the specification: the name of a new snapshot (incus_instance_snapshot_create) passes only by Incus 7.0's rule (validate.IsAPIName: 1 to 64 bytes, starting and ending with an ASCII letter or digit, no white space, none of $ ? & + \" ' ` * /) and the core's own (no control character, no %): invalid_input before any backend request. Incus 6.0.4 refuses only / and takes a name such as -rf, x. or ..\\u0000 into host paths."),
    clause("safety::unset_keys_fall_back_to_profiles", "Beyond the specification: a config key that a create, update or restore sets to \"\" is unset, since Incus stores no empty value, so the value of the instance's profiles applies and is judged: with the profiles a call names or implies, and, for an incus_instance_update that names no profiles, after reading the instance (GET /1.0/instances/{name}) and its profiles (GET /1.0/profiles/{name}, each); a value a write could not set (a host-impact value past its bound, a pattern outside the grammar, a frequent schedule without its expiry) is a restricted item."),
    clause("safety::device_names_by_incus_7", "Beyond the specification: a device name passes only by Incus 7.0's rule (validate.IsAPIName: 1 to 64 bytes, starting and ending with a letter or digit, no white space, none of $ ? & + \" ' ` * /) and the core's own (printable ASCII, no %), on every operation that carries devices: invalid_input before any backend request in the input, a restricted item in the profiles a call applies or the snapshot it restores. Incus 6.0.4 accepts any name of up to 64 characters and joins a VM disk's name into host file paths and QEMU's configuration."),
    clause("safety::config_values_checked", "Beyond the specification: every config key that passes without the host has a rule for its value, the strictest of Incus 6.0.4 and 7.0 (7.0's where it validates and 6.0.4 does not) or the core's own where both accept a hostile value (limits.kernel.* only N, unlimited or soft:hard; linux.sysctl.* names of dot-separated [A-Za-z0-9_-] segments and values without control characters; key names of printable ASCII); a value outside its rule is invalid_input before any backend request in the input, a restricted item in what the call applies."),
    clause("safety::device_values_checked", "Beyond the specification: every field of a plain nic or disk has a rule for its value (a disk's source a volume name by the device-name rule, its path absolute without . or .. components, a nic's name an interface name, addresses, MTU, bus and cache values from Incus's own lists); a value outside its rule is invalid_input before any backend request in the input, a restricted item in what the call applies."),
    clause("safety::host_impact_bounded", "Beyond the specification: keys whose value reaches the host past the instance's own limits are plain only within a bound, and a restricted item past it: limits.kernel.rtprio and nice above 0, memlock above 8 MiB, nofile above 524288, sigpending above 65536, msgqueue above 819200 (unlimited included); boot.host_shutdown_timeout and boot.autostart.delay outside 0 to 300 seconds; limits.memory.oom_priority below 0 (Incus 7.0); a snapshots.schedule that can fire more than once an hour without a snapshots.expiry of at most 1d in the same write (its triggers taken together, as Incus fires them: two minutes an hour, an alias beside a minute, and @startup, which boot.autorestart repeats up to 10 times a minute, are more than hourly), and the removal of snapshots.expiry, or raising it past 1d, without the schedule in the same write."),
    clause("safety::nic_network_read", "Beyond the specification: a plain nic's network, in the input or in the profiles or snapshot the call applies, is read after discovery (GET /1.0/networks/{name}, once per network) and the nic is a restricted item unless the network is a managed bridge or OVN network: on a managed physical network Incus makes the nic nictype=physical and moves the host's uplink into the guest, and macvlan and SR-IOV networks attach to the host's own interfaces."),
    clause("safety::restore_judged_like_a_write", "Beyond the specification: incus_instance_snapshot_restore first reads the snapshot (GET /1.0/instances/{name}/snapshots/{snapshot}, one read) and the profiles it lists, and judges the config, devices and profiles Incus writes back (LocalConfig, LocalDevices, Profiles; volatile.* excepted, Incus's own record) by the rules of create and update: a restricted item needs the host's allow_restricted, guest code needs incus.exec. A container snapshot whose ID map (volatile.idmap.next, else volatile.idmap.current, else volatile.last_state.idmap) is empty or unreadable is a restricted item: Incus 6.0.4 starts the restored container by that map, without a user namespace, as a privileged container (a snapshot taken while a profile, since changed, made it privileged). A snapshot that does not exist is restored as asked, and Incus fails the operation."),
    clause("safety::ephemeral_create_needs_delete", "Beyond the specification: an incus_instance_create with ephemeral true needs incus.delete as well as incus.write (scope_missing otherwise, before any backend request): Incus deletes an ephemeral instance, with its snapshots, when it stops."),
    clause("safety::keys_by_server_extensions", "Beyond the specification: the core's key and field rules cover Incus 6.0.4 and 7.0 (each key of 7.0's configuration metadata judged plain, host-impact, guest-code, secret or restricted), chosen by what the server reports: a key or device field that a newer line brought is plain only where the server lists the API extension that introduced it, and a restricted item elsewhere, after discovery and before any other request."),
    clause("safety::adversary", "Beyond the specification: whatever a caller with incus.write (and incus.exec) puts in a create or update, every key of Incus 6.0.4's and 7.0.2's configuration metadata and every device type and field crossed with hostile values (templates, traversal, control characters, percent-encoding, unicode look-alikes, huge and negative numbers) and hostile device names, the core refuses it or what reaches Incus satisfies the value rules, as an oracle written apart from the core judges them."),
    clause("safety::allow_restricted_sees_values", "Beyond the specification: allow_restricted receives each restricted item with its value (a config key and its value, a device's whole config), so a host can allow one exact host path and refuse every other."),
    // Safety: what results never carry, and which operations a call sees (suites/safety/secrets.rs)
    clause("safety::server_credentials_redacted", "Beyond the specification: incus_server_get replaces the value of every server configuration key that holds a credential (Incus 6.0.4's loki.auth.password, openfga.api.token, network.ovn.client_key, acme.provider.environment, Incus 7.0's instances.tpm.platform_key, storage.linstor.client_key and the password of each logging target, logging.<name>.target.password, and the URLs core.proxy_http, core.proxy_https, loki.api.url, openfga.api.url and 7.0's storage.linstor.controller_connection and logging.<name>.target.address whenever the text holds @, so that a scheme-relative URL or a password holding /, ? or # is replaced whole) by \"[redacted]\", where the specification passes the native object unchanged: Incus itself hides none of them, and an agent with incus.read must not read the host's credentials."),
    clause("safety::image_credentials_redacted", "Beyond the specification: incus_image_get and incus_image_list replace a cached image's update_source.server by \"[redacted]\" whenever the text holds @: Incus keeps the server an image was fetched from as it was given (CreateImageSource), with the image server's user:password@ when it had one."),
    clause("safety::network_credentials_redacted", "Beyond the specification: incus_network_get and incus_network_list replace the value of every bgp.peers.<peer>.password key by \"[redacted]\", where the specification passes native objects unchanged."),
    clause("safety::operation_secrets_redacted", "Beyond the specification: every result that carries an Incus operation (incus_operation_list, _get, _wait, _cancel, and the operation of a mutation) replaces its metadata's secrets by \"[redacted]\": secret (trust, cluster-join and image tokens), fds (exec and console websockets), control, fs and criu (migrations); with a pending token's secret an agent could make itself a trusted Incus client."),
    clause("safety::operations_of_the_project_only", "Beyond the specification: incus_operation_get, _wait and _cancel act only on an operation that Incus lists for the call's project (one read of GET /1.0/operations?project=P first) and answer any other ID exactly as an unknown operation, sending nothing else; incus_operation_list shows only the project's operations. Incus itself finds an operation id in every project."),
    // Safety: what reads hand an agent beyond credentials (suites/safety/reads.rs)
    clause("safety::path_names_mean_themselves", "Beyond the specification: a snapshot name holding % or + is refused with invalid_input before any request (incus_instance_snapshot_get, _create, _delete, _restore), because Incus 6.0 and 7.0 decode a snapshot's path segment twice (s%31 names s1 there, a+b names a b), so a confirm repeating one name would delete another; every other name that goes into a path (instance, profile, network, storage pool, storage volume; fingerprints and operation IDs are hex) is decoded once by Incus and reaches only the object it names."),
    clause("safety::exec_sessions_redacted", "Beyond the specification: every result that carries an operation (incus_operation_list, _get, _wait, _cancel, a mutation's or an exec's operation) replaces the values of an exec session's environment by \"[redacted]\" (the variable names stay), and each argument of its command unless the caller holds incus.exec: the tokens an operator passes to a session never reach an agent that only reads."),
    clause("safety::guest_data_redacted", "Beyond the specification: instance, snapshot and profile reads (get and list) replace the values of environment.*, of the cloud-init data keys (cloud-init.user-data, cloud-init.vendor-data, cloud-init.network-config, user.user-data, user.vendor-data, user.network-config, user.meta-data) and of the credentials handed to the guest (smbios11.*, Incus 7.0's systemd.credential.* and systemd.credential-binary.*) in config and expanded_config by \"[redacted]\" unless the caller holds incus.exec: they hold what the guest is given (passwords, tokens), and only a caller that can run commands in the guest could read them there anyway."),
    clause("safety::used_by_of_visible_projects", "Beyond the specification: the used_by of a profile, project, network, storage pool or storage volume keeps the entries of the call's project, and those of another project only when the host's may_see_project answers true for it (asked once per project and call, concurrently, under the callback bound; no answer, or more than 64 other projects, hides them; by default no other project is visible), where Incus lists the instances of every project that uses a shared network or profile."),
    // Safety: results say what was observed (suites/safety/observed.rs)
    clause("safety::observed_failure", "completed and failed mean the native outcome was observed; running means it was not observed within the wait (including a local wait deadline, which never cancels anything); uncertain means the request may have been accepted but no response was decoded. (A standalone server answers every wait itself, so a wait that answers the operation's failure observed the outcome: failed. Where the wait answers the failed operation itself (Incus 7.0, from the API extension instance_oci_entrypoint), the result carries that final object and the operation is not read again; where it answers an error envelope without it (Incus 6.0), the operation is read back once, and when that read stalls, breaks or is refused the result is still failed, with operation null rather than an object that still says Running. On a cluster member the wait may have been forwarded, and a broken forward answers the same envelope: there only the operation read back final shows the outcome.)"),
    clause("safety::exec_failed_operation", "Beyond the specification: an exec whose operation ends in failure without an exit code (the command never started, or Incus lost it) is failed, with Incus's error as reason and exit_code null. The specification's exec statuses have no word for it: running would say the command may still run and completed that it exited, and neither was observed."),
    clause("safety::exec_kill_found_it_exiting", "Beyond the specification: after SIGKILL is sent at the duration, the exit code observed says what ended the command: the kill's 137 is timed_out, any other code means the command ended on its own before the signal reached it (SIGKILL cannot be caught), so it is completed with that code, never timed_out, and an agent is not led to run again a command that finished. (Past the stream total the exec stays output_limited whatever the code: the output was limited either way.)"),
    clause("safety::exec_end_awaited", "An exit not observed is running with the operation identity. (The exec awaits its operation's end from the start, beside its output, so an end that comes during a wait, or while a stream is still open, is observed and never reported as running.)"),
    clause("safety::exec_no_early_kill", "At the duration, or past the stream total, a short-lived process linked to the call sends SIGKILL once over the control channel and collection has 5 s to observe the exit (timed_out or output_limited). (Not before: a wait on the operation that breaks observed nothing, so the exec asks again, a read that changes nothing, rather than killing the command early and calling it timed_out.)"),
];

/// The clause with this id.
pub(crate) fn find(id: &str) -> Option<&'static Clause> {
    CLAUSES.iter().find(|c| c.id == id)
}

/// The tests of each clause, sorted by name, from tests given as (test name, clause ids) pairs.
pub(crate) fn tests_by_clause<'a>(
    tests: impl IntoIterator<Item = (&'a str, &'a [String])>,
) -> BTreeMap<&'a str, Vec<&'a str>> {
    let mut by_clause: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (name, clauses) in tests {
        for id in clauses {
            by_clause.entry(id.as_str()).or_default().push(name);
        }
    }
    by_clause
        .values_mut()
        .for_each(|names| names.sort_unstable());
    by_clause
}

/// Appends one clause's Markdown: its id, its sentence quoted, and its tests (or "not checked yet").
pub(crate) fn render_clause(out: &mut String, clause: &Clause, tests: Option<&Vec<&str>>) {
    out.push_str(&format!(
        "\n### `{}`\n\n> {}\n\n",
        clause.id, clause.sentence
    ));
    match tests {
        Some(names) => {
            for name in names {
                out.push_str(&format!("- `{name}`\n"));
            }
        }
        None => out.push_str("- not checked yet\n"),
    }
}

/// Renders `CLAUSES.md` from the registry and the registered tests, given as
/// (test name, clause ids) pairs.
pub(crate) fn render_markdown<'a>(
    tests: impl IntoIterator<Item = (&'a str, &'a [String])>,
) -> String {
    let by_clause = tests_by_clause(tests);
    let checked = CLAUSES
        .iter()
        .filter(|c| by_clause.contains_key(c.id))
        .count();
    let mut out = String::from(HEADER);
    out.push_str(&format!(
        "{checked} of {} clauses are checked by at least one test.\n",
        CLAUSES.len()
    ));
    let mut area = "";
    for clause in CLAUSES {
        if clause.area() != area {
            area = clause.area();
            out.push_str(&format!("\n## {area}\n"));
        }
        render_clause(&mut out, clause, by_clause.get(clause.id));
    }
    out
}

const HEADER: &str = "# Conformance clauses\n\n\
Generated from the registered tests of `incus-conformance` (`conformance/src/clauses.rs` and the \
suites); do not edit by hand. Regenerate with `BLESS=1 cargo test -p incus-conformance --lib clauses`.\n\n\
Each clause quotes the sentence of the specification it comes from and lists the tests that \
check it. Tests are named `area::clause::case`; scenario files (`scenario::<file>`) list their \
clauses. The spec's Elixir vocabulary maps to Rust: `run/3` is `run(name, input, options)`, a \
behaviour is the `Host` trait, a raising or exiting callback is one that panics or errors.\n\n";

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (the clause registry); a promise of the
    //! harness seen from outside (its command line, certification, the wire) goes in
    //! `tests/harness`.

    use super::*;
    use crate::runner::check::is_snake_segment;
    use std::collections::BTreeSet;

    #[test]
    fn clause_ids_are_unique_and_snake_case() {
        let mut seen = BTreeSet::new();
        for clause in CLAUSES {
            assert!(seen.insert(clause.id), "duplicate clause {}", clause.id);
            let parts: Vec<&str> = clause.id.split("::").collect();
            assert_eq!(parts.len(), 2, "{} is not area::clause", clause.id);
            assert!(parts.iter().all(|p| is_snake_segment(p)), "{}", clause.id);
            assert!(!clause.sentence.trim().is_empty(), "{}", clause.id);
        }
    }

    #[test]
    fn markdown_lists_tests_under_their_clause_and_marks_unchecked_ones() {
        let clauses = vec!["scopes::per_operation".to_owned()];
        let text = render_markdown([("scopes::per_operation::case", clauses.as_slice())]);
        assert!(text.contains("### `scopes::per_operation`\n\n> If one tool fronts"));
        assert!(text.contains("- `scopes::per_operation::case`"));
        assert!(text.contains("### `scopes::read`"));
        assert!(text.contains("- not checked yet"));
    }
}
