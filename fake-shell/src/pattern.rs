//! Shell patterns (`*`, `?`, `[...]`, `\x`): `case`, `${x#pattern}`, `find -name` and pathname
//! expansion.

use crate::fs::Fs;

/// Whether `pattern` matches all of `text`.
pub(crate) fn matches(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    match_at(&pattern, &text)
}

fn match_at(pattern: &[char], text: &[char]) -> bool {
    // Iterative with one backtrack point for `*`, as fnmatch does.
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        let step = match pattern.get(p) {
            Some('*') => {
                star = Some((p, t));
                p += 1;
                continue;
            }
            Some('?') => Some(1),
            Some('[') => match bracket(&pattern[p..], text[t]) {
                Some((true, used)) => Some(used),
                Some((false, _)) => None,
                None => (text[t] == '[').then_some(1),
            },
            Some('\\') if p + 1 < pattern.len() => (pattern[p + 1] == text[t]).then_some(2),
            Some(c) => (*c == text[t]).then_some(1),
            None => None,
        };
        match step {
            Some(used) => {
                p += used;
                t += 1;
            }
            None => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

/// A bracket expression at the start of `pattern`: whether it matches `c` and its length, or `None`
/// when it is not closed (then `[` is literal).
fn bracket(pattern: &[char], c: char) -> Option<(bool, usize)> {
    let mut i = 1;
    let negate = matches!(pattern.get(i), Some('!' | '^'));
    if negate {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    while i < pattern.len() {
        let ch = pattern[i];
        if ch == ']' && !first {
            return Some((matched != negate, i + 1));
        }
        first = false;
        if ch == '[' && pattern.get(i + 1) == Some(&':') {
            if let Some(end) = (i + 2..pattern.len().saturating_sub(1))
                .find(|&j| pattern[j] == ':' && pattern[j + 1] == ']')
            {
                let class: String = pattern[i + 2..end].iter().collect();
                matched |= class_matches(&class, c);
                i = end + 2;
                continue;
            }
        }
        let low = if ch == '\\' && i + 1 < pattern.len() {
            i += 1;
            pattern[i]
        } else {
            ch
        };
        if pattern.get(i + 1) == Some(&'-') && pattern.get(i + 2).is_some_and(|e| *e != ']') {
            let high = pattern[i + 2];
            matched |= low <= c && c <= high;
            i += 3;
        } else {
            matched |= low == c;
            i += 1;
        }
    }
    None
}

fn class_matches(class: &str, c: char) -> bool {
    match class {
        "alpha" => c.is_ascii_alphabetic(),
        "digit" => c.is_ascii_digit(),
        "alnum" => c.is_ascii_alphanumeric(),
        "upper" => c.is_ascii_uppercase(),
        "lower" => c.is_ascii_lowercase(),
        "space" => c.is_ascii_whitespace(),
        "blank" => c == ' ' || c == '\t',
        "punct" => c.is_ascii_punctuation(),
        "xdigit" => c.is_ascii_hexdigit(),
        _ => false,
    }
}

/// Whether a pattern has an unescaped `*`, `?` or `[`.
pub(crate) fn has_magic(pattern: &str) -> bool {
    let mut escaped = false;
    for c in pattern.chars() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if matches!(c, '*' | '?' | '[') {
            return true;
        }
    }
    false
}

/// The pattern's literal text (escapes removed).
pub(crate) fn unescape(pattern: &str) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            out.extend(chars.next());
        } else {
            out.push(c);
        }
    }
    out
}

/// The shortest (or longest) prefix of `text` the pattern matches, as a byte length.
pub(crate) fn prefix_len(pattern: &str, text: &str, longest: bool) -> Option<usize> {
    let mut ends: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    ends.push(text.len());
    if longest {
        ends.reverse();
    }
    ends.into_iter().find(|&end| matches(pattern, &text[..end]))
}

/// The shortest (or longest) suffix of `text` the pattern matches, as the byte offset it starts at.
pub(crate) fn suffix_start(pattern: &str, text: &str, longest: bool) -> Option<usize> {
    let mut starts: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    starts.push(text.len());
    if !longest {
        starts.reverse();
    }
    starts
        .into_iter()
        .find(|&start| matches(pattern, &text[start..]))
}

/// Pathname expansion: the paths `pattern` matches, sorted; names starting with `.` only when the
/// pattern's component does.
pub(crate) fn glob(fs: &Fs, cwd: &str, pattern: &str) -> Vec<String> {
    let absolute = pattern.starts_with('/');
    let components: Vec<&str> = pattern.split('/').filter(|c| !c.is_empty()).collect();
    let mut found: Vec<String> = vec![String::new()];
    for (index, component) in components.iter().enumerate() {
        let last = index + 1 == components.len();
        let mut next = Vec::new();
        for prefix in &found {
            let dir = match (absolute, prefix.is_empty()) {
                (true, true) => "/".to_owned(),
                (false, true) => cwd.to_owned(),
                (true, false) => prefix.clone(),
                (false, false) => crate::fs::absolute(cwd, prefix),
            };
            let join = |name: &str| match (absolute, prefix.is_empty()) {
                (true, true) => format!("/{name}"),
                (false, true) => name.to_owned(),
                _ => format!("{prefix}/{name}"),
            };
            if !has_magic(component) {
                let name = unescape(component);
                let path = join(&name);
                let full = crate::fs::absolute(cwd, &path);
                if (last && fs.lstat(&full).is_ok()) || (!last && fs.is_dir(&full)) {
                    next.push(path);
                }
                continue;
            }
            let Ok(names) = fs.list(&dir) else {
                continue;
            };
            for name in names {
                if name.starts_with('.') && !component.starts_with('.') {
                    continue;
                }
                if matches(component, &name) {
                    let path = join(&name);
                    if last || fs.is_dir(&crate::fs::absolute(cwd, &path)) {
                        next.push(path);
                    }
                }
            }
        }
        found = next;
        if found.is_empty() {
            break;
        }
    }
    found.retain(|p| !p.is_empty());
    if pattern.ends_with('/') {
        for path in &mut found {
            path.push('/');
        }
    }
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (shell patterns (`*`, `?`, `[...]`, `\x`));
    //! a command run through the fake's exec goes in fake-incus's tests.

    use super::*;

    #[test]
    fn patterns_match_like_fnmatch() {
        assert!(matches("a*", "abc"));
        assert!(matches("*c", "abc"));
        assert!(matches("a?c", "abc"));
        assert!(matches("[a-c]b*", "bbq"));
        assert!(matches("[!a]*", "bcd"));
        assert!(!matches("[!a]*", "abc"));
        assert!(matches("\\*", "*"));
        assert!(!matches("\\*", "x"));
        assert!(matches("*.tar.gz", "x.tar.gz"));
        assert!(matches("[[:digit:]]*", "1x"));
        assert!(matches("[", "["));
        assert!(matches("", ""));
        assert!(!matches("", "a"));
    }

    #[test]
    fn prefixes_and_suffixes_are_shortest_or_longest() {
        assert_eq!(prefix_len("*/", "a/b/c", false), Some(2));
        assert_eq!(prefix_len("*/", "a/b/c", true), Some(4));
        assert_eq!(suffix_start(".*", "f.tar.gz", false), Some(5));
        assert_eq!(suffix_start(".*", "f.tar.gz", true), Some(1));
        assert_eq!(suffix_start("x", "abc", true), None);
    }
}
