//! A target factory that starts nothing: it lets the registry be built to list the checks
//! (`CLAUSES.md`, the registry tests) without any fake Incus.

use crate::scenario::format::FakeSetup;
use crate::scenario::target::{BoxFuture, Target, TargetFactory};

/// A factory for listing the checks only: it starts no target.
pub(crate) struct ListingOnly;

impl TargetFactory for ListingOnly {
    fn start<'a>(
        &'a self,
        _setup: &'a FakeSetup,
    ) -> BoxFuture<'a, Result<Box<dyn Target>, String>> {
        Box::pin(async {
            Err("this registry was built for listing only; it starts no target".into())
        })
    }

    fn is_fake(&self) -> bool {
        true
    }
}
