//! One authorized call, ready for its native requests: what the checks hand the executors.
//!
//! It sits below both the check pipeline that builds it and the executors that read it, so that
//! neither imports the other.

use serde_json::Value;

use super::deadline::Progress;
use crate::catalogue::Descriptor;
use crate::client::Client;
use crate::host::ImageRemote;

/// One authorized call, ready for its native requests.
pub(crate) struct Call<'a> {
    /// The operation.
    pub(crate) descriptor: &'static Descriptor,
    /// The discovered client.
    pub(crate) client: &'a Client,
    /// The native project, selected after authorization.
    pub(crate) project: String,
    /// Validated, normalized input (defaults filled in, `project` set), read through the typed
    /// inputs of `run::input`.
    pub(crate) input: Value,
    /// The image server that `source.remote` resolved to.
    pub(crate) remote: Option<ImageRemote>,
    /// What to report if the call's bound passes from now on.
    pub(crate) progress: &'a Progress,
}
