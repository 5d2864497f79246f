//! `incus-conformance adapter`: the reference adapter, the core itself behind the wire protocol
//! `incus-operations-adapter/1`: JSON lines on standard input and output, or HTTP with
//! `--listen ADDR` (the first line of standard output is then the URL to give `--adapter-url`).

use std::net::SocketAddr;
use std::process::ExitCode;

use incus_conformance::adapter::reference;

/// Arguments of `adapter`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Serve HTTP on ADDR (for example 127.0.0.1:0) instead of standard input and output.
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
}

pub(super) fn run(args: Args) -> ExitCode {
    let served = match args.listen {
        None => reference::serve_lines(std::io::stdin().lock(), std::io::stdout().lock()),
        Some(address) => reference::serve_http(address),
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("incus-conformance adapter: {e}");
            ExitCode::FAILURE
        }
    }
}
