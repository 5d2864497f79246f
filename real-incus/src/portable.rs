//! The portable scenarios on the real daemon, through the conformance crate's scenario engine
//! (between scenarios the project's instances are removed and the `busybox` alias restored)
//! and, in differential mode, each also on the engine's fake backend, compared step by step by
//! shape. Every step is also a check of the report, under its operation.

use fake_incus::IncusLine;
use incus_conformance::scenario::format::Scenario;
use incus_conformance::scenario::load::{self, ScenarioFile};
use incus_conformance::scenario::run::{self, Context, StepOutcome, Transcript};
use incus_conformance::scenario::target::{HostTarget, Target};
use incus_conformance::ReferenceHost;

use crate::admin::Admin;
use crate::cleanup;
use crate::cli::Cli;
use crate::cluster::{self, ClusterInfo};
use crate::compare;
use crate::plan::Sandbox;
use crate::recorder::judged;
use crate::report::{Check, Outcome, ScenarioRow, ServerAnswer};
use crate::sandbox::{self, ImageSource, SCENARIO_ALIAS};
use crate::shape::shape_differences;
use crate::targets::{self, Targets};

/// Results of the portable scenarios.
#[derive(Debug, Default)]
pub(crate) struct PortableRun {
    /// One row per scenario.
    pub(crate) rows: Vec<ScenarioRow>,
    /// Every step that ran on the real daemon, as a check of its operation.
    pub(crate) checks: Vec<Check>,
    /// Differential mode: the steps whose results differ in shape from the fake's.
    pub(crate) divergences: Vec<ScenarioRow>,
    /// Clustered: the steps whose answer was accepted as the cluster's by design, with the reason.
    pub(crate) clustered_answers: Vec<String>,
    /// The steps with alternatives (`any_of`, where Incus lines differ): which one the server met.
    pub(crate) answers: Vec<ServerAnswer>,
}

/// Everything the scenarios need on the real side.
pub(crate) struct RealSide<'a> {
    pub(crate) admin: &'a Admin,
    pub(crate) targets: &'a Targets,
    pub(crate) sandbox: &'a Sandbox,
    pub(crate) source: &'a ImageSource,
    /// The cluster, when the target is one: its documented answers that differ by design are
    /// accepted, and the differential run compares with a fake cluster of the same members.
    pub(crate) cluster: Option<&'a ClusterInfo>,
    /// The Incus line the fake imitates in the differential run ([`compare::fake_line`]).
    pub(crate) fake_line: IncusLine,
}

/// The scenario files: `--scenarios DIR`, else the ones built into the harness.
fn files(cli: &Cli) -> Result<(Vec<ScenarioFile>, String), String> {
    match &cli.scenarios {
        Some(dir) => load::directory(dir)
            .map(|files| (files, dir.display().to_string()))
            .map_err(|e| e.to_string()),
        None => Ok((
            load::builtin(),
            "the harness's built-in scenarios".to_owned(),
        )),
    }
}

/// Runs every portable scenario; with `compare`, also on the fake.
pub(crate) async fn run_all(cli: &Cli, real: RealSide<'_>, compare: bool) -> PortableRun {
    let mut run = PortableRun::default();
    let (files, origin) = match files(cli) {
        Ok(found) => found,
        Err(e) => {
            run.rows.push(row("scenarios", Outcome::Failed, Some(e)));
            return run;
        }
    };
    let mut portable = Vec::new();
    let mut fake_only = 0;
    for file in files {
        match file.scenario {
            Ok(scenario) if scenario.portable() => portable.push(scenario),
            Ok(_) => fake_only += 1,
            Err(e) => run.rows.push(row(
                &format!("scenario::{}", file.stem),
                Outcome::Failed,
                Some(e.to_string()),
            )),
        }
    }
    eprintln!(
        "scenarios: {} portable (run here), {fake_only} fake-only (skipped) from {origin}",
        portable.len(),
    );
    for scenario in &portable {
        let name = format!("scenario::{}", scenario.name);
        if let Err(e) = reset(&real).await {
            let problem = format!("reset before the scenario: {e}");
            run.rows.push(row(&name, Outcome::Failed, Some(problem)));
            continue;
        }
        let target = &real.targets.standard;
        let sandbox = real.sandbox;
        let mut context =
            Context::discover(target, &sandbox.project, &sandbox.pool, SCENARIO_ALIAS).await;
        context.clustered = real.cluster.is_some();
        let mut on_real = run::run_in(scenario, target, &context).await;
        if real.cluster.is_some() {
            let target = &real.targets.standard;
            let schema = |operation: &str| target.output_schema(operation);
            if let Some(note) = accept_clustered(scenario, &mut on_real, schema) {
                eprintln!("        {note}");
                run.clustered_answers.push(note);
            }
        }
        let verdict = on_real.verdict();
        let outcome = if verdict.is_ok() {
            Outcome::Passed
        } else {
            Outcome::Failed
        };
        let mark = if outcome == Outcome::Passed {
            "ok  "
        } else {
            "FAIL"
        };
        eprintln!("  {mark}  {name}");
        if let Err(failure) = &verdict {
            eprintln!("        {failure}");
        }
        run.checks.extend(
            on_real
                .steps
                .iter()
                .map(|step| step_check(&scenario.name, step)),
        );
        run.answers
            .extend(alternatives_met(&scenario.name, &on_real.steps));
        if compare {
            match on_fake(scenario, real.cluster, real.fake_line, cli.timeout).await {
                Ok(fake_steps) => run.divergences.extend(diverging_steps(
                    &scenario.name,
                    &on_real.steps,
                    &fake_steps,
                )),
                Err(e) => run.divergences.push(row(&name, Outcome::Failed, Some(e))),
            }
        }
        run.rows.push(row(&name, outcome, verdict.err()));
    }
    run
}

/// Clustered: when the scenario's failing step is its last and its answer is the cluster's
/// documented answer ([`cluster::CLUSTERED_ANSWERS`]), the step counts as passed; returns the note
/// that says so. A step followed by others is never accepted (they did not run).
pub(crate) fn accept_clustered(
    scenario: &Scenario,
    transcript: &mut Transcript,
    schema: impl Fn(&str) -> Option<serde_json::Value>,
) -> Option<String> {
    let (index, _) = transcript.failing()?;
    if index + 1 != scenario.steps.len() {
        return None;
    }
    let step = &mut transcript.steps[index];
    let why = cluster::accepts_clustered_answer(
        &scenario.name,
        &step.operation,
        &step.result,
        schema(&step.operation).as_ref(),
    )?;
    step.problems.clear();
    Some(format!(
        "scenario::{}: {}: {why}",
        scenario.name, step.label
    ))
}

/// The steps whose result met one of their `any_of` alternatives: the server's answer where the
/// Incus lines differ, named by the alternative it met.
fn alternatives_met(scenario: &str, steps: &[StepOutcome]) -> Vec<ServerAnswer> {
    steps
        .iter()
        .filter_map(|step| {
            let alternative = step.alternative.as_ref()?;
            Some(ServerAnswer {
                question: format!("{}: {}", step.operation, step.label),
                answer: alternative.clone(),
                seen_in: format!("scenario::{scenario}"),
            })
        })
        .collect()
}

/// A scenario step as a check of its operation.
pub(crate) fn step_check(scenario: &str, step: &StepOutcome) -> Check {
    let verdict = if step.problems.is_empty() {
        Ok(())
    } else {
        Err(step.problems.join("; "))
    };
    judged(
        &step.operation,
        &format!("scenario::{scenario}: {}", step.label),
        step.input.clone(),
        step.result.clone(),
        step.duration,
        verdict,
    )
}

fn row(name: &str, outcome: Outcome, problem: Option<String>) -> ScenarioRow {
    ScenarioRow {
        name: name.to_owned(),
        outcome,
        problem,
    }
}

/// Removes the project's instances and makes sure the `busybox` alias exists again.
async fn reset(real: &RealSide<'_>) -> Result<(), String> {
    let project = &real.sandbox.project;
    cleanup::clear_instances(real.admin, project).await?;
    if real
        .admin
        .alias_target(project, SCENARIO_ALIAS)
        .await
        .is_err()
    {
        sandbox::restore_image(real.admin, project, real.source, &[SCENARIO_ALIAS])
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The scenario on a fresh fake of `line` with its default state, or for a cluster a fresh fake
/// cluster with the same members, called through the member with the real target's name; the
/// reference host bound to it with the run's request bound.
async fn on_fake(
    scenario: &Scenario,
    cluster: Option<&ClusterInfo>,
    line: IncusLine,
    timeout: u64,
) -> Result<Vec<StepOutcome>, String> {
    let (_fake, socket) = compare::start_fake(cluster, line).await?;
    let connection = targets::connection(targets::unix(&socket), timeout, None)?;
    let target = HostTarget::new(ReferenceHost::new(connection), ());
    let mut context = fake_context(&target).await;
    if cluster.is_some() {
        context = context.on_cluster();
    }
    Ok(run::run_in(scenario, &target, &context).await.steps)
}

/// The runner's variables of the fake's default state.
async fn fake_context(target: &dyn Target) -> Context {
    Context::discover(target, "default", "default", SCENARIO_ALIAS).await
}

fn diverging_steps(name: &str, real: &[StepOutcome], fake: &[StepOutcome]) -> Vec<ScenarioRow> {
    let mut rows: Vec<ScenarioRow> = real
        .iter()
        .zip(fake)
        .filter_map(|(r, f)| {
            let differences = shape_differences(&r.result, &f.result);
            (!differences.is_empty()).then(|| {
                row(
                    &format!("scenario::{name}: {}", r.label),
                    Outcome::Failed,
                    Some(differences.join("; ")),
                )
            })
        })
        .collect();
    if real.len() != fake.len() {
        rows.push(row(
            &format!("scenario::{name}"),
            Outcome::Failed,
            Some(format!(
                "the real daemon ran {} steps, the fake {} (one stopped at a failing step)",
                real.len(),
                fake.len()
            )),
        ));
    }
    rows
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (the portable scenarios on the real daemon);
    //! a test through the runner's public API or binary goes in `tests/runner`.

    use std::time::Duration;

    use incus_conformance::scenario::load;
    use serde_json::json;

    use super::*;

    fn unknown_alias() -> Scenario {
        load::builtin()
            .into_iter()
            .find(|f| f.stem == "instance_create_unknown_alias_fails")
            .and_then(|f| f.scenario.ok())
            .expect("the built-in scenario")
    }

    fn transcript(scenario: &Scenario, result: serde_json::Value, problems: &[&str]) -> Transcript {
        Transcript {
            scenario: scenario.name.clone(),
            steps: vec![StepOutcome {
                label: "incus_instance_create".into(),
                operation: "incus_instance_create".into(),
                scopes: vec!["incus.write".into()],
                input: json!({}),
                result,
                duration: Duration::from_millis(4),
                problems: problems.iter().map(|p| (*p).to_owned()).collect(),
                alternative: None,
            }],
        }
    }

    fn schema(operation: &str) -> Option<serde_json::Value> {
        incus_operations::fetch(operation).map(|d| d.output_schema().clone())
    }

    #[test]
    fn a_clustered_answer_turns_the_failing_last_step_into_a_pass_with_a_note() {
        let scenario = unknown_alias();
        let answer = json!({"error": {"kind": "native", "http_status": 500, "error_code": 500,
            "message": "No fingerprint prefix specified for the image"}});
        let mut run = transcript(&scenario, answer, &["/status is absent"]);
        let note = accept_clustered(&scenario, &mut run, schema).expect("accepted");
        assert!(run.passed());
        assert!(
            note.starts_with(
                "scenario::instance_create_unknown_alias_fails: incus_instance_create: clustered"
            ),
            "{note}"
        );
    }

    #[test]
    fn another_answer_or_a_passing_step_is_left_alone() {
        let scenario = unknown_alias();
        let other = json!({"error": {"kind": "native", "http_status": 500, "error_code": 500,
            "message": "Server isn't ready yet"}});
        let mut run = transcript(&scenario, other, &["/status is absent"]);
        assert_eq!(accept_clustered(&scenario, &mut run, schema), None);
        assert!(!run.passed(), "the step still fails");
        let mut passing = transcript(&scenario, json!({"status": "failed"}), &[]);
        assert_eq!(accept_clustered(&scenario, &mut passing, schema), None);
    }
}
