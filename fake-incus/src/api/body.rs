//! Request bodies decoded the way the daemon's Go decoder reads them.

use crate::envelope::ApiError;
use serde::de::DeserializeOwned;

/// Parses a JSON body the way the daemon does, with Go's streaming `json.Decoder`: only the
/// first value is read (trailing bytes are ignored), an empty body is `EOF`, a truncated one
/// `unexpected EOF`, and syntax errors are worded like Go's. Every error is a 400.
pub(crate) fn parse_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    match serde_json::Deserializer::from_slice(body)
        .into_iter::<T>()
        .next()
    {
        Some(Ok(value)) => Ok(value),
        Some(Err(e)) => Err(ApiError::bad_request(go_decode_error(body, &e))),
        None => Err(ApiError::bad_request("EOF")),
    }
}

/// Go's `encoding/json` wording for syntax errors; other errors keep serde's text.
fn go_decode_error(body: &[u8], err: &serde_json::Error) -> String {
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
    let before = body[..offset]
        .iter()
        .rev()
        .find(|b| !b.is_ascii_whitespace());
    let expecting = match before {
        Some(b'{') | Some(b',') => "looking for beginning of object key string",
        Some(b'"') | Some(b'}') | Some(b']') => "after object key:value pair",
        _ => "looking for beginning of value",
    };
    format!("invalid character {} {expecting}", go_quote(found))
}

fn go_quote(byte: u8) -> String {
    match byte {
        b'\'' => "'\\''".into(),
        b if b.is_ascii_graphic() || b == b' ' => format!("'{}'", b as char),
        b => format!("'\\x{b:02x}'"),
    }
}

/// Deserializes `null` as the default value, as Go's decoder does for maps, slices and strings.
pub(crate) fn null_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + serde::Deserialize<'de>,
{
    use serde::Deserialize;
    Option::<T>::deserialize(deserializer).map(Option::unwrap_or_default)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_errors_are_worded_like_go() {
        let err = |text: &str| {
            parse_body::<serde_json::Value>(text.as_bytes())
                .unwrap_err()
                .message
        };
        assert_eq!(
            err("{bad"),
            "invalid character 'b' looking for beginning of object key string"
        );
        assert_eq!(
            err("{\"a\": }"),
            "invalid character '}' looking for beginning of value"
        );
        assert_eq!(err(""), "EOF");
        assert_eq!(err("  \n"), "EOF");
        assert_eq!(err("{"), "unexpected EOF");
        assert_eq!(err("{\"a\": 1"), "unexpected EOF");
        assert_eq!(err("[1"), "unexpected EOF");
    }

    #[test]
    fn only_the_first_json_value_is_read_as_by_gos_decoder() {
        let first = parse_body::<serde_json::Value>(b"{\"a\": 1}} junk").unwrap();
        assert_eq!(first, serde_json::json!({"a": 1}));
    }
}
