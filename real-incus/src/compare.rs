//! Differential mode: the same plan on an in-process fake Incus, compared by shape with what the real
//! daemon answered.
use std::collections::HashMap;
use std::path::PathBuf;

use fake_incus::IncusLine;

use crate::admin::Admin;
use crate::cli::Cli;
use crate::cluster::ClusterInfo;
use crate::endpoint::Endpoint;
use crate::plan::{self, Sandbox};
use crate::report::{Check, Outcome, ScenarioRow, ServerAnswer};
use crate::shape::shape_differences;
use crate::targets::Targets;

/// The fake's out-of-the-box world: project, pool and image alias of its documented default state.
const FAKE_PROJECT: &str = "default";
const FAKE_POOL: &str = "default";
const FAKE_ALIAS: &str = "busybox";

/// A fresh in-process fake Incus with the core bound to it, in the fake's default project.
struct Fake {
    targets: Targets,
    sandbox: Sandbox,
    _fake: fake_incus::FakeIncus,
}

/// The Incus line the fake imitates when it is compared with a server that advertises `extensions`:
/// the newest line whose every API extension the server advertises (so a 7.0.2 daemon, or a later
/// 7.x, is compared with the fake's 7.0 and a 6.0.4 one with its 6.0), the oldest when the server
/// advertises too few for any. The server's list decides, never its version number.
pub(crate) fn fake_line(extensions: &[String]) -> IncusLine {
    let advertised: Vec<&str> = extensions.iter().map(String::as_str).collect();
    IncusLine::newest_advertised(&advertised)
}

/// What the report says about the line chosen for the differential run.
pub(crate) fn fake_line_answer(line: IncusLine) -> ServerAnswer {
    ServerAnswer {
        question: "Which Incus line does the fake imitate in the differential run? (the newest \
                   line whose every API extension the server advertises)"
            .to_owned(),
        answer: format!(
            "Incus {} (the fake answers as {})",
            line.name(),
            line.server_version()
        ),
        seen_in: "GET /1.0: api_extensions".to_owned(),
    }
}

/// A fresh fake Incus of `line` with its default state: standalone, or, when the real target is a
/// cluster, a fake cluster with the same member names; returns it and the Unix socket of the member
/// that has the real target's name (the standalone fake's own socket otherwise).
pub(crate) async fn start_fake(
    cluster: Option<&ClusterInfo>,
    line: IncusLine,
) -> Result<(fake_incus::FakeIncus, PathBuf), String> {
    let mut builder = fake_incus::FakeIncus::builder().incus_version(line);
    if let Some(cluster) = cluster {
        builder = builder.cluster(cluster.members.iter().map(|m| m.name.clone()));
    }
    let fake = builder
        .start()
        .await
        .map_err(|e| format!("starting the fake Incus: {e}"))?;
    let socket = match cluster {
        Some(cluster) => fake
            .member(&cluster.member)
            .ok_or_else(|| format!("the fake cluster has no member {}", cluster.member))?
            .unix_socket
            .clone(),
        None => fake.unix_socket().to_owned(),
    };
    Ok((fake, socket))
}

impl Fake {
    /// Starts a fake with its default state (a fake cluster for a real cluster, its workload placed
    /// on the same member as on the real one).
    async fn start(
        cli: &Cli,
        cluster: Option<&ClusterInfo>,
        line: IncusLine,
        real: &Sandbox,
    ) -> Result<Fake, String> {
        let (fake, socket) = start_fake(cluster, line).await?;
        let endpoint = Endpoint::Unix(socket);
        let admin = Admin::new(endpoint.clone()).map_err(|e| e.to_string())?;
        let fingerprint = admin
            .alias_target(FAKE_PROJECT, FAKE_ALIAS)
            .await
            .map_err(|e| format!("the fake's default image alias {FAKE_ALIAS:?}: {e}"))?;
        let mut sandbox = Sandbox {
            project: FAKE_PROJECT.to_owned(),
            pool: FAKE_POOL.to_owned(),
            alias: FAKE_ALIAS.to_owned(),
            fingerprint,
            remote: None,
            workload: plan::C1.to_owned(),
            workload_member: None,
        };
        if let (Some(_), Some(member)) = (cluster, &real.workload_member) {
            admin
                .launch_on(FAKE_PROJECT, &real.workload, FAKE_ALIAS, member)
                .await
                .map_err(|e| format!("the fake cluster's workload on {member}: {e}"))?;
            sandbox.workload = real.workload.clone();
            sandbox.workload_member = Some(member.clone());
        }
        Ok(Fake {
            targets: Targets::new(&endpoint, FAKE_PROJECT, cli)?,
            sandbox,
            _fake: fake,
        })
    }
}

/// Runs the plan on a fresh fake Incus (a fake cluster with the same members when `cluster` is
/// given, the workload on the same member as `real_sandbox`'s) and returns one row per check whose
/// result differs in shape.
pub(crate) async fn against_fake(
    cli: &Cli,
    real: &[Check],
    cluster: Option<&ClusterInfo>,
    line: IncusLine,
    real_sandbox: &Sandbox,
) -> Result<Vec<ScenarioRow>, String> {
    let kind = if cluster.is_some() {
        "a fake Incus cluster with the same members"
    } else {
        "an in-process fake Incus"
    };
    eprintln!(
        "differential: the acceptance plan on {kind}, as Incus {}",
        line.name()
    );
    let fake = Fake::start(cli, cluster, line, real_sandbox).await?;
    let on_fake = plan::run_plan(&fake.targets, &fake.sandbox, "fake: ", None)
        .await
        .checks;
    Ok(divergences(real, &on_fake))
}

/// Pairs checks by operation, name and occurrence, and lists those whose results differ in shape,
/// and those that pass on the real daemon but not on the fake (same expectations, different values).
pub(crate) fn divergences(real: &[Check], fake: &[Check]) -> Vec<ScenarioRow> {
    let mut fake_by_key: HashMap<(String, String, usize), &Check> = HashMap::new();
    for (key, check) in keyed(fake) {
        fake_by_key.insert(key, check);
    }
    let mut rows = Vec::new();
    for (key, real_check) in keyed(real) {
        if real_check.outcome == Outcome::Skipped {
            continue;
        }
        let name = format!("plan: {}: {}", real_check.operation, real_check.name);
        let Some(fake_check) = fake_by_key.get(&key) else {
            // The plan chooses some checks by the server's answers (a running exec's `may_cancel`):
            // the fake answered otherwise, so this check did not run there.
            rows.push(ScenarioRow {
                name,
                outcome: Outcome::Failed,
                problem: Some(
                    "ran on the real daemon only: the fake's answers chose other checks".into(),
                ),
            });
            continue;
        };
        if fake_check.outcome == Outcome::Skipped {
            continue;
        }
        let mut differences = shape_differences(&real_check.output, &fake_check.output);
        if real_check.outcome == Outcome::Passed && fake_check.outcome == Outcome::Failed {
            differences.push(format!(
                "passes on the real daemon, fails on the fake: {}",
                fake_check.problem.as_deref().unwrap_or("failed")
            ));
        }
        if !differences.is_empty() {
            rows.push(ScenarioRow {
                name,
                outcome: Outcome::Failed,
                problem: Some(differences.join("; ")),
            });
        }
    }
    rows
}

fn keyed(checks: &[Check]) -> Vec<((String, String, usize), &Check)> {
    let mut seen: HashMap<(String, String), usize> = HashMap::new();
    checks
        .iter()
        .map(|check| {
            let base = (check.operation.clone(), check.name.clone());
            let occurrence = seen.entry(base.clone()).or_insert(0);
            let key = (base.0, base.1, *occurrence);
            *occurrence += 1;
            (key, check)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (differential mode); a test through the
    //! runner's public API or binary goes in `tests/runner`.

    use serde_json::{json, Value};

    use super::*;

    fn check(name: &str, outcome: Outcome, output: Value) -> Check {
        Check {
            operation: "incus_instance_get".into(),
            name: name.into(),
            outcome,
            duration_ms: 1,
            input: json!({}),
            output,
            problem: (outcome == Outcome::Failed).then(|| "wrong".to_owned()),
        }
    }

    #[test]
    fn divergences_pair_repeated_checks_by_occurrence() {
        let ok = json!({"item": {"name": "c1"}, "etag": "x"});
        let missing = json!({"error": {"kind": "native", "message": "m", "http_status": 404}});
        let real = vec![
            check("get", Outcome::Passed, ok.clone()),
            check("get", Outcome::Passed, missing.clone()),
        ];
        let fake = vec![
            check("get", Outcome::Passed, ok.clone()),
            check("get", Outcome::Failed, ok),
        ];
        let rows = divergences(&real, &fake);
        assert_eq!(rows.len(), 1, "{rows:?}");
        let problem = rows[0].problem.as_deref().unwrap_or_default();
        assert!(problem.contains("real gave error"), "{problem}");
        assert!(
            problem.contains("passes on the real daemon, fails on the fake"),
            "{problem}"
        );
    }

    /// A check the server's answers chose on the real daemon that the fake's answers did not (the
    /// cancel of a cancellable exec, where the fake's exec cannot be cancelled) is a difference.
    #[test]
    fn a_check_that_ran_on_the_real_daemon_only_is_a_divergence() {
        let real = vec![
            check("get", Outcome::Passed, json!({"item": {}})),
            check(
                "cancellable",
                Outcome::Passed,
                json!({"status": "requested"}),
            ),
        ];
        let fake = vec![check("get", Outcome::Passed, json!({"item": {}}))];
        let rows = divergences(&real, &fake);
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(rows[0].name, "plan: incus_instance_get: cancellable");
        assert!(rows[0]
            .problem
            .as_deref()
            .unwrap_or_default()
            .contains("real daemon only"));
    }

    fn names(line: IncusLine) -> Vec<String> {
        line.api_extensions()
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
    }

    /// The fake is compared as the newest line whose extensions the server all advertises: a
    /// server with 7.0's list (or more) is compared with the fake's 7.0, one with 6.0's with its 6.0.
    #[test]
    fn the_fake_imitates_the_newest_line_the_server_advertises_every_extension_of() {
        assert_eq!(fake_line(&names(IncusLine::V6_0)), IncusLine::V6_0);
        assert_eq!(fake_line(&names(IncusLine::V7_0)), IncusLine::V7_0);
        let mut later = names(IncusLine::V7_0);
        later.push("some_later_extension".to_owned());
        assert_eq!(fake_line(&later), IncusLine::V7_0);
        let mut short_of_7 = names(IncusLine::V7_0);
        short_of_7.retain(|name| name != "instances_debug_repair");
        assert_eq!(fake_line(&short_of_7), IncusLine::V6_0);
        assert_eq!(fake_line(&[]), IncusLine::V6_0, "the oldest line at least");
    }

    #[test]
    fn skipped_checks_are_not_compared() {
        let real = vec![check("get", Outcome::Skipped, Value::Null)];
        let fake = vec![check("get", Outcome::Passed, json!({"item": {}}))];
        assert!(divergences(&real, &fake).is_empty());
    }
}
