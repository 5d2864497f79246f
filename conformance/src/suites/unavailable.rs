//! The target factory used while the core's `run()` is not part of the build: every trial
//! that needs a target fails with this explanation, and listing still works.

use crate::scenario::format::FakeSetup;
use crate::scenario::target::{BoxFuture, Target, TargetFactory};

/// A factory that cannot start targets.
pub(crate) struct Unavailable;

impl TargetFactory for Unavailable {
    fn start<'a>(
        &'a self,
        _setup: &'a FakeSetup,
    ) -> BoxFuture<'a, Result<Box<dyn Target>, String>> {
        Box::pin(async {
            Err(
                "no target: the core's run() and the fake Incus are not wired into this build yet"
                    .into(),
            )
        })
    }

    fn is_fake(&self) -> bool {
        true
    }
}
