//! The tama-operations/1 tests linked into one binary: the catalogue's own document, the
//! command line, the reference dispatcher and random edits. (The corpus runner, one trial per
//! file of `valid/` and `invalid/`, is the separate `tama_corpus` target.)

mod catalogue;
mod cli;
mod dispatch;
mod mutations;
mod support;
