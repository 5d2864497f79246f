//! `capture`: it reads with GETs only (the fake's journal proves it), over the Unix socket or
//! HTTPS, redacts credentials by the core's definition, and a capture of a fake served again
//! captures the same.

use fake_incus::{capture, CaptureOptions, FakeIncus};
use serde_json::json;

fn seed() -> serde_json::Value {
    json!({
        "projects": [
            {"name": "default", "config": {"features.images": "true", "features.profiles": "true"}},
            {"name": "team", "description": "a team's",
             "config": {"features.profiles": "true", "features.storage.volumes": "true"}}
        ],
        "profiles": [
            {"project": "default", "name": "default", "devices": {"root": {"type": "disk", "path": "/", "pool": "default"}}},
            {"project": "team", "name": "default", "devices": {"root": {"type": "disk", "path": "/", "pool": "default"}}},
            {"project": "team", "name": "web", "config": {"user.role": "web"}}
        ],
        "storage_volumes": [{"pool": "default", "project": "team", "name": "data", "config": {"size": "1GiB"}}],
        "instances": [
            {"name": "web1", "project": "team", "status": "Running", "profiles": ["default", "web"],
             "config": {"user.x": "1"}, "snapshots": [{"name": "s0"}]},
            {"name": "db1", "project": "team", "status": "Stopped"},
            {"name": "other", "status": "Stopped"}
        ]
    })
}

/// A capture only reads: every request the fake's journal holds from entry `since` on is a `GET`.
fn assert_only_gets_since(fake: &FakeIncus, since: usize) {
    let methods: std::collections::BTreeSet<String> = fake
        .journal()
        .into_iter()
        .skip(since)
        .map(|e| e.method)
        .collect();
    assert_eq!(methods, ["GET".to_string()].into(), "a capture only reads");
}

#[tokio::test]
async fn a_capture_sends_only_gets_and_a_served_capture_captures_the_same() {
    let fake = FakeIncus::builder().state(seed()).start().await.unwrap();
    let options = CaptureOptions::new().project("team").instances("web*");
    let first = capture(fake.unix_socket(), &options).await.unwrap();
    assert_only_gets_since(&fake, 0);
    let names: Vec<&str> = first["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["web1"], "--project and --instances narrow it");
    assert_eq!(first["instances"][0]["snapshots"][0]["name"], "s0");
    assert_eq!(first["storage_volumes"][0]["name"], "data");
    assert_eq!(first["format_version"], 2);

    let served = FakeIncus::builder()
        .state(first.clone())
        .start()
        .await
        .unwrap();
    let second = capture(served.unix_socket(), &options).await.unwrap();
    assert_eq!(first, second);
}

#[tokio::test]
async fn a_capture_of_an_unreachable_socket_says_where_it_failed() {
    let dir = tempfile::tempdir().unwrap();
    let err = capture(&dir.path().join("none.socket"), &CaptureOptions::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("GET /1.0:"), "{err}");
}

/// A state with every kind of object the generic store holds that a bridge can have, a
/// certificate, and credentials in the server and network config.
fn seed_with_objects() -> serde_json::Value {
    let object = |project: &str, parent: &str, value: serde_json::Value| json!({"project": project, "parent": parent, "value": value});
    json!({
        "server_config": {"loki.auth.password": "hunter2", "core.proxy_http": "http://u:p@proxy:3128", "user.a": "1"},
        "networks": [{"name": "br0", "type": "bridge", "managed": true,
                      "config": {"ipv4.address": "10.0.0.1/24", "bgp.peers.p1.password": "s3cret", "bgp.peers.p1.address": "10.0.0.9"}}],
        "objects": {
            "network-acl": [object("default", "", json!({"name": "a1", "description": "", "ingress": [], "egress": [], "config": {}, "used_by": [], "project": "default"}))],
            "network-zone": [object("default", "", json!({"name": "z.example", "description": "", "config": {}, "used_by": [], "project": "default"}))],
            "network-zone-record": [object("default", "z.example", json!({"name": "www", "description": "", "entries": [], "config": {}}))],
            "network-forward": [object("default", "br0", json!({"listen_address": "10.0.0.5", "description": "", "config": {}, "ports": [], "location": ""}))],
        }
    })
}

#[tokio::test]
async fn a_capture_holds_network_objects_and_certificates_with_credentials_redacted() {
    let fake = FakeIncus::builder()
        .state(seed_with_objects())
        .https(true)
        .start()
        .await
        .unwrap();
    let laptop = FakeIncus::builder().start().await.unwrap();
    let der: String = laptop
        .client_cert_pem()
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    let add = json!({"name": "laptop", "type": "client", "certificate": der});
    let added = fake
        .call(fake_incus::Request::post("/1.0/certificates").json(&add))
        .await;
    assert!(added.status() < 300, "{:?}", added.json());
    let asked_before = fake.journal().len();

    let first = capture(fake.unix_socket(), &CaptureOptions::new())
        .await
        .unwrap();
    assert_only_gets_since(&fake, asked_before);
    let objects = &first["objects"];
    for (kind, key, value) in [
        ("network-acl", "name", "a1"),
        ("network-zone", "name", "z.example"),
        ("network-zone-record", "name", "www"),
        ("network-forward", "listen_address", "10.0.0.5"),
        ("certificate", "name", "laptop"),
    ] {
        assert_eq!(objects[kind][0]["value"][key], value, "{kind}: {objects}");
    }
    assert_eq!(objects["network-zone-record"][0]["parent"], "z.example");
    assert_eq!(objects["network-forward"][0]["parent"], "br0");
    assert!(
        !objects.to_string().contains("PRIVATE KEY"),
        "public parts only"
    );
    assert_eq!(first["server_config"]["loki.auth.password"], "[redacted]");
    assert_eq!(first["server_config"]["core.proxy_http"], "[redacted]");
    assert_eq!(first["server_config"]["user.a"], "1");
    assert_eq!(
        first["networks"][0]["config"]["bgp.peers.p1.password"],
        "[redacted]"
    );
    let text = first.to_string();
    assert!(!text.contains("hunter2") && !text.contains("s3cret") && !text.contains("u:p@"));

    let https = fake_incus::CaptureSource::Https {
        url: fake.https_url().unwrap(),
        client_cert_pem: fake.client_cert_pem(),
        client_key_pem: fake.client_key_pem(),
        server_cert_pem: fake.server_cert_pem(),
    };
    let over_https = fake_incus::capture_from(&https, &CaptureOptions::new())
        .await
        .unwrap();
    assert_eq!(first, over_https, "HTTPS reads the same as the Unix socket");
    let wrong_pin = fake_incus::CaptureSource::Https {
        url: fake.https_url().unwrap(),
        client_cert_pem: fake.client_cert_pem(),
        client_key_pem: fake.client_key_pem(),
        server_cert_pem: laptop.server_cert_pem(),
    };
    let refused = fake_incus::capture_from(&wrong_pin, &CaptureOptions::new()).await;
    assert!(refused.is_err(), "another server certificate is refused");

    let served = FakeIncus::builder()
        .state(first.clone())
        .start()
        .await
        .unwrap();
    let second = capture(served.unix_socket(), &CaptureOptions::new())
        .await
        .unwrap();
    assert_eq!(first, second);
}

#[tokio::test]
async fn a_capture_with_image_files_carries_each_images_tarball() {
    let fake = FakeIncus::builder().start().await.unwrap();
    let body = crate::tarball::tarball(&[
        (
            "metadata.yaml",
            b"architecture: x86_64\ncreation_date: 1700000000\nproperties:\n  os: probe\n",
        ),
        ("rootfs/", b""),
        ("rootfs/etc/", b""),
        ("rootfs/etc/motd", b"welcome\n"),
    ]);
    let upload = fake_incus::Request::post("/1.0/images")
        .header("content-type", "application/octet-stream")
        .body(body.clone());
    let accepted = fake.call(upload).await;
    let operation = accepted
        .operation()
        .expect("an upload operation")
        .to_owned();
    let done = fake
        .call(fake_incus::Request::get(&format!(
            "{operation}/wait?timeout=30"
        )))
        .await;
    let fingerprint = done.metadata()["metadata"]["fingerprint"]
        .as_str()
        .expect("the image's fingerprint")
        .to_owned();

    let options = CaptureOptions::new().with_image_files();
    let first = capture(fake.unix_socket(), &options).await.unwrap();
    let files = &first["files"];
    let entry = files["image_files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["fingerprint"] == fingerprint.as_str())
        .expect("the uploaded image's files");
    let index = entry["metadata"].as_u64().unwrap() as usize;
    let stored = files["contents"][index].as_str().unwrap();
    use base64::Engine;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(stored)
        .unwrap();
    assert_eq!(decoded, body, "the image's own tarball");
    assert!(
        capture(fake.unix_socket(), &CaptureOptions::new())
            .await
            .unwrap()
            .get("files")
            .is_none(),
        "without the option, no files"
    );

    let served = FakeIncus::builder()
        .state(first.clone())
        .start()
        .await
        .unwrap();
    let second = capture(served.unix_socket(), &options).await.unwrap();
    assert_eq!(first, second);
}

const MEMBERS: [&str; 3] = ["m1", "m2", "m3"];

/// A cluster with a group of its own, a member with config, an own role, a description and a
/// failure domain, an evacuated member, and instances on two members.
fn cluster_seed() -> serde_json::Value {
    json!({
        "instances": [
            {"name": "a", "status": "Running", "location": "m1"},
            {"name": "b", "status": "Stopped", "location": "m3"}
        ],
        "cluster": {
            "members": [
                {"name": "m1", "config": {"scheduler.instance": "group", "user.rack": "r1"},
                 "roles": ["event-hub"], "description": "the first", "failure_domain": "rack1",
                 "groups": ["default", "gpu"]},
                {"name": "m2", "evacuated": true},
                {"name": "m3", "groups": ["gpu"]}
            ],
            "groups": [
                {"name": "default", "description": "Default cluster group"},
                {"name": "gpu", "description": "with GPUs"}
            ]
        }
    })
}

/// `GET path` on `fake`, its metadata, each item's `url` (the member's address, another per
/// fake) left out.
async fn listed(fake: &FakeIncus, path: &str) -> serde_json::Value {
    let reply = fake.call(fake_incus::Request::get(path)).await;
    assert_eq!(reply.status(), 200, "{path}: {:?}", reply.json());
    let mut items = reply.metadata().clone();
    for item in items.as_array_mut().unwrap() {
        item.as_object_mut().unwrap().remove("url");
    }
    items
}

#[tokio::test]
async fn a_capture_of_a_cluster_holds_its_members_records_and_groups_and_serves_back_the_same_lists(
) {
    let fake = FakeIncus::builder()
        .cluster(MEMBERS)
        .state(cluster_seed())
        .start()
        .await
        .unwrap();
    let asked_before = fake.journal().len();
    let first = capture(fake.unix_socket(), &CaptureOptions::new())
        .await
        .unwrap();
    assert_only_gets_since(&fake, asked_before);

    let cluster = &first["cluster"];
    let m1 = &cluster["members"][0];
    assert_eq!(m1["name"], "m1");
    assert_eq!(m1["config"]["scheduler.instance"], "group");
    assert_eq!(m1["config"]["user.rack"], "r1");
    assert_eq!(m1["roles"], json!(["event-hub"]), "no database roles");
    assert_eq!(m1["description"], "the first");
    assert_eq!(m1["failure_domain"], "rack1");
    assert_eq!(m1["groups"], json!(["default", "gpu"]));
    assert_eq!(cluster["members"][1]["evacuated"], true);
    assert_eq!(cluster["members"][2]["groups"], json!(["gpu"]));
    assert_eq!(
        cluster["groups"][1],
        json!({"name": "gpu", "description": "with GPUs"})
    );
    let locations: Vec<(&str, &str)> = first["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["name"].as_str().unwrap(), i["location"].as_str().unwrap()))
        .collect();
    assert_eq!(locations, [("a", "m1"), ("b", "m3")]);

    let served = FakeIncus::builder()
        .cluster(MEMBERS)
        .state(first.clone())
        .start()
        .await
        .unwrap();
    for path in [
        "/1.0/cluster/members?recursion=1",
        "/1.0/cluster/groups?recursion=1",
        "/1.0/instances?recursion=1",
    ] {
        let (captured, serving) = (listed(&fake, path).await, listed(&served, path).await);
        assert_eq!(captured, serving, "{path}");
    }
    let second = capture(served.unix_socket(), &CaptureOptions::new())
        .await
        .unwrap();
    assert_eq!(first, second);
}

#[tokio::test]
async fn a_capture_of_a_standalone_daemon_has_no_cluster_records() {
    let fake = FakeIncus::builder().state(seed()).start().await.unwrap();
    let captured = capture(fake.unix_socket(), &CaptureOptions::new())
        .await
        .unwrap();
    assert!(captured.get("cluster").is_none(), "{captured}");
}

/// Writes through the file API of instance `c1` (`x-incus-type` and the other headers given).
async fn write_file(fake: &FakeIncus, path: &str, headers: &[(&str, &str)], body: &'static [u8]) {
    let mut request = fake_incus::Request::post(&format!("/1.0/instances/c1/files?path={path}"))
        .header("content-type", "application/octet-stream")
        .body(body);
    for (name, value) in headers {
        request = request.header(name, value);
    }
    let reply = fake.call(request).await;
    assert_eq!(reply.status(), 200, "{path}: {:?}", reply.json());
}

/// A fake with instance `c1` holding a file with its own owner and mode, a directory and a
/// symbolic link besides the busybox skeleton.
async fn fake_with_files() -> FakeIncus {
    let seed = json!({"instances": [{"name": "c1", "status": "Running"}]});
    let fake = FakeIncus::builder().state(seed).start().await.unwrap();
    let file = [
        ("x-incus-uid", "1000"),
        ("x-incus-gid", "100"),
        ("x-incus-mode", "0640"),
    ];
    write_file(&fake, "/etc/motd", &file, b"welcome\n").await;
    write_file(&fake, "/data", &[("x-incus-type", "directory")], b"").await;
    let link = [("x-incus-type", "symlink")];
    write_file(&fake, "/data/motd", &link, b"/etc/motd").await;
    fake
}

#[tokio::test]
async fn a_capture_with_instance_files_holds_each_instances_tree_and_serves_it_back() {
    let fake = fake_with_files().await;
    let asked_before = fake.journal().len();
    let options = CaptureOptions::new().with_instance_files(1 << 20);
    let first = capture(fake.unix_socket(), &options).await.unwrap();
    assert_only_gets_since(&fake, asked_before);

    let files = &first["files"];
    assert_eq!(
        files["instances"],
        json!([{"project": "default", "instance": "c1", "tree": 0}])
    );
    let tree = files["trees"][0].as_array().unwrap();
    let entry = |path: &str| {
        tree.iter()
            .find(|e| e["path"] == path)
            .unwrap_or_else(|| panic!("{path} in {tree:?}"))
    };
    let motd = entry("/etc/motd");
    assert_eq!(
        (&motd["type"], &motd["uid"], &motd["gid"], &motd["mode"]),
        (&json!("file"), &json!(1000), &json!(100), &json!(0o640))
    );
    use base64::Engine;
    let content = files["contents"][motd["content"].as_u64().unwrap() as usize]
        .as_str()
        .unwrap();
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(content)
        .unwrap();
    assert_eq!(decoded, b"welcome\n");
    assert_eq!(entry("/data")["type"], "directory");
    assert_eq!(entry("/data/motd")["target"], "/etc/motd");
    assert_eq!(entry("/bin/busybox")["type"], "file", "the skeleton too");

    let served = FakeIncus::builder()
        .state(first.clone())
        .start()
        .await
        .unwrap();
    let read = served
        .call(fake_incus::Request::get(
            "/1.0/instances/c1/files?path=/etc/motd",
        ))
        .await;
    assert_eq!(
        read.bytes().as_ref(),
        b"welcome\n",
        "served back as the instance's file"
    );
    assert_eq!(read.header("x-incus-mode"), Some("0640"));
    let second = capture(served.unix_socket(), &options).await.unwrap();
    assert_eq!(first, second);
}

#[tokio::test]
async fn a_capture_of_instance_files_over_its_byte_budget_fails_naming_the_file() {
    let fake = fake_with_files().await;
    let err = capture(
        fake.unix_socket(),
        &CaptureOptions::new().with_instance_files(4),
    )
    .await
    .unwrap_err();
    let fake_incus::CaptureError::FileBudget {
        budget,
        project,
        instance,
        path,
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(
        (*budget, project.as_str(), instance.as_str()),
        (4, "default", "c1")
    );
    let text = err.to_string();
    assert!(
        text.contains("budget of 4 bytes") && text.contains(&format!("default/c1:{path}")),
        "{text}"
    );
    let whole = capture(
        fake.unix_socket(),
        &CaptureOptions::new().with_instance_files(1 << 20),
    )
    .await
    .unwrap();
    let named = whole["files"]["trees"][0]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == path.as_str())
        .expect("the file named is one of the instance's");
    assert_eq!(named["type"], "file");
}
