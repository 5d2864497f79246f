//! Go's `net/http` server, as the daemon's listeners answer before any handler runs: a refusal
//! in plain text with the connection closed (`400 Bad Request: missing required Host header`),
//! and what it says about a request head that does not parse.

use http::StatusCode;

/// An answer Go's server writes itself: the status, and why when Go says why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refusal<'a> {
    pub(crate) status: StatusCode,
    pub(crate) why: Option<&'a str>,
}

impl Refusal<'_> {
    /// The reason phrase of the status line: `Bad Request: why` (a 501's is the plain one).
    pub(crate) fn reason(&self) -> String {
        let reason = self.status.canonical_reason().unwrap_or_default();
        match self.why {
            Some(why) if self.status != StatusCode::NOT_IMPLEMENTED => format!("{reason}: {why}"),
            _ => reason.to_string(),
        }
    }

    /// The plain-text body: `400 Bad Request: why`; a 501's is why alone.
    pub(crate) fn body(&self) -> String {
        match (self.status, self.why) {
            (StatusCode::NOT_IMPLEMENTED, Some(why)) => why.to_string(),
            _ => format!("{} {}", self.status.as_u16(), self.reason()),
        }
    }

    /// The whole HTTP/1.1 answer, as Go writes it on a connection it then closes.
    pub(crate) fn http1(&self) -> Vec<u8> {
        format!(
            "HTTP/1.1 {} {}\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n{}",
            self.status.as_u16(),
            self.reason(),
            self.body()
        )
        .into_bytes()
    }
}

/// What Go's server says about a request head that does not parse (`head`: the bytes read).
pub(crate) fn unparsed_head(head: &[u8]) -> Refusal<'static> {
    let refusal = |status, why| Refusal { status, why };
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split('\n').map(|l| l.trim_end_matches('\r'));
    let request_line = lines.next().unwrap_or_default();
    let parts: Vec<&str> = request_line.split(' ').collect();
    if let [_, _, version] = parts.as_slice() {
        let digits = version.strip_prefix("HTTP/").map(str::as_bytes);
        if let Some([major, b'.', minor]) = digits {
            if major.is_ascii_digit() && minor.is_ascii_digit() && *major != b'1' {
                return refusal(
                    StatusCode::HTTP_VERSION_NOT_SUPPORTED,
                    Some("unsupported protocol version"),
                );
            }
        }
    }
    for line in lines.take_while(|l| !l.is_empty()) {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        if name.contains([' ', '\t']) {
            return refusal(StatusCode::BAD_REQUEST, Some("invalid header name"));
        }
        if name.eq_ignore_ascii_case("transfer-encoding")
            && !value.trim().eq_ignore_ascii_case("chunked")
        {
            return refusal(
                StatusCode::NOT_IMPLEMENTED,
                Some("Unsupported transfer encoding"),
            );
        }
    }
    refusal(StatusCode::BAD_REQUEST, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_reads_as_go_writes_it() {
        let host = Refusal {
            status: StatusCode::BAD_REQUEST,
            why: Some("missing required Host header"),
        };
        assert_eq!(
            String::from_utf8(host.http1()).unwrap(),
            "HTTP/1.1 400 Bad Request: missing required Host header\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request: missing required Host header"
        );
        let coding = unparsed_head(b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n");
        assert_eq!(coding.reason(), "Not Implemented");
        assert_eq!(coding.body(), "Unsupported transfer encoding");
        let bare = unparsed_head(b"GET / HTTP/1.1\r\n\r\n");
        assert_eq!(bare.body(), "400 Bad Request");
        assert_eq!(
            unparsed_head(b"GET / HTTP/2.0\r\n\r\n").body(),
            "505 HTTP Version Not Supported: unsupported protocol version"
        );
    }
}
