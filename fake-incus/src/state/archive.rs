//! Tar archives of file trees (the `tar` crate), entries in the order written: what an image, a
//! backup and the built-in busybox image are made of. Compression and the API's errors are the
//! callers' (`api::image_archive`).

use super::files::{Kind, Tree};

/// A tar stream being written.
pub(crate) struct Tarball {
    builder: tar::Builder<Vec<u8>>,
    /// The time of entries the archive makes (files and directories it is given bytes for).
    now: u64,
    /// Whether a tree's entries take `now` too instead of their own times (an archive that must
    /// be the same bytes in every run).
    fixed: bool,
}

impl Tarball {
    /// An archive whose own entries are made now; a tree's keep their times.
    pub(crate) fn new() -> Self {
        Self {
            builder: tar::Builder::new(Vec::new()),
            now: time::OffsetDateTime::now_utc().unix_timestamp().max(0) as u64,
            fixed: false,
        }
    }

    /// An archive every entry of which has the time `unix`: the same bytes in every run.
    pub(crate) fn fixed_at(unix: u64) -> Self {
        Self {
            builder: tar::Builder::new(Vec::new()),
            now: unix,
            fixed: true,
        }
    }

    /// A regular file.
    pub(crate) fn file(&mut self, name: &str, bytes: &[u8], mode: u32) -> std::io::Result<()> {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(mode);
        header.set_mtime(self.now);
        header.set_size(bytes.len() as u64);
        self.builder.append_data(&mut header, name, bytes)
    }

    /// A directory.
    pub(crate) fn dir(&mut self, name: &str, mode: u32) -> std::io::Result<()> {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Directory);
        header.set_mode(mode);
        header.set_mtime(self.now);
        header.set_size(0);
        self.builder
            .append_data(&mut header, name, std::io::empty())
    }

    /// Every entry of `tree` under `prefix` (its `/` is `prefix` itself), with its mode, owner
    /// and time.
    pub(crate) fn tree(&mut self, prefix: &str, tree: &Tree) -> std::io::Result<()> {
        for (path, node) in tree.entries() {
            let name = format!("{prefix}{}", if path == "/" { "" } else { path });
            let mut header = tar::Header::new_gnu();
            header.set_mode(node.mode);
            header.set_uid(u64::from(node.uid));
            header.set_gid(u64::from(node.gid));
            header.set_mtime(if self.fixed {
                self.now
            } else {
                node.modified.unix_timestamp().max(0) as u64
            });
            match &node.kind {
                Kind::File(content) => {
                    header.set_entry_type(tar::EntryType::Regular);
                    header.set_size(content.len() as u64);
                    self.builder
                        .append_data(&mut header, &name, content.as_ref())?;
                }
                Kind::Directory => {
                    header.set_entry_type(tar::EntryType::Directory);
                    header.set_size(0);
                    self.builder
                        .append_data(&mut header, &name, std::io::empty())?;
                }
                Kind::Symlink(target) => {
                    header.set_entry_type(tar::EntryType::Symlink);
                    header.set_size(0);
                    self.builder.append_link(&mut header, &name, target)?;
                }
            }
        }
        Ok(())
    }

    /// The tar stream.
    pub(crate) fn into_tar(self) -> std::io::Result<Vec<u8>> {
        self.builder.into_inner()
    }
}

/// `tar` compressed with gzip, as the daemon's default `gzip -n` does (no name, no time in
/// the header, so the same stream gives the same bytes).
pub(crate) fn gzip(tar: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::Write;
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gzip.write_all(tar)?;
    gzip.finish()
}
