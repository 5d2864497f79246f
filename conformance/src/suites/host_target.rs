//! The fake backend's host targets, where the suites that build their own hosts import them.

pub(crate) use crate::scenario::fake::{HostFactory, HostTargets};
