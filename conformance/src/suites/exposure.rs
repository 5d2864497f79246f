//! Exposure: the library ships no protocol binding, and a host builds its own tools over
//! `all`, `fetch`, `describe` and `run` (one tool per operation, or search plus execute).

use std::collections::BTreeSet;

use incus_operations::{Connection, RunOptions, Scope};
use serde_json::{json, Value};

use super::session::block_on;
use super::spec_table::{scopes_without, OPERATIONS};
use crate::embedded;
use crate::runner::Check;
use crate::scenario::fake;
use crate::scenario::format::FakeSetup;
use crate::ReferenceHost;

/// Server and protocol frameworks the core must not depend on.
const SERVER_CRATES: &[&str] = &[
    "axum",
    "warp",
    "actix-web",
    "actix-server",
    "rocket",
    "poem",
    "salvo",
    "tide",
    "tower-http",
    "tonic",
    "jsonrpsee",
    "rmcp",
    "mcp-server",
    "tiny_http",
];

/// Source text that would mean the core listens or serves.
const SERVING: &[&str] = &[
    "TcpListener",
    "UnixListener",
    "serve_connection",
    "hyper::server",
    "server::conn",
];

/// Why every exposure check runs only in-process.
const IN_PROCESS_ONLY: &str = "checks the Rust crate (its dependencies, its source, a Rust host's execute tool), not an implementation's behaviour";

/// The static exposure checks (every run).
pub(crate) fn checks() -> Vec<Check> {
    vec![
        Check::new(
            "exposure::no_protocol_binding::core_depends_on_no_server_framework",
            no_server_dependency,
        )
        .in_process_only(IN_PROCESS_ONLY),
        Check::new(
            "exposure::no_protocol_binding::core_source_binds_no_listener",
            no_listener_in_source,
        )
        .in_process_only(IN_PROCESS_ONLY),
        Check::new(
            "exposure::host_builds_tools::one_tool_per_operation_covers_the_catalogue",
            one_tool_per_operation,
        )
        .in_process_only(IN_PROCESS_ONLY),
    ]
}

/// The checks that run tools against their own fake Incus (main job only).
pub(crate) fn live_checks() -> Vec<Check> {
    vec![Check::new(
        "exposure::host_builds_tools::execute_tool_enforces_the_operation_scope",
        || block_on(execute_enforces_scope()),
    )
    .in_process_only(IN_PROCESS_ONLY)]
}

fn verdict(problems: Vec<String>) -> Result<(), String> {
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// The names of the dependencies declared in a manifest's `[dependencies]`-like tables
/// (build and dev dependencies included: none of them may be a server either).
fn dependency_names(manifest: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_dependencies = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_dependencies = line.trim_matches(['[', ']']).ends_with("dependencies");
            continue;
        }
        if in_dependencies && !line.is_empty() && !line.starts_with('#') {
            if let Some(key) = line.split(['=', '.']).next() {
                names.push(key.trim().trim_matches('"').to_owned());
            }
        }
    }
    names
}

fn no_server_dependency() -> Result<(), String> {
    let path = "core/Cargo.toml";
    let names = dependency_names(embedded::read(path)?);
    if !names.iter().any(|n| n == "serde_json") {
        return Err(format!("no dependency read from {path}: {names:?}"));
    }
    let servers: Vec<String> = names
        .into_iter()
        .filter(|n| SERVER_CRATES.contains(&n.as_str()))
        .map(|n| format!("the core depends on the server framework {n}"))
        .collect();
    verdict(servers)
}

fn no_listener_in_source() -> Result<(), String> {
    let files: Vec<(&str, &str)> = embedded::under("core/src").collect();
    if files.is_empty() {
        return Err(
            "the core has no source files to look at (built outside its repository?)".into(),
        );
    }
    let mut problems = Vec::new();
    for (file, text) in files {
        for word in SERVING.iter().filter(|w| text.contains(**w)) {
            problems.push(format!("{file} uses {word}"));
        }
    }
    verdict(problems)
}

/// A tool as a host would publish it: the operation's name, description and input schema.
struct Tool {
    name: String,
    description: Value,
    input_schema: Value,
}

/// One tool per exported operation, built from `all()` and `describe()` alone.
fn tool_table() -> Result<Vec<Tool>, String> {
    incus_operations::all()
        .into_iter()
        .map(|d| {
            let described = incus_operations::describe(d.name())
                .ok_or_else(|| format!("describe({}) is empty", d.name()))?;
            Ok(Tool {
                name: d.name().to_owned(),
                description: described["description"].clone(),
                input_schema: described["input_schema"].clone(),
            })
        })
        .collect()
}

fn one_tool_per_operation() -> Result<(), String> {
    let tools = tool_table()?;
    let mut problems = Vec::new();
    let names: BTreeSet<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    if names.len() != tools.len() || tools.is_empty() {
        problems.push(format!(
            "{} tools but {} distinct names",
            tools.len(),
            names.len()
        ));
    }
    for tool in &tools {
        if incus_operations::fetch(&tool.name).is_none() {
            problems.push(format!("the tool {} fetches no operation", tool.name));
        }
        if tool.description.as_str().is_none_or(str::is_empty) {
            problems.push(format!("the tool {} has no description", tool.name));
        }
        if let Err(e) = jsonschema::validator_for(&tool.input_schema) {
            problems.push(format!(
                "the tool {}'s input schema does not compile: {e}",
                tool.name
            ));
        }
    }
    verdict(problems)
}

/// The search tool: exported operations whose describe() mentions every word of `query`.
fn search(query: &str) -> Vec<String> {
    let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
    incus_operations::all()
        .into_iter()
        .filter(|d| {
            let text = incus_operations::describe(d.name())
                .map(|v| format!("{} {} {}", d.name(), v["title"], v["description"]))
                .unwrap_or_default()
                .to_lowercase();
            words.iter().all(|w| text.contains(w.as_str()))
        })
        .map(|d| d.name().to_owned())
        .collect()
}

/// The execute tool: anyone allowed to use it reaches `run()`, which enforces the operation's
/// own scope against the caller's verified scopes.
async fn execute(host: &ReferenceHost, name: &str, input: Value, scopes: &[String]) -> Value {
    let scopes: Vec<Scope> = scopes.iter().filter_map(|s| Scope::parse(s)).collect();
    incus_operations::run(name, input, RunOptions::new(host, &(), scopes)).await
}

async fn execute_enforces_scope() -> Result<(), String> {
    let fake = fake::start(&FakeSetup::default()).await?;
    let host = ReferenceHost::new(Connection::unix(fake.unix_socket()));
    let mut problems = Vec::new();
    let found = search("instance list");
    if !found.iter().any(|n| n == "incus_instance_list") {
        problems.push(format!("searching \"instance list\" found {found:?}"));
    }
    for op in OPERATIONS
        .iter()
        .filter(|o| incus_operations::fetch(o.name).is_some())
    {
        let none = fake.expect("*", "/**", 0);
        let result = execute(
            &host,
            op.name,
            op.confirmed_input(),
            &scopes_without(op.scope),
        )
        .await;
        if result.pointer("/error/kind") != Some(&json!("scope_missing")) {
            problems.push(format!(
                "executing {} without {} gave {result}",
                op.name, op.scope
            ));
        }
        if let Err(sent) = none.finish() {
            problems.push(format!(
                "executing {} without its scope reached Incus: {sent}",
                op.name
            ));
        }
    }
    let listed = execute(
        &host,
        "incus_instance_list",
        json!({}),
        &["incus.read".into()],
    )
    .await;
    if listed.get("error").is_some() {
        problems.push(format!(
            "executing incus_instance_list with incus.read gave {listed}"
        ));
    }
    verdict(problems)
}
