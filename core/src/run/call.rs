//! One authorized call, ready for its native requests: what the checks hand the executors, beside
//! the operation's typed input.
//!
//! It sits below both the checks that build it and the executors that read it, so that neither
//! imports the other.

use super::deadline::Progress;
use crate::client::Client;

/// One authorized call, ready for its native requests.
pub(crate) struct Call<'a> {
    /// The discovered client.
    pub(crate) client: &'a Client,
    /// The native project, selected after authorization.
    pub(crate) project: String,
    /// What to report if the call's bound passes from now on.
    pub(crate) progress: &'a Progress,
}
