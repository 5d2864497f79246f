//! Starting the embedded fake Incus with a scenario's or a suite's fake-only setup.

use fake_incus::{FakeIncus, Rule};

use crate::scenario::format::FakeSetup;

/// Starts a fake Incus with the seed state and fault rules of `setup`.
pub(crate) async fn start(setup: &FakeSetup) -> Result<FakeIncus, String> {
    start_with(setup, false).await
}

/// Starts a fake Incus with `setup`, also on HTTPS with mutual TLS when `https` is true.
pub(crate) async fn start_with(setup: &FakeSetup, https: bool) -> Result<FakeIncus, String> {
    let mut builder = FakeIncus::builder().https(https);
    if let Some(seed) = &setup.seed {
        builder = builder.state(seed.clone());
    }
    for fault in &setup.faults {
        let rule: Rule = serde_json::from_value(fault.clone())
            .map_err(|e| format!("fault rule {fault} is not a fake-incus rule: {e}"))?;
        builder = builder.rule(rule);
    }
    builder
        .start()
        .await
        .map_err(|e| format!("the fake Incus did not start with this setup: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load;
    use serde_json::json;

    fn starts(setup: &FakeSetup) -> Result<(), String> {
        crate::suites::block_on(async { start(setup).await.map(drop) })
    }

    #[test]
    fn every_scenario_setup_is_accepted_by_the_fake() {
        for file in load::files(&crate::scenario::default_dir()).unwrap() {
            let scenario = load::load(&file).unwrap();
            if let Some(setup) = &scenario.fake {
                starts(setup).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            }
        }
    }

    #[test]
    fn every_suite_setup_is_accepted_by_the_fake() {
        for setup in crate::suites::mutation_faults::setups()
            .into_iter()
            .chain(crate::suites::inspection_bounds::setups())
        {
            starts(&setup).unwrap_or_else(|e| panic!("{setup:?}: {e}"));
        }
    }

    #[test]
    fn a_rule_the_fake_does_not_know_is_a_clear_error() {
        let setup = FakeSetup {
            seed: None,
            faults: vec![json!({"path": "/1.0", "fault": {"kind": "explode"}})],
        };
        let error = starts(&setup).unwrap_err();
        assert!(error.contains("is not a fake-incus rule"), "{error}");
    }

    #[test]
    fn the_journal_records_requests_for_no_backend_request_checks() {
        crate::suites::block_on(async {
            let fake = start(&FakeSetup::default()).await?;
            assert!(fake.journal().is_empty());
            Ok(())
        })
        .unwrap();
    }
}
