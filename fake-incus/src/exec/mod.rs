pub(crate) mod interpreter;
