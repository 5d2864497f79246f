//! The transcripts kept in `tests/data/transcripts/` (recorded from the real daemon by
//! `ci/record-transcripts.sh`) and the differences their replay is known to show (shared by
//! the test binaries that replay them).
// `record_replay` (in the fake's test binary) replays the kept transcripts; `record_real`
// records new ones and needs only the known differences.
#![allow(dead_code)]

use fake_incus::replay::{Difference, Report};
use fake_incus::transcript::{self, Exchange};
use fake_incus::{FakeIncus, IncusLine};
use std::path::PathBuf;

/// Where the kept transcripts are: `NAME.jsonl`, and `NAME.state.json`, the capture taken
/// when the recording began.
pub(crate) const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/transcripts");

/// A known difference of the fake from the real daemon.
pub(crate) struct Known {
    /// A substring of the request's method and path (`POST /1.0/instances`).
    pub(crate) request: &'static str,
    /// A substring of the difference.
    pub(crate) diff: &'static str,
    /// Why it is there.
    #[allow(dead_code)]
    pub(crate) reason: &'static str,
}

/// The fake's known differences from Incus 6.0.4 in the kept transcripts. Each is a fake gap
/// to fix unless its reason says otherwise; none is known. (The empty exec stream that about
/// one live replay in four showed was the replay's: it sent, at its recorded moment, the close
/// the client had sent `control` in answer to the daemon's end, and so killed a command the
/// fake had not run yet.)
pub(crate) const KNOWN: &[Known] = &[];

/// The fake's further known differences from Incus 7.0.2 in a live recording with the 7.0
/// client (`record_real` against a 7.0 daemon). Each is a fake gap to fix; none is known.
pub(crate) const KNOWN_7_0: &[Known] = &[];

/// A kept transcript.
pub(crate) struct Kept {
    pub(crate) name: String,
    pub(crate) exchanges: Vec<Exchange>,
    pub(crate) state: Option<serde_json::Value>,
}

/// The line of the daemon the kept transcripts were recorded from (`ci/record-transcripts.sh`'s
/// default socket, Incus 6.0.4), for a capture that does not name the version it read (the
/// kept ones predate that).
pub(crate) const RECORDED: IncusLine = IncusLine::V6_0;

impl Kept {
    /// The line of the daemon it was recorded from: its capture's `incus_version` (a capture
    /// records the version it read), else [`RECORDED`].
    pub(crate) fn line(&self) -> IncusLine {
        self.state
            .as_ref()
            .and_then(|state| state.get("incus_version")?.as_str().map(String::from))
            .map_or(RECORDED, |version| {
                IncusLine::of_server_version(&version).expect("a line the fake serves")
            })
    }

    /// The known differences of its line beside [`KNOWN`]: [`KNOWN_7_0`] for 7.0.
    pub(crate) fn known_beside(&self) -> &'static [Known] {
        if self.line() == IncusLine::V7_0 {
            KNOWN_7_0
        } else {
            &[]
        }
    }

    /// A fresh fake seeded with the transcript's capture, imitating the line it was recorded
    /// from ([`Kept::line`]).
    pub(crate) async fn fake(&self) -> FakeIncus {
        let mut builder = FakeIncus::builder().incus_version(self.line());
        if let Some(state) = &self.state {
            builder = builder.state(state.clone());
        }
        builder.start().await.expect("the capture loads")
    }
}

/// Every kept transcript, by name.
pub(crate) fn kept() -> Vec<Kept> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(DIR)
        .map(|dir| dir.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    paths.retain(|p| p.extension().is_some_and(|e| e == "jsonl"));
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).expect("readable");
            let (_, exchanges) = transcript::parse(&text).expect("a transcript");
            let state = std::fs::read_to_string(path.with_extension("state.json"))
                .ok()
                .map(|text| serde_json::from_str(&text).expect("a JSON capture"));
            Kept {
                name,
                exchanges,
                state,
            }
        })
        .collect()
}

/// The differences of `report` that no [`KNOWN`] entry covers.
pub(crate) fn unexpected(report: &Report) -> Vec<String> {
    unexpected_beside(report, &[])
}

/// Whether `known` covers the difference `d`.
fn covers(known: &Known, d: &Difference) -> bool {
    format!("{} {}", d.method, d.path).contains(known.request) && d.what.contains(known.diff)
}

/// The differences of `report` that neither [`KNOWN`] nor `more` covers.
pub(crate) fn unexpected_beside(report: &Report, more: &[Known]) -> Vec<String> {
    report
        .differences
        .iter()
        .filter(|d| !KNOWN.iter().chain(more).any(|k| covers(k, d)))
        .map(|d| format!("#{} {} {}: {}", d.seq, d.method, d.path, d.what))
        .collect()
}

/// The entries of `known` that no difference of `reports` showed: stale ones to remove, unless
/// their reason says they are intermittent.
pub(crate) fn unseen<'a>(known: &'a [Known], reports: &[Report]) -> Vec<&'a Known> {
    known
        .iter()
        .filter(|k| {
            !reports
                .iter()
                .flat_map(|r| &r.differences)
                .any(|d| covers(k, d))
        })
        .collect()
}
