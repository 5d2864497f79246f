//! RFC 6901 JSON pointers, built one escaped segment at a time.

use std::fmt;

/// A JSON pointer; the empty pointer is the whole document.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Pointer(String);

impl Pointer {
    /// The whole document.
    pub(crate) fn root() -> Self {
        Self(String::new())
    }

    /// The member `key` of the object here (`~` and `/` escaped as `~0` and `~1`).
    pub(crate) fn key(&self, key: &str) -> Self {
        let mut text = String::with_capacity(self.0.len() + key.len() + 1);
        text.push_str(&self.0);
        text.push('/');
        for c in key.chars() {
            match c {
                '~' => text.push_str("~0"),
                '/' => text.push_str("~1"),
                other => text.push(other),
            }
        }
        Self(text)
    }

    /// The element `index` of the array here.
    pub(crate) fn index(&self, index: usize) -> Self {
        Self(format!("{}/{index}", self.0))
    }

    /// Appends a pointer that is already escaped (as `jsonschema` reports instance paths).
    pub(crate) fn join_escaped(&self, escaped: &str) -> Self {
        Self(format!("{}{escaped}", self.0))
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Pointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (RFC 6901 JSON pointers, built one escaped
    //! segment at a time); a promise of the harness seen from outside (its command line,
    //! certification, the wire) goes in `tests/harness`.

    use super::Pointer;

    #[test]
    fn pointers_escape_tilde_and_slash_as_rfc_6901_says() {
        let pointer = Pointer::root().key("paths").key("/operations/a~b").index(3);
        assert_eq!(pointer.as_str(), "/paths/~1operations~1a~0b/3");
    }
}
