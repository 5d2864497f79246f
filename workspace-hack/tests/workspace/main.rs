//! The workspace's own shape, linked into one binary: here go the tests that read the whole
//! workspace (`cargo tree`, the README's layer diagram) rather than one crate's code.

mod features;
mod layers;
