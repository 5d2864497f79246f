//! The operation core behind [`Operations`]: `incus_operations::run()` with the harness's reference
//! host, bound to the daemon under test with the acceptance project as the default project.
use std::time::Duration;

use incus_conformance::ReferenceHost;
use incus_operations::{Connection, Endpoint as CoreEndpoint, ImageRemote, RunOptions, Scope};
use serde_json::Value;

use crate::cli::Cli;
use crate::endpoint::Endpoint;
use crate::operations::{OperationInfo, Operations, RunFuture, SMALL_MAX_STREAM_BYTES};

/// The core, bound for one acceptance run.
pub(crate) struct CoreOperations {
    standard: ReferenceHost,
    small_streams: ReferenceHost,
}

impl CoreOperations {
    /// Builds the connections from the command line; nothing is contacted yet.
    pub(crate) fn new(
        endpoint: &Endpoint,
        project: &str,
        cli: &Cli,
    ) -> Result<CoreOperations, String> {
        let host = |max_stream_bytes: Option<u64>| -> Result<ReferenceHost, String> {
            let mut builder = Connection::builder(core_endpoint(endpoint))
                .timeout(Duration::from_secs(cli.timeout));
            if let Some(bytes) = max_stream_bytes {
                builder = builder.max_stream_bytes(bytes);
            }
            let connection = builder.build().map_err(|e| e.to_string())?;
            let mut host = ReferenceHost::new(connection).default_project(project);
            if let Some((name, url)) = &cli.image_remote {
                host = host.image_remote(
                    name,
                    ImageRemote::new(url.clone(), cli.remote_protocol.clone()),
                );
            }
            Ok(host)
        };
        Ok(CoreOperations {
            standard: host(None)?,
            small_streams: host(Some(SMALL_MAX_STREAM_BYTES))?,
        })
    }
}

fn core_endpoint(endpoint: &Endpoint) -> CoreEndpoint {
    match endpoint {
        Endpoint::Unix(path) => CoreEndpoint::unix(path.clone()),
        Endpoint::Https { url, identity, .. } => CoreEndpoint::https(
            url.clone(),
            identity.client_cert_pem.clone(),
            identity.client_key_pem.clone(),
            identity.server_cert_pem.clone(),
        ),
    }
}

fn run_with<'a>(
    host: &'a ReferenceHost,
    name: &'a str,
    input: Value,
    scopes: &'a [&'a str],
) -> RunFuture<'a> {
    let scopes: Vec<Scope> = scopes.iter().filter_map(|s| Scope::parse(s)).collect();
    Box::pin(
        async move { incus_operations::run(name, input, RunOptions::new(host, &(), scopes)).await },
    )
}

impl Operations for CoreOperations {
    fn catalogue(&self) -> Vec<OperationInfo> {
        let exported = incus_operations::all().into_iter().map(|d| (d, true));
        let review = incus_operations::unavailable()
            .into_iter()
            .filter_map(|u| u.descriptor())
            .map(|d| (d, false));
        let mut list: Vec<OperationInfo> = exported
            .chain(review)
            .map(|(d, exported)| OperationInfo {
                name: d.name().to_owned(),
                exported,
                evidence: d.requires().iter().map(|r| (*r).to_owned()).collect(),
                output_schema: d.output_schema().clone(),
            })
            .collect();
        list.sort_by(|a, b| a.name.cmp(&b.name));
        list
    }

    fn run<'a>(&'a self, name: &'a str, input: Value, scopes: &'a [&'a str]) -> RunFuture<'a> {
        run_with(&self.standard, name, input, scopes)
    }

    fn run_small_streams<'a>(
        &'a self,
        name: &'a str,
        input: Value,
        scopes: &'a [&'a str],
    ) -> RunFuture<'a> {
        run_with(&self.small_streams, name, input, scopes)
    }
}
