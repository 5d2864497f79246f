//! The catalogue's own published document conforms to tama-operations/1.

use incus_conformance::tama::{self, Caller, Dex};
use serde_json::Value;

fn assert_valid(document: &Value) {
    let report = tama::validate(document);
    assert!(report.is_valid(), "{:#?}", report.violations());
    let bytes = serde_json::to_vec_pretty(document).expect("serializes");
    let report = tama::validate_bytes(&bytes);
    assert!(report.is_valid(), "{:#?}", report.violations());
}

#[test]
fn the_exported_tama_document_validates_clean() {
    assert_valid(&incus_operations::tama_document());
}

#[test]
fn the_tama_document_of_every_operation_validates_clean() {
    assert_valid(&incus_operations::tama_document_all());
}

#[test]
fn the_exported_tama_document_installs_in_the_reference_dispatcher() {
    let document = incus_operations::tama_document();
    let mut dex = Dex::new();
    dex.install(document.clone(), |_id: String, input: Value| async move {
        Err::<Value, Value>(input)
    })
    .expect("installs");
    let every_scope: Vec<String> = document["paths"]
        .as_object()
        .into_iter()
        .flat_map(|paths| paths.values())
        .flat_map(|item| {
            item["post"]["x-tama-scopes"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|scope| scope.as_str().map(str::to_owned))
        .collect();
    let hits = dex.search("", &Caller::with_scopes(every_scope));
    assert_eq!(
        hits.len(),
        document["paths"].as_object().map_or(0, |p| p.len())
    );
}
