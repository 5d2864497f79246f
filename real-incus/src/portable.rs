//! Running the portable scenarios on the real daemon (between scenarios the project's instances are
//! removed and the `busybox` alias restored) and, in differential mode, each also on a fresh fake
//! Incus, compared step by step by shape.
use std::collections::HashMap;

use serde_json::Value;

use crate::admin::Admin;
use crate::cleanup;
use crate::cli::Cli;
use crate::operations::Operations;
use crate::plan::Sandbox;
use crate::report::{Outcome, ScenarioRow};
use crate::sandbox::{self, ImageSource};
use crate::scenarios::{self, Scenario};
use crate::shape::shape_differences;

/// The alias portable scenarios use for the test image.
pub(crate) const SCENARIO_ALIAS: &str = "busybox";

/// Results of the portable scenarios.
#[derive(Debug, Default)]
pub(crate) struct PortableRun {
    pub(crate) rows: Vec<ScenarioRow>,
    pub(crate) divergences: Vec<ScenarioRow>,
}

/// Everything the scenarios need on the real side.
pub(crate) struct RealSide<'a> {
    pub(crate) admin: &'a Admin,
    pub(crate) ops: &'a dyn Operations,
    pub(crate) sandbox: &'a Sandbox,
    pub(crate) source: &'a ImageSource,
}

/// Runs every portable scenario; with `compare`, also on the fake.
pub(crate) async fn run_all(cli: &Cli, real: RealSide<'_>, compare: bool) -> PortableRun {
    let mut run = PortableRun::default();
    let dir = cli.scenarios.clone().unwrap_or_else(scenarios::default_dir);
    let all = match scenarios::load(&dir) {
        Ok(all) => all,
        Err(e) => {
            run.rows.push(row("scenarios", Outcome::Failed, Some(e)));
            return run;
        }
    };
    let (portable, fake_only): (Vec<Scenario>, Vec<Scenario>) =
        all.into_iter().partition(Scenario::portable);
    eprintln!(
        "scenarios: {} portable (run here), {} fake-only (skipped) in {}",
        portable.len(),
        fake_only.len(),
        dir.display()
    );
    let schemas: HashMap<String, Value> = real
        .ops
        .catalogue()
        .into_iter()
        .map(|info| (info.name, info.output_schema))
        .collect();
    for scenario in &portable {
        if let Err(e) = reset(&real).await {
            run.rows.push(row(
                &scenario.name,
                Outcome::Failed,
                Some(format!("reset before the scenario: {e}")),
            ));
            continue;
        }
        let on_real =
            scenarios::run(real.ops, &schemas, scenario, Some(&real.sandbox.project)).await;
        let outcome = if on_real.failure.is_some() {
            Outcome::Failed
        } else {
            Outcome::Passed
        };
        eprintln!(
            "  {}  scenario::{}",
            if outcome == Outcome::Passed {
                "ok  "
            } else {
                "FAIL"
            },
            scenario.name
        );
        if let Some(failure) = &on_real.failure {
            eprintln!("        {failure}");
        }
        if compare {
            match on_fake(cli, &schemas, scenario).await {
                Ok(fake_steps) => run.divergences.extend(diverging_steps(
                    &scenario.name,
                    &on_real.steps,
                    &fake_steps,
                )),
                Err(e) => run
                    .divergences
                    .push(row(&scenario.name, Outcome::Failed, Some(e))),
            }
        }
        run.rows.push(row(
            &format!("scenario::{}", scenario.name),
            outcome,
            on_real.failure,
        ));
    }
    run
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

async fn on_fake(
    cli: &Cli,
    schemas: &HashMap<String, Value>,
    scenario: &Scenario,
) -> Result<Vec<(String, Value)>, String> {
    let fake = crate::compare::Fake::start(cli).await?;
    let outcome = scenarios::run(&fake.ops, schemas, scenario, None).await;
    Ok(outcome.steps)
}

fn diverging_steps(
    name: &str,
    real: &[(String, Value)],
    fake: &[(String, Value)],
) -> Vec<ScenarioRow> {
    let mut rows: Vec<ScenarioRow> = real
        .iter()
        .zip(fake)
        .filter_map(|((label, r), (_, f))| {
            let differences = shape_differences(r, f);
            (!differences.is_empty()).then(|| {
                row(
                    &format!("scenario::{name}: {label}"),
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
