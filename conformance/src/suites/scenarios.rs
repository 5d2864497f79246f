//! The scenario files as trials, one `scenario::<file-stem>` per file.

use std::sync::Arc;

use super::session::trial_runtime;
use crate::runner::Check;
use crate::scenario::load::{self, ScenarioFile};
use crate::scenario::run;
use crate::scenario::target::TargetFactory;

/// One check per scenario file (`$INCUS_CONFORMANCE_SCENARIOS`, else the built-in files). A
/// file that does not load becomes a failing check, so a broken file is never silently
/// skipped. Fake-only scenarios are left out when the factory is not a fake. Portable scenarios
/// get the runner's variables of the fake's default state (`${project}`, `${pool}`, `${alias}`,
/// `${fingerprint}`).
pub(crate) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    match load::from_environment() {
        Ok(files) => files
            .into_iter()
            .filter_map(|file| check(file, factory))
            .collect(),
        Err(e) => {
            let message = e.to_string();
            vec![Check::with_clauses(
                "scenario::directory",
                vec![],
                move || Err(message),
            )]
        }
    }
}

fn check(file: ScenarioFile, factory: &Arc<dyn TargetFactory>) -> Option<Check> {
    let name = format!("scenario::{}", file.stem);
    let scenario = match file.scenario {
        Ok(scenario) => scenario,
        Err(e) => {
            let message = e.to_string();
            return Some(Check::with_clauses(name, vec![], move || Err(message)));
        }
    };
    if !scenario.portable() && !factory.is_fake() {
        return None;
    }
    let factory = Arc::clone(factory);
    let clauses = scenario.clauses.clone();
    Some(Check::with_clauses(name, clauses, move || {
        trial_runtime(factory.virtual_time())?.block_on(async move {
            let setup = scenario.fake.clone().unwrap_or_default();
            let target = factory.start(&setup).await?;
            // The fake's default state: project, pool and the `busybox` image, all `default`.
            let context = if scenario.portable() {
                run::Context::discover(target.as_ref(), "default", "default", "busybox").await
            } else {
                run::Context::default()
            };
            run::run_in(&scenario, target.as_ref(), &context)
                .await
                .verdict()
        })
    }))
}
