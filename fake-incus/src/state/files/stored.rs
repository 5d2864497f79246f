//! The instances' files in the state format: every distinct tree once and every distinct file
//! content once, as the memory shares them (an image's instances and their snapshots point at
//! one tree until they write), so that a dump costs what the memory holds, not what it shows.

use super::{Files, ImageFiles, Key, Kind, Node, Tree};
use base64::Engine;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// [`Files`] as stored: `trees` and `contents` are tables the places refer to by index.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct StoredFiles {
    /// File contents, base64 (standard alphabet, padded).
    contents: Vec<String>,
    /// Each tree's entries, in path order.
    trees: Vec<Vec<StoredNode>>,
    /// Which tree each instance (or instance snapshot) has.
    instances: Vec<StoredPlace>,
    /// The rootfs tree of each imported image.
    images: Vec<StoredImage>,
    /// The files each image was uploaded or published as (indexes into `contents`).
    image_files: Vec<StoredImageFiles>,
    /// Each instance backup's tarball (an index into `contents`).
    backups: Vec<StoredBackup>,
    /// Which tree each custom volume has.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    volumes: Vec<StoredVolume>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredVolume {
    project: String,
    pool: String,
    volume: String,
    tree: usize,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredImageFiles {
    fingerprint: String,
    /// A unified tarball, or a split image's metadata tarball.
    metadata: usize,
    /// A split image's rootfs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rootfs: Option<usize>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredBackup {
    project: String,
    instance: String,
    backup: String,
    tarball: usize,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredNode {
    path: String,
    /// `file` (with `content`), `directory` or `symlink` (with `target`).
    #[serde(rename = "type")]
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    content: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    target: Option<String>,
    uid: u32,
    gid: u32,
    mode: u32,
    /// RFC 3339.
    modified: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredPlace {
    project: String,
    instance: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    snapshot: Option<String>,
    tree: usize,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredImage {
    fingerprint: String,
    tree: usize,
}

/// Builds the tables, sharing what the memory shares.
#[derive(Default)]
struct Tables {
    stored: StoredFiles,
    trees: HashMap<*const BTreeMap<String, Node>, usize>,
    contents: HashMap<(*const u8, usize), usize>,
}

impl Tables {
    fn tree(&mut self, tree: &Tree) -> usize {
        let address = Arc::as_ptr(&tree.nodes);
        if let Some(&index) = self.trees.get(&address) {
            return index;
        }
        let nodes = tree
            .nodes
            .iter()
            .map(|(path, node)| self.node(path, node))
            .collect();
        self.stored.trees.push(nodes);
        let index = self.stored.trees.len() - 1;
        self.trees.insert(address, index);
        index
    }

    fn node(&mut self, path: &str, node: &Node) -> StoredNode {
        let (kind, content, target) = match &node.kind {
            Kind::File(bytes) => ("file", Some(self.content(bytes)), None),
            Kind::Directory => ("directory", None, None),
            Kind::Symlink(target) => ("symlink", None, Some(target.clone())),
        };
        StoredNode {
            path: path.to_string(),
            kind: kind.to_string(),
            content,
            target,
            uid: node.uid,
            gid: node.gid,
            mode: node.mode,
            modified: node
                .modified
                .format(&Rfc3339)
                .unwrap_or_else(|_| super::super::clock::ZERO_TIME.to_string()),
        }
    }

    fn content(&mut self, bytes: &Bytes) -> usize {
        let key = (bytes.as_ptr(), bytes.len());
        if let Some(&index) = self.contents.get(&key) {
            return index;
        }
        let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
        self.stored.contents.push(encoded);
        let index = self.stored.contents.len() - 1;
        self.contents.insert(key, index);
        index
    }
}

/// Why stored files could not be read.
#[derive(Debug, thiserror::Error)]
#[error("files: {0}")]
pub(crate) struct StoredFilesError(String);

impl StoredFiles {
    /// The stored form of `files`.
    pub(crate) fn of(files: &Files) -> Self {
        let mut tables = Tables::default();
        for ((project, instance, snapshot), tree) in &files.trees {
            let tree = tables.tree(tree);
            tables.stored.instances.push(StoredPlace {
                project: project.clone(),
                instance: instance.clone(),
                snapshot: snapshot.clone(),
                tree,
            });
        }
        for (fingerprint, tree) in &files.images {
            let tree = tables.tree(tree);
            tables.stored.images.push(StoredImage {
                fingerprint: fingerprint.clone(),
                tree,
            });
        }
        for (fingerprint, image_files) in &files.image_files {
            let (metadata, rootfs) = match image_files {
                ImageFiles::Unified(tarball) => (tables.content(tarball), None),
                ImageFiles::Split { metadata, rootfs } => {
                    (tables.content(metadata), Some(tables.content(rootfs)))
                }
            };
            tables.stored.image_files.push(StoredImageFiles {
                fingerprint: fingerprint.clone(),
                metadata,
                rootfs,
            });
        }
        for ((project, pool, volume), tree) in &files.volumes {
            let tree = tables.tree(tree);
            tables.stored.volumes.push(StoredVolume {
                project: project.clone(),
                pool: pool.clone(),
                volume: volume.clone(),
                tree,
            });
        }
        for ((project, instance, backup), tarball) in &files.backups {
            let tarball = tables.content(tarball);
            tables.stored.backups.push(StoredBackup {
                project: project.clone(),
                instance: instance.clone(),
                backup: backup.clone().unwrap_or_default(),
                tarball,
            });
        }
        tables.stored
    }

    /// The files back, sharing trees and contents as they were shared when stored.
    pub(crate) fn into_files(self) -> Result<Files, StoredFilesError> {
        let fail = |message: String| StoredFilesError(message);
        let contents = self
            .contents
            .iter()
            .enumerate()
            .map(|(i, text)| {
                base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .map(Bytes::from)
                    .map_err(|e| fail(format!("content {i} is not base64: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let trees = self
            .trees
            .into_iter()
            .enumerate()
            .map(|(i, nodes)| tree_of(nodes, &contents).map_err(|e| fail(format!("tree {i}: {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        let pick = |index: usize| {
            trees
                .get(index)
                .cloned()
                .ok_or_else(|| fail(format!("tree {index} does not exist")))
        };
        let mut files = Files::default();
        for place in self.instances {
            let key: Key = (place.project, place.instance, place.snapshot);
            files.trees.insert(key, pick(place.tree)?);
        }
        for place in self.volumes {
            let key = (place.project, place.pool, place.volume);
            files.volumes.insert(key, pick(place.tree)?);
        }
        for image in self.images {
            files.images.insert(image.fingerprint, pick(image.tree)?);
        }
        let content = |index: usize| {
            contents
                .get(index)
                .cloned()
                .ok_or_else(|| fail(format!("content {index} does not exist")))
        };
        for stored in self.image_files {
            let metadata = content(stored.metadata)?;
            let image_files = match stored.rootfs {
                None => ImageFiles::Unified(metadata),
                Some(rootfs) => ImageFiles::Split {
                    metadata,
                    rootfs: content(rootfs)?,
                },
            };
            files.image_files.insert(stored.fingerprint, image_files);
        }
        for stored in self.backups {
            let key: Key = (stored.project, stored.instance, Some(stored.backup));
            files.backups.insert(key, content(stored.tarball)?);
        }
        Ok(files)
    }
}

fn tree_of(nodes: Vec<StoredNode>, contents: &[Bytes]) -> Result<Tree, String> {
    let mut tree = Tree::empty();
    for node in nodes {
        let kind = match (node.kind.as_str(), node.content, node.target) {
            ("file", Some(index), None) => Kind::File(
                contents
                    .get(index)
                    .cloned()
                    .ok_or_else(|| format!("{}: content {index} does not exist", node.path))?,
            ),
            ("directory", None, None) => Kind::Directory,
            ("symlink", None, Some(target)) => Kind::Symlink(target),
            (kind, ..) => {
                return Err(format!(
                    "{}: type {kind:?} with the wrong fields (file: content; directory: none; symlink: target)",
                    node.path
                ))
            }
        };
        let modified = OffsetDateTime::parse(&node.modified, &Rfc3339)
            .map_err(|e| format!("{}: modified {:?}: {e}", node.path, node.modified))?;
        let entry = Node {
            kind,
            uid: node.uid,
            gid: node.gid,
            mode: node.mode,
            modified,
        };
        tree.insert(node.path, entry);
    }
    Ok(tree)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_trees_and_contents_are_stored_once_and_shared_again_when_loaded() {
        let mut files = Files::default();
        let mut rootfs = Tree::skeleton();
        let big = Bytes::from(vec![7u8; 1000]);
        rootfs.insert("/srv/big".into(), Node::new(Kind::File(big), 0o600));
        files.set_image("f1", rootfs);
        files.create_instance("default", "a", Some("f1"), None);
        files.create_instance("default", "b", Some("f1"), None);
        files.take_snapshot("default", "a", "s0");
        files
            .tree_mut("default", "b")
            .write(
                "/etc/hostname",
                Bytes::from_static(b"b\n"),
                super::super::Attrs::default(),
                false,
            )
            .unwrap();
        let stored = StoredFiles::of(&files);
        assert_eq!(
            stored.trees.len(),
            2,
            "a, its snapshot and the image share one tree"
        );
        let copies = stored.contents.iter().filter(|c| c.len() > 1000).count();
        assert_eq!(copies, 1, "b's tree shares the big file's content");
        let text = serde_json::to_string(&stored).unwrap();
        let back: StoredFiles = serde_json::from_str(&text).unwrap();
        let loaded = back.into_files().unwrap();
        assert_eq!(loaded.trees.len(), files.trees.len());
        for (key, tree) in &files.trees {
            let other = &loaded.trees[key];
            assert_eq!(*other.nodes, *tree.nodes, "{key:?}");
            assert_eq!(other.used, tree.used, "{key:?}");
        }
        let a = &loaded.trees[&("default".into(), "a".into(), None)];
        let s0 = &loaded.trees[&("default".into(), "a".into(), Some("s0".into()))];
        assert!(
            Arc::ptr_eq(&a.nodes, &s0.nodes),
            "shared again after loading"
        );
    }

    #[test]
    fn a_stored_tree_that_points_nowhere_is_refused_with_its_reason() {
        let bad =
            serde_json::json!({"instances": [{"project": "default", "instance": "a", "tree": 3}]});
        let stored: StoredFiles = serde_json::from_value(bad).unwrap();
        let err = stored.into_files().unwrap_err().to_string();
        assert!(err.contains("tree 3 does not exist"), "{err}");
        let bad = serde_json::json!({"trees": [[{"path": "/x", "type": "file", "uid": 0, "gid": 0, "mode": 420, "modified": "2026-01-01T00:00:00Z"}]]});
        let stored: StoredFiles = serde_json::from_value(bad).unwrap();
        let err = stored.into_files().unwrap_err().to_string();
        assert!(err.contains("wrong fields"), "{err}");
    }
}
