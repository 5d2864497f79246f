//! `md5sum`, `sha1sum`, `sha256sum` (with `-c`). MD5 and SHA-1 are computed here (a few lines
//! each, as RFC 1321 and FIPS 180-4 give them); SHA-256 comes from the workspace's `sha2`.

use sha2::Digest;

use super::{inputs, opts, read_file};
use crate::shell::{Shell, Status};

#[derive(Debug, Clone, Copy)]
enum Algorithm {
    Md5,
    Sha1,
    Sha256,
}

impl Algorithm {
    fn name(self) -> &'static str {
        match self {
            Algorithm::Md5 => "md5sum",
            Algorithm::Sha1 => "sha1sum",
            Algorithm::Sha256 => "sha256sum",
        }
    }

    fn digest(self, data: &[u8]) -> String {
        match self {
            Algorithm::Md5 => hex::encode(md5(data)),
            Algorithm::Sha1 => hex::encode(sha1(data)),
            Algorithm::Sha256 => hex::encode(sha2::Sha256::digest(data)),
        }
    }
}

pub(super) async fn md5sum(process: &mut Shell, args: &[String]) -> Status {
    sum(process, args, Algorithm::Md5).await
}

pub(super) async fn sha1sum(process: &mut Shell, args: &[String]) -> Status {
    sum(process, args, Algorithm::Sha1).await
}

pub(super) async fn sha256sum(process: &mut Shell, args: &[String]) -> Status {
    sum(process, args, Algorithm::Sha256).await
}

async fn sum(process: &Shell, args: &[String], algorithm: Algorithm) -> Status {
    let name = algorithm.name();
    let opts = opts!(process, name, args, "cswbt");
    if opts.has('c') {
        return check(process, &opts.operands, algorithm, opts.has('s')).await;
    }
    let mut failed = false;
    let files = inputs(process, name, &opts.operands, &mut failed).await?;
    let mut out = String::new();
    for (file, content) in &files {
        out.push_str(&format!("{}  {file}\n", algorithm.digest(content)));
    }
    process.out(out).await?;
    Ok(i32::from(failed))
}

/// `-c`: checks `HASH  FILE` lines.
async fn check(process: &Shell, operands: &[String], algorithm: Algorithm, quiet: bool) -> Status {
    let name = algorithm.name();
    let mut failed_open = false;
    let lists = inputs(process, name, operands, &mut failed_open).await?;
    let mut bad = 0;
    let mut out = String::new();
    for (_, list) in &lists {
        for line in String::from_utf8_lossy(list).lines() {
            let Some((hash, file)) = line.split_once("  ").or_else(|| line.split_once(" *")) else {
                continue;
            };
            let ok = match read_file(process, file) {
                Ok(content) => algorithm.digest(&content) == hash.to_ascii_lowercase(),
                Err(error) => {
                    process
                        .err_line(&format!("{name}: can't open '{file}': {}", error.text()))
                        .await?;
                    false
                }
            };
            if !ok {
                bad += 1;
            }
            if !quiet {
                out.push_str(&format!("{file}: {}\n", if ok { "OK" } else { "FAILED" }));
            }
        }
    }
    process.out(out).await?;
    if bad > 0 {
        process
            .err_line(&format!(
                "{name}: WARNING: {bad} of {} computed checksums did NOT match",
                bad
            ))
            .await?;
    }
    Ok(i32::from(bad > 0 || failed_open))
}

/// MD5 (RFC 1321).
fn md5(data: &[u8]) -> [u8; 16] {
    const S: [u32; 64] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5,
        9, 14, 20, 5, 9, 14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10,
        15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
    ];
    let k: Vec<u32> = (0..64)
        .map(|i| ((i as f64 + 1.0).sin().abs() * 4_294_967_296.0) as u32)
        .collect();
    let mut state: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];
    for block in padded(data, false).chunks(64) {
        let m: Vec<u32> = block
            .chunks(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
        let [mut a, mut b, mut c, mut d] = state;
        for i in 0..64 {
            let (f, g) = match i / 16 {
                0 => ((b & c) | (!b & d), i),
                1 => ((d & b) | (!d & c), (5 * i + 1) % 16),
                2 => (b ^ c ^ d, (3 * i + 5) % 16),
                _ => (c ^ (b | !d), (7 * i) % 16),
            };
            let rotated = a
                .wrapping_add(f)
                .wrapping_add(k[i])
                .wrapping_add(m[g])
                .rotate_left(S[i]);
            a = d;
            d = c;
            c = b;
            b = b.wrapping_add(rotated);
        }
        for (s, v) in state.iter_mut().zip([a, b, c, d]) {
            *s = s.wrapping_add(v);
        }
    }
    let mut out = [0u8; 16];
    for (i, word) in state.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&word.to_le_bytes());
    }
    out
}

/// SHA-1 (FIPS 180-4).
fn sha1(data: &[u8]) -> [u8; 20] {
    let mut h: [u32; 5] = [
        0x6745_2301,
        0xEFCD_AB89,
        0x98BA_DCFE,
        0x1032_5476,
        0xC3D2_E1F0,
    ];
    for block in padded(data, true).chunks(64) {
        let mut w = [0u32; 80];
        for (i, word) in block.chunks(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = h;
        for (i, word) in w.iter().enumerate() {
            let (f, k) = match i / 20 {
                0 => ((b & c) | (!b & d), 0x5A82_7999),
                1 => (b ^ c ^ d, 0x6ED9_EBA1),
                2 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
                _ => (b ^ c ^ d, 0xCA62_C1D6),
            };
            let temp = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(*word);
            e = d;
            d = c;
            c = b.rotate_left(30);
            b = a;
            a = temp;
        }
        for (s, v) in h.iter_mut().zip([a, b, c, d, e]) {
            *s = s.wrapping_add(v);
        }
    }
    let mut out = [0u8; 20];
    for (i, word) in h.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&word.to_be_bytes());
    }
    out
}

/// The message padded to 64-byte blocks with its bit length (big- or little-endian).
fn padded(data: &[u8], big_endian: bool) -> Vec<u8> {
    let mut message = data.to_vec();
    let bits = (data.len() as u64).wrapping_mul(8);
    message.push(0x80);
    while message.len() % 64 != 56 {
        message.push(0);
    }
    if big_endian {
        message.extend_from_slice(&bits.to_be_bytes());
    } else {
        message.extend_from_slice(&bits.to_le_bytes());
    }
    message
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (`md5sum`, `sha1sum`, `sha256sum` (with
    //! `-c`)); a command run through the fake's exec goes in fake-incus's tests.

    use super::*;

    #[test]
    fn digests_match_the_published_test_vectors() {
        assert_eq!(hex::encode(md5(b"")), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(
            hex::encode(md5(b"The quick brown fox jumps over the lazy dog")),
            "9e107d9d372bb6826bd81d3542a419d6"
        );
        assert_eq!(
            hex::encode(sha1(b"abc")),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(
            hex::encode(sha1(b"")),
            "da39a3ee5e6b4b0d3255bfef95601890afd80709"
        );
    }
}
