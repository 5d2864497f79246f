//! The `incus-conformance` command line (minimal wiring for `tama validate`; merged with the
//! full command tree by the coordinator).

pub(crate) mod tama_validate;
