//! Path patterns, shared by fault rules and journal queries: `*` matches within one segment,
//! `**` across segments; the query is never part of the matched path.

/// Whether `path` matches `pattern` in the one path-pattern dialect of the fake's fault rules,
/// its journal queries ([`crate::FakeIncus::requests`], [`crate::FakeIncus::expect`]) and the
/// scenarios' journal expectations: `*` matches within one segment, `**` across segments; a
/// query on `path` is ignored.
///
/// ```
/// use fake_incus::path_matches;
/// assert!(path_matches("/1.0/instances/c*", "/1.0/instances/c1?project=p"));
/// assert!(!path_matches("/1.0/instances/*", "/1.0/instances/c1/state"));
/// assert!(path_matches("/1.0/instances/**", "/1.0/instances/c1/state"));
/// ```
pub fn path_matches(pattern: &str, path: &str) -> bool {
    let path = path.split_once('?').map_or(path, |(path, _)| path);
    glob_match(pattern.as_bytes(), path.as_bytes())
}

/// `*` matches any run of characters except `/`; `**` matches anything.
pub(crate) fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    match pattern {
        [] => text.is_empty(),
        [b'*', b'*', rest @ ..] => (0..=text.len()).any(|i| glob_match(rest, &text[i..])),
        [b'*', rest @ ..] => {
            let limit = text.iter().position(|&c| c == b'/').unwrap_or(text.len());
            (0..=limit).any(|i| glob_match(rest, &text[i..]))
        }
        [c, rest @ ..] => text.first() == Some(c) && glob_match(rest, &text[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_star_stays_in_one_segment() {
        assert!(glob_match(b"/1.0/instances/*", b"/1.0/instances/c1"));
        assert!(!glob_match(b"/1.0/instances/*", b"/1.0/instances/c1/state"));
        assert!(glob_match(b"/1.0/**", b"/1.0/instances/c1/state"));
        assert!(glob_match(
            b"/1.0/operations/*/wait",
            b"/1.0/operations/abc/wait"
        ));
    }
}
