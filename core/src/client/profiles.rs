//! Profiles (Go: `GetProfiles`, `GetProfile`).

use super::error::ClientError;
use super::query::{target, ListItem, Single};
use super::Client;

impl Client {
    /// `GET /1.0/profiles?recursion=1`.
    pub(crate) async fn get_profiles(&self, project: &str) -> Result<Vec<ListItem>, ClientError> {
        self.query_list(target(
            &["1.0", "profiles"],
            &[("recursion", "1"), ("project", project)],
        ))
        .await
    }

    /// `GET /1.0/profiles/{name}`, with its ETag.
    pub(crate) async fn get_profile(
        &self,
        project: &str,
        name: &str,
    ) -> Result<Single, ClientError> {
        self.query_value(target(&["1.0", "profiles", name], &[("project", project)]))
            .await
    }
}
