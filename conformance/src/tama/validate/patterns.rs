//! The profile's patterns, matched against the whole string (no regex `$` pitfalls) and its
//! lengths, counted in Unicode scalar values.

/// `^[a-z][a-z0-9_]{0,max_tail}$`: source ids, bounds keys and (with 127) operation ids.
pub(crate) fn is_lower_identifier(text: &str, max_len: usize) -> bool {
    let mut chars = text.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    first.is_ascii_lowercase()
        && text.len() <= max_len
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// `^[a-z][a-z0-9_]{0,63}$`
pub(crate) fn is_source_id(text: &str) -> bool {
    is_lower_identifier(text, 64)
}

/// `^[a-z][a-z0-9_]{0,127}$`
pub(crate) fn is_operation_id(text: &str) -> bool {
    is_lower_identifier(text, 128)
}

/// `^[A-Za-z0-9._:-]{1,128}$`
pub(crate) fn is_scope_token(text: &str) -> bool {
    (1..=128).contains(&text.len())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'))
}

/// `^[a-zA-Z0-9._-]+$`, the OpenAPI component name pattern.
pub(crate) fn is_component_name(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// `3.1.x`, where x is one or more decimal digits.
pub(crate) fn is_openapi_31(text: &str) -> bool {
    text.strip_prefix("3.1.")
        .is_some_and(|patch| !patch.is_empty() && patch.bytes().all(|b| b.is_ascii_digit()))
}

/// Length in Unicode scalar values (Rust `char`s).
pub(crate) fn char_len(text: &str) -> usize {
    text.chars().count()
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (the profile's patterns, matched against the
    //! whole string (no regex `$` pitfalls) and its lengths); a promise of the harness seen from
    //! outside (its command line, certification, the wire) goes in `tests/harness`.

    use super::*;

    #[test]
    fn patterns_match_the_whole_string_so_a_trailing_newline_is_refused() {
        assert!(is_source_id("opsmaru_incus"));
        assert!(!is_source_id("opsmaru_incus\n"));
        assert!(!is_operation_id("a\n"));
        assert!(!is_scope_token("incus.delete\n"));
        assert!(!is_component_name("A\n"));
        assert!(!is_openapi_31("3.1.0\n"));
    }

    #[test]
    fn identifier_limits_are_inclusive() {
        assert!(is_source_id(&"a".repeat(64)));
        assert!(!is_source_id(&"a".repeat(65)));
        assert!(is_operation_id(&"a".repeat(128)));
        assert!(!is_operation_id(&"a".repeat(129)));
        assert!(is_scope_token(&"s".repeat(128)));
        assert!(!is_scope_token(&"s".repeat(129)));
        assert!(!is_scope_token(""));
        assert!(!is_source_id("1a"));
        assert!(!is_source_id(""));
    }

    #[test]
    fn openapi_must_match_3_1_x() {
        assert!(is_openapi_31("3.1.0"));
        assert!(is_openapi_31("3.1.12"));
        assert!(!is_openapi_31("3.1"));
        assert!(!is_openapi_31("3.1."));
        assert!(!is_openapi_31("3.0.3"));
        assert!(!is_openapi_31("3.1.0-rc1"));
    }

    #[test]
    fn characters_are_counted_as_unicode_scalar_values() {
        assert_eq!(char_len("é"), 1);
        assert_eq!(char_len("e\u{301}"), 2);
        assert_eq!(char_len("🦀"), 1);
    }
}
