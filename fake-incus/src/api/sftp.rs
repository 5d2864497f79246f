//! `GET /1.0/instances/{name}/sftp` with `Upgrade: sftp`: the connection becomes an SFTP
//! (version 3) session on the instance's file tree ([`crate::state::files`]), as the daemon
//! serves it. The `incus file push/pull/delete/edit` commands and the Go client's
//! `GetInstanceFileSFTP` use it. The protocol is `russh-sftp`'s server; this module maps its
//! requests onto the tree.
//!
//! A written file is buffered in its handle and committed when the handle is closed (so a
//! file is never rebuilt per 32 KiB write); a session's open write buffers together hold at
//! most [`TREE_LIMIT`] bytes, past which writes fail like a full disk.

use super::{instance_not_found, Ctx};
use crate::app::App;
use crate::envelope::{ApiError, ApiResult};
use crate::line;
use crate::state::files::{clean, Attrs, FileError, Kind, Node, Owner, TREE_LIMIT};
use bytes::Bytes;
use http::{header, HeaderValue, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use russh_sftp::extensions::{HardlinkExtension, Statvfs, StatvfsExtension, HARDLINK, STATVFS};
use russh_sftp::protocol::{
    Attrs as SftpAttrs, Data, ExtendedReply, File, FileAttributes, Handle, Name, OpenFlags, Packet,
    Status, StatusCode as Code, Version,
};
use std::collections::HashMap;
use std::sync::Arc;

/// Most handles one session keeps open.
const HANDLE_LIMIT: usize = 64;
/// Symlinks followed when resolving one path.
const LINK_DEPTH: usize = 16;

pub(super) fn instance(ctx: &Ctx, name: &str, req: Request<Bytes>) -> ApiResult {
    // The daemon checks the upgrade before it looks the instance up.
    if !wants_upgrade(&req) {
        return Err(ApiError::bad_request("Missing or invalid upgrade header"));
    }
    let project = ctx.project();
    if ctx.app.snapshot().instance(&project, name).is_none() {
        return Err(instance_not_found(name, &project));
    }
    let owner = Owner::Instance {
        project,
        instance: name.to_string(),
    };
    Ok(upgrade(ctx, owner, req))
}

/// Whether the request asks for the SFTP upgrade (`Upgrade: sftp`, `Connection: upgrade`).
pub(super) fn wants_upgrade(req: &Request<Bytes>) -> bool {
    // `Connection` is a list of tokens (`keep-alive, Upgrade`).
    let header_is = |name: header::HeaderName, value: &str| {
        req.headers().get(name).is_some_and(|v| {
            String::from_utf8_lossy(v.as_bytes())
                .split(',')
                .any(|token| token.trim().eq_ignore_ascii_case(value))
        })
    };
    header_is(header::UPGRADE, "sftp") && header_is(header::CONNECTION, "upgrade")
}

/// Switches the connection to an SFTP session on the owner's tree (an instance's, or a
/// custom volume's: [`super::volume_files`]).
pub(super) fn upgrade(
    ctx: &Ctx,
    owner: Owner,
    mut req: Request<Bytes>,
) -> Response<crate::envelope::Body> {
    let on_upgrade = hyper::upgrade::on(&mut req);
    let session = Session {
        app: Arc::clone(&ctx.app),
        owner,
        handles: HashMap::new(),
        next_handle: 0,
    };
    let shutdown = ctx.app.shutdown.clone();
    tokio::spawn(async move {
        let Ok(upgraded) = on_upgrade.await else {
            return;
        };
        // The SFTP server runs on one end of a pipe and the connection is relayed to the other,
        // so that the session ends (its read sees EOF) when the peer goes away, when the
        // connection fails, or when the fake shuts down.
        let (server_end, mut relay_end) = tokio::io::duplex(256 << 10);
        russh_sftp::server::run(server_end, session).await;
        let mut connection = TokioIo::new(upgraded);
        tokio::select! {
            _ = tokio::io::copy_bidirectional(&mut connection, &mut relay_end) => {}
            () = shutdown.cancelled() => {}
        }
    });
    ctx.applied();
    let mut response = Response::new(crate::envelope::full(Bytes::new()));
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    response
        .headers_mut()
        .insert(header::UPGRADE, HeaderValue::from_static("sftp"));
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    response
}

/// What an open handle refers to.
enum Open {
    /// A file opened for reading: its content when opened.
    Read(Bytes),
    /// A file opened for writing: the content being written, committed on close.
    Write { path: String, content: Vec<u8> },
    /// A directory listing, sent in one `READDIR` answer.
    Dir { entries: Vec<File>, sent: bool },
}

/// One SFTP session on one instance's (or custom volume's) tree.
struct Session {
    app: Arc<App>,
    owner: Owner,
    handles: HashMap<String, Open>,
    next_handle: u64,
}

/// An SFTP failure status with a message.
struct Failure(russh_sftp::server::StatusReply);

impl From<Failure> for russh_sftp::server::StatusReply {
    fn from(failure: Failure) -> Self {
        failure.0
    }
}

/// A failure status. The daemon's SFTP server (Go's pkg/sftp) sends no language tag.
fn failure(code: Code, message: impl Into<String>) -> Failure {
    Failure(
        russh_sftp::server::StatusReply::new(code)
            .with_message(message)
            .with_language_tag(""),
    )
}

/// A missing file as the daemon's SFTP server says it (Go's `os.PathError`: the call and the
/// path as the client sent it); other failures as they are.
fn path_error(failure: Failure, call: &str, path: &str) -> Failure {
    if failure.0.status_code == Code::NoSuchFile {
        Failure(
            russh_sftp::server::StatusReply::new(Code::NoSuchFile)
                .with_message(crate::go::os::path_error(call, path, crate::go::os::ENOENT))
                .with_language_tag(""),
        )
    } else {
        failure
    }
}

/// A failed link or rename as the daemon's server says it (Go's `os.LinkError`: the call and
/// both paths as the client sent them).
fn link_error(failure: Failure, call: &str, old: &str, new: &str) -> Failure {
    if failure.0.status_code != Code::NoSuchFile {
        return failure;
    }
    Failure(
        russh_sftp::server::StatusReply::new(Code::NoSuchFile)
            .with_message(crate::go::os::link_error(
                call,
                old,
                new,
                crate::go::os::ENOENT,
            ))
            .with_language_tag(""),
    )
}

/// The extensions the daemon's SFTP server announces, with their versions.
const EXTENSIONS: [(&str, &str); 3] = [(HARDLINK, "1"), (POSIX_RENAME, "1"), (STATVFS, "2")];
const POSIX_RENAME: &str = "posix-rename@openssh.com";

/// `statvfs@openssh.com`'s answer: the filesystem of the pool the instance lives on, as its
/// resources report it (4 KiB blocks; the daemon's server reports `f_ffree` as `f_favail` and
/// no filesystem id). The flags are the daemon's (`ST_NOSUID | ST_RELATIME`).
fn statvfs() -> Statvfs {
    use super::resources::{INODES_TOTAL, INODES_USED, SPACE_TOTAL, SPACE_USED};
    const BLOCK: u64 = 4096;
    let free = (SPACE_TOTAL - SPACE_USED) / BLOCK;
    let inodes_free = INODES_TOTAL - INODES_USED;
    Statvfs {
        block_size: BLOCK,
        fragment_size: BLOCK,
        blocks: SPACE_TOTAL / BLOCK,
        blocks_free: free,
        blocks_avail: free,
        inodes: INODES_TOTAL,
        inodes_free,
        inodes_avail: inodes_free,
        fs_id: 0,
        flags: 0x1020,
        name_max: 255,
    }
}

/// A `NAME` answer of one path that is no file's entry (`REALPATH`, `READLINK`), as the daemon's
/// server sends it: the path as the name and as the long name, and no attributes.
fn bare_name(id: u32, path: String) -> Name {
    Name {
        id,
        files: vec![File {
            filename: path.clone(),
            longname: path,
            attrs: FileAttributes::empty(),
        }],
    }
}

/// The call a `SETSTAT` of a missing path is reported by: the daemon's server makes one call per
/// attribute it is given, and reports the first one's error where `stops_at_first`
/// (`truncate`, `chmod`, `chown`, `chtimes`), else the last one's (`truncate`, `chmod`,
/// `chtimes`, `chown`); see [`line::SETSTAT_STOPS_AT_FIRST_FAILURE`]. `None`: no attribute, no
/// call, success.
fn setstat_call(attrs: &FileAttributes, stops_at_first: bool) -> Option<&'static str> {
    let owner = attrs.uid.is_some() || attrs.gid.is_some();
    let times = attrs.atime.is_some() || attrs.mtime.is_some();
    let calls = [
        (attrs.size.is_some(), "truncate"),
        (attrs.permissions.is_some(), "chmod"),
        (owner && stops_at_first, "chown"),
        (times, "chtimes"),
        (owner && !stops_at_first, "chown"),
    ];
    let mut made = calls
        .iter()
        .filter(|(given, _)| *given)
        .map(|(_, call)| *call);
    if stops_at_first {
        made.next()
    } else {
        made.next_back()
    }
}

fn no_such_file() -> Failure {
    failure(Code::NoSuchFile, "no such file or directory")
}

impl From<FileError> for Failure {
    fn from(err: FileError) -> Self {
        match err {
            FileError::NotFound => no_such_file(),
            FileError::IsDirectory(_) => failure(Code::Failure, "is a directory"),
            FileError::NotEmpty(_) => failure(Code::Failure, "directory not empty"),
            FileError::Full(_) => failure(Code::Failure, "no space left on device"),
        }
    }
}

/// The success status, as the daemon sends it: no message, no language tag.
fn ok(id: u32) -> Status {
    Status {
        id,
        status_code: Code::Ok,
        error_message: String::new(),
        language_tag: String::new(),
    }
}

fn attributes(node: &Node) -> FileAttributes {
    let (kind_bits, size) = match &node.kind {
        Kind::File(content) => (0o100_000, content.len() as u64),
        Kind::Directory => (0o040_000, 4096),
        Kind::Symlink(target) => (0o120_000, target.len() as u64),
    };
    let mtime = u32::try_from(node.modified.unix_timestamp()).unwrap_or_default();
    FileAttributes {
        size: Some(size),
        uid: Some(node.uid),
        user: None,
        gid: Some(node.gid),
        group: None,
        permissions: Some(kind_bits | node.mode),
        atime: Some(mtime),
        mtime: Some(mtime),
    }
}

fn sftp_attrs(attrs: &FileAttributes) -> Attrs {
    Attrs {
        uid: attrs.uid,
        gid: attrs.gid,
        mode: attrs.permissions.map(|p| p & 0o7777),
    }
}

impl Session {
    fn handle(&mut self, open: Open) -> Result<String, Failure> {
        if self.handles.len() >= HANDLE_LIMIT {
            return Err(failure(Code::Failure, "too many open files"));
        }
        self.next_handle += 1;
        let handle = self.next_handle.to_string();
        self.handles.insert(handle.clone(), open);
        Ok(handle)
    }

    fn buffered(&self) -> usize {
        self.handles
            .values()
            .map(|h| match h {
                Open::Write { content, .. } => content.len(),
                _ => 0,
            })
            .sum()
    }

    /// The entry at `path`, following symlinks when `follow` (also in the parents).
    /// A node's attributes; a file this session is writing has the size written so far, as
    /// the daemon's writes land in the file at once (`incus file push` stats the file before
    /// it closes it).
    fn attributes_while_written(&self, path: &str, node: &Node) -> FileAttributes {
        let mut attrs = attributes(node);
        for open in self.handles.values() {
            if let Open::Write {
                path: written,
                content,
            } = open
            {
                if written == path {
                    attrs.size = Some(content.len() as u64);
                }
            }
        }
        attrs
    }

    fn lookup(&self, path: &str, follow: bool) -> Result<(String, Node), Failure> {
        let files = self.app.files();
        let fresh;
        let tree = match files.tree_of_owner(&self.owner) {
            Some(tree) => tree,
            None => {
                fresh = self.owner.fresh();
                &fresh
            }
        };
        let mut current = clean(path);
        for _ in 0..LINK_DEPTH {
            let node = tree.get(&current).ok_or_else(no_such_file)?;
            match &node.kind {
                Kind::Symlink(target) if follow => {
                    let dir = current.rsplit_once('/').map_or("", |(d, _)| d).to_string();
                    current = if target.starts_with('/') {
                        clean(target)
                    } else {
                        clean(&format!("{dir}/{target}"))
                    };
                }
                _ => return Ok((current, node.clone())),
            }
        }
        Err(failure(Code::Failure, "too many levels of symbolic links"))
    }

    fn with_tree<T>(
        &self,
        change: impl FnOnce(&mut crate::state::files::Tree) -> Result<T, FileError>,
    ) -> Result<T, Failure> {
        let mut files = self.app.files();
        Ok(change(files.tree_of_owner_mut(&self.owner))?)
    }

    /// The success status of a change, sent once the change is durable (`--state-dir`), as every
    /// answer of the API is; a failure to make it durable is the request's failure.
    async fn durable(&self, id: u32) -> Result<Status, Failure> {
        self.app
            .durable()
            .await
            .map_err(|error| failure(Code::Failure, error))?;
        Ok(ok(id))
    }

    /// A hard link: the new path gets the old one's entry (a copy the fake's tree keeps apart
    /// from then on: a write through one name is not seen through the other). Neither a
    /// directory nor an existing path may be linked to, as on the daemon.
    fn hardlink(&self, old: &str, new: &str) -> Result<(), Failure> {
        let (_, node) = self
            .lookup(old, false)
            .map_err(|f| link_error(f, "link", old, new))?;
        if self.lookup(new, false).is_ok() {
            return Err(failure(
                Code::Failure,
                format!("link {old} {new}: file exists"),
            ));
        }
        if node.kind == Kind::Directory {
            return Err(failure(
                Code::Failure,
                format!("link {old} {new}: operation not permitted"),
            ));
        }
        let path = clean(new);
        self.with_tree(|tree| tree.link(&path, node))
            .map_err(|f| link_error(f, "link", old, new))
    }

    fn listing(&self, path: &str) -> Result<Vec<File>, Failure> {
        let (dir, node) = self.lookup(path, true)?;
        if node.kind != Kind::Directory {
            return Err(failure(Code::Failure, "not a directory"));
        }
        let files = self.app.files();
        let fresh;
        let tree = match files.tree_of_owner(&self.owner) {
            Some(tree) => tree,
            None => {
                fresh = self.owner.fresh();
                &fresh
            }
        };
        let base = if dir == "/" {
            String::new()
        } else {
            dir.clone()
        };
        let mut entries = Vec::new();
        for name in tree.list(&dir) {
            if let Some(child) = tree.get(&format!("{base}/{name}")) {
                entries.push(File::new(name, attributes(child)));
            }
        }
        Ok(entries)
    }
}

impl russh_sftp::server::Handler for Session {
    type Error = Failure;

    fn unimplemented(&self) -> Self::Error {
        failure(Code::OpUnsupported, "operation unsupported")
    }

    /// The daemon's server (Go's pkg/sftp) announces three OpenSSH extensions.
    async fn init(
        &mut self,
        _version: u32,
        _extensions: HashMap<String, String>,
    ) -> Result<Version, Self::Error> {
        let mut version = Version::new();
        for (name, data) in EXTENSIONS {
            version
                .extensions
                .insert(name.to_string(), data.to_string());
        }
        Ok(version)
    }

    /// `hardlink@openssh.com`, `posix-rename@openssh.com` (both: the old path, then the new
    /// one) and `statvfs@openssh.com` (a path), with the daemon's answers; any other extended
    /// request is unsupported, as on the daemon.
    async fn extended(
        &mut self,
        id: u32,
        request: String,
        data: Vec<u8>,
    ) -> Result<Packet, Self::Error> {
        let mut data = Bytes::from(data);
        match request.as_str() {
            HARDLINK | POSIX_RENAME => {
                let paths: HardlinkExtension = russh_sftp::de::from_bytes(&mut data)
                    .map_err(|_| failure(Code::BadMessage, "bad message"))?;
                let (old, new) = (paths.oldpath, paths.newpath);
                if request == HARDLINK {
                    self.hardlink(&old, &new)?;
                } else {
                    self.with_tree(|tree| tree.rename(&old, &new))
                        .map_err(|f| link_error(f, "rename", &old, &new))?;
                }
                Ok(Packet::Status(self.durable(id).await?))
            }
            STATVFS => {
                let path: StatvfsExtension = russh_sftp::de::from_bytes(&mut data)
                    .map_err(|_| failure(Code::BadMessage, "bad message"))?;
                self.lookup(&path.path, true)?;
                let reply = russh_sftp::ser::to_bytes(&statvfs())
                    .map_err(|_| failure(Code::Failure, "failure"))?;
                Ok(Packet::ExtendedReply(ExtendedReply {
                    id,
                    data: reply.to_vec(),
                }))
            }
            _ => Err(self.unimplemented()),
        }
    }

    async fn open(
        &mut self,
        id: u32,
        filename: String,
        pflags: OpenFlags,
        attrs: FileAttributes,
    ) -> Result<Handle, Self::Error> {
        let writing = pflags.intersects(OpenFlags::WRITE | OpenFlags::APPEND | OpenFlags::CREATE);
        let existing = self.lookup(&filename, true);
        if !writing {
            let (_, node) = existing.map_err(|f| path_error(f, "open", &filename))?;
            // A directory opens for reading too (`incus file pull` opens before it stats);
            // it has no bytes to read.
            let content = match node.kind {
                Kind::File(content) => content,
                _ => Bytes::new(),
            };
            let handle = self.handle(Open::Read(content))?;
            return Ok(Handle { id, handle });
        }
        let (path, content) = match existing {
            Ok(_) if pflags.contains(OpenFlags::EXCLUDE) => {
                return Err(failure(Code::Failure, "file exists"))
            }
            Ok((path, node)) => match node.kind {
                Kind::File(content) => (path, content),
                _ => return Err(failure(Code::Failure, "is a directory")),
            },
            Err(_) if pflags.contains(OpenFlags::CREATE) => (clean(&filename), Bytes::new()),
            Err(err) => return Err(err),
        };
        let content = if pflags.contains(OpenFlags::TRUNCATE) {
            Bytes::new()
        } else {
            content
        };
        // The file exists from the open on (a client may stat or chmod it before closing).
        let mut mode = sftp_attrs(&attrs);
        mode.uid = None;
        mode.gid = None;
        let empty_path = path.clone();
        let committed = content.clone();
        self.with_tree(|tree| {
            if tree.get(&empty_path).is_none() {
                tree.write(&empty_path, committed, mode, false)
            } else {
                Ok(())
            }
        })?;
        self.durable(id).await?;
        let handle = self.handle(Open::Write {
            path,
            content: content.to_vec(),
        })?;
        Ok(Handle { id, handle })
    }

    async fn close(&mut self, id: u32, handle: String) -> Result<Status, Self::Error> {
        match self.handles.remove(&handle) {
            Some(Open::Write { path, content }) => {
                self.with_tree(|tree| {
                    tree.write(&path, Bytes::from(content), Attrs::default(), false)
                })?;
                self.durable(id).await
            }
            Some(_) => Ok(ok(id)),
            None => Err(failure(Code::Failure, "invalid handle")),
        }
    }

    async fn read(
        &mut self,
        id: u32,
        handle: String,
        offset: u64,
        len: u32,
    ) -> Result<Data, Self::Error> {
        let Some(Open::Read(content)) = self.handles.get(&handle) else {
            return Err(failure(Code::Failure, "invalid handle"));
        };
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        if start >= content.len() {
            return Err(failure(Code::Eof, "EOF"));
        }
        let end = content.len().min(start.saturating_add(len as usize));
        Ok(Data {
            id,
            data: content[start..end].to_vec(),
        })
    }

    async fn write(
        &mut self,
        id: u32,
        handle: String,
        offset: u64,
        data: Vec<u8>,
    ) -> Result<Status, Self::Error> {
        let buffered = self.buffered();
        let Some(Open::Write { content, .. }) = self.handles.get_mut(&handle) else {
            return Err(failure(Code::Failure, "invalid handle"));
        };
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let end = start.saturating_add(data.len());
        let growth = end.saturating_sub(content.len());
        if end > TREE_LIMIT || buffered.saturating_add(growth) > TREE_LIMIT {
            return Err(failure(Code::Failure, "no space left on device"));
        }
        if content.len() < end {
            content.resize(end, 0);
        }
        content[start..end].copy_from_slice(&data);
        Ok(ok(id))
    }

    async fn lstat(&mut self, id: u32, path: String) -> Result<SftpAttrs, Self::Error> {
        let (found, node) = self
            .lookup(&path, false)
            .map_err(|f| path_error(f, "lstat", &path))?;
        Ok(SftpAttrs {
            id,
            attrs: self.attributes_while_written(&found, &node),
        })
    }

    async fn stat(&mut self, id: u32, path: String) -> Result<SftpAttrs, Self::Error> {
        let (found, node) = self
            .lookup(&path, true)
            .map_err(|f| path_error(f, "stat", &path))?;
        Ok(SftpAttrs {
            id,
            attrs: self.attributes_while_written(&found, &node),
        })
    }

    async fn fstat(&mut self, id: u32, handle: String) -> Result<SftpAttrs, Self::Error> {
        let size = match self.handles.get(&handle) {
            Some(Open::Read(content)) => content.len(),
            Some(Open::Write { content, .. }) => content.len(),
            Some(Open::Dir { .. }) => 4096,
            None => return Err(failure(Code::Failure, "invalid handle")),
        };
        let mut attrs = FileAttributes::empty();
        attrs.size = Some(size as u64);
        Ok(SftpAttrs { id, attrs })
    }

    async fn setstat(
        &mut self,
        id: u32,
        path: String,
        attrs: FileAttributes,
    ) -> Result<Status, Self::Error> {
        let stops_at_first = self.app.has_extension(line::SETSTAT_STOPS_AT_FIRST_FAILURE);
        let Some(call) = setstat_call(&attrs, stops_at_first) else {
            return Ok(ok(id));
        };
        let (path, _) = self
            .lookup(&path, true)
            .map_err(|f| path_error(f, call, &path))?;
        self.with_tree(|tree| tree.set_attrs(&path, sftp_attrs(&attrs)))?;
        self.durable(id).await
    }

    async fn fsetstat(
        &mut self,
        id: u32,
        handle: String,
        attrs: FileAttributes,
    ) -> Result<Status, Self::Error> {
        let Some(Open::Write { path, .. }) = self.handles.get(&handle) else {
            return Ok(ok(id));
        };
        let path = path.clone();
        self.with_tree(|tree| tree.set_attrs(&path, sftp_attrs(&attrs)))?;
        self.durable(id).await
    }

    async fn opendir(&mut self, id: u32, path: String) -> Result<Handle, Self::Error> {
        // The daemon's server stats the directory first.
        let entries = self
            .listing(&path)
            .map_err(|f| path_error(f, "stat", &path))?;
        let handle = self.handle(Open::Dir {
            entries,
            sent: false,
        })?;
        Ok(Handle { id, handle })
    }

    async fn readdir(&mut self, id: u32, handle: String) -> Result<Name, Self::Error> {
        match self.handles.get_mut(&handle) {
            Some(Open::Dir { entries, sent }) if !*sent => {
                *sent = true;
                Ok(Name {
                    id,
                    files: std::mem::take(entries),
                })
            }
            Some(Open::Dir { .. }) => Err(failure(Code::Eof, "EOF")),
            _ => Err(failure(Code::Failure, "invalid handle")),
        }
    }

    async fn remove(&mut self, id: u32, filename: String) -> Result<Status, Self::Error> {
        let (path, node) = self
            .lookup(&filename, false)
            .map_err(|f| path_error(f, "remove", &filename))?;
        if node.kind == Kind::Directory {
            return Err(failure(Code::Failure, "is a directory"));
        }
        self.with_tree(|tree| tree.remove(&path))?;
        self.durable(id).await
    }

    async fn mkdir(
        &mut self,
        id: u32,
        path: String,
        attrs: FileAttributes,
    ) -> Result<Status, Self::Error> {
        if self.lookup(&path, false).is_ok() {
            return Err(failure(
                Code::Failure,
                crate::go::os::path_error("mkdir", &path, crate::go::os::EEXIST),
            ));
        }
        let asked = path;
        let path = clean(&asked);
        self.with_tree(|tree| tree.mkdir(&path, sftp_attrs(&attrs)))
            .map_err(|f| path_error(f, "mkdir", &asked))?;
        self.durable(id).await
    }

    async fn rmdir(&mut self, id: u32, asked: String) -> Result<Status, Self::Error> {
        // The daemon's server removes with `os.Remove`, as for a file.
        let (path, node) = self
            .lookup(&asked, false)
            .map_err(|f| path_error(f, "remove", &asked))?;
        if node.kind != Kind::Directory {
            return Err(failure(Code::Failure, "not a directory"));
        }
        // The daemon's server reports `os.Remove`'s error, with the path as the client sent it.
        let removed = self
            .app
            .files()
            .tree_of_owner_mut(&self.owner)
            .remove(&path);
        match removed {
            Err(FileError::NotEmpty(_)) => Err(failure(
                Code::Failure,
                format!("remove {asked}: directory not empty"),
            )),
            other => {
                other?;
                self.durable(id).await
            }
        }
    }

    /// The cleaned absolute path (the 7.0 client asks for `/` before it pushes a file).
    async fn realpath(&mut self, id: u32, path: String) -> Result<Name, Self::Error> {
        Ok(bare_name(id, clean(&path)))
    }

    async fn rename(
        &mut self,
        id: u32,
        oldpath: String,
        newpath: String,
    ) -> Result<Status, Self::Error> {
        self.with_tree(|tree| tree.rename(&oldpath, &newpath))?;
        self.durable(id).await
    }

    async fn readlink(&mut self, id: u32, path: String) -> Result<Name, Self::Error> {
        let (_, node) = self
            .lookup(&path, false)
            .map_err(|f| path_error(f, "readlink", &path))?;
        let Kind::Symlink(target) = node.kind else {
            return Err(failure(Code::Failure, "invalid argument"));
        };
        Ok(bare_name(id, target))
    }

    /// The arguments come in OpenSSH's order, which the Go client follows: the target first,
    /// then the link's path (`russh-sftp` names them the other way round).
    async fn symlink(
        &mut self,
        id: u32,
        linkpath: String,
        targetpath: String,
    ) -> Result<Status, Self::Error> {
        let (target, link) = (linkpath, targetpath);
        if self.lookup(&link, false).is_ok() {
            return Err(failure(Code::Failure, "file exists"));
        }
        self.with_tree(|tree| tree.symlink(&link, &target, Attrs::default()))?;
        self.durable(id).await
    }
}
