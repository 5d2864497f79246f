//! Builds the test image: a unified Incus image tarball (`metadata.yaml` + `rootfs/`) around a static
//! busybox binary, laid out like the project's `real-incus-up.sh` image (busybox init that sleeps).
use std::io::Write;
use std::path::Path;

use flate2::write::GzEncoder;
use flate2::Compression;
use sha2::{Digest, Sha256};

/// Commands linked to busybox in `/bin` (the exec checks use these).
const APPLETS: &[&str] = &[
    "sh", "ls", "cat", "echo", "printf", "sleep", "true", "false", "env", "id", "head", "yes",
    "dd", "kill", "seq", "tr", "wc", "pwd",
];
/// Empty directories of the root file system.
const DIRS: &[&str] = &["bin", "sbin", "etc", "proc", "sys", "dev", "tmp", "root"];
const INITTAB: &str = "::sysinit:/bin/true\n::respawn:/bin/sleep 100000\n";

/// Why the image could not be built.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ImageError {
    #[error("cannot read the busybox binary {path}: {source}")]
    Busybox {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not a static busybox (a dynamically linked binary cannot run in the empty image)")]
    NotStatic { path: String },
    #[error("cannot build the image tarball: {0}")]
    Tar(#[from] std::io::Error),
}

/// A built image: the tarball and its fingerprint (SHA-256 of the tarball, as Incus computes it).
pub(crate) struct BuiltImage {
    pub(crate) tarball: Vec<u8>,
    pub(crate) fingerprint: String,
}

/// Builds the image from a busybox binary. `stamp` (seconds since the epoch) makes the tarball unique.
pub(crate) fn build(busybox: &Path, stamp: u64) -> Result<BuiltImage, ImageError> {
    let binary = std::fs::read(busybox).map_err(|source| ImageError::Busybox {
        path: busybox.display().to_string(),
        source,
    })?;
    if !is_static_elf(&binary) {
        return Err(ImageError::NotStatic {
            path: busybox.display().to_string(),
        });
    }
    let tarball = tarball(&binary, stamp)?;
    let fingerprint = hex::encode(Sha256::digest(&tarball));
    Ok(BuiltImage {
        tarball,
        fingerprint,
    })
}

/// An ELF file without a `PT_INTERP` program header (no dynamic loader needed).
fn is_static_elf(binary: &[u8]) -> bool {
    const PT_INTERP: u32 = 3;
    if binary.len() < 64 || &binary[..4] != b"\x7fELF" || binary[4] != 2 || binary[5] != 1 {
        return false;
    }
    let u64_at = |at: usize| {
        binary
            .get(at..at + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
    };
    let u16_at = |at: usize| {
        binary
            .get(at..at + 2)
            .map(|b| u16::from_le_bytes(b.try_into().unwrap_or_default()))
    };
    let (Some(phoff), Some(phentsize), Some(phnum)) = (u64_at(32), u16_at(54), u16_at(56)) else {
        return false;
    };
    (0..usize::from(phnum)).all(|i| {
        let at = usize::try_from(phoff)
            .unwrap_or(usize::MAX)
            .saturating_add(i * usize::from(phentsize));
        binary
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap_or_default()) != PT_INTERP)
            .unwrap_or(false)
    })
}

fn metadata_yaml(stamp: u64) -> String {
    format!(
        "architecture: {}\ncreation_date: {stamp}\nproperties:\n  description: incus-operations acceptance image (busybox)\n  os: busybox\n  release: \"{stamp}\"\n",
        std::env::consts::ARCH
    )
}

fn tarball(busybox: &[u8], stamp: u64) -> Result<Vec<u8>, std::io::Error> {
    let mut tar = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::fast()));
    file(
        &mut tar,
        "metadata.yaml",
        metadata_yaml(stamp).as_bytes(),
        0o644,
        stamp,
    )?;
    directory(&mut tar, "rootfs", stamp)?;
    for dir in DIRS {
        directory(&mut tar, &format!("rootfs/{dir}"), stamp)?;
    }
    file(&mut tar, "rootfs/bin/busybox", busybox, 0o755, stamp)?;
    for applet in APPLETS {
        symlink(&mut tar, &format!("rootfs/bin/{applet}"), "busybox", stamp)?;
    }
    symlink(&mut tar, "rootfs/sbin/init", "../bin/busybox", stamp)?;
    file(
        &mut tar,
        "rootfs/etc/inittab",
        INITTAB.as_bytes(),
        0o644,
        stamp,
    )?;
    let gz = tar.into_inner()?;
    let mut bytes = gz.finish()?;
    bytes.flush()?;
    Ok(bytes)
}

fn header(kind: tar::EntryType, mode: u32, size: u64, stamp: u64) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(stamp);
    header.set_size(size);
    header
}

fn file<W: Write>(
    tar: &mut tar::Builder<W>,
    path: &str,
    data: &[u8],
    mode: u32,
    stamp: u64,
) -> std::io::Result<()> {
    let mut header = header(tar::EntryType::Regular, mode, data.len() as u64, stamp);
    tar.append_data(&mut header, path, data)
}

fn directory<W: Write>(tar: &mut tar::Builder<W>, path: &str, stamp: u64) -> std::io::Result<()> {
    let mut header = header(tar::EntryType::Directory, 0o755, 0, stamp);
    tar.append_data(&mut header, path, std::io::empty())
}

fn symlink<W: Write>(
    tar: &mut tar::Builder<W>,
    path: &str,
    target: &str,
    stamp: u64,
) -> std::io::Result<()> {
    let mut header = header(tar::EntryType::Symlink, 0o777, 0, stamp);
    tar.append_link(&mut header, path, target)
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (builds the test image); a test through the
    //! runner's public API or binary goes in `tests/runner`.

    use super::*;

    #[test]
    fn image_has_the_busybox_layout() {
        let tarball = tarball(b"binary", 7).expect("tarball");
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(&tarball[..]));
        let names: Vec<String> = archive
            .entries()
            .expect("entries")
            .map(|e| {
                e.expect("entry")
                    .path()
                    .expect("path")
                    .display()
                    .to_string()
            })
            .collect();
        for wanted in [
            "metadata.yaml",
            "rootfs/bin/busybox",
            "rootfs/bin/sh",
            "rootfs/sbin/init",
            "rootfs/etc/inittab",
        ] {
            assert!(
                names.iter().any(|n| n == wanted),
                "{wanted} missing from {names:?}"
            );
        }
    }

    #[test]
    fn dynamic_or_foreign_binaries_are_refused() {
        assert!(!is_static_elf(b"#!/bin/sh\necho hi\n"));
        let dynamic = std::fs::read("/bin/ls").unwrap_or_default();
        if !dynamic.is_empty() {
            assert!(!is_static_elf(&dynamic), "/bin/ls is dynamically linked");
        }
    }
}
