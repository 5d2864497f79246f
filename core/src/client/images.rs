//! Images and aliases (Go: `GetImages`, `GetImage`, `GetImageAliases`, `DeleteImage`).

use http::Method;

use super::error::ClientError;
use super::query::{target, Accepted, ListItem, Single};
use super::Client;

impl Client {
    /// `GET /1.0/images?recursion=1`.
    pub(crate) async fn get_images(&self, project: &str) -> Result<Vec<ListItem>, ClientError> {
        self.query_list(target(
            &["1.0", "images"],
            &[("recursion", "1"), ("project", project)],
        ))
        .await
    }

    /// `GET /1.0/images/{fingerprint}`, with its ETag.
    pub(crate) async fn get_image(
        &self,
        project: &str,
        fingerprint: &str,
    ) -> Result<Single, ClientError> {
        self.query_value(image_target(project, fingerprint)).await
    }

    /// `GET /1.0/images/aliases?recursion=1`.
    pub(crate) async fn get_image_aliases(
        &self,
        project: &str,
    ) -> Result<Vec<ListItem>, ClientError> {
        self.query_list(target(
            &["1.0", "images", "aliases"],
            &[("recursion", "1"), ("project", project)],
        ))
        .await
    }

    /// `DELETE /1.0/images/{fingerprint}`; Incus answers with an operation.
    pub(crate) async fn delete_image(
        &self,
        project: &str,
        fingerprint: &str,
    ) -> Result<Accepted, ClientError> {
        self.query_operation(
            Method::DELETE,
            image_target(project, fingerprint),
            None,
            None,
        )
        .await
    }
}

fn image_target(project: &str, fingerprint: &str) -> String {
    target(&["1.0", "images", fingerprint], &[("project", project)])
}
