//! What the journal keeps of a request as it arrives.

use super::Peer;
use crate::journal::{Answer, JournalEntry};
use bytes::Bytes;
use http::{header, Request};

pub(super) fn journal_entry(req: &Request<Bytes>, peer: &Peer, trusted: bool) -> JournalEntry {
    let header = |name: header::HeaderName| {
        req.headers()
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    };
    JournalEntry {
        seq: 0,
        listener: peer.listener,
        cert_fingerprint: peer.fingerprint.clone(),
        trusted,
        method: req.method().to_string(),
        path: req.uri().path().to_string(),
        query: req.uri().query().map(String::from),
        if_match: header(header::IF_MATCH),
        content_type: header(header::CONTENT_TYPE),
        body: String::from_utf8_lossy(req.body()).into_owned(),
        websocket: is_upgrade(req),
        applied: false,
        faults: Vec::new(),
        answer: Answer::Pending,
    }
}

pub(crate) fn is_upgrade<B>(req: &Request<B>) -> bool {
    req.headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}
