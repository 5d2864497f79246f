//! Go's `os`, as the daemon's SFTP server reports a failed call: `*PathError` and `*LinkError`
//! name the call and the paths as the client sent them.

/// `syscall.ENOENT`'s text.
pub(crate) const ENOENT: &str = "no such file or directory";

/// `syscall.EEXIST`'s text.
pub(crate) const EEXIST: &str = "file exists";

/// A `*PathError`'s text: `open /a: no such file or directory`.
pub(crate) fn path_error(op: &str, path: &str, err: &str) -> String {
    format!("{op} {path}: {err}")
}

/// A `*LinkError`'s text: `rename /a /b: no such file or directory`.
pub(crate) fn link_error(op: &str, old: &str, new: &str, err: &str) -> String {
    format!("{op} {old} {new}: {err}")
}
