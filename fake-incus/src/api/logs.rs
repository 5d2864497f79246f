//! `/1.0/instances/{name}/logs/exec-output[/{file}]`: the output recorded by task-mode exec
//! with `record-output: true` (list, raw download, delete).

use super::{instance_not_found, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use http::{header, HeaderValue, Method, Response};
use serde_json::Value;

pub(super) fn route(ctx: &Ctx, method: &Method, rest: &[&str]) -> ApiResult {
    let project = ctx.project();
    let name = rest.first().copied().unwrap_or_default();
    if ctx.app.state().instance(&project, name).is_none() {
        return Err(instance_not_found(name, &project));
    }
    let key = (project, name.to_string());
    match (rest, method.as_str()) {
        ([_, "logs", "exec-output"], "GET") => {
            let logs = ctx.app.exec_logs();
            let files: Vec<String> = logs
                .get(&key)
                .map(|files| files.keys().cloned().collect())
                .unwrap_or_default();
            let urls = files
                .iter()
                .map(|f| Value::String(format!("/1.0/instances/{name}/logs/exec-output/{f}")));
            Ok(envelope::sync(Value::Array(urls.collect())))
        }
        ([_, "logs", "exec-output", file], "GET") => {
            let bytes = ctx
                .app
                .exec_logs()
                .get(&key)
                .and_then(|files| files.get(*file).cloned());
            let bytes = bytes.ok_or_else(ApiError::not_found)?;
            let mut resp = Response::new(envelope::full(bytes));
            let headers = resp.headers_mut();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            );
            if let Ok(value) = HeaderValue::from_str(&format!("inline;filename={file}")) {
                headers.insert(header::CONTENT_DISPOSITION, value);
            }
            Ok(resp)
        }
        ([_, "logs", "exec-output", file], "DELETE") => {
            let removed = ctx
                .app
                .exec_logs()
                .get_mut(&key)
                .and_then(|files| files.remove(*file));
            removed.ok_or_else(ApiError::not_found)?;
            ctx.applied();
            Ok(envelope::empty())
        }
        ([_, "logs", "exec-output"] | [_, "logs", "exec-output", _], _) => {
            Err(ApiError::not_implemented())
        }
        _ => Err(ApiError::not_found()),
    }
}
