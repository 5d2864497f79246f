//! `/1.0/instances/{name}/files?path=…`: read (`GET`, `HEAD`), write (`POST`) and delete
//! (`DELETE`) one entry of the instance's file tree (see [`crate::state::files`]), with the
//! daemon's `X-Incus-*` headers. The official Go client's `GetInstanceFile`,
//! `CreateInstanceFile` and `DeleteInstanceFile` use this endpoint; the `incus file` commands
//! use SFTP (`/1.0/instances/{name}/sftp`, [`super::sftp`]) on the same trees.

use super::{instance_not_found, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use crate::state::files::{Attrs, FileError, Kind, Node, Owner};
use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Method, Response, StatusCode};

impl From<FileError> for ApiError {
    fn from(err: FileError) -> Self {
        ApiError::new(err.status(), err.to_string())
    }
}

pub(super) fn instance(
    ctx: &Ctx,
    method: &Method,
    name: &str,
    headers: &HeaderMap,
    body: &Bytes,
) -> ApiResult {
    let project = ctx.project();
    if ctx.app.snapshot().instance(&project, name).is_none() {
        return Err(instance_not_found(name, &project));
    }
    let owner = Owner::Instance {
        project,
        instance: name.to_string(),
    };
    serve(ctx, method, &owner, headers, body)
}

/// `GET`, `HEAD`, `POST` or `DELETE` of `?path=` in the owner's tree (an instance's, or a
/// custom volume's: [`super::volume_files`]), once the owner was found.
pub(super) fn serve(
    ctx: &Ctx,
    method: &Method,
    owner: &Owner,
    headers: &HeaderMap,
    body: &Bytes,
) -> ApiResult {
    let path = ctx
        .param("path")
        .filter(|p| !p.is_empty())
        .ok_or_else(|| ApiError::bad_request("Missing path argument"))?
        .to_string();
    match method.as_str() {
        "GET" | "HEAD" => read(ctx, owner, &path, *method == Method::HEAD),
        "POST" => write(ctx, owner, &path, headers, body),
        _ => {
            ctx.app.files().tree_of_owner_mut(owner).remove(&path)?;
            ctx.applied();
            Ok(envelope::empty())
        }
    }
}

fn read(ctx: &Ctx, owner: &Owner, path: &str, head: bool) -> ApiResult {
    let files = ctx.app.files();
    let fresh;
    let tree = match files.tree_of_owner(owner) {
        Some(tree) => tree,
        None => {
            fresh = owner.fresh();
            &fresh
        }
    };
    let node = tree.get(path).ok_or(FileError::NotFound)?;
    let mut response = match &node.kind {
        Kind::Directory => {
            let listing = serde_json::json!(tree.list(path));
            envelope::sync(listing)
        }
        Kind::File(content) => raw(content.clone(), path, head),
        Kind::Symlink(target) => {
            // The daemon answers with the target made absolute (relative to the link's
            // directory).
            let clean = crate::state::files::clean(path);
            let dir = clean.rsplit_once('/').map_or("", |(d, _)| d);
            let absolute = if target.starts_with('/') {
                crate::state::files::clean(target)
            } else {
                crate::state::files::clean(&format!("{dir}/{target}"))
            };
            raw(Bytes::from(absolute), path, head)
        }
    };
    if head {
        *response.body_mut() = envelope::full(Bytes::new());
    }
    set_file_headers(response.headers_mut(), node, head);
    Ok(response)
}

/// A file body as Go's `http.ServeContent` sends it.
fn raw(content: Bytes, path: &str, head: bool) -> Response<crate::envelope::Body> {
    let filename = path.rsplit('/').next().unwrap_or_default().to_string();
    let length = content.len();
    let mut response = Response::new(envelope::full(content));
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    if head {
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from_static("0"));
    } else {
        headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
        if let Ok(value) = HeaderValue::from_str(&format!("inline;filename={filename}")) {
            headers.insert(header::CONTENT_DISPOSITION, value);
        }
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    }
    response
}

fn set_file_headers(headers: &mut HeaderMap, node: &Node, head: bool) {
    let mut set = |name: &'static str, value: String| {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
    };
    set("x-incus-uid", node.uid.to_string());
    set("x-incus-gid", node.gid.to_string());
    set("x-incus-mode", format!("{:04o}", node.mode));
    set("x-incus-type", node.kind.name().to_string());
    let modified = node.modified;
    set(
        "x-incus-modified",
        format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02} +0000 UTC",
            modified.year(),
            u8::from(modified.month()),
            modified.day(),
            modified.hour(),
            modified.minute(),
            modified.second()
        ),
    );
    // `http.ServeContent` adds it to a GET of a file; the daemon's HEAD answer has none.
    if !head && !matches!(node.kind, Kind::Directory) {
        set("last-modified", crate::envelope::http_date(modified));
    }
}

fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

fn write(ctx: &Ctx, owner: &Owner, path: &str, headers: &HeaderMap, body: &Bytes) -> ApiResult {
    // Unparsable numbers are ignored, as the daemon's `ParseFileHeaders` does.
    let attrs = Attrs {
        uid: header_text(headers, "x-incus-uid").and_then(|v| v.parse().ok()),
        gid: header_text(headers, "x-incus-gid").and_then(|v| v.parse().ok()),
        mode: header_text(headers, "x-incus-mode").and_then(|v| u32::from_str_radix(&v, 8).ok()),
    };
    let kind = header_text(headers, "x-incus-type").unwrap_or_default();
    let write_mode = header_text(headers, "x-incus-write").unwrap_or_default();
    // The daemon reads its query with `r.FormValue`, which consumes a form-encoded body.
    let form_encoded = header_text(headers, "content-type")
        .is_some_and(|t| t.starts_with("application/x-www-form-urlencoded"));
    let content = if form_encoded {
        Bytes::new()
    } else {
        body.clone()
    };
    let append = match write_mode.as_str() {
        "" | "overwrite" => false,
        "append" => true,
        other => {
            return Err(ApiError::bad_request(format!(
                "Bad file write mode: {other}"
            )))
        }
    };
    let mut files = ctx.app.files();
    let tree = files.tree_of_owner_mut(owner);
    match kind.as_str() {
        "" | "file" => tree.write(path, content, attrs, append)?,
        "directory" => tree.mkdir(path, attrs)?,
        "symlink" => {
            let target = String::from_utf8_lossy(&content).into_owned();
            if target.is_empty() {
                return Err(FileError::NotFound.into());
            }
            tree.symlink(path, &target, attrs)?;
        }
        other => return Err(ApiError::bad_request(format!("Bad file type: {other}"))),
    }
    ctx.applied();
    Ok(envelope::empty())
}
