//! What the journal keeps of a request as it arrives.

use super::Peer;
use crate::journal::JournalEntry;
use bytes::Bytes;
use http::{header, Request};

pub(super) fn journal_entry(req: &Request<Bytes>, peer: &Peer, trusted: bool) -> JournalEntry {
    let header = |name: header::HeaderName| {
        req.headers()
            .get(name)
            .map(|v| crate::journal::lossy(v.as_bytes()))
    };
    let mut entry = JournalEntry::received(
        peer.listener,
        req.method().as_str().to_owned(),
        req.uri().path().to_string(),
        req.body(),
    );
    entry.cert_fingerprint = peer.fingerprint.clone();
    entry.trusted = trusted;
    entry.query = req.uri().query().map(String::from);
    entry.if_match = header(header::IF_MATCH);
    entry.content_type = header(header::CONTENT_TYPE);
    entry.websocket = is_upgrade(req);
    entry.member = peer.member.as_deref().map(String::from);
    entry
}

pub(crate) fn is_upgrade<B>(req: &Request<B>) -> bool {
    req.headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}
