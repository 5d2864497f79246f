//! A minimal Incus client for what the acceptance run needs outside the 32 operations: creating and
//! deleting its project, importing the test image, listing leftovers. Unix socket or HTTPS with a client
//! certificate and a pinned server certificate, one HTTP/1.1 connection per request.
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::{BodyExt, Full};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde_json::{json, Value};

use crate::endpoint::{Endpoint, TlsIdentity};

/// Why an admin request failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AdminError {
    #[error("cannot reach Incus at {endpoint}: {source}")]
    Connect {
        endpoint: String,
        source: std::io::Error,
    },
    #[error("TLS setup failed: {0}")]
    Tls(String),
    #[error("HTTP exchange failed: {0}")]
    Http(String),
    #[error("request timed out after {0:?}")]
    Timeout(Duration),
    #[error("Incus answered something that is not an Incus response: {0}")]
    Invalid(String),
    #[error("Incus refused {call}: {status} {message}")]
    Native {
        call: String,
        status: u16,
        message: String,
    },
}

impl AdminError {
    /// The native HTTP status, when Incus answered with an error envelope.
    pub(crate) fn native_status(&self) -> Option<u16> {
        match self {
            AdminError::Native { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// A decoded Incus envelope that was not an error.
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    pub(crate) kind: String,
    pub(crate) metadata: Value,
}

/// The admin client.
#[derive(Clone)]
pub(crate) struct Admin {
    endpoint: Endpoint,
    tls: Option<Arc<rustls::ClientConfig>>,
    timeout: Duration,
}

/// The longest a setup or cleanup operation is waited for.
const OPERATION_WAIT_SECONDS: u64 = 60;

impl Admin {
    /// Builds a client; nothing is contacted yet.
    pub(crate) fn new(endpoint: Endpoint) -> Result<Admin, AdminError> {
        let tls = match &endpoint {
            Endpoint::Unix(_) => None,
            Endpoint::Https { identity, .. } => Some(client_config(identity)?),
        };
        Ok(Admin {
            endpoint,
            tls,
            timeout: Duration::from_secs(OPERATION_WAIT_SECONDS + 10),
        })
    }

    /// `GET /1.0`.
    pub(crate) async fn server(&self) -> Result<Value, AdminError> {
        Ok(self.get("/1.0").await?.metadata)
    }

    /// Names of all projects.
    pub(crate) async fn project_names(&self) -> Result<Vec<String>, AdminError> {
        let urls = self.get("/1.0/projects").await?.metadata;
        Ok(names_from_urls(&urls))
    }

    /// Creates a project with the given config.
    pub(crate) async fn create_project(
        &self,
        name: &str,
        config: Value,
        description: &str,
    ) -> Result<(), AdminError> {
        let body = json!({"name": name, "config": config, "description": description});
        self.send(Method::POST, "/1.0/projects", Some(body)).await?;
        Ok(())
    }

    /// Deletes an (empty) project.
    pub(crate) async fn delete_project(&self, name: &str) -> Result<(), AdminError> {
        let path = format!("/1.0/projects/{}", enc(name));
        self.send(Method::DELETE, &path, None).await?;
        Ok(())
    }

    /// Merges devices into a profile of a project.
    pub(crate) async fn patch_profile(
        &self,
        project: &str,
        profile: &str,
        body: Value,
    ) -> Result<(), AdminError> {
        let path = format!("/1.0/profiles/{}?project={}", enc(profile), enc(project));
        self.send(Method::PATCH, &path, Some(body)).await?;
        Ok(())
    }

    /// Imports a unified image tarball into a project and returns its fingerprint.
    pub(crate) async fn import_image(
        &self,
        project: &str,
        tarball: Vec<u8>,
    ) -> Result<String, AdminError> {
        self.import_raw(project, "application/octet-stream", Bytes::from(tarball))
            .await
    }

    /// Copies an image of another project of this server into `project` (export, then import the
    /// same bytes: a same-server copy through the API would need the daemon to listen on the network).
    pub(crate) async fn copy_image(
        &self,
        from_project: &str,
        fingerprint: &str,
        project: &str,
    ) -> Result<String, AdminError> {
        let path = format!(
            "/1.0/images/{}/export?project={}",
            enc(fingerprint),
            enc(from_project)
        );
        let request = Request::builder()
            .method(Method::GET)
            .uri(path.clone())
            .body(Full::new(Bytes::new()))
            .map_err(|e| AdminError::Http(e.to_string()))?;
        let call = format!("GET {path}");
        let raw = self.roundtrip(request).await?;
        if raw.status != 200 {
            return Err(AdminError::Native {
                call,
                status: raw.status,
                message: String::from_utf8_lossy(&raw.body)
                    .chars()
                    .take(300)
                    .collect(),
            });
        }
        let content_type = raw
            .content_type()
            .unwrap_or("application/octet-stream")
            .to_owned();
        self.import_raw(project, &content_type, raw.body).await
    }

    async fn import_raw(
        &self,
        project: &str,
        content_type: &str,
        body: Bytes,
    ) -> Result<String, AdminError> {
        let path = format!("/1.0/images?project={}", enc(project));
        let request = Request::builder()
            .method(Method::POST)
            .uri(path.clone())
            .header("Content-Type", content_type)
            .body(Full::new(body))
            .map_err(|e| AdminError::Http(e.to_string()))?;
        let answer = self.exchange(&format!("POST {path}"), request).await?;
        let operation = self.settle(&format!("POST {path}"), answer).await?;
        operation["metadata"]["fingerprint"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| AdminError::Invalid("image import gave no fingerprint".into()))
    }

    /// Resolves an image alias in a project to its fingerprint.
    pub(crate) async fn alias_target(
        &self,
        project: &str,
        alias: &str,
    ) -> Result<String, AdminError> {
        let path = format!(
            "/1.0/images/aliases/{}?project={}",
            enc(alias),
            enc(project)
        );
        let answer = self.get(&path).await?;
        answer.metadata["target"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| AdminError::Invalid(format!("alias {alias} has no target")))
    }

    /// Creates an image alias in a project.
    pub(crate) async fn create_alias(
        &self,
        project: &str,
        alias: &str,
        fingerprint: &str,
    ) -> Result<(), AdminError> {
        let path = format!("/1.0/images/aliases?project={}", enc(project));
        let body =
            json!({"name": alias, "target": fingerprint, "description": "acceptance test image"});
        self.send(Method::POST, &path, Some(body)).await?;
        Ok(())
    }

    /// Names (or fingerprints) in a project-scoped collection such as `/1.0/instances`.
    pub(crate) async fn list(
        &self,
        project: &str,
        collection: &str,
    ) -> Result<Vec<String>, AdminError> {
        let path = format!("{collection}?project={}", enc(project));
        Ok(names_from_urls(&self.get(&path).await?.metadata))
    }

    /// The objects of a project-scoped collection (`recursion=1`).
    pub(crate) async fn list_objects(
        &self,
        project: &str,
        collection: &str,
    ) -> Result<Vec<Value>, AdminError> {
        let path = format!("{collection}?recursion=1&project={}", enc(project));
        match self.get(&path).await?.metadata {
            Value::Array(items) => Ok(items),
            other => Err(AdminError::Invalid(format!(
                "{collection} is not a list: {other}"
            ))),
        }
    }

    /// Ids of the operations of a project that are still running.
    pub(crate) async fn running_operations(
        &self,
        project: &str,
    ) -> Result<Vec<String>, AdminError> {
        let path = format!("/1.0/operations?project={}", enc(project));
        let metadata = self.get(&path).await?.metadata;
        let running = metadata.get("running").cloned().unwrap_or(Value::Null);
        Ok(names_from_urls(&running))
    }

    /// Waits (bounded) for an operation; errors of the operation itself are ignored.
    pub(crate) async fn wait_quietly(&self, id: &str, seconds: u64) {
        let path = format!("/1.0/operations/{}/wait?timeout={seconds}", enc(id));
        let _ = self.get(&path).await;
    }

    /// Creates an instance from an image alias of the project on one cluster member (`?target=`)
    /// and starts it; both operations must succeed.
    pub(crate) async fn launch_on(
        &self,
        project: &str,
        name: &str,
        alias: &str,
        member: &str,
    ) -> Result<(), AdminError> {
        let path = format!(
            "/1.0/instances?project={}&target={}",
            enc(project),
            enc(member)
        );
        let body =
            json!({"name": name, "type": "container", "source": {"type": "image", "alias": alias}});
        let created = self.send(Method::POST, &path, Some(body)).await?;
        succeeded(&format!("POST {path}"), &created.metadata)?;
        let path = format!(
            "/1.0/instances/{}/state?project={}",
            enc(name),
            enc(project)
        );
        let started = self
            .send(
                Method::PUT,
                &path,
                Some(json!({"action": "start", "timeout": 30})),
            )
            .await?;
        succeeded(&format!("PUT {path}"), &started.metadata)
    }

    /// Creates a custom storage volume in a project's pool (on a cluster, on `target`).
    pub(crate) async fn create_volume(
        &self,
        project: &str,
        pool: &str,
        name: &str,
        target: Option<&str>,
    ) -> Result<(), AdminError> {
        let path = custom_volumes(pool, None, project, target);
        let body = json!({"name": name, "content_type": "filesystem"});
        self.send(Method::POST, &path, Some(body)).await?;
        Ok(())
    }

    /// Deletes a custom storage volume of a project's pool (on a cluster, the one on `target`).
    pub(crate) async fn delete_volume(
        &self,
        project: &str,
        pool: &str,
        name: &str,
        target: Option<&str>,
    ) -> Result<(), AdminError> {
        let path = custom_volumes(pool, Some(name), project, target);
        self.send(Method::DELETE, &path, None).await?;
        Ok(())
    }

    /// The custom volumes of a project on every pool, as (pool, volume, member) (`member` is
    /// the volume's `location` on a cluster, empty or `none` standalone).
    pub(crate) async fn custom_volumes(
        &self,
        project: &str,
    ) -> Result<Vec<(String, String, String)>, AdminError> {
        let pools = names_from_urls(&self.get("/1.0/storage-pools").await?.metadata);
        let mut volumes = Vec::new();
        for pool in pools {
            let path = format!(
                "/1.0/storage-pools/{}/volumes/custom?recursion=1&project={}",
                enc(&pool),
                enc(project)
            );
            let listed = self.get(&path).await?.metadata;
            for volume in listed.as_array().into_iter().flatten() {
                let text = |key: &str| volume[key].as_str().unwrap_or_default().to_owned();
                volumes.push((pool.clone(), text("name"), text("location")));
            }
        }
        Ok(volumes)
    }

    /// Stops an instance at once (force).
    pub(crate) async fn force_stop(&self, project: &str, name: &str) -> Result<(), AdminError> {
        let path = format!(
            "/1.0/instances/{}/state?project={}",
            enc(name),
            enc(project)
        );
        let body = json!({"action": "stop", "force": true, "timeout": -1});
        self.send(Method::PUT, &path, Some(body)).await?;
        Ok(())
    }

    /// Deletes an object (instance, image, profile, volume) by its path and waits for it.
    pub(crate) async fn delete(
        &self,
        path_in_project: &str,
        project: &str,
    ) -> Result<(), AdminError> {
        let path = format!("{path_in_project}?project={}", enc(project));
        self.send(Method::DELETE, &path, None).await?;
        Ok(())
    }

    /// A GET that must answer sync.
    pub(crate) async fn get(&self, path: &str) -> Result<Answer, AdminError> {
        self.send(Method::GET, path, None).await
    }

    /// Sends a request; an async answer is waited for (bounded) and must end in success.
    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Answer, AdminError> {
        let call = format!("{method} {path}");
        let request = request(method, path, body)?;
        let answer = self.exchange(&call, request).await?;
        if answer.kind == "async" {
            let operation = self.settle(&call, answer).await?;
            return Ok(Answer {
                kind: "sync".into(),
                metadata: operation,
            });
        }
        Ok(answer)
    }

    /// Sends one request as it is and returns the HTTP status and the envelope, whatever they
    /// say (a scenario's operator request, which the scenario engine judges).
    pub(crate) async fn raw(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<(u16, Value), AdminError> {
        let method =
            Method::from_bytes(method.as_bytes()).map_err(|e| AdminError::Http(e.to_string()))?;
        let call = format!("{method} {path}");
        let request = request(method, path, body)?;
        let Raw { status, body, .. } = tokio::time::timeout(self.timeout, self.roundtrip(request))
            .await
            .map_err(|_| AdminError::Timeout(self.timeout))??;
        let envelope = serde_json::from_slice(&body)
            .map_err(|e| AdminError::Invalid(format!("{call}: HTTP {status}: {e}")))?;
        Ok((status, envelope))
    }

    /// Waits for the operation of an async answer and returns the final operation object.
    async fn settle(&self, call: &str, answer: Answer) -> Result<Value, AdminError> {
        let id = answer.metadata["id"]
            .as_str()
            .ok_or_else(|| AdminError::Invalid(format!("{call}: async answer without id")))?;
        let path = format!(
            "/1.0/operations/{}/wait?timeout={OPERATION_WAIT_SECONDS}",
            enc(id)
        );
        let request = Request::builder()
            .method(Method::GET)
            .uri(path)
            .body(Full::new(Bytes::new()))
            .map_err(|e| AdminError::Http(e.to_string()))?;
        let waited = self.exchange(call, request).await?;
        Ok(waited.metadata)
    }

    /// One HTTP exchange, decoded into an Incus envelope; error envelopes become `AdminError::Native`.
    async fn exchange(
        &self,
        call: &str,
        request: Request<Full<Bytes>>,
    ) -> Result<Answer, AdminError> {
        let Raw { status, body, .. } = tokio::time::timeout(self.timeout, self.roundtrip(request))
            .await
            .map_err(|_| AdminError::Timeout(self.timeout))??;
        let envelope: Value = serde_json::from_slice(&body)
            .map_err(|e| AdminError::Invalid(format!("{call}: HTTP {status}: {e}")))?;
        let kind = envelope["type"].as_str().unwrap_or_default().to_owned();
        if kind == "error" {
            let code = envelope["error_code"].as_u64().unwrap_or(u64::from(status));
            return Err(AdminError::Native {
                call: call.to_owned(),
                status: u16::try_from(code).unwrap_or(status),
                message: envelope["error"].as_str().unwrap_or_default().to_owned(),
            });
        }
        if kind != "sync" && kind != "async" {
            return Err(AdminError::Invalid(format!(
                "{call}: envelope type {kind:?}"
            )));
        }
        Ok(Answer {
            kind,
            metadata: envelope["metadata"].clone(),
        })
    }

    /// Sends one GET exactly as given (path and query) and returns the daemon's answer as it
    /// came, whatever its status: what the read-only relay passes on.
    pub(crate) async fn raw_get(&self, path_and_query: &str) -> Result<Raw, AdminError> {
        let request = Request::builder()
            .method(Method::GET)
            .uri(path_and_query)
            .body(Full::new(Bytes::new()))
            .map_err(|e| AdminError::Http(e.to_string()))?;
        tokio::time::timeout(self.timeout, self.roundtrip(request))
            .await
            .map_err(|_| AdminError::Timeout(self.timeout))?
    }

    /// Sends one request; returns the answer as it came.
    async fn roundtrip(&self, mut request: Request<Full<Bytes>>) -> Result<Raw, AdminError> {
        let host = match &self.endpoint {
            Endpoint::Unix(_) => "incus".to_owned(),
            Endpoint::Https { authority, .. } => authority.clone(),
        };
        request.headers_mut().insert(
            http::header::HOST,
            http::HeaderValue::from_str(&host).map_err(|e| AdminError::Http(e.to_string()))?,
        );
        match &self.endpoint {
            Endpoint::Unix(path) => {
                let stream = tokio::net::UnixStream::connect(path)
                    .await
                    .map_err(|source| AdminError::Connect {
                        endpoint: path.display().to_string(),
                        source,
                    })?;
                http1(stream, request).await
            }
            Endpoint::Https {
                authority, host, ..
            } => {
                let config = self
                    .tls
                    .clone()
                    .ok_or_else(|| AdminError::Tls("no TLS config".into()))?;
                let stream = tokio::net::TcpStream::connect(authority.as_str())
                    .await
                    .map_err(|source| AdminError::Connect {
                        endpoint: authority.clone(),
                        source,
                    })?;
                let name = rustls_pki_types::ServerName::try_from(host.clone())
                    .map_err(|e| AdminError::Tls(e.to_string()))?;
                let stream = tokio_rustls::TlsConnector::from(config)
                    .connect(name, stream)
                    .await
                    .map_err(|source| AdminError::Connect {
                        endpoint: authority.clone(),
                        source,
                    })?;
                http1(stream, request).await
            }
        }
    }
}

/// The custom volumes of a pool in a project, or one of them, with `&target=MEMBER` for a
/// cluster member (none for an empty member or `none`, a standalone daemon's location).
fn custom_volumes(pool: &str, name: Option<&str>, project: &str, target: Option<&str>) -> String {
    let name = name.map(|n| format!("/{}", enc(n))).unwrap_or_default();
    let target = match target {
        Some(member) if !member.is_empty() && member != "none" => {
            format!("&target={}", enc(member))
        }
        _ => String::new(),
    };
    format!(
        "/1.0/storage-pools/{}/volumes/custom{name}?project={}{target}",
        enc(pool),
        enc(project)
    )
}

/// An operation that ended in anything but success is an error of `call`.
fn succeeded(call: &str, operation: &Value) -> Result<(), AdminError> {
    if operation["status"] == "Success" {
        return Ok(());
    }
    Err(AdminError::Native {
        call: call.to_owned(),
        status: u16::try_from(operation["status_code"].as_u64().unwrap_or(500)).unwrap_or(500),
        message: operation["err"]
            .as_str()
            .unwrap_or("the operation did not succeed")
            .to_owned(),
    })
}

/// An answer as it came: its status, the headers a client of Incus reads, and its body.
#[derive(Debug, Clone)]
pub(crate) struct Raw {
    pub(crate) status: u16,
    /// `Content-Type` and `ETag`, when present.
    pub(crate) headers: Vec<(http::HeaderName, String)>,
    pub(crate) body: Bytes,
}

impl Raw {
    /// The `Content-Type` header, when present.
    pub(crate) fn content_type(&self) -> Option<&str> {
        self.headers
            .iter()
            .find(|(name, _)| name == http::header::CONTENT_TYPE)
            .map(|(_, value)| value.as_str())
    }
}

async fn http1<S>(stream: S, request: Request<Full<Bytes>>) -> Result<Raw, AdminError>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map_err(|e| AdminError::Http(e.to_string()))?
        .to_bytes();
    let mut connection = fake_incus::client::Connection::over(stream)
        .await
        .map_err(|e| AdminError::Http(e.to_string()))?;
    let reply = connection
        .send(Request::from_parts(parts, body))
        .await
        .map_err(|e| AdminError::Http(e.to_string()))?;
    let headers = [http::header::CONTENT_TYPE, http::header::ETAG]
        .into_iter()
        .filter_map(|name| {
            let value = reply.header(name.as_str())?.to_owned();
            Some((name, value))
        })
        .collect();
    Ok(Raw {
        status: reply.status(),
        headers,
        body: reply.bytes().clone(),
    })
}

/// The core's pinned-certificate configuration, so the admin client trusts exactly what `run()`
/// trusts. Errors name the command-line flag of the input at fault.
fn client_config(identity: &TlsIdentity) -> Result<Arc<rustls::ClientConfig>, AdminError> {
    incus_operations::tls_client_config(
        &identity.client_cert_pem,
        &identity.client_key_pem,
        &identity.server_cert_pem,
    )
    .map_err(|e| AdminError::Tls(with_flag(&e)))
}

fn with_flag(error: &incus_operations::ConnectionError) -> String {
    let flag = match error {
        incus_operations::ConnectionError::InvalidPem { what, .. } => match *what {
            "client certificate" => "--client-cert: ",
            "client key" => "--client-key: ",
            "server certificate" => "--server-cert: ",
            _ => "",
        },
        _ => "",
    };
    format!("{flag}{error}")
}

/// Everything but the unreserved characters of RFC 3986 is encoded.
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A request with a JSON body, if any.
fn request(
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Result<Request<Full<Bytes>>, AdminError> {
    let mut builder = Request::builder().method(method).uri(path);
    let bytes = match body {
        Some(body) => {
            builder = builder.header("Content-Type", "application/json");
            Bytes::from(body.to_string())
        }
        None => Bytes::new(),
    };
    builder
        .body(Full::new(bytes))
        .map_err(|e| AdminError::Http(e.to_string()))
}

/// Percent-encodes one path segment or query value.
pub(crate) fn enc(value: &str) -> String {
    utf8_percent_encode(value, UNRESERVED).to_string()
}

/// The last path segment of each URL in a list (`/1.0/instances/c1?project=p` gives `c1`).
pub(crate) fn names_from_urls(urls: &Value) -> Vec<String> {
    let Some(list) = urls.as_array() else {
        return Vec::new();
    };
    list.iter()
        .filter_map(Value::as_str)
        .filter_map(|url| {
            let path = url.split('?').next().unwrap_or(url);
            let last = path.rsplit('/').next()?;
            percent_encoding::percent_decode_str(last)
                .decode_utf8()
                .ok()
                .map(|s| s.into_owned())
        })
        .collect()
}
