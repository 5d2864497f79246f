//! Storage pools and volumes (Go: `GetStoragePools`, `GetStoragePool`,
//! `GetStoragePoolVolumes`, `GetStoragePoolVolume`).

use super::error::ClientError;
use super::query::{target, ListItem, Single};
use super::Client;

impl Client {
    /// `GET /1.0/storage-pools?recursion=1`.
    pub(crate) async fn get_storage_pools(
        &self,
        project: &str,
    ) -> Result<Vec<ListItem>, ClientError> {
        self.query_list(target(
            &["1.0", "storage-pools"],
            &[("recursion", "1"), ("project", project)],
        ))
        .await
    }

    /// `GET /1.0/storage-pools/{pool}`, with its ETag.
    pub(crate) async fn get_storage_pool(
        &self,
        project: &str,
        pool: &str,
    ) -> Result<Single, ClientError> {
        self.query_value(target(
            &["1.0", "storage-pools", pool],
            &[("project", project)],
        ))
        .await
    }

    /// `GET /1.0/storage-pools/{pool}/volumes?recursion=1` (snapshot volumes included).
    pub(crate) async fn get_storage_pool_volumes(
        &self,
        project: &str,
        pool: &str,
    ) -> Result<Vec<ListItem>, ClientError> {
        self.query_list(target(
            &["1.0", "storage-pools", pool, "volumes"],
            &[("recursion", "1"), ("project", project)],
        ))
        .await
    }

    /// `GET /1.0/storage-pools/{pool}/volumes/{type}/{name}`, with its ETag.
    pub(crate) async fn get_storage_pool_volume(
        &self,
        project: &str,
        pool: &str,
        volume_type: &str,
        name: &str,
    ) -> Result<Single, ClientError> {
        self.query_value(target(
            &["1.0", "storage-pools", pool, "volumes", volume_type, name],
            &[("project", project)],
        ))
        .await
    }
}
