//! `incus snapshot create` and `incus storage volume snapshot create` without a name, run by the
//! official client against the fake of each line: the snapshot is named by `snapshots.pattern`,
//! and the daemon's refusals reach the user as the real 6.0.4 and 7.0.2 gave them (measured with
//! the same patterns; see `tests/fake/snapshot_patterns.rs`).

use crate::cli::{csv_rows, setup, NO_CLIENT};
use crate::ignorable::trial;
use fake_incus::{FakeIncus, IncusLine};
use libtest_mimic::{Completion, Trial};

pub(crate) fn trials() -> Vec<Trial> {
    vec![trial(
        "official_client_names_unnamed_snapshots_by_their_pattern_on_each_line",
        official_client_names_unnamed_snapshots_by_their_pattern_on_each_line,
    )]
}

async fn official_client_names_unnamed_snapshots_by_their_pattern_on_each_line() -> Completion {
    for line in [IncusLine::V6_0, IncusLine::V7_0] {
        let fake = FakeIncus::builder()
            .incus_version(line)
            .start()
            .await
            .expect("fake starts");
        let Some(cli) = setup(&fake).await else {
            return Completion::ignored_with(NO_CLIENT);
        };
        cli.ok(&["init", "busybox", "c1"]).await;
        cli.ok(&["config", "set", "c1", "snapshots.pattern=keep"])
            .await;
        cli.ok(&["snapshot", "create", "c1"]).await;
        cli.ok(&["snapshot", "create", "c1"]).await;
        cli.ok(&["config", "set", "c1", "snapshots.pattern=x%dy%d"])
            .await;
        let twice = cli.run(&["snapshot", "create", "c1"]).await;
        assert!(!twice.status.success(), "{line}");
        assert_eq!(
            String::from_utf8_lossy(&twice.stderr),
            "Error: Snapshot pattern may contain '%d' only once\n",
            "{line}"
        );
        let listed = cli
            .ok(&["snapshot", "list", "c1", "-f", "csv", "-c", "n"])
            .await;
        assert_eq!(csv_rows(&listed), [["keep"], ["keep-0"]], "{line}");

        cli.ok(&["storage", "volume", "create", "default", "v1"])
            .await;
        cli.ok(&[
            "storage",
            "volume",
            "set",
            "default",
            "v1",
            "snapshots.pattern=keep",
        ])
        .await;
        let literal = cli
            .run(&["storage", "volume", "snapshot", "create", "default", "v1"])
            .await;
        assert!(!literal.status.success(), "{line}");
        let expected = if line == IncusLine::V7_0 {
            "Error: Couldn't determine snapshot name\n"
        } else {
            // 6.0's fmt.Sprintf("keep", 0): `keep%!(EXTRA int=0)`.
            "Error: Storage name cannot contain white space\n"
        };
        assert_eq!(String::from_utf8_lossy(&literal.stderr), expected, "{line}");
    }
    Completion::Completed
}
