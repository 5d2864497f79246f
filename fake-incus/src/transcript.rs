//! The transcript format of `fake-incus record` and `fake-incus replay`: JSON lines, a
//! [`Header`] first, then one [`Exchange`] per request, written when it ends (so a websocket
//! that stays open is written after requests that started later: order by [`Exchange::seq`]).
//!
//! Bodies and websocket frames are kept up to a bound ([`Body`]): the first bytes, the whole
//! size and the SHA-256 digest of the whole.

use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The transcript format version, in the header line. Another version is refused on reading.
pub const TRANSCRIPT_VERSION: u32 = 1;

/// The default bound on the bytes of a body or a frame kept in a transcript (1 MiB).
pub const DEFAULT_BODY_LIMIT: usize = 1 << 20;

/// The first line of a transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// [`TRANSCRIPT_VERSION`].
    pub transcript_version: u32,
    /// What was recorded (the upstream socket or URL).
    pub upstream: String,
    /// When the recording began (RFC 3339, UTC).
    pub started: String,
    /// The bound on the bytes of a body or frame kept.
    pub body_limit: usize,
}

/// One request and its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    /// The request's number, in the order the requests arrived (from 1).
    pub seq: u64,
    /// When the request arrived, in microseconds since the recording began.
    pub started_us: u64,
    /// The request.
    pub request: RecordedRequest,
    /// The answer (for a websocket: the handshake's answer).
    pub response: RecordedResponse,
    /// How long it took.
    pub timing: Timing,
    /// The frames of an upgraded connection (exec, events, console websockets; sftp), when it
    /// was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub websocket: Option<Websocket>,
}

/// A recorded request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    /// The method.
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query, without the `?` (empty when there is none).
    #[serde(default)]
    pub query: String,
    /// The headers that matter (not the connection's own: `Host`, `Content-Length`,
    /// `Connection`, the websocket handshake's keys), lower-case, in order.
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Body,
}

impl RecordedRequest {
    /// The path with its query.
    pub fn path_and_query(&self) -> String {
        if self.query.is_empty() {
            self.path.clone()
        } else {
            format!("{}?{}", self.path, self.query)
        }
    }

    /// The protocol it asked to upgrade to (`websocket`, `sftp`), lower-case.
    pub fn upgrade(&self) -> Option<String> {
        self.headers
            .iter()
            .find(|(name, _)| name == "upgrade")
            .map(|(_, value)| value.to_ascii_lowercase())
    }
}

/// A recorded answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedResponse {
    /// The HTTP status.
    pub status: u16,
    /// The headers that matter (not `Date`, `Content-Length`, `Connection`,
    /// `Sec-WebSocket-Accept`), lower-case, in order.
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Body,
}

/// How long an exchange took, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timing {
    /// From sending the request upstream to having the upstream's whole answer.
    pub upstream_us: u64,
    /// From the request's arrival to its answer going back, less `upstream_us`: what the
    /// recorder itself added.
    pub recorder_us: u64,
}

/// The frames of an upgraded connection: websocket messages, or for another protocol (the
/// `sftp` of file transfers) the bytes as they were read, in [`FrameKind::Raw`] chunks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Websocket {
    /// Every frame, in the order the recorder saw them.
    pub frames: Vec<Frame>,
    /// When the connection ended, in microseconds after the upgrade.
    pub closed_us: u64,
    /// Who ended it first (a close frame, or the end of its stream); `None` when the recorder
    /// stopped first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_by: Option<Side>,
}

/// Who sent a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The client (the program under record).
    Client,
    /// The server (the upstream Incus).
    Server,
}

/// A websocket frame's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FrameKind {
    /// A text message.
    Text,
    /// A binary message.
    Binary,
    /// A ping.
    Ping,
    /// A pong.
    Pong,
    /// A close frame.
    Close,
    /// Bytes of an upgraded connection that is not a websocket (`sftp`), as they were read.
    Raw,
}

/// One websocket frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Frame {
    /// Who sent it.
    pub from: Side,
    /// Its kind.
    pub kind: FrameKind,
    /// When, in microseconds after the upgrade.
    pub at_us: u64,
    /// Its payload (size, digest and the first bytes).
    pub data: Body,
}

/// A body or a payload: its size, the SHA-256 of the whole, and its first `limit` bytes, as
/// text when they are UTF-8, else in base64.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Body {
    /// The whole size in bytes.
    pub size: usize,
    /// The SHA-256 of the whole, in hex.
    pub sha256: String,
    /// Whether only the first bytes are kept.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// The kept bytes, when they are UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The kept bytes in base64, when they are not UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base64: Option<String>,
}

impl Body {
    /// `bytes`, keeping at most `limit` of them.
    ///
    /// ```
    /// use fake_incus::transcript::Body;
    /// let body = Body::new(b"hello world", 5);
    /// assert_eq!((body.size, body.truncated, body.text.as_deref()), (11, true, Some("hello")));
    /// assert_eq!(body.bytes(), Some(b"hello".to_vec()));
    /// ```
    pub fn new(bytes: &[u8], limit: usize) -> Self {
        let kept = &bytes[..bytes.len().min(limit)];
        let (text, base64) = match std::str::from_utf8(kept) {
            Ok(text) => (Some(text.to_string()), None),
            Err(_) => (
                None,
                Some(base64::engine::general_purpose::STANDARD.encode(kept)),
            ),
        };
        Self {
            size: bytes.len(),
            sha256: hex::encode(Sha256::digest(bytes)),
            truncated: kept.len() < bytes.len(),
            text,
            base64,
        }
    }

    /// The kept bytes (`None` when the base64 is not valid).
    pub fn bytes(&self) -> Option<Vec<u8>> {
        match (&self.text, &self.base64) {
            (Some(text), _) => Some(text.as_bytes().to_vec()),
            (None, Some(encoded)) => base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok(),
            (None, None) => Some(Vec::new()),
        }
    }
}

/// Why a transcript could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TranscriptError {
    /// The file could not be read.
    #[error("reading {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A line is not a header or an exchange.
    #[error("line {line}: {message}")]
    Line {
        /// The line number (from 1).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The header's version is not [`TRANSCRIPT_VERSION`].
    #[error(
        "transcript version {found} is not the version this fake reads ({TRANSCRIPT_VERSION})"
    )]
    Version {
        /// The version found.
        found: u32,
    },
}

/// A transcript's header and its exchanges, ordered by [`Exchange::seq`].
pub fn parse(text: &str) -> Result<(Header, Vec<Exchange>), TranscriptError> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty());
    let (_, first) = lines.next().ok_or(TranscriptError::Line {
        line: 1,
        message: "empty transcript: no header line".into(),
    })?;
    let version: serde_json::Value =
        serde_json::from_str(first).map_err(|e| TranscriptError::Line {
            line: 1,
            message: e.to_string(),
        })?;
    match version["transcript_version"].as_u64() {
        Some(found) if found == u64::from(TRANSCRIPT_VERSION) => {}
        Some(found) => {
            return Err(TranscriptError::Version {
                found: u32::try_from(found).unwrap_or(u32::MAX),
            })
        }
        None => {
            return Err(TranscriptError::Line {
                line: 1,
                message: "the first line is not a transcript header (no transcript_version)".into(),
            })
        }
    }
    let header: Header = serde_json::from_value(version).map_err(|e| TranscriptError::Line {
        line: 1,
        message: e.to_string(),
    })?;
    let mut exchanges = lines
        .map(|(n, line)| {
            serde_json::from_str::<Exchange>(line).map_err(|e| TranscriptError::Line {
                line: n + 1,
                message: e.to_string(),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    exchanges.sort_by_key(|e| e.seq);
    Ok((header, exchanges))
}
