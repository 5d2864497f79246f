//! Go's `fmt`, as the daemon names snapshots with it: `Sscanf` reads the index of an existing
//! snapshot's name with the pattern as its format, 6.0's volume handler `Sprintf`s the pattern.

/// What `fmt.Sscanf(name, before + "%d" + after, &num)` stores when it reads one value without
/// error: the literal parts match exactly (`%%` matches `%`; any other verb in them has no
/// operand, an error), the number may have leading spaces and a sign, text after the format is
/// ignored.
pub(crate) fn sscanf_index(name: &str, before: &str, after: &str) -> Option<i64> {
    let rest = scan_literal(name, before)?;
    let trimmed = rest.trim_start_matches([' ', '\t', '\r']);
    let sign = usize::from(trimmed.starts_with(['+', '-']));
    let digits = trimmed[sign..]
        .bytes()
        .take_while(u8::is_ascii_digit)
        .count();
    if digits == 0 {
        return None;
    }
    let (number, rest) = trimmed.split_at(sign + digits);
    let num = number.parse::<i64>().ok()?;
    scan_literal(rest, after).map(|_| num)
}

/// The input after `format`'s literal text, or `None` where Go's `Sscanf` stops with an error.
fn scan_literal<'a>(input: &'a str, format: &str) -> Option<&'a str> {
    let mut input = input;
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        let expected = match c {
            '%' if chars.next() == Some('%') => '%',
            '%' => return None,
            c => c,
        };
        input = input.strip_prefix(expected)?;
    }
    Some(input)
}

/// Go's `fmt.Sprintf(format, index)`, as 6.0's volume snapshot handler names a snapshot: the
/// first `%d` is the index, a second one `%!d(MISSING)`, no `%d` at all appends
/// `%!(EXTRA int=N)`.
/// `None` for a verb other than `%d` and `%%` (not imitated).
pub(crate) fn sprintf_index(format: &str, index: i64) -> Option<String> {
    let mut out = String::with_capacity(format.len() + 8);
    let mut used = false;
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => out.push('%'),
            Some('d') if !used => {
                used = true;
                out.push_str(&index.to_string());
            }
            Some('d') => out.push_str("%!d(MISSING)"),
            _ => return None,
        }
    }
    if !used {
        out.push_str(&format!("%!(EXTRA int={index})"));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn six_zero_volume_names_are_go_sprintf_of_the_index() {
        assert_eq!(sprintf_index("snap%d", 2).unwrap_or_default(), "snap2");
        assert_eq!(
            sprintf_index("x%dy%d", 0).unwrap_or_default(),
            "x0y%!d(MISSING)"
        );
        assert_eq!(
            sprintf_index("keep", 0).unwrap_or_default(),
            "keep%!(EXTRA int=0)"
        );
    }

    #[test]
    fn sscanf_reads_a_signed_number_between_the_literals_and_ignores_what_follows() {
        assert_eq!(sscanf_index("snap7", "snap", ""), Some(7));
        assert_eq!(sscanf_index("snap -3x", "snap", ""), Some(-3));
        assert_eq!(sscanf_index("a5", "a", "b"), None);
        assert_eq!(sscanf_index("snapx", "snap", ""), None);
    }
}
