//! A snapshot taken without a name is named by `snapshots.pattern` as the daemon of the line
//! names it: literal text, `%d` (once) and `{{ creation_date|date:"<Go layout>" }}`. Every
//! expected outcome below was measured on the real 6.0.4 and 7.0.2 daemons with the same
//! requests, in this order; the volume rules differ by the extensions in `src/line.rs`.

use crate::common::{call, launch};
use fake_incus::{FakeIncus, IncusLine, Reply};
use serde_json::{json, Value};

const VOLUMES: &str = "/1.0/storage-pools/default/volumes/custom";

async fn fake_of(line: IncusLine) -> FakeIncus {
    FakeIncus::builder()
        .incus_version(line)
        .start()
        .await
        .expect("fake starts")
}

/// Today in the layout, in UTC (the daemons here run in UTC).
fn today(layout: &str) -> String {
    let now = time::OffsetDateTime::now_utc();
    match layout {
        "2006-01-02" => format!(
            "{}-{:02}-{:02}",
            now.year(),
            u8::from(now.month()),
            now.day()
        ),
        _ => format!("{}{:02}{:02}", now.year(), u8::from(now.month()), now.day()),
    }
}

/// The outcome of an unnamed snapshot: the name it got, `op: <err>` when the operation failed,
/// or `<status> <error>` when the request was refused.
async fn take_unnamed(fake: &FakeIncus, collection: &str) -> String {
    let accepted = call(fake, "POST", collection, Some(json!({"name": ""}))).await;
    if accepted.status() != 202 {
        let (status, text) = accepted.native_error().expect("an Incus error");
        return format!("{status} {text}");
    }
    let op = accepted.operation().expect("an operation");
    let done = call(fake, "GET", &format!("{op}/wait?timeout=10"), None).await;
    let operation = done.metadata();
    if operation["status"] != "Success" {
        // 6.0 answers the failure as an error, 7.0 as the operation.
        let err = done.native_error().map_or_else(
            || operation["err"].as_str().unwrap_or("").to_string(),
            |(_, t)| t.into(),
        );
        return format!("op: {err}");
    }
    let resources = &accepted.metadata()["resources"];
    let url = resources["instances_snapshots"]
        .get(0)
        .or_else(|| resources["storage_volume_snapshots"].get(0))
        .and_then(Value::as_str)
        .expect("the snapshot's url");
    let name = url.split('?').next().unwrap_or_default();
    let name = name.rsplit('/').next().unwrap_or_default();
    percent_encoding::percent_decode_str(name)
        .decode_utf8_lossy()
        .into_owned()
}

async fn set_pattern(fake: &FakeIncus, object: &str, pattern: &str) {
    let set = call(
        fake,
        "PATCH",
        object,
        Some(json!({"config": {"snapshots.pattern": pattern}})),
    )
    .await;
    assert_eq!(set.status(), 200, "{}", set.json());
}

fn names(list: &Reply) -> Vec<String> {
    let urls = list.metadata().as_array().expect("a list").iter();
    urls.filter_map(Value::as_str)
        .map(|u| u.rsplit('/').next().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn an_unnamed_instance_snapshot_is_named_by_snapshots_pattern_on_both_lines() {
    for line in [IncusLine::V6_0, IncusLine::V7_0] {
        let fake = fake_of(line).await;
        launch(&fake, "c1", false).await;
        let snapshots = "/1.0/instances/c1/snapshots";
        let mut got = vec![];
        got.push(take_unnamed(&fake, snapshots).await);
        got.push(take_unnamed(&fake, snapshots).await);
        for (pattern, times) in [
            ("snap%d", 1),
            ("keep", 3),
            ("x%dy%d", 1),
            ("{{ creation_date|date:\"2006-01-02\" }}", 2),
            ("d{{ creation_date|date:\"20060102\" }}-%d", 2),
        ] {
            set_pattern(&fake, "/1.0/instances/c1", pattern).await;
            for _ in 0..times {
                got.push(take_unnamed(&fake, snapshots).await);
            }
        }
        let (date, compact) = (today("2006-01-02"), today("20060102"));
        let measured = [
            "snap0".to_string(),
            "snap1".into(),
            "snap2".into(),
            "keep".into(),
            "keep-0".into(),
            "keep-1".into(),
            "500 Snapshot pattern may contain '%d' only once".into(),
            date.clone(),
            format!("{date}-0"),
            format!("d{compact}-0"),
            format!("d{compact}-1"),
        ];
        assert_eq!(got, measured, "{line}");
        let list = call(&fake, "GET", snapshots, None).await;
        let taken: Vec<&String> = measured.iter().filter(|m| !m.starts_with("500")).collect();
        assert_eq!(names(&list).iter().collect::<Vec<_>>(), taken, "{line}");
    }
}

#[tokio::test]
async fn an_unnamed_volume_snapshot_is_named_by_the_lines_volume_rule() {
    for line in [IncusLine::V6_0, IncusLine::V7_0] {
        let seven = line == IncusLine::V7_0;
        let fake = fake_of(line).await;
        for volume in ["vol1", "vlit", "vdate"] {
            let made = call(&fake, "POST", VOLUMES, Some(json!({"name": volume}))).await;
            assert_eq!(made.status(), 200, "{}", made.json());
        }
        let vol1 = format!("{VOLUMES}/vol1");
        let snapshots = format!("{vol1}/snapshots");
        let mut got = vec![];
        got.push(take_unnamed(&fake, &snapshots).await);
        got.push(take_unnamed(&fake, &snapshots).await);
        set_pattern(&fake, &vol1, "snap%d").await;
        got.push(take_unnamed(&fake, &snapshots).await);
        // 6.0 runs a pattern without %d through Go's Sprintf (`keep%!(EXTRA int=0)`); measured
        // on fresh volumes there, as a second try panics the real daemon.
        let (literal, dated) = if seven {
            (vol1.clone(), vol1.clone())
        } else {
            (format!("{VOLUMES}/vlit"), format!("{VOLUMES}/vdate"))
        };
        set_pattern(&fake, &literal, "keep").await;
        got.push(take_unnamed(&fake, &format!("{literal}/snapshots")).await);
        if seven {
            got.push(take_unnamed(&fake, &snapshots).await);
        }
        set_pattern(&fake, &vol1, "x%dy%d").await;
        got.push(take_unnamed(&fake, &snapshots).await);
        set_pattern(&fake, &dated, "{{ creation_date|date:\"2006-01-02\" }}").await;
        got.push(take_unnamed(&fake, &format!("{dated}/snapshots")).await);
        if seven {
            got.push(take_unnamed(&fake, &snapshots).await);
        }
        set_pattern(&fake, &vol1, "d{{ creation_date|date:\"20060102\" }}-%d").await;
        got.push(take_unnamed(&fake, &snapshots).await);
        got.push(take_unnamed(&fake, &snapshots).await);

        let (date, compact) = (today("2006-01-02"), today("20060102"));
        let measured: Vec<String> = if seven {
            vec![
                "snap0".into(),
                "snap1".into(),
                "snap2".into(),
                "400 Couldn't determine snapshot name".into(),
                "400 Couldn't determine snapshot name".into(),
                "400 Couldn't determine snapshot name".into(),
                date.clone(),
                "op: Snapshot by that name already exists".into(),
                format!("d{compact}-0"),
                format!("d{compact}-1"),
            ]
        } else {
            vec![
                "snap0".into(),
                "snap1".into(),
                "snap2".into(),
                "400 Storage name cannot contain white space".into(),
                "x0y%!d(MISSING)".into(),
                "400 Storage name cannot contain white space".into(),
                format!("d{compact}-0"),
                format!("d{compact}-1"),
            ]
        };
        assert_eq!(got, measured, "{line}");
    }
}

#[tokio::test]
async fn a_generated_instance_snapshot_name_is_checked_like_a_given_one() {
    // Read from the source (never sent to a real daemon: `..` destroys snapshots on 6.0.4):
    // 7.0 checks the name as an API name, 6.0 as a URL segment.
    let seven = fake_of(IncusLine::V7_0).await;
    launch(&seven, "c1", false).await;
    set_pattern(&seven, "/1.0/instances/c1", "..").await;
    assert_eq!(
        take_unnamed(&seven, "/1.0/instances/c1/snapshots").await,
        "400 Invalid snapshot name: Names must start and end with an alphanumeric character"
    );
    let six = fake_of(IncusLine::V6_0).await;
    launch(&six, "c1", false).await;
    set_pattern(&six, "/1.0/instances/c1", "a?b").await;
    assert_eq!(
        take_unnamed(&six, "/1.0/instances/c1/snapshots").await,
        "400 Invalid snapshot name: Cannot contain \"?\""
    );
}

#[tokio::test]
async fn a_pattern_the_fake_cannot_render_is_refused_saying_so() {
    for line in [IncusLine::V6_0, IncusLine::V7_0] {
        let fake = fake_of(line).await;
        launch(&fake, "c1", false).await;
        for pattern in ["{{ creation_date }}", "{% if true %}a{% endif %}"] {
            set_pattern(&fake, "/1.0/instances/c1", pattern).await;
            let got = take_unnamed(&fake, "/1.0/instances/c1/snapshots").await;
            assert!(
                got.starts_with("501 fake-incus cannot render the snapshots.pattern"),
                "{line} {pattern}: {got}"
            );
            let list = call(&fake, "GET", "/1.0/instances/c1/snapshots", None).await;
            assert!(names(&list).is_empty(), "{line}: nothing was taken");
        }
    }
}

#[tokio::test]
async fn a_volume_snapshot_index_counts_the_same_named_volumes_of_every_project_in_the_pool() {
    // Measured on both daemons: a volume `v` in project A with snap0 and snap1; the first
    // unnamed snapshot of `v` in project B is snap2 (the index query has no project).
    for line in [IncusLine::V6_0, IncusLine::V7_0] {
        let fake = fake_of(line).await;
        for project in ["pa", "pb"] {
            let made = call(
                &fake,
                "POST",
                "/1.0/projects",
                Some(json!({"name": project})),
            )
            .await;
            assert_eq!(made.status(), 201, "{}", made.json());
            let volumes = format!("{VOLUMES}?project={project}");
            let made = call(&fake, "POST", &volumes, Some(json!({"name": "v"}))).await;
            assert_eq!(made.status(), 200, "{}", made.json());
        }
        let snapshots = |project: &str| format!("{VOLUMES}/v/snapshots?project={project}");
        let mut got = vec![];
        for project in ["pa", "pa", "pb"] {
            got.push(take_unnamed(&fake, &snapshots(project)).await);
        }
        assert_eq!(got, ["snap0", "snap1", "snap2"], "{line}");
    }
}
