//! Go's `encoding/json`, as the daemon's requests and ETags go through it: how `Decoder` reads
//! strings (invalid UTF-8 and lone surrogates become U+FFFD) and words its syntax errors, and
//! how `Marshal` escapes.

/// A JSON text as `Decoder`'s decoder reads its strings: invalid UTF-8 bytes and lone UTF-16
/// surrogate escapes inside strings become U+FFFD; everything else is kept byte for byte.
pub(crate) fn read_strings(body: &[u8]) -> Vec<u8> {
    const REPLACEMENT: &[u8] = "\u{fffd}".as_bytes();
    let hex = |at: usize| -> Option<u16> {
        let digits = body.get(at..at + 4)?;
        u16::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    };
    let mut out = Vec::with_capacity(body.len());
    let mut in_string = false;
    let mut at = 0;
    while at < body.len() {
        let byte = body[at];
        if !in_string {
            in_string = byte == b'"';
            out.push(byte);
            at += 1;
            continue;
        }
        match byte {
            b'"' => {
                in_string = false;
                out.push(byte);
                at += 1;
            }
            b'\\' if body.get(at + 1) == Some(&b'u') => match hex(at + 2) {
                Some(0xd800..=0xdbff) => {
                    let low = (body.get(at + 6..at + 8) == Some(&b"\\u"[..]))
                        .then(|| hex(at + 8))
                        .flatten();
                    if low.is_some_and(|low| (0xdc00..=0xdfff).contains(&low)) {
                        out.extend_from_slice(&body[at..at + 12]);
                        at += 12;
                    } else {
                        out.extend_from_slice(b"\\ufffd");
                        at += 6;
                    }
                }
                Some(0xdc00..=0xdfff) => {
                    out.extend_from_slice(b"\\ufffd");
                    at += 6;
                }
                _ => {
                    out.extend_from_slice(&body[at..at + 2]);
                    at += 2;
                }
            },
            b'\\' => {
                out.extend_from_slice(&body[at..(at + 2).min(body.len())]);
                at += 2;
            }
            b if b < 0x80 => {
                out.push(b);
                at += 1;
            }
            _ => {
                let rest = &body[at..(at + 4).min(body.len())];
                let valid = match std::str::from_utf8(rest) {
                    Ok(text) => text.chars().next().map_or(0, char::len_utf8),
                    Err(e) if e.valid_up_to() > 0 => std::str::from_utf8(&rest[..e.valid_up_to()])
                        .ok()
                        .and_then(|t| t.chars().next())
                        .map_or(0, char::len_utf8),
                    Err(_) => 0,
                };
                if valid == 0 {
                    out.extend_from_slice(REPLACEMENT);
                    at += 1;
                } else {
                    out.extend_from_slice(&body[at..at + valid]);
                    at += valid;
                }
            }
        }
    }
    out
}

/// Go's `encoding/json` wording for syntax errors; other errors keep serde's text.
pub(crate) fn decode_error(body: &[u8], err: &serde_json::Error) -> String {
    if err.is_eof() {
        return "unexpected EOF".into();
    }
    if !err.is_syntax() {
        return err.to_string();
    }
    let line_start: usize = body
        .split(|&b| b == b'\n')
        .take(err.line().saturating_sub(1))
        .map(|l| l.len() + 1)
        .sum();
    let offset = line_start + err.column().saturating_sub(1);
    let Some(&found) = body.get(offset) else {
        return "unexpected EOF".into();
    };
    let text = err.to_string();
    if text.starts_with("control character") {
        return format!("invalid character {} in string literal", quote_char(found));
    }
    if text.starts_with("invalid escape") {
        return format!(
            "invalid character {} in string escape code",
            quote_char(found)
        );
    }
    let before = body[..offset]
        .iter()
        .rev()
        .find(|b| !b.is_ascii_whitespace());
    let expecting = match before {
        Some(b'{') | Some(b',') => "looking for beginning of object key string",
        Some(b'"') | Some(b'}') | Some(b']') => "after object key:value pair",
        _ => "looking for beginning of value",
    };
    format!("invalid character {} {expecting}", quote_char(found))
}

/// Go's `quoteChar`: the byte as the rune of the same value, quoted the way `strconv.Quote`
/// quotes it, between single quotes.
fn quote_char(byte: u8) -> String {
    let inner = match byte {
        b'\'' => "\\'".to_string(),
        b'"' => "\"".to_string(),
        b'\\' => "\\\\".to_string(),
        0x07 => "\\a".to_string(),
        0x08 => "\\b".to_string(),
        0x0c => "\\f".to_string(),
        b'\n' => "\\n".to_string(),
        b'\r' => "\\r".to_string(),
        b'\t' => "\\t".to_string(),
        0x0b => "\\v".to_string(),
        b if b < 0x20 || b == 0x7f => format!("\\x{b:02x}"),
        b if (0x80..=0xa0).contains(&b) || b == 0xad => format!("\\u{b:04x}"),
        b => char::from(b).to_string(),
    };
    format!("'{inner}'")
}

/// A JSON text as `Marshal` escapes it: `<`, `>` and `&` (its HTML escaping), and U+2028 and
/// U+2029.
pub(crate) fn escape_html(json: &str) -> String {
    json.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// An `*UnmarshalTypeError`'s text for a top-level `value` (a JSON kind) decoded into
/// `go_type`: `json: cannot unmarshal array into Go value of type api.InstancePut`.
pub(crate) fn unmarshal_type_error(value: &str, go_type: &str) -> String {
    format!("json: cannot unmarshal {value} into Go value of type {go_type}")
}

/// An `*UnmarshalTypeError`'s text for a `value` (a JSON kind, or `number 1.5`) decoded into
/// the field `field` of type `field_type` of the struct `go_struct`: `json: cannot unmarshal
/// string into Go struct field InstanceConsolePost.width of type int`.
pub(crate) fn unmarshal_field_type_error(
    value: &str,
    go_struct: &str,
    field: &str,
    field_type: &str,
) -> String {
    format!("json: cannot unmarshal {value} into Go struct field {go_struct}.{field} of type {field_type}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marshal_escapes_html_characters() {
        assert_eq!(escape_html("\"<a&b>\""), "\"\\u003ca\\u0026b\\u003e\"");
    }
}
