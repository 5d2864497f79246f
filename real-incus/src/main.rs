//! `real-incus-acceptance`: run the operations against a real Incus, with explicit opt-in.
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = real_incus::Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .init();
    if !cli.opted_in() {
        eprintln!("{}", real_incus::OPT_IN_REFUSAL);
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("real-incus-acceptance: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(real_incus::main(cli))
}
