//! `incus publish --compression` against the fake, as against the real 6.0.4 daemon: the
//! image is stored with that compression, and `incus image export` writes the file whose
//! SHA-256 is the image's fingerprint (`FP.tar` for `none`, `FP.tar.gz` for gzip).

use crate::cli::{setup, NO_CLIENT};
use crate::ignorable::trial;
use libtest_mimic::{Completion, Trial};
use sha2::Digest;

pub(crate) fn trials() -> Vec<Trial> {
    vec![trial(
        "official_client_publish_compression_exports_the_bytes_its_fingerprint_hashes",
        official_client_publish_compression_exports_the_bytes_its_fingerprint_hashes,
    )]
}

async fn official_client_publish_compression_exports_the_bytes_its_fingerprint_hashes() -> Completion
{
    let fake = crate::cli::fake_builder()
        .start()
        .await
        .expect("fake starts");
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    cli.ok(&["init", "busybox", "c1"]).await;
    let dir = tempfile::tempdir().expect("temp dir");
    for (compression, extension) in [("none", "tar"), ("gzip", "tar.gz")] {
        let alias = format!("pub-{compression}");
        let said = cli
            .ok(&[
                "publish",
                "c1",
                "--compression",
                compression,
                "--alias",
                &alias,
            ])
            .await;
        let fingerprint = said
            .rsplit("fingerprint: ")
            .next()
            .map(str::trim)
            .expect("the client prints the fingerprint")
            .to_owned();
        let target = dir.path().join(compression);
        cli.ok(&["image", "export", &alias, &target.to_string_lossy()])
            .await;
        let written = dir.path().join(format!("{compression}.{extension}"));
        let bytes = std::fs::read(&written)
            .unwrap_or_else(|e| panic!("{compression}: {} not written: {e}", written.display()));
        assert_eq!(
            hex::encode(sha2::Sha256::digest(&bytes)),
            fingerprint,
            "{compression}: the export hashes to the fingerprint"
        );
    }
    Completion::Completed
}
