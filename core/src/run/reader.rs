//! Who reads a result ([`Reader`]): whether the caller holds `incus.exec`, and the projects whose
//! resources a result's `used_by` may name, each asked of the host once per call.
use std::collections::BTreeSet;

use futures_util::future::join_all;

use super::callback::bounded;
use super::output::Success;
use super::redact::{used_by_projects, Reader};
use super::RunOptions;
use crate::catalogue::Scope;

/// The most projects the host is asked about in one call; the `used_by` entries of any further
/// project are dropped.
pub(crate) const MAX_ASKED_PROJECTS: usize = 64;

/// Whether the verified scopes include `incus.exec`.
pub(crate) fn has_exec(scopes: &[Scope]) -> bool {
    scopes.contains(&Scope::Exec)
}

/// The reader of `success`, a result of a call in `project`: the host is asked, concurrently and
/// each under the callback bound, about every other project its `used_by` entries name; only a
/// `true` answer makes a project visible.
pub(crate) async fn of<C: Send + Sync>(
    success: &Success,
    project: &str,
    options: &RunOptions<'_, C>,
) -> Reader {
    let mut named = BTreeSet::new();
    for object in success.objects() {
        used_by_projects(object, &mut named);
    }
    let others: Vec<String> = named
        .into_iter()
        .filter(|named| named != project)
        .take(MAX_ASKED_PROJECTS)
        .collect();
    let answers = join_all(others.iter().map(|other| {
        bounded(
            options.callback_timeout,
            options.host.may_see_project(options.caller, other),
        )
    }))
    .await;
    let mut projects = BTreeSet::from([project.to_owned()]);
    for (other, answer) in others.into_iter().zip(answers) {
        if matches!(answer, Ok(true)) {
            projects.insert(other);
        }
    }
    Reader {
        exec: has_exec(&options.scopes),
        projects,
    }
}
