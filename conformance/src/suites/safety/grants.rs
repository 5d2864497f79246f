//! `safety::*` trials: see the parent module.

use std::sync::Arc;

use crate::runner::Check;
use crate::scenario::target::TargetFactory;

/// The trials of this group.
pub(crate) fn checks(_factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    Vec::new()
}
