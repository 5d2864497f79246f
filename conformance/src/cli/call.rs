//! `incus-conformance call OPERATION --input JSON --scopes S,...`: runs one operation through the
//! reference host, bound to the given connection, and prints the result.
//!
//! `--input` takes the JSON itself, `@FILE` to read it from a file, or `-` to read it from
//! standard input: one argument is at most 128 KiB on Linux, and an exec input may be 1 MiB.
//!
//! Exit codes: 0 for a success object, 1 for an error result, 2 for a usage error (bad flags,
//! input that is not JSON or cannot be read, an unknown scope, unreadable certificate files,
//! a URL with credentials in it).
use std::io::Read;
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
    /// The operation's input: JSON, @FILE to read it from FILE, or - to read it from standard
    /// input.
    #[arg(long, default_value = "{}", value_name = "JSON|@FILE|-")]
    input: String,
    /// The caller's verified scopes, comma-separated (incus.read, incus.write, incus.exec,
    /// incus.delete).
    #[arg(long, value_delimiter = ',', default_value = "")]
    scopes: Vec<String>,
    /// The Incus Unix socket.
    #[arg(long, conflicts_with = "url")]
    unix: Option<PathBuf>,
    /// The Incus HTTPS URL, https://HOST[:PORT] (with --client-cert, --client-key and
    /// --server-cert). A URL with credentials (user:password@) is refused.
    #[arg(long, requires_all = ["client_cert", "client_key", "server_cert"], value_parser = credential_free)]
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

/// The most `--input @FILE` and `--input -` read: well past every input bound of the core
/// (1 MiB for exec), so that the core, not the command line, refuses an input too large.
const MAX_INPUT_BYTES: u64 = 16 * 1024 * 1024;
const _: () = assert!(MAX_INPUT_BYTES > 1024 * 1024, "past the exec input bound");

/// Why the call could not be made.
#[derive(Debug, thiserror::Error)]
enum UsageError {
    #[error("--input is not JSON: {0}")]
    Input(serde_json::Error),
    #[error("cannot read the input from {from}: {error}")]
    ReadInput { from: String, error: std::io::Error },
    #[error("the input from {from} is longer than {MAX_INPUT_BYTES} bytes")]
    InputTooLong { from: String },
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
            let printed = super::output::print_json(&result);
            match (printed == ExitCode::SUCCESS, is_error) {
                (true, false) => ExitCode::SUCCESS,
                _ => ExitCode::FAILURE,
            }
        }
        Err(error) => {
            eprintln!("incus-conformance call: {error}");
            ExitCode::from(super::output::USAGE)
        }
    }
}

fn call(args: Args) -> Result<Value, UsageError> {
    let text = input_text(&args.input, &mut std::io::stdin().lock())?;
    let input: Value = serde_json::from_str(&text).map_err(UsageError::Input)?;
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

/// The input text `--input` names: itself, the file after `@`, or `stdin` for `-`. (No JSON
/// text starts with `@` or is `-`, so neither is ambiguous.)
fn input_text(argument: &str, stdin: &mut dyn Read) -> Result<String, UsageError> {
    let (from, reader): (String, Box<dyn Read + '_>) = if argument == "-" {
        ("standard input".to_owned(), Box::new(stdin))
    } else if let Some(path) = argument.strip_prefix('@') {
        let file = std::fs::File::open(path).map_err(|error| UsageError::ReadInput {
            from: path.to_owned(),
            error,
        })?;
        (path.to_owned(), Box::new(file))
    } else {
        return Ok(argument.to_owned());
    };
    let mut text = String::new();
    reader
        .take(MAX_INPUT_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|error| UsageError::ReadInput {
            from: from.clone(),
            error,
        })?;
    if text.len() as u64 > MAX_INPUT_BYTES {
        return Err(UsageError::InputTooLong { from });
    }
    Ok(text)
}

/// Refuses a URL whose authority carries credentials (`https://user:pw@host`): they would be
/// dropped without a word, and they do not belong on a command line.
fn credential_free(url: &str) -> Result<String, String> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Err(
            "the URL carries credentials (user:password@): they are not sent, so they \
                    are refused; authenticate with --client-cert and --client-key"
                .to_owned(),
        );
    }
    Ok(url.to_owned())
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
    //! What goes here: tests of this module on its own (`incus-conformance call OPERATION --input
    //! JSON --scopes S,...`); a promise of the harness seen from outside (its command line,
    //! certification, the wire) goes in `tests/harness`.

    use std::ffi::OsString;

    use fake_incus::FakeIncus;

    use super::{credential_free, input_text, UsageError};

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

    #[derive(clap::Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: super::Args,
    }

    /// An exec input padded to `size` bytes of JSON (`pad` is not in the schema).
    fn padded_exec(size: usize) -> String {
        let skeleton = serde_json::json!({"name": "web", "command": ["true"], "pad": ""});
        let pad = size - skeleton.to_string().len();
        serde_json::json!({"name": "web", "command": ["true"], "pad": "x".repeat(pad)}).to_string()
    }

    #[test]
    fn input_at_file_reaches_the_1_mib_exec_bound_that_argv_cannot() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let fake = runtime.block_on(FakeIncus::builder().start()).unwrap();
        let socket = fake.unix_socket().to_str().unwrap().to_owned();
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().join("at.json");
        let past = dir.path().join("past.json");
        std::fs::write(&at, padded_exec(1024 * 1024)).unwrap();
        std::fs::write(&past, padded_exec(1024 * 1024 + 1)).unwrap();
        let exec = |file: &std::path::Path| {
            let input = format!("@{}", file.display());
            let argv = [
                "call",
                "incus_instance_exec",
                "--scopes",
                "incus.exec",
                "--unix",
                &socket,
                "--input",
                &input,
            ];
            let parsed = <Wrapper as clap::Parser>::try_parse_from(argv).unwrap();
            super::call(parsed.args).unwrap()
        };
        // At the bound the core reads the input and its schema refuses it; one byte more is
        // refused by the bound, which names it.
        let at = exec(&at);
        assert_eq!(at["error"]["kind"], "invalid_input", "{at}");
        let past = exec(&past);
        assert_eq!(past["error"]["kind"], "input_too_large", "{past}");
        assert_eq!(past["error"]["limit"], 1024 * 1024);
        let file = dir.path().join("past.json");
        let text = input_text(&format!("@{}", file.display()), &mut std::io::empty()).unwrap();
        assert_eq!(text.len(), 1024 * 1024 + 1);
        let missing = dir.path().join("missing.json");
        let usage = call(&[
            "incus_instance_list",
            "--unix",
            &socket,
            "--input",
            &format!("@{}", missing.display()),
        ]);
        assert_eq!(usage, std::process::ExitCode::from(2));
        assert!(fake.journal().iter().all(|e| !e.path.contains("exec")));
    }

    #[test]
    fn input_dash_reads_standard_input_and_is_bounded() {
        let mut stdin = std::io::Cursor::new(br#"{"name": "web"}"#.to_vec());
        assert_eq!(input_text("-", &mut stdin).unwrap(), r#"{"name": "web"}"#);
        assert_eq!(input_text("{}", &mut std::io::empty()).unwrap(), "{}");
        let mut endless = std::io::repeat(b' ');
        assert!(matches!(
            input_text("-", &mut endless),
            Err(UsageError::InputTooLong { .. })
        ));
        let mut invalid = std::io::Cursor::new(vec![0xff, 0xfe]);
        assert!(matches!(
            input_text("-", &mut invalid),
            Err(UsageError::ReadInput { .. })
        ));
    }

    #[test]
    fn a_url_with_credentials_is_refused_not_stripped() {
        for url in [
            "https://user:pw@incus.example:8443",
            "https://user@incus.example",
            "https://@incus.example",
        ] {
            let error = credential_free(url).unwrap_err();
            assert!(error.contains("credentials"), "{url}: {error}");
            let code = call(&[
                "incus_server_get",
                "--url",
                url,
                "--client-cert",
                "c.pem",
                "--client-key",
                "k.pem",
                "--server-cert",
                "s.pem",
            ]);
            assert_eq!(code, std::process::ExitCode::from(2), "{url}");
        }
        for url in [
            "https://incus.example:8443",
            "https://[::1]:8443/",
            "https://h/p@x",
        ] {
            assert_eq!(credential_free(url).as_deref(), Ok(url));
        }
    }
}
