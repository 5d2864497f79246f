//! The declared resources through the official client: the server's configuration, networks
//! and their ACLs, zones and forwards, storage pools, project state, the trust store and
//! warnings, as a new user would run them.

use crate::cli::{csv_rows, setup, NO_CLIENT};
use crate::ignorable::trial;
use libtest_mimic::{Completion, Trial};

pub(crate) fn trials() -> Vec<Trial> {
    vec![
        trial(
            "official_client_sets_and_unsets_server_config",
            official_client_sets_and_unsets_server_config,
        ),
        trial(
            "official_client_manages_networks_acls_zones_and_forwards",
            official_client_manages_networks_acls_zones_and_forwards,
        ),
        trial(
            "official_client_manages_storage_pools_and_reads_project_info",
            official_client_manages_storage_pools_and_reads_project_info,
        ),
        trial(
            "official_client_lists_the_trust_store_and_warnings",
            official_client_lists_the_trust_store_and_warnings,
        ),
        trial(
            "official_client_admin_init_preseed_configures_a_fresh_fake",
            official_client_admin_init_preseed_configures_a_fresh_fake,
        ),
        trial(
            "a_restricted_certificate_reaches_and_lists_only_its_projects",
            a_restricted_certificate_reaches_and_lists_only_its_projects,
        ),
        trial(
            "a_trust_token_admits_a_new_client_over_https_until_its_certificate_is_removed",
            a_trust_token_admits_a_new_client_over_https_until_its_certificate_is_removed,
        ),
    ]
}

async fn official_client_sets_and_unsets_server_config() -> Completion {
    let fake = crate::cli::fake_builder().start().await.unwrap();
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    cli.ok(&["config", "set", "user.owner=ops"]).await;
    assert_eq!(cli.ok(&["config", "get", "user.owner"]).await.trim(), "ops");
    let out = cli.run(&["config", "set", "no.such.key=1"]).await;
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown key"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    cli.ok(&["config", "unset", "user.owner"]).await;
    assert_eq!(cli.ok(&["config", "get", "user.owner"]).await.trim(), "");
    Completion::Completed
}

async fn official_client_manages_networks_acls_zones_and_forwards() -> Completion {
    let fake = crate::cli::fake_builder().start().await.unwrap();
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    cli.ok(&[
        "network",
        "create",
        "br1",
        "ipv4.address=10.7.0.1/24",
        "ipv6.address=none",
    ])
    .await;
    let list = cli.ok(&["network", "list", "-f", "csv", "-c", "nm"]).await;
    assert!(
        csv_rows(&list).contains(&vec!["br1".to_owned(), "YES".to_owned()]),
        "{list}"
    );
    cli.ok(&["network", "set", "br1", "user.a=b"]).await;
    assert_eq!(
        cli.ok(&["network", "get", "br1", "user.a"]).await.trim(),
        "b"
    );
    let info = cli.ok(&["network", "info", "br1"]).await;
    assert!(info.contains("10.7.0.1"), "{info}");
    cli.ok(&["network", "rename", "br1", "br2"]).await;
    cli.ok(&["network", "forward", "create", "br2", "192.0.2.10"])
        .await;
    let forwards = cli
        .ok(&["network", "forward", "list", "br2", "-f", "csv"])
        .await;
    assert!(forwards.contains("192.0.2.10"), "{forwards}");
    cli.ok(&["network", "forward", "delete", "br2", "192.0.2.10"])
        .await;
    cli.ok(&["network", "delete", "br2"]).await;

    cli.ok(&["network", "acl", "create", "web"]).await;
    cli.ok(&["network", "acl", "set", "web", "user.x=1"]).await;
    let acls = cli.ok(&["network", "acl", "list", "-f", "csv"]).await;
    assert!(acls.starts_with("web,"), "{acls}");
    cli.ok(&["network", "acl", "rename", "web", "www"]).await;
    cli.ok(&["network", "acl", "delete", "www"]).await;

    cli.ok(&["network", "zone", "create", "z.example"]).await;
    cli.ok(&["network", "zone", "record", "create", "z.example", "www"])
        .await;
    let records = cli
        .ok(&[
            "network",
            "zone",
            "record",
            "list",
            "z.example",
            "-f",
            "csv",
        ])
        .await;
    assert!(records.starts_with("www,"), "{records}");
    cli.ok(&["network", "zone", "record", "delete", "z.example", "www"])
        .await;
    cli.ok(&["network", "zone", "delete", "z.example"]).await;
    Completion::Completed
}

async fn official_client_manages_storage_pools_and_reads_project_info() -> Completion {
    let fake = crate::cli::fake_builder().start().await.unwrap();
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    cli.ok(&["storage", "create", "p2", "dir"]).await;
    let list = cli.ok(&["storage", "list", "-f", "csv", "-c", "nD"]).await;
    assert!(
        csv_rows(&list).contains(&vec!["p2".to_owned(), "dir".to_owned()]),
        "{list}"
    );
    cli.ok(&["storage", "set", "p2", "user.a=b"]).await;
    cli.ok(&["storage", "info", "p2"]).await;
    cli.ok(&["storage", "delete", "p2"]).await;
    let info = cli.ok(&["project", "info", "default"]).await;
    assert!(info.to_uppercase().contains("INSTANCES"), "{info}");
    Completion::Completed
}

async fn official_client_lists_the_trust_store_and_warnings() -> Completion {
    let fake = crate::cli::fake_builder().start().await.unwrap();
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    assert_eq!(
        cli.ok(&["config", "trust", "list", "-f", "csv"])
            .await
            .trim(),
        ""
    );
    assert_eq!(cli.ok(&["warning", "list", "-f", "csv"]).await.trim(), "");
    Completion::Completed
}

async fn a_trust_token_admits_a_new_client_over_https_until_its_certificate_is_removed(
) -> Completion {
    let fake = crate::cli::fake_builder()
        .https(true)
        .start()
        .await
        .unwrap();
    let (Some(admin), Some(laptop)) = (setup(&fake).await, setup(&fake).await) else {
        return Completion::ignored_with(NO_CLIENT);
    };
    let added = admin.ok(&["config", "trust", "add", "laptop", "-q"]).await;
    let token = added.trim();
    assert!(!token.is_empty(), "a token is printed");
    laptop.ok(&["remote", "add", "fk", token]).await;
    laptop.ok(&["list", "fk:"]).await;
    let trusted = admin
        .ok(&["config", "trust", "list", "-f", "csv", "-c", "nf"])
        .await;
    let rows = csv_rows(&trusted);
    assert_eq!(rows.len(), 1, "{trusted}");
    assert_eq!(rows[0][0], "laptop");
    let out = laptop.run(&["remote", "add", "again", token]).await;
    assert!(!out.status.success(), "a token is used once");

    let fingerprint = rows[0][1].clone();
    admin.ok(&["config", "trust", "remove", &fingerprint]).await;
    let out = laptop.run(&["list", "fk:"]).await;
    assert!(
        !out.status.success(),
        "a removed certificate is no longer trusted"
    );
    Completion::Completed
}

const PRESEED: &[u8] = b"config:
  user.origin: preseed
networks:
- name: br0
  type: bridge
  config:
    ipv4.address: 10.66.0.1/24
    ipv6.address: none
storage_pools:
- name: data
  driver: dir
profiles:
- name: default
  devices:
    root:
      path: /
      pool: data
      type: disk
    eth0:
      name: eth0
      network: br0
      type: nic
";

async fn official_client_admin_init_preseed_configures_a_fresh_fake() -> Completion {
    let fake = crate::cli::fake_builder().start().await.unwrap();
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    let out = cli
        .run_with(&["admin", "init", "--preseed"], Some(PRESEED))
        .await;
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        cli.ok(&["config", "get", "user.origin"]).await.trim(),
        "preseed"
    );
    let network = cli.ok(&["network", "get", "br0", "ipv4.address"]).await;
    assert_eq!(network.trim(), "10.66.0.1/24");
    let pools = cli.ok(&["storage", "list", "-f", "csv", "-c", "n"]).await;
    assert!(pools.lines().any(|l| l == "data"), "{pools}");
    let profile = cli
        .ok(&["profile", "device", "get", "default", "eth0", "network"])
        .await;
    assert_eq!(profile.trim(), "br0");
    Completion::Completed
}

async fn a_restricted_certificate_reaches_and_lists_only_its_projects() -> Completion {
    let fake = crate::cli::fake_builder()
        .https(true)
        .start()
        .await
        .unwrap();
    let (Some(admin), Some(laptop)) = (setup(&fake).await, setup(&fake).await) else {
        return Completion::ignored_with(NO_CLIENT);
    };
    admin.ok(&["project", "create", "p1"]).await;
    let token = admin
        .ok(&[
            "config",
            "trust",
            "add",
            "laptop",
            "-q",
            "--restricted",
            "--projects",
            "p1",
        ])
        .await;
    laptop.ok(&["remote", "add", "fk", token.trim()]).await;
    laptop.ok(&["list", "fk:", "--project", "p1"]).await;
    let projects = laptop
        .ok(&["project", "list", "fk:", "-f", "csv", "-c", "n"])
        .await;
    let listed: Vec<&str> = projects
        .lines()
        .map(|l| l.trim_end_matches(" (current)"))
        .collect();
    assert_eq!(listed, ["p1"], "the project list shows only its projects");
    let out = laptop.run(&["list", "fk:", "--project", "default"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "another project is refused");
    assert!(
        stderr.contains("User does not have permission for project \"default\""),
        "{stderr}"
    );
    let out = laptop.run(&["config", "set", "fk:", "user.a=b"]).await;
    assert!(
        !out.status.success(),
        "a restricted certificate cannot change the server"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("Certificate is restricted"));
    Completion::Completed
}
