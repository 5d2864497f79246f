//! The repository files the run reads, embedded at build time (see `build.rs`): the binary
//! never reads the source tree at run time, so an installed `incus-conformance` gives the same
//! result anywhere.

include!(concat!(env!("OUT_DIR"), "/embedded.rs"));

/// The embedded file at `path` (relative to the repository root, `/`-separated).
pub(crate) fn file(path: &str) -> Option<&'static str> {
    FILES
        .binary_search_by(|(name, _)| (*name).cmp(path))
        .ok()
        .map(|index| FILES[index].1)
}

/// The embedded file at `path`, or an error that names it.
pub(crate) fn read(path: &str) -> Result<&'static str, String> {
    file(path).ok_or_else(|| {
        format!("{path} was not embedded: the harness was built outside its repository")
    })
}

/// Every embedded file under the directory `dir`, sorted by path.
pub(crate) fn under(dir: &str) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
    FILES.iter().copied().filter(move |(name, _)| {
        name.strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
    })
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (the repository files the run reads,
    //! embedded at build time (see `build.rs`)); a promise of the harness seen from outside (its
    //! command line, certification, the wire) goes in `tests/harness`.

    use super::*;

    #[test]
    fn the_embedded_files_are_sorted_and_found_by_path() {
        assert!(FILES.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(file("core/Cargo.toml").is_some_and(|t| t.contains("[package]")));
        assert!(under("scenarios").count() >= 40);
        assert!(under("core/src").all(|(name, _)| name.ends_with(".rs")));
        assert!(under("core/sr").next().is_none());
        assert!(read("nowhere/file").unwrap_err().contains("not embedded"));
    }
}
