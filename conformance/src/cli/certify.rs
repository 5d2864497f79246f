//! `incus-conformance certify --adapter 'COMMAND ARGS'` (or `--adapter-url URL`): every suite that
//! can be expressed over the wire protocol `incus-operations-adapter/1`, run through an
//! implementation under test, with the flags and reports of `run`.

use std::process::ExitCode;
use std::sync::Arc;

use incus_conformance::adapter::targets::WireTargets;
use incus_conformance::adapter::transport::{HttpAdapter, StdioAdapter, Transport};
use incus_conformance::scenario::fake::Listener;

/// Which listener of each trial's fake Incus the requests name as the backend.
#[derive(Debug, Clone, Copy, Default, clap::ValueEnum)]
enum Backend {
    /// The fake's Unix socket.
    #[default]
    Unix,
    /// The fake's HTTPS listener, with a client certificate and the server certificate pinned.
    Https,
}

/// Arguments of `certify`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// The adapter command: started as many times as trials run at once, one JSON request per
    /// line on its standard input, one result per line on its standard output. Split into words
    /// like a shell line (quotes, backslashes), not run by a shell.
    #[arg(
        long,
        value_name = "COMMAND ARGS",
        required_unless_present = "adapter_url",
        conflicts_with = "adapter_url"
    )]
    adapter: Option<String>,
    /// The URL of an adapter that runs as a service: each request is POSTed there, the result
    /// is the response body.
    #[arg(long, value_name = "URL")]
    adapter_url: Option<String>,
    /// Which listener of each trial's fake Incus the requests name.
    #[arg(long, value_enum, default_value_t)]
    backend: Backend,
    #[command(flatten)]
    run: incus_conformance::RunArgs,
}

pub(super) fn run(args: Args) -> ExitCode {
    let transport: Arc<dyn Transport> = match (&args.adapter, &args.adapter_url) {
        (Some(command), _) => {
            match StdioAdapter::new(command).and_then(|a| a.check_start().map(|()| a)) {
                Ok(adapter) => Arc::new(adapter),
                Err(e) => return usage(&e),
            }
        }
        (None, Some(url)) => match HttpAdapter::new(url) {
            Ok(adapter) => Arc::new(adapter),
            Err(e) => return usage(&e),
        },
        (None, None) => return usage(&"give --adapter COMMAND or --adapter-url URL"),
    };
    let listener = match args.backend {
        Backend::Unix => Listener::Unix,
        Backend::Https => Listener::Https,
    };
    incus_conformance::certify_adapter(&args.run, WireTargets::new(transport).listener(listener))
}

fn usage(error: &dyn std::fmt::Display) -> ExitCode {
    eprintln!("incus-conformance certify: {error}");
    ExitCode::from(super::output::USAGE)
}
