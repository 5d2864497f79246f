//! Moving an instance to another project on the same server (`POST /1.0/instances/{name}` with
//! `migration: true` and `project`): the daemon's checks, then an operation that re-homes the
//! record, its snapshots (unless `instance_only`) and its files. Moves between cluster members
//! (`target`) are the cluster's, not this module's.

use super::validation::{check_name, has_root_disk};
use super::Ctx;
use crate::envelope::{self, ApiError, ApiResult};
use crate::operations::OpSpec;
use crate::state::State;
use std::sync::Arc;

/// What the request asks of a project move.
pub(super) struct ProjectMove {
    pub(super) project: String,
    /// The new name (empty: the same).
    pub(super) name: String,
    pub(super) instance_only: bool,
    pub(super) live: bool,
}

pub(super) fn move_to_project(ctx: &Ctx, name: &str, req: ProjectMove) -> ApiResult {
    let project = ctx.project();
    let new_name = if req.name.is_empty() {
        name.to_string()
    } else {
        check_name(&req.name)?;
        req.name.clone()
    };
    let instance_url = {
        let state = ctx.app.state();
        if state.instance(&req.project, &new_name).is_some() {
            return Err(ApiError::new(
                409,
                format!("Name \"{new_name}\" already in use"),
            ));
        }
        let instance = super::found_instance(&state, &project, name)?;
        if instance.status != crate::state::PowerState::Stopped {
            return Err(ApiError::bad_request(if req.live {
                "Instance must be stopped to be moved across projects"
            } else {
                "Instance must be stopped to be moved statelessly"
            }));
        }
        if !instance.backups.is_empty() {
            return Err(ApiError::bad_request(
                "Instances with backups cannot be moved",
            ));
        }
        instance.url()
    };
    let spec = OpSpec::task(&project, "Migrating instance", instance_url);
    let name = name.to_string();
    let app = Arc::clone(&ctx.app);
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| {
            if state.project(&req.project).is_none() {
                return Err(ApiError::internal(
                    "Failed requesting instance create on destination: Failed loading project: Project not found",
                ));
            }
            if state.instance(&req.project, &new_name).is_some() {
                return Err(ApiError::internal(format!(
                    "Failed requesting instance create on destination: Name \"{new_name}\" already in use"
                )));
            }
            let moved = {
                let instance = super::found_instance(state, &project, &name)?;
                let mut moved = instance.clone();
                // The root disk comes along when the destination's profiles have none.
                let expanded = instance.expanded_devices(state);
                moved.project.clone_from(&req.project);
                moved.name.clone_from(&new_name);
                if !has_root_disk(&moved.expanded_devices(state)) {
                    if let Some((key, root)) = expanded.iter().find(|(_, d)| {
                        has_root_disk(&[(String::new(), (*d).clone())].into_iter().collect())
                    }) {
                        moved.devices.insert(key.clone(), root.clone());
                    }
                }
                if req.instance_only {
                    moved.snapshots.clear();
                }
                moved
            };
            state
                .instances
                .retain(|i| !(i.project == project && i.name == name));
            state.instances.push(Arc::new(moved));
            let mut files = app.files();
            if req.instance_only {
                let tree = files.tree_of(&project, &name, None);
                files.remove_instance(&project, &name);
                files.remove_instance(&req.project, &new_name);
                files.set_tree(&req.project, &new_name, None, tree);
            } else {
                files.move_instance((&project, &name), (&req.project, &new_name));
            }
            drop(files);
            app.exec_logs().remove(&(project.clone(), name.clone()));
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}
