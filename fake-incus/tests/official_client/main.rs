//! The official `incus` command-line client against the fake, over the Unix socket
//! (`INCUS_SOCKET`) and over HTTPS (a remote with the fake's trusted client certificate).
//! This proves that any client can use the fake. Reported as ignored, with the reason, where
//! `incus` is not installed. One module per area, each listing its trials.

#[path = "../ignorable/mod.rs"]
mod ignorable;

mod cli;
mod cli_set;
mod cluster;
mod config;
mod console;
mod exec;
mod images;
mod instances;
mod publish;
mod resources;
mod snapshot_patterns;
mod standalone;
#[path = "../tarball/mod.rs"]
mod tarball;
mod volume_backups;
mod volume_moves;

fn main() -> std::process::ExitCode {
    let args = libtest_mimic::Arguments::from_args();
    let mut trials = standalone::trials();
    trials.extend(exec::trials());
    trials.extend(cluster::trials());
    trials.extend(config::trials());
    trials.extend(console::trials());
    trials.extend(images::trials());
    trials.extend(resources::trials());
    trials.extend(instances::trials());
    trials.extend(publish::trials());
    trials.extend(volume_backups::trials());
    trials.extend(volume_moves::trials());
    trials.extend(snapshot_patterns::trials());
    trials.extend(cli_set::trials());
    libtest_mimic::run(&args, trials).exit_code()
}
