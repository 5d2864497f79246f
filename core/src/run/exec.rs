//! `incus_instance_exec`: maps the client's bounded exec outcome to the exec result.
use super::output::Success;
use super::pipeline::Call;
use super::results::RunError;

/// Runs one noninteractive command.
pub(crate) async fn exec(call: &Call<'_>) -> Result<Success, RunError> {
    let _ = call;
    Err(RunError::Transport("exec is not wired yet".into()))
}
