//! Capture a real Incus, serve the capture, capture the fake: the two captures are equal. Runs
//! against the daemon on `INCUS_SOCKET` (default `/var/lib/incus/unix.socket`) in a throw-away
//! project it creates with the `incus` client and deletes afterwards; without a daemon or the
//! client it is reported as ignored, with the reason.

#[path = "ignorable/mod.rs"]
mod ignorable;

use fake_incus::{capture, CaptureOptions, FakeIncus};
use ignorable::trial;
use libtest_mimic::Completion;
use std::path::PathBuf;
use std::process::Command;

const DEFAULT_SOCKET: &str = "/var/lib/incus/unix.socket";

fn socket() -> PathBuf {
    std::env::var_os("INCUS_SOCKET").map_or_else(|| PathBuf::from(DEFAULT_SOCKET), PathBuf::from)
}

/// Runs `incus ARGS` against the socket; the error carries its stderr.
fn incus(args: &[&str]) -> Result<(), String> {
    let out = Command::new("incus")
        .args(args)
        .env("INCUS_SOCKET", socket())
        .output()
        .map_err(|e| format!("incus: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "incus {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Deletes the project and what the trial made in it, whatever happened.
struct Cleanup(String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let p = self.0.as_str();
        for instance in ["c1", "c2"] {
            let _ = incus(&["delete", "--force", instance, "--project", p]);
        }
        let _ = incus(&[
            "storage",
            "volume",
            "delete",
            "default",
            "vol1",
            "--project",
            p,
        ]);
        let _ = incus(&["profile", "delete", "web", "--project", p]);
        let _ = incus(&["network", "acl", "delete", "web-in", "--project", p]);
        let _ = incus(&["network", "acl", "delete", "base", "--project", p]);
        let _ = incus(&["network", "zone", "delete", "z.example", "--project", p]);
        let _ = incus(&["project", "delete", p]);
    }
}

async fn round_trip() -> Completion {
    if incus(&["query", "/1.0"]).is_err() {
        return Completion::ignored_with(format!(
            "no real Incus answers on {} through the incus client",
            socket().display()
        ));
    }
    let project = format!("cap{}", std::process::id());
    let cleanup = Cleanup(project.clone());
    let p = project.as_str();
    let setup: [&[&str]; 12] = [
        &[
            "project",
            "create",
            p,
            "-c",
            "features.images=false",
            "-c",
            "features.profiles=true",
            "-c",
            "features.networks=true",
            "-c",
            "features.networks.zones=true",
        ],
        &["network", "acl", "create", "base", "--project", p],
        &["network", "acl", "create", "web-in", "--project", p],
        &[
            "network",
            "acl",
            "rule",
            "add",
            "web-in",
            "ingress",
            "action=allow",
            "source=base",
            "--project",
            p,
        ],
        &["network", "zone", "create", "z.example", "--project", p],
        &[
            "profile",
            "device",
            "add",
            "default",
            "root",
            "disk",
            "path=/",
            "pool=default",
            "--project",
            p,
        ],
        &["profile", "create", "web", "--project", p],
        &["profile", "set", "web", "user.role=web", "--project", p],
        &[
            "init",
            "busybox",
            "c1",
            "--project",
            p,
            "-p",
            "default",
            "-p",
            "web",
        ],
        &["init", "busybox", "c2", "--project", p],
        &["snapshot", "create", "c1", "s0", "--project", p],
        &[
            "storage",
            "volume",
            "create",
            "default",
            "vol1",
            "--project",
            p,
        ],
    ];
    for args in setup {
        if let Err(e) = incus(args) {
            return Completion::ignored_with(format!("setting up the real daemon failed: {e}"));
        }
    }
    let options = CaptureOptions::new().project(p).with_image_files();
    let started = std::time::Instant::now();
    let real = capture(&socket(), &options)
        .await
        .expect("capture of the real daemon");
    println!("capture of the real daemon: {:?}", started.elapsed());
    let fake = FakeIncus::builder()
        .state(real.clone())
        .start()
        .await
        .expect("serve the capture");
    let again = capture(fake.unix_socket(), &options)
        .await
        .expect("capture of the fake");
    assert!(
        fake.journal().iter().all(|e| e.method == "GET"),
        "GETs only"
    );
    drop(cleanup);
    assert_eq!(real["instances"].as_array().map(Vec::len), Some(2));
    let acls = real["objects"]["network-acl"].to_string();
    assert!(
        acls.contains("web-in") && acls.contains(&format!("/1.0/network-acls/web-in?project={p}")),
        "{acls}"
    );
    assert!(real["objects"]["network-zone"]
        .to_string()
        .contains("z.example"));
    assert!(
        real["files"]["image_files"]
            .as_array()
            .is_some_and(|f| !f.is_empty()),
        "the busybox image's files"
    );
    assert_eq!(
        real, again,
        "capture(real) -> serve -> capture(fake) differs"
    );
    Completion::Completed
}

fn main() -> std::process::ExitCode {
    let args = libtest_mimic::Arguments::from_args();
    let trials = vec![trial(
        "a_capture_of_the_real_daemon_served_by_the_fake_captures_the_same",
        round_trip,
    )];
    libtest_mimic::run(&args, trials).exit_code()
}
