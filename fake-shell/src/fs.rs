//! The file system the shell runs on: a small trait the host implements over an instance's tree (and
//! [`MemoryFs`], the in-memory one of the tests), plus the path handling every command shares: making a
//! path absolute, following symbolic links, and the runtime's devices (`/dev/null`, `/dev/zero`, …).
//!
//! The trait takes absolute, clean paths and never follows a symbolic link itself: the shell resolves
//! links (see [`Fs::resolve`]) before it calls it, so the host only stores entries.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

/// What an entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A regular file of this many bytes.
    File(u64),
    /// A directory.
    Directory,
    /// A symbolic link to this target, as written.
    Symlink(String),
}

/// An entry's type, owner, mode and modification time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    /// What the entry is.
    pub kind: Kind,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Permission bits (`0o644`).
    pub mode: u32,
    /// Modification time, seconds since the Unix epoch.
    pub modified: i64,
}

/// Why a file-system call failed, as `errno` names it; [`FsError::text`] is the C library's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FsError {
    /// `ENOENT`.
    #[error("No such file or directory")]
    NotFound,
    /// `EEXIST`.
    #[error("File exists")]
    Exists,
    /// `ENOTDIR`.
    #[error("Not a directory")]
    NotDirectory,
    /// `EISDIR`.
    #[error("Is a directory")]
    IsDirectory,
    /// `ENOTEMPTY`.
    #[error("Directory not empty")]
    NotEmpty,
    /// `ENOSPC`: the instance's tree is full.
    #[error("No space left on device")]
    NoSpace,
    /// `ELOOP`.
    #[error("Symbolic link loop")]
    Loop,
    /// `EINVAL`.
    #[error("Invalid argument")]
    Invalid,
    /// `EACCES`.
    #[error("Permission denied")]
    Denied,
}

impl FsError {
    /// The message `strerror` gives.
    pub fn text(self) -> String {
        self.to_string()
    }
}

/// Owner of a new entry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Owner {
    /// User id.
    pub uid: u32,
    /// Group id.
    pub gid: u32,
}

/// An instance's files as the shell reaches them. Paths are absolute and clean; no call follows a
/// symbolic link. Every call is one atomic change.
pub trait FileSystem: Send + Sync + fmt::Debug {
    /// The entry at `path`.
    fn lstat(&self, path: &str) -> Result<Meta, FsError>;
    /// A regular file's content.
    fn read(&self, path: &str) -> Result<Bytes, FsError>;
    /// The names in a directory, sorted.
    fn list(&self, path: &str) -> Result<Vec<String>, FsError>;
    /// Writes a regular file (replacing or appending); a new one gets `mode` and `owner`. The parent
    /// must be a directory.
    fn write(
        &self,
        path: &str,
        content: Bytes,
        append: bool,
        mode: u32,
        owner: Owner,
    ) -> Result<(), FsError>;
    /// Creates a directory; [`FsError::Exists`] when the path is taken.
    fn mkdir(&self, path: &str, mode: u32, owner: Owner) -> Result<(), FsError>;
    /// Creates a symbolic link at `path` pointing to `target`; [`FsError::Exists`] when taken.
    fn symlink(&self, target: &str, path: &str, owner: Owner) -> Result<(), FsError>;
    /// Removes a file, a symbolic link or an empty directory.
    fn remove(&self, path: &str) -> Result<(), FsError>;
    /// Moves an entry (a directory with what it holds), replacing a file at `to`.
    fn rename(&self, from: &str, to: &str) -> Result<(), FsError>;
    /// Sets the permission bits.
    fn set_mode(&self, path: &str, mode: u32) -> Result<(), FsError>;
    /// Sets owner and group.
    fn set_owner(&self, path: &str, owner: Owner) -> Result<(), FsError>;
    /// Sets the modification time (seconds since the epoch).
    fn set_modified(&self, path: &str, modified: i64) -> Result<(), FsError>;
}

/// `path` made absolute against `cwd`, without `.`, `..` or repeated slashes.
pub fn absolute(cwd: &str, path: &str) -> String {
    let joined = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("{cwd}/{path}")
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    format!("/{}", parts.join("/"))
}

/// The parent directory of a clean absolute path (`/` for `/`).
pub fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(at) => &path[..at],
    }
}

/// The last component of a path (busybox's `basename` without suffix handling).
pub fn base_name(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return if path.is_empty() { "" } else { "/" };
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed)
}

/// A device the container runtime provides, handled by the shell itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    /// `/dev/null`: reads nothing, swallows writes.
    Null,
    /// `/dev/zero`: endless zeros.
    Zero,
    /// `/dev/full`: writes fail with "No space left on device".
    Full,
    /// `/dev/random`, `/dev/urandom`: pseudo-random bytes.
    Random,
    /// `/dev/stdin`, `/dev/stdout`, `/dev/stderr`, `/dev/fd/N`: descriptor N.
    Fd(u32),
    /// `/dev/tty`: not available without a terminal.
    Tty,
}

/// What the runtime puts in `/dev` (directories marked with a trailing `/`), as listed in a running
/// busybox container.
pub(crate) const DEV: &[&str] = &[
    "console", "fd/", "full", "fuse", "incus/", "net/", "null", "ptmx", "pts/", "random", "stderr",
    "stdin", "stdout", "tty", "urandom", "zero",
];

/// The device a clean absolute path names.
pub fn device(path: &str) -> Option<Device> {
    Some(match path {
        "/dev/null" => Device::Null,
        "/dev/zero" => Device::Zero,
        "/dev/full" => Device::Full,
        "/dev/random" | "/dev/urandom" => Device::Random,
        "/dev/stdin" => Device::Fd(0),
        "/dev/stdout" => Device::Fd(1),
        "/dev/stderr" => Device::Fd(2),
        "/dev/tty" | "/dev/console" => Device::Tty,
        other => {
            let n = other.strip_prefix("/dev/fd/")?.parse().ok()?;
            Device::Fd(n)
        }
    })
}

/// How many symbolic links one lookup follows before `ELOOP`.
const MAX_LINKS: usize = 40;

/// The file system with the path handling the commands share.
#[derive(Debug, Clone)]
pub struct Fs(pub Arc<dyn FileSystem>);

impl Fs {
    /// Resolves the symbolic links of `path` (absolute and clean): every directory on the way, and the
    /// last component too when `follow`. A missing last component is returned as it is.
    pub fn resolve(&self, path: &str, follow: bool) -> Result<String, FsError> {
        let mut pending: Vec<String> = path
            .split('/')
            .filter(|p| !p.is_empty())
            .rev()
            .map(str::to_owned)
            .collect();
        let mut at = String::from("/");
        let mut links = 0;
        while let Some(part) = pending.pop() {
            let last = pending.is_empty();
            if part == "." {
                continue;
            }
            if part == ".." {
                at = parent(&at).to_owned();
                continue;
            }
            let next = if at == "/" {
                format!("/{part}")
            } else {
                format!("{at}/{part}")
            };
            match self.0.lstat(&next) {
                Ok(Meta {
                    kind: Kind::Symlink(target),
                    ..
                }) if !last || follow => {
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(FsError::Loop);
                    }
                    if target.starts_with('/') {
                        at = "/".into();
                    }
                    pending.extend(
                        target
                            .split('/')
                            .filter(|p| !p.is_empty())
                            .rev()
                            .map(str::to_owned),
                    );
                }
                Ok(Meta {
                    kind: Kind::Directory,
                    ..
                }) => at = next,
                Ok(_) if last => at = next,
                Ok(_) => return Err(FsError::NotDirectory),
                Err(FsError::NotFound) if last => at = next,
                Err(error) => return Err(error),
            }
        }
        Ok(at)
    }

    /// The entry `path` names, links followed (`stat`).
    pub fn stat(&self, path: &str) -> Result<Meta, FsError> {
        if path.starts_with("/dev/") && device(path).is_some() {
            return Ok(device_meta());
        }
        let real = self.resolve(path, true)?;
        self.0.lstat(&real)
    }

    /// The entry itself (`lstat`), links on the way followed.
    pub fn lstat(&self, path: &str) -> Result<Meta, FsError> {
        if path.starts_with("/dev/") && device(path).is_some() {
            return Ok(device_meta());
        }
        let real = self.resolve(path, false)?;
        self.0.lstat(&real)
    }

    /// Whether `path` is a directory (links followed).
    pub fn is_dir(&self, path: &str) -> bool {
        matches!(
            self.stat(path),
            Ok(Meta {
                kind: Kind::Directory,
                ..
            })
        )
    }

    /// A regular file's content (links followed).
    pub fn read(&self, path: &str) -> Result<Bytes, FsError> {
        let real = self.resolve(path, true)?;
        match self.0.lstat(&real)?.kind {
            Kind::Directory => Err(FsError::IsDirectory),
            _ => self.0.read(&real),
        }
    }

    /// A directory's names (links followed), the runtime's devices in `/dev`.
    pub fn list(&self, path: &str) -> Result<Vec<String>, FsError> {
        let real = self.resolve(path, true)?;
        match self.0.lstat(&real)?.kind {
            Kind::Directory => {}
            _ => return Err(FsError::NotDirectory),
        }
        let mut names = self.0.list(&real)?;
        if real == "/dev" {
            names.extend(DEV.iter().map(|d| d.trim_end_matches('/').to_owned()));
            names.sort();
            names.dedup();
        }
        Ok(names)
    }

    /// Writes a file (links followed); a new one gets `mode` masked by nothing (the caller applies
    /// the umask).
    pub fn write(
        &self,
        path: &str,
        content: Bytes,
        append: bool,
        mode: u32,
        owner: Owner,
    ) -> Result<(), FsError> {
        let real = self.resolve(path, true)?;
        if let Ok(Meta {
            kind: Kind::Directory,
            ..
        }) = self.0.lstat(&real)
        {
            return Err(FsError::IsDirectory);
        }
        self.0.write(&real, content, append, mode, owner)
    }
}

fn device_meta() -> Meta {
    Meta {
        kind: Kind::File(0),
        uid: 0,
        gid: 0,
        mode: 0o666,
        modified: 0,
    }
}

/// An in-memory [`FileSystem`]: the tests' own, and a stand-in for a host without instance files.
#[derive(Debug, Default)]
pub struct MemoryFs {
    entries: Mutex<BTreeMap<String, (Meta, Bytes)>>,
}

impl MemoryFs {
    /// The busybox test image: `/bin/busybox` with its applets linked in `/bin`, `/sbin/init`,
    /// `/etc/inittab` and the empty top-level directories.
    pub fn busybox() -> Arc<Self> {
        let fs = Self::default();
        for dir in [
            "/", "/bin", "/dev", "/etc", "/proc", "/root", "/sbin", "/sys", "/tmp",
        ] {
            fs.put(dir, Kind::Directory, 0o755, Bytes::new());
        }
        fs.put(
            "/bin/busybox",
            Kind::File(0),
            0o755,
            Bytes::from_static(BUSYBOX_PLACEHOLDER),
        );
        for applet in BUSYBOX_IMAGE_LINKS {
            fs.put(
                &format!("/bin/{applet}"),
                Kind::Symlink("busybox".into()),
                0o777,
                Bytes::new(),
            );
        }
        fs.put(
            "/sbin/init",
            Kind::Symlink("../bin/busybox".into()),
            0o777,
            Bytes::new(),
        );
        fs.put(
            "/etc/inittab",
            Kind::File(0),
            0o644,
            Bytes::from_static(BUSYBOX_INITTAB),
        );
        Arc::new(fs)
    }

    fn put(&self, path: &str, kind: Kind, mode: u32, content: Bytes) {
        let kind = match kind {
            Kind::File(_) => Kind::File(content.len() as u64),
            other => other,
        };
        let meta = Meta {
            kind,
            uid: 0,
            gid: 0,
            mode,
            modified: 0,
        };
        self.lock().insert(path.to_owned(), (meta, content));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, (Meta, Bytes)>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn parent_dir(entries: &BTreeMap<String, (Meta, Bytes)>, path: &str) -> Result<(), FsError> {
        if path == "/" {
            return Err(FsError::Exists);
        }
        match entries.get(parent(path)) {
            Some((
                Meta {
                    kind: Kind::Directory,
                    ..
                },
                _,
            )) => Ok(()),
            Some(_) => Err(FsError::NotDirectory),
            None => Err(FsError::NotFound),
        }
    }

    fn children(entries: &BTreeMap<String, (Meta, Bytes)>, dir: &str) -> Vec<String> {
        let prefix = if dir == "/" {
            "/".to_owned()
        } else {
            format!("{dir}/")
        };
        entries
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .filter_map(|(p, _)| {
                let rest = &p[prefix.len()..];
                (!rest.is_empty() && !rest.contains('/')).then(|| rest.to_owned())
            })
            .collect()
    }
}

/// The content of the busybox test image's `/bin/busybox` where no real binary was imported: the
/// shell recognises busybox by the file's name, not its bytes.
pub const BUSYBOX_PLACEHOLDER: &[u8] = b"#!fake-incus busybox placeholder\n";
/// The busybox test image's `/etc/inittab` (`ci/busybox-image.sh`).
pub const BUSYBOX_INITTAB: &[u8] = b"::sysinit:/bin/true\n::respawn:/bin/sleep 100000\n";
/// The applets linked to busybox in the busybox test image's `/bin`.
pub const BUSYBOX_IMAGE_LINKS: &[&str] = &[
    "sh", "ls", "cat", "echo", "printf", "sleep", "true", "false", "env", "id", "head", "yes", "dd",
];

impl FileSystem for MemoryFs {
    fn lstat(&self, path: &str) -> Result<Meta, FsError> {
        self.lock()
            .get(path)
            .map(|(meta, _)| meta.clone())
            .ok_or(FsError::NotFound)
    }

    fn read(&self, path: &str) -> Result<Bytes, FsError> {
        match self.lock().get(path) {
            Some((
                Meta {
                    kind: Kind::File(_),
                    ..
                },
                content,
            )) => Ok(content.clone()),
            Some(_) => Err(FsError::IsDirectory),
            None => Err(FsError::NotFound),
        }
    }

    fn list(&self, path: &str) -> Result<Vec<String>, FsError> {
        let entries = self.lock();
        match entries.get(path) {
            Some((
                Meta {
                    kind: Kind::Directory,
                    ..
                },
                _,
            )) => Ok(Self::children(&entries, path)),
            Some(_) => Err(FsError::NotDirectory),
            None => Err(FsError::NotFound),
        }
    }

    fn write(
        &self,
        path: &str,
        content: Bytes,
        append: bool,
        mode: u32,
        owner: Owner,
    ) -> Result<(), FsError> {
        let mut entries = self.lock();
        Self::parent_dir(&entries, path)?;
        let (mut meta, old) = match entries.get(path) {
            Some((
                Meta {
                    kind: Kind::Directory,
                    ..
                },
                _,
            )) => return Err(FsError::IsDirectory),
            Some((meta, old)) => (meta.clone(), old.clone()),
            None => (
                Meta {
                    kind: Kind::File(0),
                    uid: owner.uid,
                    gid: owner.gid,
                    mode,
                    modified: 0,
                },
                Bytes::new(),
            ),
        };
        let content = if append {
            let mut joined = old.to_vec();
            joined.extend_from_slice(&content);
            Bytes::from(joined)
        } else {
            content
        };
        meta.kind = Kind::File(content.len() as u64);
        entries.insert(path.to_owned(), (meta, content));
        Ok(())
    }

    fn mkdir(&self, path: &str, mode: u32, owner: Owner) -> Result<(), FsError> {
        let mut entries = self.lock();
        if entries.contains_key(path) {
            return Err(FsError::Exists);
        }
        Self::parent_dir(&entries, path)?;
        let meta = Meta {
            kind: Kind::Directory,
            uid: owner.uid,
            gid: owner.gid,
            mode,
            modified: 0,
        };
        entries.insert(path.to_owned(), (meta, Bytes::new()));
        Ok(())
    }

    fn symlink(&self, target: &str, path: &str, owner: Owner) -> Result<(), FsError> {
        let mut entries = self.lock();
        if entries.contains_key(path) {
            return Err(FsError::Exists);
        }
        Self::parent_dir(&entries, path)?;
        let meta = Meta {
            kind: Kind::Symlink(target.to_owned()),
            uid: owner.uid,
            gid: owner.gid,
            mode: 0o777,
            modified: 0,
        };
        entries.insert(path.to_owned(), (meta, Bytes::new()));
        Ok(())
    }

    fn remove(&self, path: &str) -> Result<(), FsError> {
        let mut entries = self.lock();
        let (meta, _) = entries.get(path).ok_or(FsError::NotFound)?;
        if meta.kind == Kind::Directory && !Self::children(&entries, path).is_empty() {
            return Err(FsError::NotEmpty);
        }
        entries.remove(path);
        Ok(())
    }

    fn rename(&self, from: &str, to: &str) -> Result<(), FsError> {
        let mut entries = self.lock();
        if !entries.contains_key(from) {
            return Err(FsError::NotFound);
        }
        Self::parent_dir(&entries, to)?;
        if to.starts_with(&format!("{from}/")) {
            return Err(FsError::Invalid);
        }
        if let Some((meta, _)) = entries.get(to) {
            if meta.kind == Kind::Directory && !Self::children(&entries, to).is_empty() {
                return Err(FsError::NotEmpty);
            }
        }
        entries.remove(to);
        let prefix = format!("{from}/");
        let moved: Vec<String> = entries
            .keys()
            .filter(|p| *p == from || p.starts_with(&prefix))
            .cloned()
            .collect();
        for path in moved {
            if let Some(entry) = entries.remove(&path) {
                entries.insert(format!("{to}{}", &path[from.len()..]), entry);
            }
        }
        Ok(())
    }

    fn set_mode(&self, path: &str, mode: u32) -> Result<(), FsError> {
        let mut entries = self.lock();
        let (meta, _) = entries.get_mut(path).ok_or(FsError::NotFound)?;
        meta.mode = mode & 0o7777;
        Ok(())
    }

    fn set_owner(&self, path: &str, owner: Owner) -> Result<(), FsError> {
        let mut entries = self.lock();
        let (meta, _) = entries.get_mut(path).ok_or(FsError::NotFound)?;
        meta.uid = owner.uid;
        meta.gid = owner.gid;
        Ok(())
    }

    fn set_modified(&self, path: &str, modified: i64) -> Result<(), FsError> {
        let mut entries = self.lock();
        let (meta, _) = entries.get_mut(path).ok_or(FsError::NotFound)?;
        meta.modified = modified;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (the file system the shell runs on); a
    //! command run through the fake's exec goes in fake-incus's tests.

    use super::*;

    #[test]
    fn paths_are_made_absolute_and_clean() {
        assert_eq!(absolute("/root", "a/./b/../c"), "/root/a/c");
        assert_eq!(absolute("/root", "/x//y/"), "/x/y");
        assert_eq!(absolute("/", ".."), "/");
        assert_eq!(base_name("/a/b/"), "b");
        assert_eq!(base_name("/"), "/");
        assert_eq!(parent("/a/b"), "/a");
        assert_eq!(parent("/a"), "/");
    }

    #[test]
    fn symbolic_links_are_followed_on_the_way_and_at_the_end_when_asked() {
        let fs = Fs(MemoryFs::busybox());
        assert_eq!(fs.resolve("/bin/sh", true).unwrap(), "/bin/busybox");
        assert_eq!(fs.resolve("/bin/sh", false).unwrap(), "/bin/sh");
        assert_eq!(fs.resolve("/sbin/init", true).unwrap(), "/bin/busybox");
        assert_eq!(fs.resolve("/tmp/new", true).unwrap(), "/tmp/new");
        assert_eq!(
            fs.resolve("/etc/inittab/x", true),
            Err(FsError::NotDirectory)
        );
        fs.0.symlink("/tmp/loop", "/tmp/loop", Owner::default())
            .unwrap();
        assert_eq!(fs.resolve("/tmp/loop", true), Err(FsError::Loop));
        assert!(fs.list("/dev").unwrap().contains(&"null".to_owned()));
    }
}
