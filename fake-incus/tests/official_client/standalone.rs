//! A standalone fake driven by the official client over both listeners.

use crate::cli::{csv_rows, setup, write_conf_cert, NO_CLIENT};
use crate::ignorable::trial;
use fake_incus::Listener;
use libtest_mimic::{Completion, Trial};

pub(crate) fn trials() -> Vec<Trial> {
    vec![
        trial(
            "official_client_manages_instances_over_the_unix_socket",
            official_client_manages_instances_over_the_unix_socket,
        ),
        trial(
            "official_client_works_over_https_with_a_trusted_certificate",
            official_client_works_over_https_with_a_trusted_certificate,
        ),
    ]
}

async fn official_client_manages_instances_over_the_unix_socket() -> Completion {
    let fake = crate::cli::fake_builder().start().await.unwrap();
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };

    let info = cli.ok(&["info"]).await;
    assert!(info.contains("auth: trusted"), "{info}");
    assert!(info.contains("server_version: 6.0.4"), "{info}");

    cli.ok(&["launch", "busybox", "c1"]).await;
    let list = cli.ok(&["list", "-f", "csv", "-c", "ns"]).await;
    assert_eq!(csv_rows(&list), [["c1", "RUNNING"]]);

    let out = cli.run(&["exec", "c1", "--", "echo", "hello"]).await;
    assert_eq!(
        (out.status.code(), out.stdout.as_slice()),
        (Some(0), &b"hello\n"[..])
    );
    let out = cli
        .run_with(&["exec", "c1", "--", "cat"], Some(b"from stdin\n"))
        .await;
    assert_eq!(
        (out.status.code(), out.stdout.as_slice()),
        (Some(0), &b"from stdin\n"[..])
    );
    let out = cli.run(&["exec", "c1", "--", "sh", "-c", "exit 3"]).await;
    assert_eq!(out.status.code(), Some(3), "exit status is passed through");
    let out = cli
        .run(&["exec", "c1", "-t", "--", "sh", "-c", "echo tty; exit 4"])
        .await;
    assert_eq!(
        out.status.code(),
        Some(4),
        "interactive exec passes the status through"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("tty"));
    let out = cli
        .run(&[
            "exec",
            "c1",
            "--env",
            "FOO=bar",
            "--cwd",
            "/tmp",
            "--",
            "sh",
            "-c",
            "echo $FOO; pwd",
        ])
        .await;
    assert_eq!(out.stdout, b"bar\n/tmp\n");
    let out = cli.run(&["exec", "c1", "--", "no-such-command"]).await;
    assert_eq!(out.status.code(), Some(127));

    cli.ok(&["config", "set", "c1", "user.foo=bar"]).await;
    assert_eq!(
        cli.ok(&["config", "get", "c1", "user.foo"]).await.trim(),
        "bar"
    );

    cli.ok(&["snapshot", "create", "c1", "s1"]).await;
    let snaps = cli
        .ok(&["snapshot", "list", "c1", "-f", "csv", "-c", "n"])
        .await;
    assert_eq!(csv_rows(&snaps), [["s1"]]);
    cli.ok(&["config", "set", "c1", "user.foo=changed"]).await;
    cli.ok(&["snapshot", "restore", "c1", "s1"]).await;
    assert_eq!(
        cli.ok(&["config", "get", "c1", "user.foo"]).await.trim(),
        "bar",
        "restore brings config back"
    );
    cli.ok(&["snapshot", "delete", "c1", "s1"]).await;
    assert!(cli
        .ok(&["snapshot", "list", "c1", "-f", "csv"])
        .await
        .trim()
        .is_empty());

    cli.ok(&["stop", "c1"]).await;
    assert_eq!(
        csv_rows(&cli.ok(&["list", "-f", "csv", "-c", "ns"]).await),
        [["c1", "STOPPED"]]
    );
    cli.ok(&["start", "c1"]).await;
    let refused = cli.run(&["delete", "c1"]).await;
    assert!(
        !refused.status.success(),
        "a running instance is not deleted"
    );
    cli.ok(&["stop", "c1", "--force"]).await;
    cli.ok(&["delete", "c1"]).await;
    assert!(cli.ok(&["list", "-f", "csv"]).await.trim().is_empty());

    assert!(cli
        .ok(&["image", "list", "-f", "csv"])
        .await
        .contains("busybox"));
    assert!(cli
        .ok(&["network", "list", "-f", "csv"])
        .await
        .starts_with("lo,loopback"));
    assert!(cli
        .ok(&["profile", "list", "-f", "csv"])
        .await
        .starts_with("default,"));
    assert!(cli
        .ok(&["storage", "list", "-f", "csv"])
        .await
        .starts_with("default,dir"));
    cli.ok(&["launch", "busybox", "c2"]).await;
    let volumes = cli
        .ok(&["storage", "volume", "list", "default", "-f", "csv"])
        .await;
    assert!(volumes.contains("container,c2"), "{volumes}");
    assert!(cli
        .ok(&["project", "list", "-f", "csv"])
        .await
        .starts_with("default"));
    let ops = cli.ok(&["operation", "list", "-f", "csv"]).await;
    assert!(ops.contains("Creating instance"), "{ops}");

    let entries = fake.journal();
    assert!(entries.iter().all(|e| e.listener == Listener::Unix));
    let creates = entries
        .iter()
        .filter(|e| e.method == "POST" && e.path == "/1.0/instances")
        .count();
    assert_eq!(creates, 2, "each launch sent exactly one create");
    Completion::Completed
}

async fn official_client_works_over_https_with_a_trusted_certificate() -> Completion {
    let fake = crate::cli::fake_builder()
        .https(true)
        .start()
        .await
        .unwrap();
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    write_conf_cert(cli.conf.path(), &fake);
    let url = fake.https_url().unwrap();
    cli.ok(&["remote", "add", "fk", &url, "--accept-certificate"])
        .await;
    cli.ok(&["launch", "busybox", "c1"]).await;
    assert_eq!(
        csv_rows(&cli.ok(&["list", "fk:", "-f", "csv", "-c", "ns"]).await),
        [["c1", "RUNNING"]]
    );
    let out = cli
        .run(&["exec", "fk:c1", "--", "echo", "over-https"])
        .await;
    assert_eq!(
        (out.status.code(), out.stdout.as_slice()),
        (Some(0), &b"over-https\n"[..])
    );
    cli.ok(&["stop", "fk:c1", "--force"]).await;
    cli.ok(&["delete", "fk:c1"]).await;
    assert!(cli
        .ok(&["list", "fk:", "-f", "csv"])
        .await
        .trim()
        .is_empty());
    let https: Vec<_> = fake
        .journal()
        .into_iter()
        .filter(|e| e.listener == Listener::Https)
        .collect();
    assert!(
        https.iter().any(|e| e.websocket && e.trusted),
        "exec websockets went over wss"
    );
    assert!(https
        .iter()
        .filter(|e| e.path.starts_with("/1.0/instances"))
        .all(|e| e.cert_fingerprint.is_some() && e.trusted));
    Completion::Completed
}
