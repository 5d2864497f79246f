//! `incus-conformance call OPERATION --input JSON --scopes S,...`: runs one operation through the
//! reference host, bound to the given connection, and prints the result.
//!
//! Exit codes: 0 for a success object, 1 for an error result, 2 for a usage error (bad flags,
//! input that is not JSON, an unknown scope, unreadable certificate files).
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use incus_operations::{run, Connection, Endpoint, RunOptions, Scope};
use serde_json::Value;

use incus_conformance::ReferenceHost;

/// Arguments of `call`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// The operation, for example incus_instance_list.
    operation: String,
    /// The operation's input, as JSON.
    #[arg(long, default_value = "{}")]
    input: String,
    /// The caller's verified scopes, comma-separated (incus.read, incus.write, incus.exec,
    /// incus.delete).
    #[arg(long, value_delimiter = ',', default_value = "")]
    scopes: Vec<String>,
    /// The Incus Unix socket.
    #[arg(long, conflicts_with = "url")]
    unix: Option<PathBuf>,
    /// The Incus HTTPS URL (with --client-cert, --client-key and --server-cert).
    #[arg(long, requires_all = ["client_cert", "client_key", "server_cert"])]
    url: Option<String>,
    /// The client certificate (PEM) presented over HTTPS.
    #[arg(long, requires = "url")]
    client_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long, requires = "url")]
    client_key: Option<PathBuf>,
    /// The server certificate (PEM), pinned.
    #[arg(long, requires = "url")]
    server_cert: Option<PathBuf>,
    /// The bound on every native request, in milliseconds.
    #[arg(long)]
    timeout_ms: Option<u64>,
    /// Project used when the input names none.
    #[arg(long)]
    project: Option<String>,
}

/// Why the call could not be made.
#[derive(Debug, thiserror::Error)]
enum UsageError {
    #[error("--input is not JSON: {0}")]
    Input(serde_json::Error),
    #[error("unknown scope {0:?} (expected incus.read, incus.write, incus.exec or incus.delete)")]
    Scope(String),
    #[error("give --unix PATH or --url URL with --client-cert, --client-key and --server-cert")]
    NoEndpoint,
    #[error("cannot read {path}: {error}")]
    File {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("invalid connection: {0}")]
    Connection(incus_operations::ConnectionError),
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
}

pub(super) fn run_call(args: Args) -> ExitCode {
    match call(args) {
        Ok(result) => {
            let is_error = result.get("error").is_some();
            let printed = super::print_json(&result);
            match (printed == ExitCode::SUCCESS, is_error) {
                (true, false) => ExitCode::SUCCESS,
                _ => ExitCode::FAILURE,
            }
        }
        Err(error) => {
            eprintln!("incus-conformance call: {error}");
            ExitCode::from(super::USAGE)
        }
    }
}

fn call(args: Args) -> Result<Value, UsageError> {
    let input: Value = serde_json::from_str(&args.input).map_err(UsageError::Input)?;
    let scopes = parse_scopes(&args.scopes)?;
    let connection = connection(&args)?;
    let mut host = ReferenceHost::new(connection);
    if let Some(project) = &args.project {
        host = host.default_project(project.clone());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(UsageError::Runtime)?;
    Ok(runtime.block_on(run(
        &args.operation,
        input,
        RunOptions::new(&host, &(), scopes),
    )))
}

fn parse_scopes(tokens: &[String]) -> Result<Vec<Scope>, UsageError> {
    tokens
        .iter()
        .map(|token| token.trim())
        .filter(|token| !token.is_empty())
        .map(|token| Scope::parse(token).ok_or_else(|| UsageError::Scope(token.to_owned())))
        .collect()
}

fn connection(args: &Args) -> Result<Connection, UsageError> {
    let endpoint = match (&args.unix, &args.url) {
        (Some(path), None) => Endpoint::unix(path.clone()),
        (None, Some(url)) => Endpoint::https(
            url.clone(),
            read(args.client_cert.as_ref())?,
            read(args.client_key.as_ref())?,
            read(args.server_cert.as_ref())?,
        ),
        _ => return Err(UsageError::NoEndpoint),
    };
    let mut builder = Connection::builder(endpoint);
    if let Some(millis) = args.timeout_ms {
        builder = builder.timeout(Duration::from_millis(millis));
    }
    builder.build().map_err(UsageError::Connection)
}

fn read(path: Option<&PathBuf>) -> Result<String, UsageError> {
    let path = path.ok_or(UsageError::NoEndpoint)?;
    std::fs::read_to_string(path).map_err(|error| UsageError::File {
        path: path.clone(),
        error,
    })
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use fake_incus::FakeIncus;

    fn call(args: &[&str]) -> std::process::ExitCode {
        let argv = ["incus-conformance", "call"].iter().chain(args.iter());
        super::super::main(argv.map(OsString::from))
    }

    #[test]
    fn call_exits_0_for_success_1_for_an_error_result_2_for_usage() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let fake = runtime.block_on(FakeIncus::builder().start()).unwrap();
        let socket = fake.unix_socket().to_str().unwrap().to_owned();
        let exported = incus_operations::fetch("incus_instance_list").is_some();
        let listed = call(&[
            "incus_instance_list",
            "--scopes",
            "incus.read",
            "--unix",
            &socket,
        ]);
        let expected = if exported { 0 } else { 1 };
        assert_eq!(listed, std::process::ExitCode::from(expected));
        let refused = call(&[
            "incus_instance_list",
            "--scopes",
            "incus.write",
            "--unix",
            &socket,
        ]);
        assert_eq!(refused, std::process::ExitCode::FAILURE);
        for usage in [
            &["incus_instance_list", "--input", "{", "--unix", &socket][..],
            &[
                "incus_instance_list",
                "--scopes",
                "incus.root",
                "--unix",
                &socket,
            ],
            &["incus_instance_list", "--scopes", "incus.read"],
            &["incus_instance_list", "--url", "https://127.0.0.1:1"],
        ] {
            assert_eq!(call(usage), std::process::ExitCode::from(2), "{usage:?}");
        }
        // Refusals made no backend request; the listing made discovery and one list.
        let journal = fake.journal();
        let lists = journal
            .iter()
            .filter(|e| e.path == "/1.0/instances")
            .count();
        assert_eq!(lists, usize::from(exported));
        drop(fake);
    }
}
