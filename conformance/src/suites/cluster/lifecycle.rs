//! `scenarios/lifecycle.json` through a member that is not the first: every exported operation
//! succeeds as on a standalone daemon, every request reaches the cluster through that member, and
//! the `location` of what the lifecycle made is the member the cluster placed the instance on.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::trial;
use crate::runner::Check;
use crate::scenario::load;
use crate::scenario::target::TargetFactory;

pub(super) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    ["m2", "m3"]
        .into_iter()
        .map(|via| {
            trial(
                factory,
                &format!("catalogue::synchronous::the_lifecycle_runs_through_{via}"),
                move |cluster| {
                    let scenario = load::builtin()
                        .into_iter()
                        .find(|file| file.stem == "lifecycle")
                        .ok_or("the built-in scenarios have no lifecycle.json")?
                        .scenario
                        .map_err(|e| e.to_string())?;
                    let (transcript, entries) = cluster.run_scenario(via, &scenario);
                    transcript.verdict()?;
                    if let Some(other) = entries.iter().find(|e| e.member.as_deref() != Some(via)) {
                        return Err(format!(
                            "{} {} came through {:?}, not {via}",
                            other.method, other.path, other.member
                        ));
                    }
                    let called: BTreeSet<&str> =
                        transcript.steps.iter().map(|s| s.operation.as_str()).collect();
                    let exported: BTreeSet<&str> =
                        incus_operations::all().iter().map(|d| d.name()).collect();
                    if called != exported {
                        return Err(format!(
                            "the lifecycle is not the exported operations: not called {:?}, not exported {:?}",
                            exported.difference(&called).collect::<Vec<_>>(),
                            called.difference(&exported).collect::<Vec<_>>()
                        ));
                    }
                    Ok(())
                },
            )
        })
        .collect()
}
