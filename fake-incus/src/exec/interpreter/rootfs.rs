//! What an instance's file system holds, as far as exec needs it: the executables of its image (the
//! command set), its directories (the working directory, `ls`, `cd`) and a few other files.
//!
//! An image declares its executables as absolute paths (`/bin/sh`, `/sbin/init`); `None` is the
//! busybox test image the real daemon is probed with. Directories are the parents of those paths plus
//! the ones the container runtime mounts (`/dev`, `/proc`, `/sys`).

use std::collections::BTreeSet;
use std::sync::{Arc, LazyLock};

/// The commands linked to busybox in the busybox test image's `/bin` (`ci/real-incus.sh`).
const BUSYBOX_BIN: &[&str] = &[
    "busybox", "sh", "ls", "cat", "echo", "printf", "sleep", "true", "false", "env", "id", "head",
    "yes", "dd",
];
/// The busybox test image's top-level directories.
const BUSYBOX_DIRS: &[&str] = &[
    "/bin", "/dev", "/etc", "/proc", "/root", "/sbin", "/sys", "/tmp",
];
/// The busybox test image's other files.
const BUSYBOX_FILES: &[&str] = &["/etc/inittab"];
/// What the container runtime puts in `/dev` (directories marked with a trailing `/`), as listed in a
/// running busybox container.
const DEV: &[&str] = &[
    "console", "fd", "full", "fuse", "incus/", "net/", "null", "ptmx", "pts/", "random", "stderr",
    "stdin", "stdout", "tty", "urandom", "zero",
];
/// Directories the runtime mounts in every container.
const RUNTIME_DIRS: &[&str] = &["/dev", "/proc", "/sys"];

/// An instance's file system as exec sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rootfs {
    executables: BTreeSet<String>,
    dirs: BTreeSet<String>,
    files: BTreeSet<String>,
    busybox: bool,
}

static BUSYBOX: LazyLock<Arc<Rootfs>> = LazyLock::new(|| {
    let mut executables: Vec<String> = BUSYBOX_BIN.iter().map(|c| format!("/bin/{c}")).collect();
    executables.push("/sbin/init".into());
    let mut rootfs = Rootfs::build(&executables);
    rootfs
        .dirs
        .extend(BUSYBOX_DIRS.iter().map(|d| d.to_string()));
    rootfs
        .files
        .extend(BUSYBOX_FILES.iter().map(|f| f.to_string()));
    Arc::new(rootfs)
});

impl Rootfs {
    /// The file system of an instance created from an image that holds `executables` (`None`: the
    /// busybox test image).
    pub(crate) fn of_image(executables: Option<&[String]>) -> Arc<Self> {
        match executables {
            None => Arc::clone(&BUSYBOX),
            Some(list) => Arc::new(Self::build(list)),
        }
    }

    /// The busybox test image's file system.
    #[cfg(test)]
    pub(crate) fn busybox() -> Arc<Self> {
        Arc::clone(&BUSYBOX)
    }

    fn build(executables: &[String]) -> Self {
        let executables: BTreeSet<String> = executables
            .iter()
            .filter_map(|path| normalize("/", path))
            .filter(|path| path != "/")
            .collect();
        let mut dirs = BTreeSet::from(["/".to_string()]);
        for path in &executables {
            let mut at = path.as_str();
            while let Some((parent, _)) = at.rsplit_once('/') {
                let parent = if parent.is_empty() { "/" } else { parent };
                dirs.insert(parent.to_string());
                at = parent;
                if parent == "/" {
                    break;
                }
            }
        }
        dirs.extend(RUNTIME_DIRS.iter().map(|d| d.to_string()));
        let mut files: BTreeSet<String> = executables.clone();
        for entry in DEV {
            match entry.strip_suffix('/') {
                Some(dir) => dirs.insert(format!("/dev/{dir}")),
                None => files.insert(format!("/dev/{entry}")),
            };
        }
        let busybox = executables
            .iter()
            .any(|path| path.rsplit('/').next() == Some("busybox"));
        Self {
            executables,
            dirs,
            files,
            busybox,
        }
    }

    /// Whether the image's userland is busybox, whose shell and `env` run its applets whatever `PATH`
    /// says (busybox built with "prefer applets", as Debian's is).
    pub(crate) fn is_busybox(&self) -> bool {
        self.busybox
    }

    /// The path `name` runs as, searched like `execvp`: a name with a `/` is taken as it is (relative to
    /// `cwd`), a bare name is looked up in each directory of `path`.
    pub(crate) fn find_executable(&self, name: &str, path: &str, cwd: &str) -> Option<String> {
        if name.is_empty() {
            return None;
        }
        if name.contains('/') {
            return normalize(cwd, name).filter(|p| self.executables.contains(p));
        }
        path.split(':')
            .filter_map(|dir| normalize(cwd, &format!("{dir}/{name}")))
            .find(|candidate| self.executables.contains(candidate))
    }

    /// Whether `path` (absolute, or relative to `cwd`) is a directory.
    pub(crate) fn is_dir(&self, cwd: &str, path: &str) -> bool {
        normalize(cwd, path).is_some_and(|p| self.dirs.contains(&p))
    }

    /// What `path` is: a directory, another file, or nothing.
    pub(crate) fn kind(&self, cwd: &str, path: &str) -> Entry {
        match normalize(cwd, path) {
            Some(p) if self.dirs.contains(&p) => Entry::Dir,
            Some(p) if self.files.contains(&p) => Entry::File,
            _ => Entry::Missing,
        }
    }

    /// The names in directory `path`, sorted; `None` when it is not a directory.
    pub(crate) fn list(&self, cwd: &str, path: &str) -> Option<Vec<String>> {
        let dir = normalize(cwd, path).filter(|p| self.dirs.contains(p))?;
        let prefix = if dir == "/" {
            "/".to_string()
        } else {
            format!("{dir}/")
        };
        let mut names: Vec<String> = self
            .dirs
            .iter()
            .chain(self.files.iter())
            .filter_map(|p| p.strip_prefix(&prefix))
            .filter(|rest| !rest.is_empty() && !rest.contains('/'))
            .map(str::to_owned)
            .collect();
        names.sort();
        names.dedup();
        Some(names)
    }

    /// `path` made absolute against `cwd`, without `.`, `..` or repeated slashes (`None` when empty).
    pub(crate) fn absolute(cwd: &str, path: &str) -> Option<String> {
        normalize(cwd, path)
    }
}

/// What a path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    Dir,
    File,
    Missing,
}

/// `path` made absolute against `cwd`, without `.`, `..` or repeated slashes (`None` when empty).
fn normalize(cwd: &str, path: &str) -> Option<String> {
    if path.is_empty() {
        return None;
    }
    let joined = if path.starts_with('/') {
        path.to_string()
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
    Some(format!("/{}", parts.join("/")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

    #[test]
    fn the_busybox_image_holds_the_applets_linked_in_bin_and_sbin_init() {
        let fs = Rootfs::busybox();
        assert_eq!(
            fs.find_executable("sh", PATH, "/").as_deref(),
            Some("/bin/sh")
        );
        assert_eq!(
            fs.find_executable("dd", PATH, "/").as_deref(),
            Some("/bin/dd")
        );
        assert_eq!(
            fs.find_executable("init", PATH, "/").as_deref(),
            Some("/sbin/init")
        );
        assert_eq!(
            fs.find_executable("/bin/../bin/ls", PATH, "/").as_deref(),
            Some("/bin/ls")
        );
        assert_eq!(
            fs.find_executable("../bin/id", PATH, "/root").as_deref(),
            Some("/bin/id")
        );
        for missing in ["pwd", "hostname", "/bin/pwd", "/usr/bin/env", "bin", ""] {
            assert_eq!(fs.find_executable(missing, PATH, "/"), None, "{missing}");
        }
        assert_eq!(
            fs.find_executable("ls", "/usr/bin", "/"),
            None,
            "PATH is searched"
        );
        assert!(fs.is_busybox());
    }

    #[test]
    fn the_busybox_image_lists_its_top_level_directories_and_bin() {
        let fs = Rootfs::busybox();
        assert_eq!(
            fs.list("/", "/").unwrap(),
            ["bin", "dev", "etc", "proc", "root", "sbin", "sys", "tmp"]
        );
        assert_eq!(fs.list("/", "/sbin").unwrap(), ["init"]);
        assert_eq!(fs.list("/", "/etc").unwrap(), ["inittab"]);
        assert_eq!(fs.list("/", "/root").unwrap(), Vec::<String>::new());
        assert_eq!(fs.list("/", "/bin").unwrap().len(), BUSYBOX_BIN.len());
        assert_eq!(fs.list("/", "/nope"), None);
        assert_eq!(fs.list("/", "/bin/sh"), None);
        assert!(fs.is_dir("/", "tmp/"));
        assert!(!fs.is_dir("/", "/nonexistent"));
        assert_eq!(fs.kind("/bin", "sh"), Entry::File);
    }

    #[test]
    fn a_declared_image_holds_exactly_its_executables_under_their_directories() {
        let fs = Rootfs::of_image(Some(&[
            "/usr/bin/python3".to_string(),
            "/bin/sh".to_string(),
        ]));
        assert_eq!(
            fs.find_executable("python3", PATH, "/").as_deref(),
            Some("/usr/bin/python3")
        );
        assert_eq!(fs.find_executable("ls", PATH, "/"), None);
        assert!(!fs.is_busybox());
        assert_eq!(
            fs.list("/", "/").unwrap(),
            ["bin", "dev", "proc", "sys", "usr"]
        );
        assert!(!fs.is_dir("/", "/root"));
    }
}
