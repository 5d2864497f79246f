//! What the acceptance run calls: the operation core's `run()` with the harness's reference host,
//! through the scenario engine's real-Incus target, bound to the daemon under test with the
//! acceptance project as the default project.
use std::path::Path;
use std::time::Duration;

use incus_conformance::scenario::target::HostTarget;
use incus_conformance::ReferenceHost;
use incus_operations::{Connection, Endpoint as CoreEndpoint, ImageRemote};

use crate::cli::Cli;
use crate::endpoint::Endpoint;

/// Every scope; the acceptance run grants all of them except where a check is about scopes.
pub(crate) const ALL_SCOPES: [&str; 4] =
    ["incus.read", "incus.write", "incus.exec", "incus.delete"];

/// `max_stream_bytes` of the second connection: the exec stream total is half of it, 512 KiB, so
/// that the stream bound is reached in a second rather than after 64 MiB.
pub(crate) const SMALL_MAX_STREAM_BYTES: u64 = 1024 * 1024;

/// The target the run calls.
pub(crate) type Target = HostTarget<ReferenceHost>;

/// The core, bound for one acceptance run: over the standard connection, and over one whose
/// `max_stream_bytes` is [`SMALL_MAX_STREAM_BYTES`].
pub(crate) struct Targets {
    pub(crate) standard: Target,
    pub(crate) small_streams: Target,
}

impl Targets {
    /// Builds the connections from the command line; nothing is contacted yet.
    pub(crate) fn new(endpoint: &Endpoint, project: &str, cli: &Cli) -> Result<Targets, String> {
        let target = |max_stream_bytes| -> Result<Target, String> {
            let connection = connection(core_endpoint(endpoint), cli.timeout, max_stream_bytes)?;
            let mut host = ReferenceHost::new(connection).default_project(project);
            if let Some((name, url)) = &cli.image_remote {
                host = host.image_remote(
                    name,
                    ImageRemote::new(url.clone(), cli.remote_protocol.clone()),
                );
            }
            Ok(HostTarget::new(host, ()))
        };
        Ok(Targets {
            standard: target(None)?,
            small_streams: target(Some(SMALL_MAX_STREAM_BYTES))?,
        })
    }
}

/// The core bound to `endpoint` (e.g. the read-only relay) with the run's request bound and the
/// acceptance project as its default project.
pub(crate) fn bound(
    endpoint: CoreEndpoint,
    project: &str,
    timeout_seconds: u64,
) -> Result<Target, String> {
    let connection = connection(endpoint, timeout_seconds, None)?;
    let host = ReferenceHost::new(connection).default_project(project);
    Ok(HostTarget::new(host, ()))
}

/// A connection with the run's request bound (`--timeout`) and, when given, a stream bound.
pub(crate) fn connection(
    endpoint: CoreEndpoint,
    timeout_seconds: u64,
    max_stream_bytes: Option<u64>,
) -> Result<Connection, String> {
    let mut builder = Connection::builder(endpoint).timeout(Duration::from_secs(timeout_seconds));
    if let Some(bytes) = max_stream_bytes {
        builder = builder.max_stream_bytes(bytes);
    }
    builder.build().map_err(|e| e.to_string())
}

/// The core's endpoint for a Unix socket (the fake's, in differential mode).
pub(crate) fn unix(socket: &Path) -> CoreEndpoint {
    CoreEndpoint::unix(socket.to_owned())
}

fn core_endpoint(endpoint: &Endpoint) -> CoreEndpoint {
    match endpoint {
        Endpoint::Unix(path) => unix(path),
        Endpoint::Https { url, identity, .. } => CoreEndpoint::https(
            url.clone(),
            identity.client_cert_pem.clone(),
            identity.client_key_pem.clone(),
            identity.server_cert_pem.clone(),
        ),
    }
}

/// One catalogue entry as the report sees it.
#[derive(Debug, Clone)]
pub(crate) struct OperationInfo {
    pub(crate) name: String,
    /// In `all()` (passed the evidence gate) rather than only in the catalogue for review.
    pub(crate) exported: bool,
    /// Client requirements: native methods, `helper:connect`, `stream:S01`.
    pub(crate) evidence: Vec<String>,
}

/// Every operation of the catalogue, exported or not, sorted by name.
pub(crate) fn catalogue() -> Vec<OperationInfo> {
    let exported = incus_operations::all().into_iter().map(|d| (d, true));
    let review = incus_operations::not_exported()
        .into_iter()
        .filter_map(|u| u.descriptor())
        .map(|d| (d, false));
    let mut list: Vec<OperationInfo> = exported
        .chain(review)
        .map(|(d, exported)| OperationInfo {
            name: d.name().to_owned(),
            exported,
            evidence: d.requires().iter().map(|r| (*r).to_owned()).collect(),
        })
        .collect();
    list.sort_by(|a, b| a.name.cmp(&b.name));
    list
}
