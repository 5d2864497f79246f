//! Custom volume backups through the official client: `incus storage volume export` (a backup
//! made, downloaded and deleted by the client) and `incus storage volume import` of the file.

use crate::cli::{csv_rows, setup, NO_CLIENT};
use crate::ignorable::trial;
use libtest_mimic::{Completion, Trial};

pub(crate) fn trials() -> Vec<Trial> {
    vec![trial(
        "official_client_exports_a_custom_volume_and_imports_it_back_with_its_snapshots",
        official_client_exports_a_custom_volume_and_imports_it_back_with_its_snapshots,
    )]
}

async fn official_client_exports_a_custom_volume_and_imports_it_back_with_its_snapshots(
) -> Completion {
    let fake = crate::cli::fake_builder().start().await.unwrap();
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    cli.ok(&["storage", "volume", "create", "default", "v1", "user.k=v"])
        .await;
    cli.ok(&[
        "storage", "volume", "snapshot", "create", "default", "v1", "s0",
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("v1.tar.gz");
    cli.ok(&[
        "storage",
        "volume",
        "export",
        "default",
        "v1",
        &file.to_string_lossy(),
    ])
    .await;
    assert!(std::fs::metadata(&file).unwrap().len() > 0);
    // The client deletes the backup it made once downloaded.
    let left = cli
        .ok(&[
            "query",
            "/1.0/storage-pools/default/volumes/custom/v1/backups",
        ])
        .await;
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&left).unwrap(),
        serde_json::json!([])
    );
    cli.ok(&[
        "storage",
        "volume",
        "import",
        "default",
        &file.to_string_lossy(),
        "v2",
    ])
    .await;
    let got = cli
        .ok(&["storage", "volume", "get", "default", "v2", "user.k"])
        .await;
    assert_eq!(got.trim(), "v");
    let snapshots = cli
        .ok(&[
            "storage", "volume", "snapshot", "list", "default", "v2", "-f", "csv", "-c", "n",
        ])
        .await;
    assert_eq!(
        csv_rows(&snapshots),
        vec![vec!["s0".to_owned()]],
        "{snapshots}"
    );
    Completion::Completed
}
