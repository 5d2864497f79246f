//! The written record of a run: `real-incus-acceptance.md` and its JSON twin `real-incus-acceptance.json`.
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cleanup::CleanupOutcome;
use crate::cluster::{ClusterInfo, Placement};

/// File name of the Markdown report.
pub const MARKDOWN_FILE: &str = "real-incus-acceptance.md";
/// File name of the JSON report.
pub const JSON_FILE: &str = "real-incus-acceptance.json";

/// The outcome of one check or one operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Ran and gave what was expected.
    Passed,
    /// Ran and gave something else (or an invalid result).
    Failed,
    /// Not run, for a reason given alongside.
    Skipped,
}

impl Outcome {
    fn label(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed => "FAILED",
            Outcome::Skipped => "skipped",
        }
    }
}

/// What the daemon said about itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerInfo {
    /// `environment.server_version`.
    pub version: String,
    /// `api_version`.
    pub api_version: String,
    /// `environment.driver` and `environment.storage`, e.g. `lxc / dir`.
    pub driver: String,
    /// `environment.kernel_version`.
    pub kernel: String,
    /// `api_extensions`, in the daemon's order.
    pub api_extensions: Vec<String>,
}

/// An API extension the run's checks need, and whether the server advertises it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtensionUse {
    /// The extension's name, as `api_extensions` lists it.
    pub name: String,
    /// What in the run needs it.
    pub needed_for: String,
    /// Whether the server's `api_extensions` holds it.
    pub advertised: bool,
}

/// Where Incus lines differ and no API extension tells them apart: what this server answered, which
/// chose how the run judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerAnswer {
    /// What was asked of the server.
    pub question: String,
    /// What it answered, and what the run did with that.
    pub answer: String,
    /// The check whose result carried the answer.
    pub seen_in: String,
}

/// One call made through `run()` and what came back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// The operation called.
    pub operation: String,
    /// What the check is about, e.g. `success` or `not found is a native 404`.
    pub name: String,
    /// Passed, failed or skipped.
    pub outcome: Outcome,
    /// Wall time of the call in milliseconds.
    pub duration_ms: u64,
    /// The input given to `run()`.
    pub input: Value,
    /// The result `run()` returned (null when skipped).
    pub output: Value,
    /// Why it failed or was skipped.
    pub problem: Option<String>,
}

/// One row per operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperationRow {
    /// The operation name.
    pub operation: String,
    /// Whether the core exports it (`all()`), or it was run from the full catalogue for review.
    pub exported: bool,
    /// The client evidence (native methods, helpers, stream contracts) the operation exercises.
    pub evidence: Vec<String>,
    /// Passed only when every check passed; skipped when none ran.
    pub outcome: Outcome,
    /// Sum of its checks' times.
    pub duration_ms: u64,
    /// Names of its checks.
    pub checks: Vec<String>,
}

/// A portable scenario run (or a difference in differential mode).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioRow {
    /// Scenario file and step.
    pub name: String,
    /// Outcome.
    pub outcome: Outcome,
    /// Details of a failure, or of a divergence between the real daemon and the fake.
    pub problem: Option<String>,
}

/// A request the core sent for a refused case, as the read-only relay in front of the daemon saw
/// it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Relayed {
    /// The HTTP method.
    pub method: String,
    /// The path and query, as the core sent them.
    pub path: String,
    /// Whether it reached the daemon (a plain `GET`); otherwise the relay answered it with `403`
    /// and the daemon never saw it.
    pub forwarded: bool,
}

impl std::fmt::Display for Relayed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.method, self.path)?;
        if !self.forwarded {
            write!(f, " (blocked by the relay)")?;
        }
        Ok(())
    }
}

/// An input the core must refuse, sent to it bound to the read-only relay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefusedCase {
    /// The case's label.
    pub label: String,
    /// The operation called.
    pub operation: String,
    /// The caller's scopes.
    pub scopes: Vec<String>,
    /// The error kind the core must answer.
    pub expected: String,
    /// What it answered: its error kind, or its status when it did not refuse.
    pub got: String,
    /// What the input does to a daemon that takes it, when the data says.
    pub harm: Option<String>,
    /// Every request the core sent during the call, in order.
    pub requests: Vec<Relayed>,
    /// The reads the rule documents for this case (besides discovery, `GET /1.0`).
    pub documented_reads: Vec<String>,
    /// Passed only when the core refused with the expected kind and nothing but discovery and
    /// the documented reads reached the daemon.
    pub outcome: Outcome,
    /// Why it failed.
    pub problem: Option<String>,
}

/// A benign value applied for real, or a step that carries a rule's values through a snapshot and
/// its restore.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenignCase {
    /// The case's label (or the step's).
    pub label: String,
    /// The operation called.
    pub operation: String,
    /// The caller's scopes.
    pub scopes: Vec<String>,
    /// What was applied and what was read back from the daemon afterwards.
    pub evidence: Vec<String>,
    /// Passed only when the call succeeded and the daemon holds what was applied.
    pub outcome: Outcome,
    /// Why it failed.
    pub problem: Option<String>,
}

/// The cases of one value rule on this daemon.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RuleEvidence {
    /// The rule (its clause, e.g. `safety::snapshot_pattern_grammar`).
    pub rule: String,
    /// Inputs refused, each before any change reached the daemon.
    pub refused: Vec<RefusedCase>,
    /// Benign values applied and read back, then snapshot and restore with them.
    pub benign: Vec<BenignCase>,
}

/// The core's value rules (`SECURITY.md`) on this daemon: every case of
/// `conformance/data/safety-values.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SafetyValues {
    /// How the refused inputs were kept from the daemon, and where the benign ones went.
    pub method: String,
    /// One entry per rule, in the data's order.
    pub rules: Vec<RuleEvidence>,
    /// What was checked on the daemon after the refusals (nothing changed).
    pub verified: Vec<String>,
    /// What went wrong outside a case (setup, the state check, teardown).
    pub errors: Vec<String>,
    /// Wall time of the section in milliseconds.
    pub duration_ms: u64,
}

impl SafetyValues {
    /// How many cases were refused as expected, and how many there were.
    pub fn refused_passed(&self) -> (usize, usize) {
        let all = self.rules.iter().flat_map(|r| &r.refused);
        let total = all.clone().count();
        (all.filter(|c| c.outcome == Outcome::Passed).count(), total)
    }

    /// How many benign cases and steps passed, and how many there were.
    pub fn benign_passed(&self) -> (usize, usize) {
        let all = self.rules.iter().flat_map(|r| &r.benign);
        let total = all.clone().count();
        (all.filter(|c| c.outcome == Outcome::Passed).count(), total)
    }

    /// True when every case and step passed and nothing went wrong around them.
    pub fn passed(&self) -> bool {
        let (refused, of_refused) = self.refused_passed();
        let (benign, of_benign) = self.benign_passed();
        self.errors.is_empty() && refused == of_refused && benign == of_benign
    }
}

/// The whole record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Version of this runner.
    pub runner_version: String,
    /// Start time, RFC 3339 UTC.
    pub started_at: String,
    /// Total duration in milliseconds.
    pub duration_ms: u64,
    /// The endpoint (socket path or URL; never credentials).
    pub endpoint: String,
    /// The server, when discovery worked.
    pub server: Option<ServerInfo>,
    /// The isolated project.
    pub project: String,
    /// Where the test image came from.
    pub image: String,
    /// A row per operation, in catalogue order.
    pub operations: Vec<OperationRow>,
    /// Every check, in the order they ran.
    pub checks: Vec<Check>,
    /// Portable scenarios.
    pub scenarios: Vec<ScenarioRow>,
    /// Differential mode: where the fake and the real daemon differ.
    pub divergences: Vec<ScenarioRow>,
    /// Setup failures (the run could not start or went wrong outside a check).
    pub errors: Vec<String>,
    /// True when Ctrl-C cut the run short.
    pub interrupted: bool,
    /// What cleanup did and what is left.
    pub cleanup: CleanupOutcome,
    /// The cluster, when the server is clustered (`server_clustered`); `None` standalone.
    #[serde(default)]
    pub cluster: Option<ClusterInfo>,
    /// Clustered: which member each resource landed on (from the results' `location`).
    #[serde(default)]
    pub placements: Vec<Placement>,
    /// Clustered: the steps whose answer differs from a standalone daemon's by design and was
    /// accepted as the cluster's, each with the reason.
    #[serde(default)]
    pub clustered_answers: Vec<String>,
    /// The API extensions the run's checks rely on, each with whether the server advertises it
    /// (one it lacks is an error of the run).
    #[serde(default)]
    pub extensions_relied_on: Vec<ExtensionUse>,
    /// Where Incus lines differ without an API extension: what this server answered.
    #[serde(default)]
    pub server_answers: Vec<ServerAnswer>,
    /// The core's value rules on this daemon (not in differential mode).
    #[serde(default)]
    pub safety_values: Option<SafetyValues>,
}

impl Report {
    /// True only when every operation passed, nothing went wrong in setup or cleanup and the run was
    /// not interrupted (exit status 0).
    pub fn passed(&self) -> bool {
        !self.operations.is_empty()
            && self.operations.iter().all(|o| o.outcome == Outcome::Passed)
            && self.checks.iter().all(|c| c.outcome != Outcome::Failed)
            && self.scenarios.iter().all(|s| s.outcome != Outcome::Failed)
            && self.divergences.is_empty()
            && self.errors.is_empty()
            && self.safety_values.as_ref().is_none_or(SafetyValues::passed)
            && !self.interrupted
            && self.cleanup.clean()
    }

    /// Fills `operations` from `checks`: a row per given operation, in the given order.
    pub fn summarize(&mut self, catalogue: &[(String, bool, Vec<String>)]) {
        self.operations = catalogue
            .iter()
            .map(|(name, exported, evidence)| {
                let checks: Vec<&Check> = self
                    .checks
                    .iter()
                    .filter(|c| &c.operation == name)
                    .collect();
                let outcome = if checks.iter().any(|c| c.outcome == Outcome::Failed) {
                    Outcome::Failed
                } else if checks.iter().any(|c| c.outcome == Outcome::Passed) {
                    Outcome::Passed
                } else {
                    Outcome::Skipped
                };
                OperationRow {
                    operation: name.clone(),
                    exported: *exported,
                    evidence: evidence.clone(),
                    outcome,
                    duration_ms: checks.iter().map(|c| c.duration_ms).sum(),
                    checks: checks.iter().map(|c| c.name.clone()).collect(),
                }
            })
            .collect();
    }

    /// Renders the Markdown report.
    pub fn to_markdown(&self) -> String {
        let mut md = String::new();
        self.render_header(&mut md);
        self.render_operations(&mut md);
        self.render_failures(&mut md);
        self.render_relied_on(&mut md);
        self.render_cluster(&mut md);
        render_rows(&mut md, "Portable scenarios", &self.scenarios);
        self.render_safety_values(&mut md);
        render_rows(
            &mut md,
            "Differences from the fake Incus",
            &self.divergences,
        );
        self.render_cleanup(&mut md);
        md
    }

    /// Writes both files into `dir` and returns their paths.
    pub fn write(&self, dir: &Path) -> std::io::Result<(PathBuf, PathBuf)> {
        std::fs::create_dir_all(dir)?;
        let md = dir.join(MARKDOWN_FILE);
        let json = dir.join(JSON_FILE);
        std::fs::write(&md, self.to_markdown())?;
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(&json, text + "\n")?;
        Ok((md, json))
    }

    fn render_header(&self, md: &mut String) {
        let verdict = if self.passed() { "PASSED" } else { "FAILED" };
        let _ = writeln!(md, "# Real Incus acceptance: {verdict}\n");
        let _ = writeln!(
            md,
            "- Runner: real-incus-acceptance {}",
            self.runner_version
        );
        let _ = writeln!(
            md,
            "- Started: {} (took {:.1} s)",
            self.started_at,
            secs(self.duration_ms)
        );
        let _ = writeln!(md, "- Endpoint: `{}`", self.endpoint);
        let _ = writeln!(md, "- Project: `{}`", self.project);
        let _ = writeln!(md, "- Test image: {}", self.image);
        if self.interrupted {
            let _ = writeln!(
                md,
                "- **Interrupted** (Ctrl-C): cleanup ran, the rest did not"
            );
        }
        if let Some(cluster) = &self.cluster {
            let members: Vec<String> = cluster
                .members
                .iter()
                .map(|m| format!("{} ({})", m.name, m.status))
                .collect();
            let _ = writeln!(
                md,
                "- Cluster: through member `{}`; members {}",
                cluster.member,
                members.join(", ")
            );
        }
        match &self.server {
            Some(server) => {
                let _ = writeln!(
                    md,
                    "- Server: Incus {} (API {}), {}, kernel {}",
                    server.version, server.api_version, server.driver, server.kernel
                );
                let _ = writeln!(
                    md,
                    "- API extensions ({}): {}",
                    server.api_extensions.len(),
                    server.api_extensions.join(", ")
                );
            }
            None => {
                let _ = writeln!(md, "- Server: not reached");
            }
        }
        for error in &self.errors {
            let _ = writeln!(md, "- **Error:** {}", one_line(error));
        }
        md.push('\n');
    }

    fn render_operations(&self, md: &mut String) {
        let passed = self
            .operations
            .iter()
            .filter(|o| o.outcome == Outcome::Passed)
            .count();
        let _ = writeln!(
            md,
            "## Operations ({passed}/{} passed)\n",
            self.operations.len()
        );
        let _ = writeln!(
            md,
            "| Operation | Exported | Result | Time (ms) | Client evidence | Checks |"
        );
        let _ = writeln!(md, "|---|---|---|---:|---|---|");
        for row in &self.operations {
            let _ = writeln!(
                md,
                "| `{}` | {} | {} | {} | {} | {} |",
                row.operation,
                if row.exported { "yes" } else { "no (review)" },
                row.outcome.label(),
                row.duration_ms,
                row.evidence.join(", "),
                cell(&row.checks.join("; "))
            );
        }
        md.push('\n');
    }

    fn render_failures(&self, md: &mut String) {
        let failed: Vec<&Check> = self
            .checks
            .iter()
            .filter(|c| c.outcome == Outcome::Failed)
            .collect();
        if failed.is_empty() {
            return;
        }
        let _ = writeln!(md, "## Failures ({})\n", failed.len());
        for check in failed {
            let _ = writeln!(md, "### `{}`: {}\n", check.operation, check.name);
            let _ = writeln!(md, "{}\n", check.problem.as_deref().unwrap_or("failed"));
            let _ = writeln!(md, "Call:\n\n```json\n{}\n```\n", pretty(&check.input));
            let _ = writeln!(md, "Answer:\n\n```json\n{}\n```\n", pretty(&check.output));
        }
    }

    /// The server facts the judgement rested on: the API extensions it needs, and the answers that
    /// chose between the behaviours of Incus lines where no extension tells them apart.
    fn render_relied_on(&self, md: &mut String) {
        if self.extensions_relied_on.is_empty() && self.server_answers.is_empty() {
            return;
        }
        let version = self.server.as_ref().map_or("?", |s| s.version.as_str());
        let _ = writeln!(
            md,
            "## What the judgement relied on (Incus {version})
"
        );
        if !self.extensions_relied_on.is_empty() {
            let _ = writeln!(md, "| API extension | Advertised | Needed for |");
            let _ = writeln!(md, "|---|---|---|");
            for used in &self.extensions_relied_on {
                let _ = writeln!(
                    md,
                    "| `{}` | {} | {} |",
                    used.name,
                    if used.advertised { "yes" } else { "**NO**" },
                    cell(&used.needed_for)
                );
            }
            md.push('\n');
        }
        if !self.server_answers.is_empty() {
            let _ = writeln!(
                md,
                "Where the Incus lines differ with no API extension to tell them apart, the server's \
                 own answers decided:\n"
            );
            for answer in &self.server_answers {
                let _ = writeln!(
                    md,
                    "- {} **{}** (in {})",
                    one_line(&answer.question),
                    one_line(&answer.answer),
                    one_line(&answer.seen_in)
                );
            }
            md.push('\n');
        }
    }

    fn render_cluster(&self, md: &mut String) {
        if self.cluster.is_none() {
            return;
        }
        let _ = writeln!(md, "## Placement ({} resources)\n", self.placements.len());
        let _ = writeln!(md, "| Resource | Member | Seen in |");
        let _ = writeln!(md, "|---|---|---|");
        for placement in &self.placements {
            let _ = writeln!(
                md,
                "| {} | `{}` | {} |",
                cell(&placement.resource),
                placement.member,
                cell(&placement.seen_in)
            );
        }
        md.push('\n');
        if !self.clustered_answers.is_empty() {
            let _ = writeln!(md, "## Clustered answers accepted\n");
            for answer in &self.clustered_answers {
                let _ = writeln!(md, "- {}", one_line(answer));
            }
            md.push('\n');
        }
    }

    /// Per rule: the refused cases with the requests that reached the daemon, and the benign
    /// values applied and read back.
    fn render_safety_values(&self, md: &mut String) {
        let Some(safety) = &self.safety_values else {
            return;
        };
        let version = self.server.as_ref().map_or("?", |s| s.version.as_str());
        let (refused, of_refused) = safety.refused_passed();
        let (benign, of_benign) = safety.benign_passed();
        let _ = writeln!(
            md,
            "## Safety values on Incus {version}: {refused}/{of_refused} refused before any change, \
             {benign}/{of_benign} benign applied and read back ({:.1} s)\n",
            secs(safety.duration_ms)
        );
        let _ = writeln!(md, "{}\n", one_line(&safety.method));
        for error in &safety.errors {
            let _ = writeln!(md, "- **Error:** {}", one_line(error));
        }
        for verified in &safety.verified {
            let _ = writeln!(md, "- Verified: {}", one_line(verified));
        }
        if !safety.errors.is_empty() || !safety.verified.is_empty() {
            md.push('\n');
        }
        for rule in &safety.rules {
            let _ = writeln!(md, "### `{}`\n", rule.rule);
            if !rule.refused.is_empty() {
                let _ = writeln!(
                    md,
                    "| Refused input | Operation | Scopes | Expected | Got | Reached the daemon | Result |"
                );
                let _ = writeln!(md, "|---|---|---|---|---|---|---|");
                for case in &rule.refused {
                    let label = match &case.harm {
                        Some(harm) => format!("{} (harm: {harm})", case.label),
                        None => case.label.clone(),
                    };
                    let reached: Vec<String> =
                        case.requests.iter().map(ToString::to_string).collect();
                    let reached = if reached.is_empty() {
                        "nothing".to_owned()
                    } else {
                        reached.join("; ")
                    };
                    let result = match &case.problem {
                        Some(problem) => format!("{}: {problem}", case.outcome.label()),
                        None => case.outcome.label().to_owned(),
                    };
                    let _ = writeln!(
                        md,
                        "| {} | `{}` | {} | {} | {} | {} | {} |",
                        cell(&label),
                        case.operation,
                        case.scopes.join(", "),
                        case.expected,
                        cell(&case.got),
                        cell(&reached),
                        cell(&result)
                    );
                }
                md.push('\n');
            }
            if !rule.benign.is_empty() {
                let _ = writeln!(
                    md,
                    "| Benign value | Operation | Scopes | Applied and read back | Result |"
                );
                let _ = writeln!(md, "|---|---|---|---|---|");
                for case in &rule.benign {
                    let result = match &case.problem {
                        Some(problem) => format!("{}: {problem}", case.outcome.label()),
                        None => case.outcome.label().to_owned(),
                    };
                    let _ = writeln!(
                        md,
                        "| {} | `{}` | {} | {} | {} |",
                        cell(&case.label),
                        case.operation,
                        case.scopes.join(", "),
                        cell(&case.evidence.join("; ")),
                        cell(&result)
                    );
                }
                md.push('\n');
            }
        }
    }

    fn render_cleanup(&self, md: &mut String) {
        let verdict = if self.cleanup.clean() {
            "nothing left"
        } else {
            "NOT CLEAN"
        };
        let _ = writeln!(md, "## Cleanup: {verdict}\n");
        for done in &self.cleanup.done {
            let _ = writeln!(md, "- done: {done}");
        }
        for failed in &self.cleanup.failed {
            let _ = writeln!(md, "- **failed:** {}", one_line(failed));
        }
        for left in &self.cleanup.leftovers {
            let _ = writeln!(md, "- **left over:** {}", one_line(left));
        }
        if self.cleanup.done.is_empty()
            && self.cleanup.failed.is_empty()
            && self.cleanup.leftovers.is_empty()
        {
            let _ = writeln!(md, "- nothing was created");
        }
    }
}

fn render_rows(md: &mut String, title: &str, rows: &[ScenarioRow]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(md, "## {title}\n");
    let _ = writeln!(md, "| Name | Result | Details |");
    let _ = writeln!(md, "|---|---|---|");
    for row in rows {
        let _ = writeln!(
            md,
            "| {} | {} | {} |",
            cell(&row.name),
            row.outcome.label(),
            cell(row.problem.as_deref().unwrap_or(""))
        );
    }
    md.push('\n');
}

fn secs(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// The text on one line: a line break as a space, any other control character escaped (a value
/// the core refuses may hold one), so the Markdown stays text.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\n' => " ".to_owned(),
            c if c.is_control() => c.escape_unicode().to_string(),
            c => c.to_string(),
        })
        .collect()
}

/// Escapes a Markdown table cell.
fn cell(text: &str) -> String {
    one_line(text).replace('|', "\\|")
}

/// Which member each resource landed on, from the `location` fields the results carry (passed
/// through unchanged by the core): instances, storage volumes and operations, each once, in the
/// order first seen. `none` (a standalone daemon's location) and empty locations are left out.
pub fn placements(checks: &[Check]) -> Vec<Placement> {
    let mut found: Vec<Placement> = Vec::new();
    for check in checks.iter().filter(|c| c.outcome != Outcome::Skipped) {
        let seen_in = format!("{}: {}", check.operation, check.name);
        let mut add = |resource: String, member: &Value| {
            let Some(member) = member.as_str() else {
                return;
            };
            if member.is_empty() || member == "none" || found.iter().any(|p| p.resource == resource)
            {
                return;
            }
            found.push(Placement {
                resource,
                member: member.to_owned(),
                seen_in: seen_in.clone(),
            });
        };
        let item = &check.output["item"];
        let items = check.output["items"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for object in std::iter::once(item).chain(items.iter()) {
            if let Some(resource) = describe(&check.operation, object) {
                add(resource, &object["location"]);
            }
        }
        let operation = &check.output["operation"];
        if let Some(id) = operation["id"].as_str() {
            let what = operation["description"].as_str().unwrap_or("operation");
            add(format!("operation {id} ({what})"), &operation["location"]);
        }
    }
    found
}

/// What a listed or read object is, by the operation that returned it.
fn describe(operation: &str, object: &Value) -> Option<String> {
    let name = object["name"].as_str();
    match operation {
        "incus_instance_get" | "incus_instance_list" => name.map(|n| format!("instance {n}")),
        "incus_storage_volume_get" | "incus_storage_volume_list" => {
            let kind = object["type"].as_str().unwrap_or("volume");
            name.map(|n| format!("storage volume {kind}/{n}"))
        }
        "incus_operation_get" | "incus_operation_list" => {
            let id = object["id"].as_str()?;
            let what = object["description"].as_str().unwrap_or("operation");
            Some(format!("operation {id} ({what})"))
        }
        _ => None,
    }
}
