//! Instance filesystems: one in-memory tree per instance (and per snapshot), for the file API
//! (`/1.0/instances/{name}/files`) and SFTP (`/1.0/instances/{name}/sftp`, what `incus file`
//! uses).
//!
//! An instance that no file request has touched has no tree: it reads as the skeleton of the
//! busybox test image (`/bin`, `/dev`, `/etc`, `/proc`, `/root`, `/sbin`, `/sys`, `/tmp`). A
//! tree is bounded: at most [`TREE_LIMIT`] bytes (file contents plus [`ENTRY_COST`] per entry)
//! and [`ENTRY_LIMIT`] entries; a write past that fails like a full disk. Trees live beside the
//! state (not in its dump or seed), keyed by project and instance: they go with the instance
//! when it is deleted, follow a rename, are copied by `incus copy`, and a snapshot keeps the
//! tree it was taken with, which a restore brings back (the daemon snapshots the rootfs).
//! Snapshots share file contents with the instance (`Bytes` are reference counted).

use bytes::Bytes;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use time::OffsetDateTime;

pub(crate) mod stored;

/// Most bytes one tree holds (16 MiB, counting [`ENTRY_COST`] per entry).
pub(crate) const TREE_LIMIT: usize = 16 << 20;
/// Most entries one tree holds.
pub(crate) const ENTRY_LIMIT: usize = 10_000;
/// What one entry counts against [`TREE_LIMIT`] besides its content.
pub(crate) const ENTRY_COST: usize = 256;

/// What an entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    File(Bytes),
    Directory,
    /// A symbolic link to this target (as written).
    Symlink(String),
}

impl Kind {
    /// The `X-Incus-type` name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::File(_) => "file",
            Self::Directory => "directory",
            Self::Symlink(_) => "symlink",
        }
    }
}

/// One entry with its owner, mode and modification time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Node {
    pub(crate) kind: Kind,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    /// Permission bits (`0o644`).
    pub(crate) mode: u32,
    pub(crate) modified: OffsetDateTime,
}

impl Node {
    pub(crate) fn new(kind: Kind, mode: u32) -> Self {
        Self {
            kind,
            uid: 0,
            gid: 0,
            mode,
            modified: OffsetDateTime::now_utc(),
        }
    }
    fn cost(&self) -> usize {
        ENTRY_COST
            + match &self.kind {
                Kind::File(content) => content.len(),
                Kind::Symlink(target) => target.len(),
                Kind::Directory => 0,
            }
    }
}

/// Why a file operation failed; [`FileError::status`] and the message are the daemon's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FileError {
    /// The path, or a parent directory, does not exist.
    #[error("Not Found")]
    NotFound,
    #[error("sftp: \"open {0}: is a directory\" (SSH_FX_FAILURE)")]
    IsDirectory(String),
    #[error("sftp: \"remove {0}: directory not empty\" (SSH_FX_FAILURE)")]
    NotEmpty(String),
    /// Over [`TREE_LIMIT`] or [`ENTRY_LIMIT`].
    #[error("sftp: \"write {0}: no space left on device\" (SSH_FX_FAILURE)")]
    Full(String),
}

impl FileError {
    /// The HTTP status the daemon answers with.
    pub(crate) fn status(&self) -> u16 {
        match self {
            Self::NotFound => 404,
            _ => 500,
        }
    }
}

/// Owner and mode given with a write; `None` keeps an existing entry's (or the default).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Attrs {
    pub(crate) uid: Option<u32>,
    pub(crate) gid: Option<u32>,
    pub(crate) mode: Option<u32>,
}

/// A path made absolute and clean: `srv//a/./b/../c` is `/srv/a/c`.
pub(crate) fn clean(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
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

fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// One instance's filesystem. Cloning is cheap: the entries are shared until one of the copies
/// changes (copy-on-write), so an image's instances and their snapshots cost one tree until they
/// write.
#[derive(Debug, Clone)]
pub(crate) struct Tree {
    nodes: Arc<BTreeMap<String, Node>>,
    used: usize,
}

impl Default for Tree {
    fn default() -> Self {
        Self::skeleton()
    }
}

impl Tree {
    /// An empty tree (not even `/`): what an image's rootfs is built on.
    pub(crate) fn empty() -> Self {
        Self {
            nodes: Arc::new(BTreeMap::new()),
            used: 0,
        }
    }

    /// The busybox test image (`ci/busybox-image.sh`): its top-level directories, `/bin/busybox`
    /// (a placeholder: the shell knows busybox by its name) with its applets linked in `/bin`,
    /// `/sbin/init` and `/etc/inittab`.
    pub(crate) fn skeleton() -> Self {
        let mut tree = Self::empty();
        // As the daemon shows them in the busybox test image: every one root's, mode 0755.
        for (path, mode) in [
            ("/", 0o755),
            ("/bin", 0o755),
            ("/dev", 0o755),
            ("/etc", 0o755),
            ("/proc", 0o755),
            ("/root", 0o755),
            ("/sbin", 0o755),
            ("/sys", 0o755),
            ("/tmp", 0o755),
        ] {
            tree.insert(path.to_string(), Node::new(Kind::Directory, mode));
        }
        let busybox = Bytes::from_static(fake_shell::fs::BUSYBOX_PLACEHOLDER);
        tree.insert("/bin/busybox".into(), Node::new(Kind::File(busybox), 0o755));
        for applet in fake_shell::fs::BUSYBOX_IMAGE_LINKS {
            let link = Node::new(Kind::Symlink("busybox".into()), 0o777);
            tree.insert(format!("/bin/{applet}"), link);
        }
        let init = Node::new(Kind::Symlink("../bin/busybox".into()), 0o777);
        tree.insert("/sbin/init".into(), init);
        let inittab = Bytes::from_static(fake_shell::fs::BUSYBOX_INITTAB);
        tree.insert("/etc/inittab".into(), Node::new(Kind::File(inittab), 0o644));
        tree
    }

    fn insert(&mut self, path: String, node: Node) {
        self.used += node.cost();
        if let Some(old) = Arc::make_mut(&mut self.nodes).insert(path, node) {
            self.used -= old.cost();
        }
    }

    /// Adds an entry of an image's rootfs as it was archived (mode, owner, time kept); the
    /// parents are made as directories when the archive does not list them first.
    pub(crate) fn add_archived(&mut self, path: &str, node: Node) -> Result<(), FileError> {
        let path = clean(path);
        let mut at = String::new();
        for part in path.split('/').filter(|p| !p.is_empty()) {
            let parent = if at.is_empty() {
                "/".to_string()
            } else {
                at.clone()
            };
            if !self.nodes.contains_key(&parent) {
                self.fits(&parent, &Node::new(Kind::Directory, 0o755))?;
                self.insert(parent, Node::new(Kind::Directory, 0o755));
            }
            at.push('/');
            at.push_str(part);
        }
        self.fits(&path, &node)?;
        self.insert(path, node);
        Ok(())
    }

    /// A tree holding `executables` (absolute paths; empty files, mode 0755) under their
    /// directories, with the runtime's `/dev`, `/proc` and `/sys`.
    pub(crate) fn of_executables(executables: &[String]) -> Self {
        let mut tree = Self::empty();
        tree.insert("/".into(), Node::new(Kind::Directory, 0o755));
        for dir in ["/dev", "/proc", "/sys"] {
            tree.insert(dir.into(), Node::new(Kind::Directory, 0o755));
        }
        for path in executables {
            let file = Node::new(Kind::File(Bytes::new()), 0o755);
            if tree.add_archived(path, file).is_err() {
                break;
            }
        }
        tree
    }

    /// Every entry by path, in path order (parents before their children).
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&String, &Node)> {
        self.nodes.iter()
    }

    /// Whether the tree holds an entry at all (an image's rootfs that had no entries has none).
    pub(crate) fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The entry at `path` (cleaned), not following a symlink.
    pub(crate) fn get(&self, path: &str) -> Option<&Node> {
        self.nodes.get(&clean(path))
    }

    /// The names directly in the directory `path`, sorted.
    pub(crate) fn list(&self, path: &str) -> Vec<String> {
        let dir = clean(path);
        let prefix = if dir == "/" {
            "/".to_string()
        } else {
            format!("{dir}/")
        };
        self.nodes
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .filter_map(|(p, _)| {
                let rest = &p[prefix.len()..];
                (!rest.is_empty() && !rest.contains('/')).then(|| rest.to_string())
            })
            .collect()
    }

    /// Bytes in use (contents and entries).
    #[cfg(test)]
    pub(crate) fn used(&self) -> usize {
        self.used
    }

    fn parent_is_directory(&self, path: &str) -> bool {
        path != "/"
            && self
                .nodes
                .get(parent(path))
                .is_some_and(|n| n.kind == Kind::Directory)
    }

    fn fits(&self, path: &str, node: &Node) -> Result<(), FileError> {
        let old = self.nodes.get(path);
        let after = self.used - old.map_or(0, Node::cost) + node.cost();
        let entries = self.nodes.len() + usize::from(old.is_none());
        if after > TREE_LIMIT || entries > ENTRY_LIMIT {
            return Err(FileError::Full(path.to_string()));
        }
        Ok(())
    }

    /// Writes a file (replacing its content, or appending to it). A new file is owned by
    /// root with mode `0644` unless `attrs` says otherwise; an existing one keeps what
    /// `attrs` does not set. The parent must be a directory.
    pub(crate) fn write(
        &mut self,
        path: &str,
        content: Bytes,
        attrs: Attrs,
        append: bool,
    ) -> Result<(), FileError> {
        let path = clean(path);
        if !self.parent_is_directory(&path) {
            return Err(FileError::NotFound);
        }
        let existing = self.nodes.get(&path).cloned();
        let mut node = match existing {
            Some(Node {
                kind: Kind::Directory,
                ..
            }) => return Err(FileError::IsDirectory(path)),
            Some(
                node @ Node {
                    kind: Kind::File(_),
                    ..
                },
            ) => node,
            _ => Node::new(Kind::File(Bytes::new()), 0o644),
        };
        let content = match (&node.kind, append) {
            (Kind::File(old), true) => {
                let mut joined = Vec::with_capacity(old.len() + content.len());
                joined.extend_from_slice(old);
                joined.extend_from_slice(&content);
                Bytes::from(joined)
            }
            _ => content,
        };
        node.kind = Kind::File(content);
        apply(&mut node, attrs);
        self.fits(&path, &node)?;
        self.insert(path, node);
        Ok(())
    }

    /// Creates a directory (an existing entry is left as it is, like the daemon). The parent
    /// must be a directory.
    pub(crate) fn mkdir(&mut self, path: &str, attrs: Attrs) -> Result<(), FileError> {
        let path = clean(path);
        if self.nodes.contains_key(&path) {
            return Ok(());
        }
        if !self.parent_is_directory(&path) {
            return Err(FileError::NotFound);
        }
        let mut node = Node::new(Kind::Directory, 0o755);
        apply(&mut node, attrs);
        self.fits(&path, &node)?;
        self.insert(path, node);
        Ok(())
    }

    /// Creates (or replaces) a symlink to `target`. The parent must be a directory.
    pub(crate) fn symlink(
        &mut self,
        path: &str,
        target: &str,
        attrs: Attrs,
    ) -> Result<(), FileError> {
        let path = clean(path);
        if !self.parent_is_directory(&path) {
            return Err(FileError::NotFound);
        }
        if self
            .nodes
            .get(&path)
            .is_some_and(|n| n.kind == Kind::Directory)
        {
            return Err(FileError::IsDirectory(path));
        }
        let mut node = Node::new(Kind::Symlink(target.to_string()), 0o777);
        node.uid = attrs.uid.unwrap_or(0);
        node.gid = attrs.gid.unwrap_or(0);
        self.fits(&path, &node)?;
        self.insert(path, node);
        Ok(())
    }

    /// Puts a copy of an entry (not a directory) at a new path, as a hard link's second name;
    /// the parent must be a directory. The two are apart from then on (the tree has no inodes).
    pub(crate) fn link(&mut self, path: &str, node: Node) -> Result<(), FileError> {
        let path = clean(path);
        if !self.parent_is_directory(&path) {
            return Err(FileError::NotFound);
        }
        if node.kind == Kind::Directory {
            return Err(FileError::IsDirectory(path));
        }
        self.fits(&path, &node)?;
        self.insert(path, node);
        Ok(())
    }

    /// Removes a file, a symlink or an empty directory.
    pub(crate) fn remove(&mut self, path: &str) -> Result<(), FileError> {
        let path = clean(path);
        let node = self.nodes.get(&path).ok_or(FileError::NotFound)?;
        if node.kind == Kind::Directory && (path == "/" || !self.list(&path).is_empty()) {
            return Err(FileError::NotEmpty(path));
        }
        if let Some(old) = Arc::make_mut(&mut self.nodes).remove(&path) {
            self.used -= old.cost();
        }
        Ok(())
    }

    /// Renames an entry (a directory with everything under it); the new parent must be a
    /// directory and the new path free or a file.
    pub(crate) fn rename(&mut self, from: &str, to: &str) -> Result<(), FileError> {
        let (from, to) = (clean(from), clean(to));
        if !self.nodes.contains_key(&from) || !self.parent_is_directory(&to) {
            return Err(FileError::NotFound);
        }
        if to.starts_with(&format!("{from}/")) || from == "/" {
            return Err(FileError::NotFound);
        }
        if self
            .nodes
            .get(&to)
            .is_some_and(|n| n.kind == Kind::Directory)
        {
            return Err(FileError::IsDirectory(to));
        }
        let prefix = format!("{from}/");
        let moved: Vec<String> = self
            .nodes
            .keys()
            .filter(|p| **p == from || p.starts_with(&prefix))
            .cloned()
            .collect();
        let nodes = Arc::make_mut(&mut self.nodes);
        if let Some(old) = nodes.remove(&to) {
            self.used -= old.cost();
        }
        for path in moved {
            if let Some(node) = nodes.remove(&path) {
                let new = format!("{to}{}", &path[from.len()..]);
                nodes.insert(new, node);
            }
        }
        Ok(())
    }

    /// Changes owner and mode.
    pub(crate) fn set_attrs(&mut self, path: &str, attrs: Attrs) -> Result<(), FileError> {
        let node = Arc::make_mut(&mut self.nodes)
            .get_mut(&clean(path))
            .ok_or(FileError::NotFound)?;
        apply(node, attrs);
        Ok(())
    }

    /// Sets an entry's modification time.
    pub(crate) fn set_modified(
        &mut self,
        path: &str,
        when: OffsetDateTime,
    ) -> Result<(), FileError> {
        let node = Arc::make_mut(&mut self.nodes)
            .get_mut(&clean(path))
            .ok_or(FileError::NotFound)?;
        node.modified = when;
        Ok(())
    }
}

fn apply(node: &mut Node, attrs: Attrs) {
    if let Some(uid) = attrs.uid {
        node.uid = uid;
    }
    if let Some(gid) = attrs.gid {
        node.gid = gid;
    }
    if let Some(mode) = attrs.mode {
        node.mode = mode & 0o7777;
    }
    node.modified = OffsetDateTime::now_utc();
}

/// Which tree: an instance's (`snapshot: None`) or one of its snapshots'.
type Key = (String, String, Option<String>);

/// Every tree, by project, instance and snapshot, and the rootfs of each imported image by
/// fingerprint (an instance created from the image starts with a copy-on-write clone of it).
///
/// Cloning is cheap (the trees are shared copy-on-write). `version` counts the changes (see
/// [`Files::touch`]): it only grows, a replacement included, so that "changed since" is one
/// comparison.
#[derive(Debug, Default, Clone)]
pub(crate) struct Files {
    trees: BTreeMap<Key, Tree>,
    images: BTreeMap<String, Tree>,
    /// The files each image was imported or published as (what its export sends back).
    image_files: BTreeMap<String, ImageFiles>,
    /// Each instance backup's tarball, keyed like the trees with the backup's name.
    backups: BTreeMap<Key, Bytes>,
    /// Each custom volume's tree (API extension `file_storage_volume`), by project (the one that
    /// owns the volume), pool and volume.
    volumes: BTreeMap<VolumeKey, Tree>,
    version: u64,
}

/// Which custom volume: its owning project, its pool and its name.
type VolumeKey = (String, String, String);

/// Whose file tree a request reads or writes: an instance's or a custom volume's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Owner {
    Instance {
        project: String,
        instance: String,
    },
    Volume {
        project: String,
        pool: String,
        volume: String,
    },
}

impl Owner {
    /// The tree of an owner nothing was written to yet: an instance reads as the busybox
    /// image's skeleton, a new volume is an empty directory.
    pub(crate) fn fresh(&self) -> Tree {
        match self {
            Self::Instance { .. } => Tree::skeleton(),
            Self::Volume { .. } => {
                let mut tree = Tree::empty();
                tree.insert("/".into(), Node::new(Kind::Directory, 0o711));
                tree
            }
        }
    }
}

/// The files of an image as uploaded or published: one unified tarball, or the metadata tarball
/// and the rootfs of a split image.
#[derive(Debug, Clone)]
pub(crate) enum ImageFiles {
    Unified(Bytes),
    Split { metadata: Bytes, rootfs: Bytes },
}

fn key(project: &str, instance: &str, snapshot: Option<&str>) -> Key {
    (
        project.to_string(),
        instance.to_string(),
        snapshot.map(str::to_string),
    )
}

impl Files {
    /// Counts a change (whoever takes the files for a change calls it: the app's guard, and
    /// [`InstanceFs`] for exec's writes).
    pub(crate) fn touch(&mut self) {
        self.version += 1;
    }

    /// How many changes were counted so far.
    pub(crate) fn version(&self) -> u64 {
        self.version
    }

    /// Takes `other`'s trees and images, counting it as one more change (the version never
    /// goes back, whatever `other` counted).
    pub(crate) fn replace(&mut self, other: Files) {
        let version = self.version.max(other.version) + 1;
        *self = Self { version, ..other };
    }

    /// The owner's tree as it was written (`None`: untouched, see [`Owner::fresh`]).
    pub(crate) fn tree_of_owner(&self, owner: &Owner) -> Option<&Tree> {
        match owner {
            Owner::Instance { project, instance } => self.tree(project, instance),
            Owner::Volume {
                project,
                pool,
                volume,
            } => self
                .volumes
                .get(&(project.clone(), pool.clone(), volume.clone())),
        }
    }

    /// The owner's tree to change (made from [`Owner::fresh`] when untouched).
    pub(crate) fn tree_of_owner_mut(&mut self, owner: &Owner) -> &mut Tree {
        match owner {
            Owner::Instance { project, instance } => self.tree_mut(project, instance),
            Owner::Volume {
                project,
                pool,
                volume,
            } => self
                .volumes
                .entry((project.clone(), pool.clone(), volume.clone()))
                .or_insert_with(|| owner.fresh()),
        }
    }

    /// Drops a custom volume's files (the volume was deleted, made anew or rebuilt).
    pub(crate) fn remove_volume(&mut self, project: &str, pool: &str, volume: &str) {
        self.volumes
            .remove(&(project.to_string(), pool.to_string(), volume.to_string()));
    }

    /// The instance's tree as it reads now (the skeleton when untouched).
    pub(crate) fn tree(&self, project: &str, instance: &str) -> Option<&Tree> {
        self.trees.get(&key(project, instance, None))
    }

    /// The instance's tree, for a change (created from the skeleton on first use).
    pub(crate) fn tree_mut(&mut self, project: &str, instance: &str) -> &mut Tree {
        self.trees.entry(key(project, instance, None)).or_default()
    }

    /// Drops the trees of an instance and of its snapshots, and its backups.
    pub(crate) fn remove_instance(&mut self, project: &str, instance: &str) {
        self.trees
            .retain(|(p, i, _), _| !(p == project && i == instance));
        self.backups
            .retain(|(p, i, _), _| !(p == project && i == instance));
    }

    /// Records a backup's tarball (`None`: drops it).
    pub(crate) fn set_backup(
        &mut self,
        project: &str,
        instance: &str,
        backup: &str,
        tarball: Option<Bytes>,
    ) {
        let key = key(project, instance, Some(backup));
        match tarball {
            Some(tarball) => self.backups.insert(key, tarball),
            None => self.backups.remove(&key),
        };
    }

    /// A backup's tarball.
    pub(crate) fn backup(&self, project: &str, instance: &str, backup: &str) -> Option<Bytes> {
        self.backups
            .get(&key(project, instance, Some(backup)))
            .cloned()
    }

    /// Moves an instance's trees (its snapshots' too) to its new name.
    pub(crate) fn rename_instance(&mut self, project: &str, old: &str, new: &str) {
        let backups: Vec<Key> = self
            .backups
            .keys()
            .filter(|(p, i, _)| p == project && i == old)
            .cloned()
            .collect();
        for from in backups {
            if let Some(tarball) = self.backups.remove(&from) {
                self.backups
                    .insert((from.0, new.to_string(), from.2), tarball);
            }
        }
        self.remove_instance(project, new);
        let moved: Vec<Key> = self
            .trees
            .keys()
            .filter(|(p, i, _)| p == project && i == old)
            .cloned()
            .collect();
        for (p, _, snapshot) in moved {
            if let Some(tree) = self
                .trees
                .remove(&(p.clone(), old.to_string(), snapshot.clone()))
            {
                self.trees.insert((p, new.to_string(), snapshot), tree);
            }
        }
    }

    /// Copies an instance's tree (and, with `snapshots`, those of its snapshots) to another
    /// instance, replacing whatever that one had.
    pub(crate) fn copy_instance(&mut self, project: &str, from: &str, to: &str, snapshots: bool) {
        self.remove_instance(project, to);
        let copied: Vec<(Key, Tree)> = self
            .trees
            .iter()
            .filter(|((p, i, s), _)| p == project && i == from && (snapshots || s.is_none()))
            .map(|((p, _, s), tree)| ((p.clone(), to.to_string(), s.clone()), tree.clone()))
            .collect();
        self.trees.extend(copied);
    }

    /// Records the instance's tree as the snapshot's.
    pub(crate) fn take_snapshot(&mut self, project: &str, instance: &str, snapshot: &str) {
        let snap = key(project, instance, Some(snapshot));
        match self.trees.get(&key(project, instance, None)).cloned() {
            Some(tree) => {
                self.trees.insert(snap, tree);
            }
            None => {
                self.trees.remove(&snap);
            }
        }
    }

    /// Drops a snapshot's tree.
    pub(crate) fn remove_snapshot(&mut self, project: &str, instance: &str, snapshot: &str) {
        self.trees.remove(&key(project, instance, Some(snapshot)));
    }

    /// Brings the snapshot's tree back as the instance's.
    pub(crate) fn restore(&mut self, project: &str, instance: &str, snapshot: &str) {
        let live = key(project, instance, None);
        match self
            .trees
            .get(&key(project, instance, Some(snapshot)))
            .cloned()
        {
            Some(tree) => {
                self.trees.insert(live, tree);
            }
            None => {
                self.trees.remove(&live);
            }
        }
    }

    /// Moves a snapshot's tree to its new name.
    pub(crate) fn rename_snapshot(&mut self, project: &str, instance: &str, old: &str, new: &str) {
        let tree = self.trees.remove(&key(project, instance, Some(old)));
        self.set_tree(project, instance, Some(new), tree);
    }

    /// A copy of the tree of an instance or of one of its snapshots (`None`: never written, the
    /// skeleton).
    pub(crate) fn tree_of(
        &self,
        project: &str,
        instance: &str,
        snapshot: Option<&str>,
    ) -> Option<Tree> {
        self.trees.get(&key(project, instance, snapshot)).cloned()
    }

    /// Sets (or, with `None`, resets to the skeleton) the tree of an instance or a snapshot.
    pub(crate) fn set_tree(
        &mut self,
        project: &str,
        instance: &str,
        snapshot: Option<&str>,
        tree: Option<Tree>,
    ) {
        let key = key(project, instance, snapshot);
        match tree {
            Some(tree) => self.trees.insert(key, tree),
            None => self.trees.remove(&key),
        };
    }

    /// Moves an instance's trees (its snapshots' too) to another project and name.
    pub(crate) fn move_instance(&mut self, from: (&str, &str), to: (&str, &str)) {
        self.remove_instance(to.0, to.1);
        let moved: Vec<Key> = self
            .trees
            .keys()
            .filter(|(p, i, _)| p == from.0 && i == from.1)
            .cloned()
            .collect();
        for old in moved {
            if let Some(tree) = self.trees.remove(&old) {
                self.trees
                    .insert((to.0.to_string(), to.1.to_string(), old.2), tree);
            }
        }
    }

    /// Records the files an image came as.
    pub(crate) fn set_image_files(&mut self, fingerprint: &str, files: ImageFiles) {
        self.image_files.insert(fingerprint.to_string(), files);
    }

    /// The files an image came as, if the fake has them.
    pub(crate) fn image_files(&self, fingerprint: &str) -> Option<ImageFiles> {
        self.image_files.get(fingerprint).cloned()
    }

    /// Records an imported image's rootfs.
    pub(crate) fn set_image(&mut self, fingerprint: &str, rootfs: Tree) {
        self.images.insert(fingerprint.to_string(), rootfs);
    }

    /// A new instance's files: the rootfs of the image it is created from (shared until written),
    /// or the busybox skeleton when the fake has no rootfs for it; never a former namesake's.
    /// An image seeded with a list of executables and no rootfs gives a tree of those files (empty,
    /// mode 0755) with their directories and the runtime's `/dev`, `/proc` and `/sys`.
    pub(crate) fn create_instance(
        &mut self,
        project: &str,
        instance: &str,
        image: Option<&str>,
        executables: Option<&[String]>,
    ) {
        self.remove_instance(project, instance);
        let rootfs = self.rootfs(image, executables);
        self.set_tree(project, instance, None, rootfs);
    }

    /// The tree an instance of an image starts with (`None`: the skeleton).
    pub(crate) fn rootfs(
        &self,
        image: Option<&str>,
        executables: Option<&[String]>,
    ) -> Option<Tree> {
        match image.and_then(|fingerprint| self.images.get(fingerprint)) {
            Some(rootfs) => Some(rootfs.clone()),
            None => executables.map(Tree::of_executables),
        }
    }
}

/// One instance's files as exec reaches them: the tree `incus file` and SFTP use, locked for each
/// call.
#[derive(Debug, Clone)]
pub(crate) struct InstanceFs {
    files: Arc<Mutex<Files>>,
    project: String,
    instance: String,
}

impl InstanceFs {
    pub(crate) fn new(files: Arc<Mutex<Files>>, project: &str, instance: &str) -> Self {
        Self {
            files,
            project: project.to_string(),
            instance: instance.to_string(),
        }
    }

    fn read<T>(&self, f: impl FnOnce(&Tree) -> T) -> T {
        let files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        match files.tree(&self.project, &self.instance) {
            Some(tree) => f(tree),
            None => f(&Tree::skeleton()),
        }
    }

    fn change<T>(&self, f: impl FnOnce(&mut Tree) -> T) -> T {
        let mut files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        files.touch();
        f(files.tree_mut(&self.project, &self.instance))
    }
}

fn fs_error(error: FileError) -> fake_shell::FsError {
    match error {
        FileError::NotFound => fake_shell::FsError::NotFound,
        FileError::IsDirectory(_) => fake_shell::FsError::IsDirectory,
        FileError::NotEmpty(_) => fake_shell::FsError::NotEmpty,
        FileError::Full(_) => fake_shell::FsError::NoSpace,
    }
}

fn meta_of(node: &Node) -> fake_shell::Meta {
    fake_shell::Meta {
        kind: match &node.kind {
            Kind::File(content) => fake_shell::Kind::File(content.len() as u64),
            Kind::Directory => fake_shell::Kind::Directory,
            Kind::Symlink(target) => fake_shell::Kind::Symlink(target.clone()),
        },
        uid: node.uid,
        gid: node.gid,
        mode: node.mode,
        modified: node.modified.unix_timestamp(),
    }
}

impl fake_shell::FileSystem for InstanceFs {
    fn lstat(&self, path: &str) -> Result<fake_shell::Meta, fake_shell::FsError> {
        self.read(|tree| tree.get(path).map(meta_of))
            .ok_or(fake_shell::FsError::NotFound)
    }

    fn read(&self, path: &str) -> Result<Bytes, fake_shell::FsError> {
        self.read(|tree| match tree.get(path).map(|n| &n.kind) {
            Some(Kind::File(content)) => Ok(content.clone()),
            Some(_) => Err(fake_shell::FsError::IsDirectory),
            None => Err(fake_shell::FsError::NotFound),
        })
    }

    fn list(&self, path: &str) -> Result<Vec<String>, fake_shell::FsError> {
        self.read(|tree| match tree.get(path).map(|n| &n.kind) {
            Some(Kind::Directory) => Ok(tree.list(path)),
            Some(_) => Err(fake_shell::FsError::NotDirectory),
            None => Err(fake_shell::FsError::NotFound),
        })
    }

    fn write(
        &self,
        path: &str,
        content: Bytes,
        append: bool,
        mode: u32,
        owner: fake_shell::Owner,
    ) -> Result<(), fake_shell::FsError> {
        self.change(|tree| {
            let attrs = match tree.get(path) {
                Some(_) => Attrs::default(),
                None => Attrs {
                    uid: Some(owner.uid),
                    gid: Some(owner.gid),
                    mode: Some(mode),
                },
            };
            tree.write(path, content, attrs, append).map_err(fs_error)
        })
    }

    fn mkdir(
        &self,
        path: &str,
        mode: u32,
        owner: fake_shell::Owner,
    ) -> Result<(), fake_shell::FsError> {
        self.change(|tree| {
            if tree.get(path).is_some() {
                return Err(fake_shell::FsError::Exists);
            }
            let attrs = Attrs {
                uid: Some(owner.uid),
                gid: Some(owner.gid),
                mode: Some(mode),
            };
            tree.mkdir(path, attrs).map_err(fs_error)
        })
    }

    fn symlink(
        &self,
        target: &str,
        path: &str,
        owner: fake_shell::Owner,
    ) -> Result<(), fake_shell::FsError> {
        self.change(|tree| {
            if tree.get(path).is_some() {
                return Err(fake_shell::FsError::Exists);
            }
            let attrs = Attrs {
                uid: Some(owner.uid),
                gid: Some(owner.gid),
                mode: None,
            };
            tree.symlink(path, target, attrs).map_err(fs_error)
        })
    }

    fn remove(&self, path: &str) -> Result<(), fake_shell::FsError> {
        self.change(|tree| tree.remove(path).map_err(fs_error))
    }

    fn rename(&self, from: &str, to: &str) -> Result<(), fake_shell::FsError> {
        self.change(|tree| {
            if let (Some(a), Some(b)) = (tree.get(from), tree.get(to)) {
                if b.kind == Kind::Directory && a.kind != Kind::Directory {
                    return Err(fake_shell::FsError::IsDirectory);
                }
                if b.kind == Kind::Directory && !tree.list(to).is_empty() {
                    return Err(fake_shell::FsError::NotEmpty);
                }
                if b.kind == Kind::Directory {
                    tree.remove(to).map_err(fs_error)?;
                }
            }
            tree.rename(from, to).map_err(fs_error)
        })
    }

    fn set_mode(&self, path: &str, mode: u32) -> Result<(), fake_shell::FsError> {
        let attrs = Attrs {
            mode: Some(mode),
            ..Attrs::default()
        };
        self.change(|tree| tree.set_attrs(path, attrs).map_err(fs_error))
    }

    fn set_owner(&self, path: &str, owner: fake_shell::Owner) -> Result<(), fake_shell::FsError> {
        let attrs = Attrs {
            uid: Some(owner.uid),
            gid: Some(owner.gid),
            mode: None,
        };
        self.change(|tree| tree.set_attrs(path, attrs).map_err(fs_error))
    }

    fn set_modified(&self, path: &str, modified: i64) -> Result<(), fake_shell::FsError> {
        let when = OffsetDateTime::from_unix_timestamp(modified)
            .map_err(|_| fake_shell::FsError::Invalid)?;
        self.change(|tree| tree.set_modified(path, when).map_err(fs_error))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_needs_a_directory_parent_and_keeps_an_existing_files_owner_and_mode() {
        let mut tree = Tree::skeleton();
        let attrs = Attrs {
            uid: Some(1000),
            gid: Some(1001),
            mode: Some(0o600),
        };
        assert_eq!(
            tree.write("/nodir/x", Bytes::from_static(b"x"), attrs, false),
            Err(FileError::NotFound)
        );
        tree.write("tmp/a", Bytes::from_static(b"ab"), attrs, false)
            .unwrap();
        tree.write("/tmp/a", Bytes::from_static(b"c"), Attrs::default(), true)
            .unwrap();
        let node = tree.get("/tmp/a").unwrap();
        assert_eq!(node.kind, Kind::File(Bytes::from_static(b"abc")));
        assert_eq!((node.uid, node.gid, node.mode), (1000, 1001, 0o600));
        assert_eq!(
            tree.write("/tmp", Bytes::new(), Attrs::default(), false),
            Err(FileError::IsDirectory("/tmp".into()))
        );
        assert_eq!(tree.list("/tmp"), vec!["a".to_string()]);
        assert_eq!(
            tree.list("/"),
            ["bin", "dev", "etc", "proc", "root", "sbin", "sys", "tmp"]
        );
        assert_eq!(tree.list("/sbin"), ["init"]);
        assert!(tree.list("/bin").contains(&"busybox".to_string()));
    }

    #[test]
    fn a_directory_is_removed_only_when_empty() {
        let mut tree = Tree::skeleton();
        tree.mkdir("/root/d", Attrs::default()).unwrap();
        tree.write(
            "/root/d/f",
            Bytes::from_static(b"x"),
            Attrs::default(),
            false,
        )
        .unwrap();
        assert_eq!(
            tree.remove("/root/d"),
            Err(FileError::NotEmpty("/root/d".into()))
        );
        tree.remove("/root/d/f").unwrap();
        tree.remove("/root/d").unwrap();
        assert_eq!(tree.remove("/root/d"), Err(FileError::NotFound));
    }

    #[test]
    fn a_tree_refuses_writes_past_its_limit_and_frees_what_is_removed() {
        let mut tree = Tree::skeleton();
        let big = Bytes::from(vec![0u8; TREE_LIMIT / 2]);
        tree.write("/tmp/a", big.clone(), Attrs::default(), false)
            .unwrap();
        assert_eq!(
            tree.write("/tmp/b", big.clone(), Attrs::default(), false),
            Err(FileError::Full("/tmp/b".into()))
        );
        tree.remove("/tmp/a").unwrap();
        tree.write("/tmp/b", big, Attrs::default(), false).unwrap();
        assert!(tree.used() <= TREE_LIMIT);
    }

    #[test]
    fn an_images_instances_share_its_tree_until_one_writes() {
        let mut files = Files::default();
        let mut rootfs = Tree::empty();
        let node = Node::new(Kind::File(Bytes::from_static(b"image")), 0o644);
        rootfs.add_archived("/etc/motd", node).unwrap();
        files.set_image("f1", rootfs);
        for name in ["c1", "c2"] {
            files.create_instance("default", name, Some("f1"), None);
        }
        let shared = |files: &Files| {
            let one = files.tree("default", "c1").unwrap();
            let two = files.tree("default", "c2").unwrap();
            Arc::ptr_eq(&one.nodes, &two.nodes)
        };
        assert!(shared(&files), "one tree for both instances");
        files
            .tree_mut("default", "c1")
            .write(
                "/etc/motd",
                Bytes::from_static(b"mine"),
                Attrs::default(),
                false,
            )
            .unwrap();
        assert!(!shared(&files), "the writer got its own copy");
        let motd = |name: &str| {
            files
                .tree("default", name)
                .and_then(|t| t.get("/etc/motd"))
                .map(|n| n.kind.clone())
        };
        assert_eq!(motd("c1"), Some(Kind::File(Bytes::from_static(b"mine"))));
        assert_eq!(motd("c2"), Some(Kind::File(Bytes::from_static(b"image"))));
        files.create_instance(
            "default",
            "c3",
            None,
            Some(&["/usr/bin/python3".to_string()]),
        );
        let tree = files.tree("default", "c3").unwrap();
        assert_eq!(tree.list("/"), ["dev", "proc", "sys", "usr"]);
        assert_eq!(tree.get("/usr/bin/python3").map(|n| n.mode), Some(0o755));
    }

    #[test]
    fn snapshots_keep_their_tree_and_a_restore_brings_it_back() {
        let mut files = Files::default();
        files
            .tree_mut("default", "c1")
            .write(
                "/root/f",
                Bytes::from_static(b"v1"),
                Attrs::default(),
                false,
            )
            .unwrap();
        files.take_snapshot("default", "c1", "s1");
        files
            .tree_mut("default", "c1")
            .write(
                "/root/f",
                Bytes::from_static(b"v2"),
                Attrs::default(),
                false,
            )
            .unwrap();
        files.rename_instance("default", "c1", "c2");
        assert!(files.tree("default", "c1").is_none());
        files.restore("default", "c2", "s1");
        let node = files.tree("default", "c2").and_then(|t| t.get("/root/f"));
        assert_eq!(
            node.map(|n| &n.kind),
            Some(&Kind::File(Bytes::from_static(b"v1")))
        );
        files.remove_instance("default", "c2");
        assert!(files.trees.is_empty());
    }
}
