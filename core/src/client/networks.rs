//! Networks (Go: `GetNetworks`, `GetNetwork`).

use super::error::ClientError;
use super::query::{target, ListItem, Single};
use super::Client;

impl Client {
    /// `GET /1.0/networks?recursion=1`.
    pub(crate) async fn get_networks(&self, project: &str) -> Result<Vec<ListItem>, ClientError> {
        self.query_list(target(
            &["1.0", "networks"],
            &[("recursion", "1"), ("project", project)],
        ))
        .await
    }

    /// `GET /1.0/networks/{name}`, with its ETag.
    pub(crate) async fn get_network(
        &self,
        project: &str,
        name: &str,
    ) -> Result<Single, ClientError> {
        self.query_value(target(&["1.0", "networks", name], &[("project", project)]))
            .await
    }
}
