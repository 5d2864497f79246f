//! `incus storage volume move` and `copy` between two pools against the fake: the volume goes
//! (with its snapshot) to the other pool and comes back as a copy.

use crate::cli::{csv_rows, setup, NO_CLIENT};
use crate::ignorable::trial;
use libtest_mimic::{Completion, Trial};

pub(crate) fn trials() -> Vec<Trial> {
    vec![trial(
        "official_client_moves_and_copies_volumes_between_pools",
        official_client_moves_and_copies_volumes_between_pools,
    )]
}

async fn official_client_moves_and_copies_volumes_between_pools() -> Completion {
    let fake = crate::cli::fake_builder()
        .start()
        .await
        .expect("fake starts");
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    cli.ok(&["storage", "create", "p2", "dir"]).await;
    cli.ok(&["storage", "volume", "create", "default", "v1", "user.k=v"])
        .await;
    cli.ok(&[
        "storage", "volume", "snapshot", "create", "default", "v1", "s1",
    ])
    .await;
    cli.ok(&["storage", "volume", "move", "default/v1", "p2/v2"])
        .await;
    let listed = cli
        .ok(&["storage", "volume", "list", "p2", "-f", "csv", "-c", "tn"])
        .await;
    // Incus 6.0 (the line of this client and of the fake here) lists a custom volume's snapshots in its pool's
    // volume list, as the real 6.0.4 does (the wide CLI set's recording).
    assert_eq!(
        csv_rows(&listed),
        [["custom", "v2"], ["custom (snapshot)", "v2/s1"]],
        "{listed}"
    );
    let snapshots = cli
        .ok(&[
            "storage", "volume", "snapshot", "list", "p2", "v2", "-f", "csv", "-c", "n",
        ])
        .await;
    assert_eq!(csv_rows(&snapshots), [["s1"]], "the snapshot moved with it");
    let gone = cli
        .run(&["storage", "volume", "show", "default", "v1"])
        .await;
    assert!(!gone.status.success(), "the source is gone");
    let value = cli
        .ok(&["storage", "volume", "get", "p2", "v2", "user.k"])
        .await;
    assert_eq!(value, "v\n");
    cli.ok(&["storage", "volume", "copy", "p2/v2", "default/back"])
        .await;
    let value = cli
        .ok(&["storage", "volume", "get", "default", "back", "user.k"])
        .await;
    assert_eq!(value, "v\n");
    Completion::Completed
}
