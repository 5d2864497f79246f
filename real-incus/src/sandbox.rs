//! Setting up the isolated project: create it, give its default profile a root disk, put the test
//! image into it.
use std::path::PathBuf;

use rand::Rng;
use serde_json::json;

use crate::admin::{enc, Admin, AdminError};
use crate::cleanup::PROJECT_PREFIX;
use crate::image::{self, ImageError};
use crate::plan::Sandbox;

/// The alias of the test image inside the acceptance project.
pub(crate) const IMAGE_ALIAS: &str = "acceptance";
/// The alias portable scenarios use for the test image (the fake's default image has it too).
pub(crate) const SCENARIO_ALIAS: &str = "busybox";

/// Where the test image comes from.
#[derive(Debug, Clone)]
pub(crate) enum ImageSource {
    /// Build it from this static busybox binary.
    Busybox(PathBuf),
    /// Copy this alias from this project.
    Existing { alias: String, project: String },
}

impl ImageSource {
    pub(crate) fn describe(&self) -> String {
        match self {
            ImageSource::Busybox(path) => format!("built from busybox `{}`", path.display()),
            ImageSource::Existing { alias, project } => {
                format!("copied from alias `{alias}` in project `{project}`")
            }
        }
    }
}

/// Why setup failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SetupError {
    #[error("storage pool {pool:?} is not usable: {source} (create it, or pass --pool)")]
    Pool { pool: String, source: AdminError },
    #[error("creating project {project}: {source}")]
    Project { project: String, source: AdminError },
    #[error("adding the root disk to the project's default profile: {0}")]
    Profile(AdminError),
    #[error("building the test image: {0}")]
    Build(#[from] ImageError),
    #[error("importing the test image: {0}")]
    Import(AdminError),
    #[error("the imported image has fingerprint {got}, expected {expected}")]
    Fingerprint { got: String, expected: String },
}

/// A fresh random project name: the prefix and 10 lowercase letters or digits.
pub(crate) fn random_project_name() -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    let suffix: String = (0..10)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect();
    format!("{PROJECT_PREFIX}{suffix}")
}

/// Creates the project and fills it. On error, whatever was created is still in the project, which
/// the caller removes.
pub(crate) async fn prepare(
    admin: &Admin,
    project: &str,
    pool: &str,
    source: &ImageSource,
    remote: Option<(String, String)>,
) -> Result<Sandbox, SetupError> {
    admin
        .get(&format!("/1.0/storage-pools/{}", enc(pool)))
        .await
        .map_err(|source| SetupError::Pool {
            pool: pool.to_owned(),
            source,
        })?;
    let config = json!({"features.images": "true", "features.profiles": "true"});
    admin
        .create_project(
            project,
            config,
            "incus-operations acceptance run (removed at the end)",
        )
        .await
        .map_err(|source| SetupError::Project {
            project: project.to_owned(),
            source,
        })?;
    let root = json!({"devices": {"root": {"type": "disk", "path": "/", "pool": pool}}});
    admin
        .patch_profile(project, "default", root)
        .await
        .map_err(SetupError::Profile)?;
    let fingerprint = restore_image(admin, project, source, &[IMAGE_ALIAS, SCENARIO_ALIAS]).await?;
    Ok(Sandbox {
        project: project.to_owned(),
        pool: pool.to_owned(),
        alias: IMAGE_ALIAS.to_owned(),
        fingerprint,
        remote,
        workload: crate::plan::C1.to_owned(),
        workload_member: None,
    })
}

/// Puts the test image into the project with these aliases; returns its fingerprint.
pub(crate) async fn restore_image(
    admin: &Admin,
    project: &str,
    source: &ImageSource,
    aliases: &[&str],
) -> Result<String, SetupError> {
    let fingerprint = match source {
        ImageSource::Busybox(path) => {
            let stamp = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            let built = image::build(path, stamp)?;
            let got = admin
                .import_image(project, built.tarball)
                .await
                .map_err(SetupError::Import)?;
            if got != built.fingerprint {
                return Err(SetupError::Fingerprint {
                    got,
                    expected: built.fingerprint,
                });
            }
            got
        }
        ImageSource::Existing {
            alias,
            project: from,
        } => {
            let fingerprint = admin
                .alias_target(from, alias)
                .await
                .map_err(SetupError::Import)?;
            admin
                .copy_image(from, &fingerprint, project)
                .await
                .map_err(SetupError::Import)?;
            fingerprint
        }
    };
    for alias in aliases {
        admin
            .create_alias(project, alias, &fingerprint)
            .await
            .map_err(SetupError::Import)?;
    }
    Ok(fingerprint)
}
