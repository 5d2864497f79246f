//! Scenarios: data files that describe calls and what each must return (format documented in
//! `scenarios/README.md`), loaded into trials named `scenario::<file-stem>`.

pub(crate) mod format;
pub(crate) mod journal;
pub(crate) mod load;
pub(crate) mod matcher;
pub(crate) mod run;
pub(crate) mod target;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::runner::Check;
use target::TargetFactory;

/// Environment variable that points the run at another scenario directory.
pub(crate) const DIR_VARIABLE: &str = "INCUS_CONFORMANCE_SCENARIOS";

/// The scenario directory: `$INCUS_CONFORMANCE_SCENARIOS`, or the repository's `scenarios/`.
pub(crate) fn default_dir() -> PathBuf {
    std::env::var_os(DIR_VARIABLE)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios"))
}

/// One check per scenario file of `dir`. A file that does not load becomes a failing check,
/// so a broken file is never silently skipped. Fake-only scenarios are left out when the
/// factory is not a fake.
pub(crate) fn checks(dir: &Path, factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    let files = match load::files(dir) {
        Ok(files) => files,
        Err(e) => {
            let message = e.to_string();
            return vec![Check::with_clauses(
                "scenario::directory",
                vec![],
                move || Err(message),
            )];
        }
    };
    files
        .iter()
        .filter_map(|path| check(path, factory))
        .collect()
}

fn check(path: &Path, factory: &Arc<dyn TargetFactory>) -> Option<Check> {
    let name = format!("scenario::{}", load::stem(path));
    let scenario = match load::load(path) {
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
        crate::suites::block_on(async move {
            let setup = scenario.fake.clone().unwrap_or_default();
            let target = factory.start(&setup).await?;
            run::run(&scenario, target.as_ref()).await
        })
    }))
}
