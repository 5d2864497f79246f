//! Gzipped tarballs built in memory, for the image-import tests of the fake's test binaries.

/// A gzipped tarball of `entries` (a name ending in `/` is a directory), mode 0755, a fixed mtime.
pub(crate) fn tarball(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, data) in entries {
        let mut header = tar::Header::new_gnu();
        if name.ends_with('/') {
            header.set_entry_type(tar::EntryType::Directory);
        }
        header.set_size(if name.ends_with('/') {
            0
        } else {
            data.len() as u64
        });
        header.set_mode(0o755);
        header.set_mtime(1_700_000_000);
        header.set_cksum();
        builder.append_data(&mut header, name, *data).unwrap();
    }
    let tar = builder.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &tar).unwrap();
    gz.finish().unwrap()
}
