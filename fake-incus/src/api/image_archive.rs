//! Image files on the way out: the unified tarball a publish makes of an instance's tree
//! (`metadata.yaml` and `rootfs/`, gzip, as the daemon's default compression), and the answer of
//! `GET /1.0/images/{fp}/export` (one file, or the daemon's multipart for a split image).

use crate::envelope::{self, ApiError};
use crate::state::archive;
use crate::state::files::{ImageFiles, Tree};
use bytes::Bytes;
use http::{header, HeaderValue, Response};
use serde_json::Value;

/// A tarball being written ([`archive::Tarball`]) whose errors are the daemon's, compressed
/// when finished.
pub(super) struct Tarball(archive::Tarball);

/// How a tarball the daemon makes is compressed: a publish's `compression_algorithm` (else the
/// project's, else the server's `images.compression_algorithm`, else gzip). The daemon runs the
/// named program (`gzip -n -c`, `xz -c`, ...) over the tar stream; the fake compresses in
/// process, so the bytes differ from the daemon's but are the same kind of file, and the
/// image's fingerprint is the SHA-256 of exactly what is stored, as on the daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Compression {
    /// `none`: the tar stream itself.
    None,
    Gzip,
    Xz,
}

impl Compression {
    /// The algorithm `name` names (a program and its arguments, as the daemon reads it; the
    /// arguments, a compression level, change only the bytes); the error is the operation's.
    pub(super) fn named(name: &str) -> Result<Self, ApiError> {
        let program = name.split_whitespace().next().unwrap_or_default();
        match program {
            "none" => Ok(Self::None),
            "gzip" => Ok(Self::Gzip),
            "xz" => Ok(Self::Xz),
            "bzip2" | "lzma" | "zstd" | "lz4" | "squashfs" => Err(ApiError::internal(format!(
                "The fake cannot compress with {program} (the daemon runs it); use gzip, xz or none"
            ))),
            // Measured on Incus 6.0.4 (a publish with `compression_algorithm: foo`).
            _ => Err(ApiError::internal(format!(
                "Compression algorithm {name:?} isn't currently supported"
            ))),
        }
    }

    fn apply(self, tar: Vec<u8>) -> Result<Vec<u8>, ApiError> {
        match self {
            Self::None => Ok(tar),
            Self::Gzip => archive::gzip(&tar).map_err(failed),
            Self::Xz => {
                let mut out = Vec::new();
                lzma_rs::xz_compress(&mut std::io::Cursor::new(tar), &mut out).map_err(failed)?;
                Ok(out)
            }
        }
    }
}

fn failed(e: std::io::Error) -> ApiError {
    ApiError::internal(format!("Failed to create tarball: {e}"))
}

impl Tarball {
    pub(super) fn new() -> Self {
        Self(archive::Tarball::new())
    }

    /// A regular file written now.
    pub(super) fn file(&mut self, name: &str, bytes: &[u8], mode: u32) -> Result<(), ApiError> {
        self.0.file(name, bytes, mode).map_err(failed)
    }

    /// A directory made now.
    pub(super) fn dir(&mut self, name: &str, mode: u32) -> Result<(), ApiError> {
        self.0.dir(name, mode).map_err(failed)
    }

    /// Every entry of `tree` under `prefix` (its `/` is `prefix` itself), with its mode, owner
    /// and time.
    pub(super) fn tree(&mut self, prefix: &str, tree: &Tree) -> Result<(), ApiError> {
        self.0.tree(prefix, tree).map_err(failed)
    }

    /// The gzip-compressed tarball (the daemon's default).
    pub(super) fn finish(self) -> Result<Vec<u8>, ApiError> {
        self.finish_with(Compression::Gzip)
    }

    /// The tarball, compressed so.
    pub(super) fn finish_with(self, compression: Compression) -> Result<Vec<u8>, ApiError> {
        let tar = self.0.into_tar().map_err(failed)?;
        compression.apply(tar)
    }
}

/// A value as YAML text (`metadata.yaml`, a backup's `index.yaml`).
pub(super) fn yaml(value: &Value) -> Result<String, ApiError> {
    serde_yaml_ng::to_string(value)
        .map_err(|e| ApiError::internal(format!("Failed to write YAML: {e}")))
}

/// A unified image tarball: `metadata.yaml` (the image metadata as YAML) then every entry of
/// `tree` under `rootfs/`, compressed so.
pub(super) fn unified_tarball(
    metadata: &Value,
    tree: &Tree,
    compression: Compression,
) -> Result<Vec<u8>, ApiError> {
    let mut tarball = Tarball::new();
    tarball.file("metadata.yaml", yaml(metadata)?.as_bytes(), 0o644)?;
    tarball.tree("rootfs", tree)?;
    tarball.finish_with(compression)
}

/// The extension the daemon's `archive.DetectCompression` gives a file, from its first bytes.
fn extension(bytes: &[u8]) -> &'static str {
    let starts = |magic: &[u8]| bytes.starts_with(magic);
    if starts(&[0x1f, 0x8b]) {
        ".tar.gz"
    } else if starts(b"BZh") {
        ".tar.bz2"
    } else if starts(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
        ".tar.xz"
    } else if starts(&[0x5d, 0x00, 0x00]) {
        ".tar.lzma"
    } else if starts(&[0x28, 0xb5, 0x2f, 0xfd]) {
        ".tar.zst"
    } else if starts(b"hsqs") {
        ".squashfs"
    } else if starts(b"QFI\xfb") {
        ".qcow2"
    } else if bytes.len() > 262 && &bytes[257..262] == b"ustar" {
        ".tar"
    } else {
        ""
    }
}

/// `GET /1.0/images/{fp}/export`: the unified tarball inline, or the metadata and rootfs parts
/// of a split image as `multipart/form-data`, with `X-Incus-Type: incus`.
pub(super) fn export_response(
    fingerprint: &str,
    files: ImageFiles,
    virtual_machine: bool,
) -> Response<envelope::Body> {
    let (content_type, body) = match files {
        ImageFiles::Unified(bytes) => {
            let filename = format!("{fingerprint}{}", extension(&bytes));
            let mut response = Response::new(envelope::full(bytes));
            let headers = response.headers_mut();
            if let Ok(value) = HeaderValue::from_str(&format!("inline;filename={filename}")) {
                headers.insert(header::CONTENT_DISPOSITION, value);
            }
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            );
            headers.insert("x-incus-type", HeaderValue::from_static("incus"));
            return response;
        }
        ImageFiles::Split { metadata, rootfs } => {
            let boundary = format!(
                "{}{}",
                uuid::Uuid::new_v4().simple(),
                &uuid::Uuid::new_v4().simple().to_string()[..28]
            );
            let rootfs_name = if virtual_machine {
                "rootfs.img"
            } else {
                "rootfs"
            };
            let parts = [
                (
                    "metadata",
                    format!("meta-{fingerprint}{}", extension(&metadata)),
                    metadata,
                ),
                (
                    rootfs_name,
                    format!("{fingerprint}{}", extension(&rootfs)),
                    rootfs,
                ),
            ];
            let mut body = Vec::new();
            for (name, filename, bytes) in parts {
                body.extend_from_slice(
                    format!(
                        "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{filename}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                    )
                    .as_bytes(),
                );
                body.extend_from_slice(&bytes);
                body.extend_from_slice(b"\r\n");
            }
            body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
            (
                format!("multipart/form-data; boundary={boundary}"),
                Bytes::from(body),
            )
        }
    };
    let mut response = Response::new(envelope::full(body));
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&content_type) {
        headers.insert(header::CONTENT_TYPE, value);
    }
    headers.insert("x-incus-type", HeaderValue::from_static("incus"));
    response
}
