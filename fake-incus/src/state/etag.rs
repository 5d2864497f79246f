//! The daemon's ETag scheme (reference §5.2): `sha256(go_json(X) + "\n")` in lowercase hex.
//!
//! Go's encoder sorts map keys, keeps struct fields in declaration order and escapes `<`, `>`
//! and `&`. Callers build `X` with objects in struct order and maps as `BTreeMap`s.

use serde::Serialize;
use sha2::{Digest, Sha256};

/// The hash of a value encoded the way Go's `json.Marshal` does.
pub(crate) fn hash<T: Serialize + ?Sized>(value: &T) -> String {
    let mut text = serde_json::to_string(value).unwrap_or_default();
    text = crate::go::encoding_json::escape_html(&text);
    text.push('\n');
    hex::encode(Sha256::digest(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_etag_matches_the_daemon() {
        assert_eq!(
            hash(&["0001-01-01T00:00:00Z"]),
            "2c86054b814faf5dfb954f32dfdc8a32e8e36dce3d9b1c93ed3e2f204f13a1f2"
        );
    }
}
