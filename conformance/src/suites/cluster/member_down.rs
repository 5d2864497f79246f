//! A member goes down: the cluster scenarios of `scenarios/cluster/` (before a mutation, during
//! a mutation's wait, during an exec, while lists are read through the members still up), each a
//! trial `cluster::<its clause>::<file stem>`. Each runs through `m1` and through `m3`, on a
//! cluster of its own each time, with `m2` going down and coming back. The same files run on a
//! real cluster (`real-incus`), those without fake-only set-up.

use std::sync::Arc;

use fake_incus::FakeIncusBuilder;

use super::session::Cluster;
use crate::runner::Check;
use crate::scenario::fake;
use crate::scenario::format::Scenario;
use crate::scenario::load;
use crate::scenario::target::TargetFactory;

/// The members each cluster scenario goes through (`m2` goes down).
const THROUGH: [&str; 2] = ["m1", "m3"];

pub(super) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    load::builtin_cluster()
        .into_iter()
        .map(|file| {
            let factory = Arc::clone(factory);
            match file.scenario {
                Ok(scenario) => {
                    let clause = scenario.clauses.first().cloned().unwrap_or_default();
                    let name = format!("cluster::{clause}::{}", file.stem);
                    Check::new(name, move || run(&factory, &scenario))
                }
                Err(e) => {
                    let message = e.to_string();
                    let name = format!("cluster::scenario::{}", file.stem);
                    Check::with_clauses(name, vec![], move || Err(message))
                }
            }
        })
        .collect()
}

/// The scenario through each member of [`THROUGH`], on a fresh cluster with its fake-only set-up.
fn run(factory: &Arc<dyn TargetFactory>, scenario: &Scenario) -> Result<(), String> {
    let setup = scenario.fake.clone().unwrap_or_default();
    for via in THROUGH {
        let seed = setup.seed.clone();
        let cluster = Cluster::start_with(factory, |builder: FakeIncusBuilder| match seed {
            Some(seed) => builder.state(seed),
            None => builder,
        })?;
        for rule in &setup.faults {
            fake::add_fault(cluster.fake(), rule)?;
        }
        let (transcript, _) = cluster.run_scenario(via, scenario);
        transcript
            .verdict()
            .map_err(|e| format!("through {via}: {e}"))?;
    }
    Ok(())
}
