//! Reading an image upload (`POST /1.0/images` with a tarball body) as the daemon does: the
//! split form (`multipart/form-data` with a `metadata` part, then a `rootfs` or `rootfs.img`
//! part) or the unified form (one tarball), the SHA-256 fingerprint over the bytes as sent,
//! `metadata.yaml`, and the executables of the rootfs.
//!
//! Nothing of the upload is kept: the body is read once (it is at most the listener's body
//! limit, 16 MiB) and only the facts below survive. The tarballs may be plain, gzip or xz
//! (what `incus image import` and image builders produce); their decompressed bytes are read as
//! a stream, at most [`INSPECT_LIMIT`] of them (xz: decompressed into memory up to that bound).
//! Other compressions the daemon knows (bzip2, lzma, zstd, lz4, squashfs) make a unified
//! import or a split metadata tarball fail with a message that says the fake cannot read them;
//! a split rootfs in one of them is accepted with the default executables.

use bytes::Bytes;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Read;

use crate::state::files::{Kind as FileKind, Node, Tree, TREE_LIMIT};

/// Most decompressed bytes read from one tarball (256 MiB).
pub(crate) const INSPECT_LIMIT: u64 = 256 << 20;
/// Most executables recorded for one image.
pub(crate) const EXECUTABLES_LIMIT: usize = 10_000;
/// Most bytes of `metadata.yaml` read (the daemon's bound, 1 MiB).
const METADATA_LIMIT: u64 = 1 << 20;

/// An upload that cannot become an image, with the daemon's message.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct UploadError(pub(crate) String);

fn fail(message: impl Into<String>) -> UploadError {
    UploadError(message.into())
}

/// What an upload becomes.
#[derive(Debug, Clone)]
pub(crate) struct Upload {
    pub(crate) fingerprint: String,
    pub(crate) size: u64,
    /// The rootfs part's file name (split) or the `X-Incus-filename` header (unified).
    pub(crate) filename: String,
    /// `container` or `virtual-machine`; `unknown` when the unified tarball has no rootfs.
    pub(crate) kind: String,
    pub(crate) metadata: Metadata,
    pub(crate) executables: Option<Vec<String>>,
    /// The rootfs as a file tree, the initial files of the image's instances; `None` for a VM,
    /// or a rootfs the fake could not read whole or that is over a tree's bounds.
    pub(crate) rootfs: Option<Tree>,
    /// The files as uploaded, for the image's export.
    pub(crate) files: crate::state::files::ImageFiles,
}

/// The fields of `metadata.yaml` the daemon uses.
#[derive(Debug, Clone, Default)]
pub(crate) struct Metadata {
    /// The canonical architecture name (`amd64` becomes `x86_64`).
    pub(crate) architecture: String,
    pub(crate) creation_date: i64,
    pub(crate) expiry_date: i64,
    pub(crate) properties: BTreeMap<String, String>,
}

/// The body's form as the daemon tells it from `Content-Type`.
pub(crate) enum Form {
    /// `multipart/form-data` with this boundary.
    Split(String),
    Unified,
}

impl Form {
    /// `mime.ParseMediaType` of the header; anything unparsable is `application/octet-stream`.
    pub(crate) fn of(content_type: Option<&str>) -> Self {
        let Some(value) = content_type else {
            return Self::Unified;
        };
        let Ok(parsed) = value.parse::<mime::Mime>() else {
            return Self::Unified;
        };
        if parsed.type_() == mime::MULTIPART && parsed.subtype() == mime::FORM_DATA {
            let boundary = parsed
                .get_param(mime::BOUNDARY)
                .map(|b| b.as_str().to_string())
                .unwrap_or_default();
            Self::Split(boundary)
        } else {
            Self::Unified
        }
    }
}

/// Reads a unified upload.
pub(crate) fn unified(body: &[u8], filename: &str) -> Result<Upload, UploadError> {
    let fingerprint = hex::encode(Sha256::digest(body));
    let walk = walk(body, Layout::Unified)?;
    let metadata = walk.metadata.ok_or_else(|| fail(MISSING_METADATA))?;
    Ok(Upload {
        fingerprint,
        size: body.len() as u64,
        filename: filename.to_string(),
        kind: walk.kind.to_string(),
        metadata: check(metadata)?,
        executables: walk.executables,
        rootfs: walk.rootfs,
        files: crate::state::files::ImageFiles::Unified(Bytes::copy_from_slice(body)),
    })
}

/// Reads a split upload: the `metadata` part, then `rootfs` (container) or `rootfs.img` (VM).
pub(crate) async fn split(body: Bytes, boundary: String) -> Result<Upload, UploadError> {
    let stream = futures_util::stream::once(async move { Ok::<Bytes, std::io::Error>(body) });
    let mut parts = multer::Multipart::new(stream, boundary);
    let first = parts
        .next_field()
        .await
        .map_err(multipart_error)?
        .ok_or_else(|| fail("EOF"))?;
    if first.name() != Some("metadata") {
        return Err(fail(INVALID_MULTIPART));
    }
    let meta = first.bytes().await.map_err(multipart_error)?;
    let second = parts
        .next_field()
        .await
        .map_err(multipart_error)?
        .ok_or_else(|| fail("EOF"))?;
    let kind = match second.name() {
        Some("rootfs") => "container",
        Some("rootfs.img") => "virtual-machine",
        _ => return Err(fail(INVALID_MULTIPART)),
    };
    let filename = second.file_name().unwrap_or_default().to_string();
    let rootfs = second.bytes().await.map_err(multipart_error)?;
    let mut hasher = Sha256::new();
    hasher.update(&meta);
    hasher.update(&rootfs);
    let fingerprint = hex::encode(hasher.finalize());
    let metadata = walk(&meta, Layout::Metadata)?
        .metadata
        .ok_or_else(|| fail(MISSING_METADATA))?;
    let (executables, rootfs_tree) = if kind == "container" {
        walk(&rootfs, Layout::Rootfs)
            .ok()
            .map_or((None, None), |w| (w.executables, w.rootfs))
    } else {
        (None, None)
    };
    Ok(Upload {
        fingerprint,
        size: (meta.len() + rootfs.len()) as u64,
        filename,
        kind: kind.to_string(),
        metadata: check(metadata)?,
        executables,
        rootfs: rootfs_tree,
        files: crate::state::files::ImageFiles::Split {
            metadata: meta,
            rootfs,
        },
    })
}

const MISSING_METADATA: &str = "Metadata tarball is missing metadata.yaml";
const INVALID_MULTIPART: &str = "Invalid multipart image";

fn multipart_error(err: multer::Error) -> UploadError {
    match err {
        multer::Error::IncompleteStream | multer::Error::IncompleteFieldData { .. } => {
            fail("multipart: NextPart: EOF")
        }
        other => fail(format!("multipart: {other}")),
    }
}

/// The daemon's checks on `metadata.yaml` after reading it.
fn check(mut metadata: Metadata) -> Result<Metadata, UploadError> {
    metadata.architecture = canonical_architecture(&metadata.architecture)
        .ok_or_else(|| {
            fail(format!(
                "Architecture isn't supported: {}",
                metadata.architecture
            ))
        })?
        .to_string();
    if metadata.creation_date == 0 {
        return Err(fail("Missing creation date"));
    }
    Ok(metadata)
}

/// The daemon's architecture names and their aliases (`osarch`).
fn canonical_architecture(name: &str) -> Option<&'static str> {
    const NAMES: &[(&str, &[&str])] = &[
        ("i686", &["i386", "i586", "386", "x86", "generic_32"]),
        ("x86_64", &["amd64", "generic_64"]),
        ("armv6l", &["armel", "arm"]),
        (
            "armv7l",
            &[
                "armhf",
                "armhfp",
                "armv7a_hardfp",
                "armv7",
                "armv7a_vfpv3_hardfp",
            ],
        ),
        ("armv8l", &[]),
        ("aarch64", &["arm64", "arm64_generic"]),
        ("ppc", &["powerpc"]),
        ("ppc64", &["powerpc64"]),
        ("ppc64le", &["ppc64el"]),
        ("s390x", &[]),
        ("mips", &["mipsel", "mipsle"]),
        ("mips64", &["mips64el", "mips64le"]),
        ("riscv32", &[]),
        ("riscv64", &[]),
        ("loongarch64", &["loong64"]),
    ];
    NAMES
        .iter()
        .find(|(canonical, aliases)| *canonical == name || aliases.contains(&name))
        .map(|(canonical, _)| *canonical)
}

/// Which tarball is walked, and so where its rootfs entries are.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// One tarball with `metadata.yaml` and `rootfs/` (or `rootfs.img`).
    Unified,
    /// The split form's metadata tarball.
    Metadata,
    /// The split form's rootfs tarball: its entries are the rootfs.
    Rootfs,
}

#[derive(Default)]
struct Walk {
    metadata: Option<Metadata>,
    kind: &'static str,
    executables: Option<Vec<String>>,
    rootfs: Option<Tree>,
}

/// Walks a tarball once: `metadata.yaml`, the instance type, the executables.
fn walk(bytes: &[u8], layout: Layout) -> Result<Walk, UploadError> {
    walk_within(bytes, layout, INSPECT_LIMIT)
}

/// [`walk`], reading at most `limit` decompressed bytes.
fn walk_within(bytes: &[u8], layout: Layout, limit: u64) -> Result<Walk, UploadError> {
    let reader = decompressed(bytes, layout, limit)?;
    let mut archive = tar::Archive::new(reader);
    let mut out = Walk {
        kind: "unknown",
        ..Walk::default()
    };
    let mut executables = std::collections::BTreeSet::new();
    let mut rootfs = Some(Tree::empty());
    let entries = archive.entries().map_err(tar_error)?;
    for entry in entries {
        let mut entry = match entry {
            Ok(entry) => entry,
            // The daemon stops reading once it has both the metadata and a rootfs entry.
            Err(_) if out.metadata.is_some() && out.kind != "unknown" => break,
            Err(err) => return Err(tar_error(err)),
        };
        let path = entry.path_bytes();
        let name = String::from_utf8_lossy(&path);
        let name = name.strip_prefix("./").unwrap_or(&name).to_string();
        if layout != Layout::Rootfs && name == "metadata.yaml" {
            let mut text = Vec::new();
            (&mut entry)
                .take(METADATA_LIMIT)
                .read_to_end(&mut text)
                .map_err(tar_error)?;
            out.metadata = Some(parse_metadata(&text)?);
        }
        if layout == Layout::Unified {
            if name.starts_with("rootfs/") {
                out.kind = "container";
            } else if name == "rootfs.img" {
                out.kind = "virtual-machine";
            }
        }
        let in_rootfs = match layout {
            Layout::Unified => name.strip_prefix("rootfs/"),
            Layout::Rootfs => Some(name.as_str()),
            Layout::Metadata => None,
        };
        let is_dir = entry.header().entry_type().is_dir();
        if let (Some(path), Some(tree)) = (in_rootfs, rootfs.as_mut()) {
            if !archive_entry(tree, path, &mut entry) {
                rootfs = None;
            }
        }
        if let Some(path) = in_rootfs.filter(|_| !is_dir) {
            if let Some(exe) = executable(path) {
                if executables.len() < EXECUTABLES_LIMIT {
                    executables.insert(exe);
                }
            }
        }
    }
    if layout != Layout::Metadata {
        out.executables = Some(executables.into_iter().collect());
        out.rootfs = rootfs.filter(|tree| !tree.is_empty() && out.kind != "virtual-machine");
    }
    Ok(out)
}

/// Adds one rootfs entry to the image's tree with its mode, owner and time; `false` when the tree
/// cannot hold the rootfs (over its bounds, or an entry the fake cannot read).
pub(super) fn archive_entry<R: Read>(
    tree: &mut Tree,
    path: &str,
    entry: &mut tar::Entry<'_, R>,
) -> bool {
    let path = path.trim_end_matches('/');
    let header = entry.header();
    let mode = header.mode().unwrap_or(0o644) & 0o7777;
    let uid = header
        .uid()
        .ok()
        .and_then(|u| u32::try_from(u).ok())
        .unwrap_or(0);
    let gid = header
        .gid()
        .ok()
        .and_then(|g| u32::try_from(g).ok())
        .unwrap_or(0);
    let modified = header
        .mtime()
        .ok()
        .and_then(|m| time::OffsetDateTime::from_unix_timestamp(m as i64).ok());
    let kind = match header.entry_type() {
        tar::EntryType::Directory => FileKind::Directory,
        tar::EntryType::Symlink => match entry.link_name() {
            Ok(Some(target)) => FileKind::Symlink(target.to_string_lossy().into_owned()),
            _ => return false,
        },
        tar::EntryType::Link => {
            let target = match entry.link_name() {
                Ok(Some(target)) => target.to_string_lossy().into_owned(),
                _ => return false,
            };
            let target = target.trim_start_matches("./");
            let target = target.strip_prefix("rootfs/").unwrap_or(target);
            match tree.get(target) {
                Some(node) => node.kind.clone(),
                None => return false,
            }
        }
        tar::EntryType::Regular | tar::EntryType::Continuous => {
            let size = header.size().unwrap_or(0);
            if size > TREE_LIMIT as u64 {
                return false;
            }
            let mut content = Vec::with_capacity(size as usize);
            if entry.read_to_end(&mut content).is_err() {
                return false;
            }
            FileKind::File(Bytes::from(content))
        }
        // Devices and fifos: the runtime provides `/dev`; an image's are not modelled.
        _ => return true,
    };
    let is_root = path.is_empty() || path == ".";
    if is_root {
        return true;
    }
    let mut node = Node::new(kind, mode);
    node.uid = uid;
    node.gid = gid;
    if let Some(modified) = modified {
        node.modified = modified;
    }
    tree.add_archived(path, node).is_ok()
}

/// `/bin/sh` for `bin/sh` (directly under one of the command directories), else nothing.
fn executable(path: &str) -> Option<String> {
    let path = path.trim_end_matches('/');
    ["bin/", "sbin/", "usr/bin/", "usr/sbin/"]
        .iter()
        .find_map(|dir| path.strip_prefix(dir))
        .filter(|name| !name.is_empty() && !name.contains('/'))
        .map(|_| format!("/{path}"))
}

fn tar_error(err: std::io::Error) -> UploadError {
    match err.kind() {
        std::io::ErrorKind::UnexpectedEof => fail("unexpected EOF"),
        std::io::ErrorKind::Other if err.to_string().contains(LIMIT_MESSAGE) => {
            fail(err.to_string())
        }
        _ => fail("archive/tar: invalid tar header"),
    }
}

const LIMIT_MESSAGE: &str = "decompressed image over the fake's inspection limit";

/// The tarball's bytes, decompressed as the daemon detects the compression from the first
/// 263 bytes.
fn decompressed<'a>(
    bytes: &'a [u8],
    layout: Layout,
    limit: u64,
) -> Result<Box<dyn Read + 'a>, UploadError> {
    if bytes.is_empty() {
        return Err(fail("EOF"));
    }
    let mut header = [0u8; 263];
    let n = bytes.len().min(header.len());
    header[..n].copy_from_slice(&bytes[..n]);
    let limited = |reader: Box<dyn Read + 'a>| -> Box<dyn Read + 'a> {
        Box::new(Limited {
            inner: reader,
            left: limit,
        })
    };
    let unreadable = |what: &str| {
        fail(format!(
            "The fake cannot read {what} tarballs (the daemon can); use gzip, xz or no compression"
        ))
    };
    match header {
        h if h[0..2] == *b"BZ" => Err(unreadable("bzip2")),
        h if h[0..2] == [0x1f, 0x8b] => {
            Ok(limited(Box::new(flate2::read::MultiGzDecoder::new(bytes))))
        }
        h if h[1..5] == *b"7zXZ" && h[0] == 0xfd => {
            let mut out = LimitedVec {
                bytes: Vec::new(),
                limit,
            };
            lzma_rs::xz_decompress(&mut std::io::BufReader::new(bytes), &mut out).map_err(
                |err| match err {
                    lzma_rs::error::Error::IoError(e) if e.to_string().contains(LIMIT_MESSAGE) => {
                        fail(e.to_string())
                    }
                    other => fail(format!("xz: {other}")),
                },
            )?;
            Ok(Box::new(std::io::Cursor::new(out.bytes)))
        }
        h if h[1..5] == *b"7zXZ" || h[0..3] == [0x5d, 0, 0] => Err(unreadable("lzma")),
        h if h[257..262] == *b"ustar" => Ok(limited(Box::new(bytes))),
        h if h[0..4] == *b"hsqs" => Err(unreadable("squashfs")),
        h if h[0..3] == *b"QFI" || h[0..4] == *b"KDMV" => match layout {
            // A VM disk is not a tarball; the daemon does not read it either.
            Layout::Rootfs => Ok(Box::new(std::io::empty())),
            _ => Err(fail("archive/tar: invalid tar header")),
        },
        h if h[0..4] == [0x28, 0xb5, 0x2f, 0xfd] => Err(unreadable("zstd")),
        h if h[0..4] == [0x04, 0x22, 0x4d, 0x18] => Err(unreadable("lz4")),
        _ => Err(fail("Unsupported compression")),
    }
}

/// A reader that fails once more than its bound was read.
struct Limited<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.left = self
            .left
            .checked_sub(n as u64)
            .ok_or_else(|| std::io::Error::other(LIMIT_MESSAGE))?;
        Ok(n)
    }
}

/// A writer into memory that fails past its bound.
struct LimitedVec {
    bytes: Vec<u8>,
    limit: u64,
}

impl std::io::Write for LimitedVec {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if (self.bytes.len() + buf.len()) as u64 > self.limit {
            return Err(std::io::Error::other(LIMIT_MESSAGE));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `metadata.yaml` as the daemon decodes it: unknown keys ignored, scalar properties as text.
fn parse_metadata(text: &[u8]) -> Result<Metadata, UploadError> {
    #[derive(serde::Deserialize, Default)]
    #[serde(default)]
    struct Raw {
        architecture: Option<serde_yaml_ng::Value>,
        creation_date: Option<serde_yaml_ng::Value>,
        expiry_date: Option<serde_yaml_ng::Value>,
        properties: Option<BTreeMap<String, serde_yaml_ng::Value>>,
    }
    if text.iter().all(u8::is_ascii_whitespace) {
        return Err(fail("EOF"));
    }
    let raw: Raw = serde_yaml_ng::from_slice(text).map_err(yaml_error)?;
    let scalar = |value: &serde_yaml_ng::Value| match value {
        serde_yaml_ng::Value::String(s) => Some(s.clone()),
        serde_yaml_ng::Value::Number(n) => Some(n.to_string()),
        serde_yaml_ng::Value::Bool(b) => Some(b.to_string()),
        serde_yaml_ng::Value::Null => Some(String::new()),
        _ => None,
    };
    let integer = |field: &str, value: Option<serde_yaml_ng::Value>| -> Result<i64, UploadError> {
        match value {
            None | Some(serde_yaml_ng::Value::Null) => Ok(0),
            Some(serde_yaml_ng::Value::Number(n)) if n.as_i64().is_some() => {
                Ok(n.as_i64().unwrap_or_default())
            }
            Some(other) => Err(fail(format!(
                "yaml: unmarshal errors:\n  cannot unmarshal {} into {field} (int64)",
                scalar(&other).unwrap_or_default()
            ))),
        }
    };
    let mut properties = BTreeMap::new();
    for (key, value) in raw.properties.unwrap_or_default() {
        let text = scalar(&value).ok_or_else(|| {
            fail(format!(
                "yaml: unmarshal errors:\n  cannot unmarshal a collection into properties[{key}] (string)"
            ))
        })?;
        properties.insert(key, text);
    }
    Ok(Metadata {
        architecture: raw
            .architecture
            .as_ref()
            .and_then(scalar)
            .unwrap_or_default(),
        creation_date: integer("creation_date", raw.creation_date)?,
        expiry_date: integer("expiry_date", raw.expiry_date)?,
        properties,
    })
}

/// A YAML error worded like Go's: `yaml: line N: <problem>`. Both are libyaml underneath;
/// Go's `yaml` reports a parser error's mark line as it is (0-based) and a scanner error's one
/// line further, and leaves the line out when it is 0.
fn yaml_error(err: serde_yaml_ng::Error) -> UploadError {
    let text = err.to_string();
    let problem = text.split(" at line ").next().unwrap_or(&text).to_string();
    let parser_error = problem.starts_with("did not find expected");
    let line = err
        .location()
        .map(|at| at.line().saturating_sub(usize::from(parser_error)))
        .unwrap_or(0);
    if line == 0 {
        fail(format!("yaml: {problem}"))
    } else {
        fail(format!("yaml: line {line}: {problem}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tarball(entries: &[(&str, &[u8])], gzip: bool) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (name, data) in entries {
            let mut header = tar::Header::new_gnu();
            if name.ends_with('/') {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_size(0);
            } else {
                header.set_size(data.len() as u64);
            }
            header.set_mode(0o755);
            header.set_cksum();
            builder.append_data(&mut header, name, *data).unwrap();
        }
        let tar = builder.into_inner().unwrap();
        if !gzip {
            return tar;
        }
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &tar).unwrap();
        gz.finish().unwrap()
    }

    const META: &[u8] =
        b"architecture: amd64\ncreation_date: 1700000000\nproperties:\n  os: probe\n  release: 7\n";

    #[test]
    fn a_unified_tarball_gives_the_fingerprint_of_its_bytes_its_metadata_and_executables() {
        let body = tarball(
            &[
                ("metadata.yaml", META),
                ("rootfs/", b""),
                ("rootfs/bin/", b""),
                ("rootfs/bin/sh", b"x"),
                ("./rootfs/usr/sbin/init", b"x"),
                ("rootfs/usr/bin/deep/no", b"x"),
                ("rootfs/etc/hostname", b"x"),
            ],
            true,
        );
        let upload = unified(&body, "u.tar.gz").unwrap();
        assert_eq!(upload.fingerprint, hex::encode(Sha256::digest(&body)));
        assert_eq!(upload.size, body.len() as u64);
        assert_eq!(upload.kind, "container");
        assert_eq!(upload.metadata.architecture, "x86_64");
        assert_eq!(upload.metadata.properties["release"], "7");
        assert_eq!(
            upload.executables,
            Some(vec!["/bin/sh".to_string(), "/usr/sbin/init".to_string()])
        );
    }

    #[test]
    fn upload_errors_are_the_daemons_texts() {
        let cases: &[(Vec<u8>, &str)] = &[
            (b"not a tarball".to_vec(), "Unsupported compression"),
            (Vec::new(), "EOF"),
            (
                tarball(&[("other", b"x")], true),
                "Metadata tarball is missing metadata.yaml",
            ),
            (
                tarball(&[("metadata.yaml", b"architecture: x86_64\n")], false),
                "Missing creation date",
            ),
            (
                tarball(
                    &[("metadata.yaml", b"architecture: foo\ncreation_date: 1\n")],
                    true,
                ),
                "Architecture isn't supported: foo",
            ),
            (
                tarball(&[("metadata.yaml", b"architecture: [\n")], true),
                "yaml: line 1: did not find expected node content",
            ),
        ];
        for (body, message) in cases {
            let err = unified(body, "x").unwrap_err();
            assert_eq!(err.0, *message);
        }
    }

    #[test]
    fn a_tarball_past_the_inspection_limit_fails_instead_of_being_read_to_its_end() {
        let big = vec![0u8; 2 << 20];
        let body = tarball(&[("rootfs/big", &big), ("metadata.yaml", META)], true);
        assert!(walk_within(&body, Layout::Unified, 4 << 20).is_ok());
        let err = walk_within(&body, Layout::Unified, 1 << 20).err().unwrap();
        assert_eq!(err.0, LIMIT_MESSAGE);
    }
}
