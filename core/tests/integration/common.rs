//! Helpers shared by the catalogue tests.

use incus_operations::Descriptor;
use serde_json::Value;

/// Every catalogued descriptor, exported or not, sorted by name.
pub(crate) fn every_descriptor() -> Vec<&'static Descriptor> {
    let mut every: Vec<&'static Descriptor> = incus_operations::all();
    every.extend(
        incus_operations::not_exported()
            .iter()
            .filter_map(|entry| entry.descriptor()),
    );
    every.sort_by_key(|descriptor| descriptor.name());
    every
}

/// The example input documented at the end of a description (`Example input: {...}`).
pub(crate) fn documented_example(description: &str) -> Value {
    let (_, example) = description
        .rsplit_once("Example input: ")
        .expect("every description documents an example input");
    serde_json::from_str(example).expect("the example is JSON")
}
