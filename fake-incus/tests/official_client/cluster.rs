//! A fake cluster driven by the official client through its members' Unix sockets: `cluster
//! list`, `launch --target`, `list` with the location column, exec through one member on an
//! instance of another, stop and delete, and `cluster list` showing a dead member OFFLINE.
//! The answers checked are those a real 3-member Incus 6.0.4 cluster gives.

use crate::cli::{csv_rows, setup, Cli, NO_CLIENT};
use crate::ignorable::trial;
use fake_incus::{ClusterTimings, FakeIncus};
use libtest_mimic::{Completion, Trial};
use std::time::Duration;

pub(crate) fn trials() -> Vec<Trial> {
    vec![
        trial(
            "official_client_lists_the_cluster_and_places_instances_with_target",
            official_client_lists_the_cluster_and_places_instances_with_target,
        ),
        trial(
            "official_client_execs_stops_and_deletes_through_another_member",
            official_client_execs_stops_and_deletes_through_another_member,
        ),
        trial(
            "official_client_shows_a_dead_member_offline",
            official_client_shows_a_dead_member_offline,
        ),
    ]
}

async fn fake_cluster(timings: ClusterTimings) -> FakeIncus {
    crate::cli::fake_builder()
        .cluster(["m1", "m2", "m3"])
        .cluster_timings(timings)
        .start()
        .await
        .expect("fake cluster")
}

/// The client on `member`'s socket, sharing `cli`'s configuration.
fn through(cli: &Cli, fake: &FakeIncus, member: &str) -> Cli {
    Cli {
        binary: cli.binary.clone(),
        socket: fake.member(member).expect("member").unix_socket,
        conf: tempfile::tempdir().expect("temp conf"),
    }
}

/// The (name, url, status, message) of each `incus cluster list -c nusm` row.
fn members(csv: &str) -> Vec<(String, String, String, String)> {
    csv_rows(csv)
        .into_iter()
        .map(|r| {
            let at = |i: usize| r.get(i).cloned().unwrap_or_default();
            (at(0), at(1), at(2), at(3))
        })
        .collect()
}

async fn official_client_lists_the_cluster_and_places_instances_with_target() -> Completion {
    let fake = fake_cluster(ClusterTimings::fast()).await;
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    let listed = members(
        &cli.ok(&["cluster", "list", "-f", "csv", "-c", "nusm"])
            .await,
    );
    let names: Vec<&str> = listed.iter().map(|m| m.0.as_str()).collect();
    assert_eq!(names, ["m1", "m2", "m3"]);
    assert!(
        listed.iter().all(|m| m.1.starts_with("https://127.0.0.1")),
        "{listed:?}"
    );
    assert!(
        listed
            .iter()
            .all(|m| (m.2.as_str(), m.3.as_str()) == ("ONLINE", "Fully operational")),
        "{listed:?}"
    );
    let json = cli.ok(&["cluster", "list", "-f", "json"]).await;
    let json: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(
        json[0]["roles"],
        serde_json::json!(["database-leader", "database"])
    );
    let table = cli.ok(&["cluster", "list"]).await;
    assert!(
        table.contains("| m2 ") && table.contains("Fully operational"),
        "{table}"
    );

    cli.ok(&["launch", "busybox", "cl-on-m2", "--target", "m2"])
        .await;
    cli.ok(&["launch", "busybox", "cl-on-m3", "--target", "m3"])
        .await;
    cli.ok(&["launch", "busybox", "cl-placed"]).await;
    let m3 = through(&cli, &fake, "m3");
    let list = m3.ok(&["list", "-f", "csv", "-c", "nsL"]).await;
    assert_eq!(
        csv_rows(&list),
        [
            ["cl-on-m2", "RUNNING", "m2"],
            ["cl-on-m3", "RUNNING", "m3"],
            ["cl-placed", "RUNNING", "m1"]
        ],
        "the same list through any member, the untargeted instance on the emptiest member"
    );
    let refused = cli
        .run(&["launch", "busybox", "cl-nowhere", "--target", "nope"])
        .await;
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("Cluster member \"nope\" not found"),
        "{stderr}"
    );
    Completion::Completed
}

async fn official_client_execs_stops_and_deletes_through_another_member() -> Completion {
    let fake = fake_cluster(ClusterTimings::fast()).await;
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    let m2 = through(&cli, &fake, "m2");
    m2.ok(&["launch", "busybox", "cl-remote", "--target", "m2"])
        .await;
    let out = cli
        .run(&["exec", "cl-remote", "--", "echo", "from-m2"])
        .await;
    assert_eq!(
        (out.status.code(), out.stdout.as_slice()),
        (Some(0), &b"from-m2\n"[..]),
        "exec through m1 on an instance of m2: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = cli
        .run(&["exec", "cl-remote", "--", "sh", "-c", "exit 5"])
        .await;
    assert_eq!(out.status.code(), Some(5));
    cli.ok(&["stop", "cl-remote", "--force"]).await;
    assert_eq!(
        csv_rows(&cli.ok(&["list", "-f", "csv", "-c", "nsL"]).await),
        [["cl-remote", "STOPPED", "m2"]]
    );
    cli.ok(&["delete", "cl-remote"]).await;
    assert!(m2.ok(&["list", "-f", "csv"]).await.trim().is_empty());
    Completion::Completed
}

async fn official_client_shows_a_dead_member_offline() -> Completion {
    let fake = fake_cluster(ClusterTimings {
        offline: fake_incus::Span::fixed(Duration::from_millis(100)),
        ..ClusterTimings::fast()
    })
    .await;
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    cli.ok(&["launch", "busybox", "cl-doomed", "--target", "m3"])
        .await;
    fake.member_down("m3").expect("member down");
    let mut listed = Vec::new();
    for _ in 0..50 {
        listed = members(
            &cli.ok(&["cluster", "list", "-f", "csv", "-c", "nusm"])
                .await,
        );
        if listed.get(2).is_some_and(|m| m.2 == "OFFLINE") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let m3 = listed.get(2).cloned().unwrap_or_default();
    assert_eq!(
        (m3.0.as_str(), m3.2.as_str()),
        ("m3", "OFFLINE"),
        "{listed:?}"
    );
    assert!(m3.3.starts_with("No heartbeat for "), "{listed:?}");
    let list = cli.ok(&["list", "-f", "csv", "-c", "nsL"]).await;
    assert_eq!(csv_rows(&list), [["cl-doomed", "ERROR", "m3"]]);
    Completion::Completed
}
