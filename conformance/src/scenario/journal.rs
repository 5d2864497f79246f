//! Fake-only expectations on the requests a step sent to the backend.

use super::format::{JournalExpect, RequestCount};
use super::target::Request;

/// Checks the requests of one step; returns one line per mismatch.
pub(crate) fn mismatches(expect: &JournalExpect, requests: &[Request]) -> Vec<String> {
    let mut out = Vec::new();
    if expect.no_backend_request && !requests.is_empty() {
        out.push(format!(
            "expected no backend request, got {}: {}",
            requests.len(),
            describe(requests)
        ));
    }
    for rule in &expect.requests {
        let found = requests.iter().filter(|r| matches(rule, r)).count();
        if found != rule.count {
            out.push(format!(
                "expected {} request(s) {} {}, got {found} (all requests: {})",
                rule.count,
                rule.method,
                rule.path,
                describe(requests)
            ));
        }
    }
    out
}

fn describe(requests: &[Request]) -> String {
    if requests.is_empty() {
        return "none".into();
    }
    requests
        .iter()
        .map(|r| match &r.query {
            Some(query) => format!("{} {}?{query}", r.method, r.path),
            None => format!("{} {}", r.method, r.path),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn matches(rule: &RequestCount, request: &Request) -> bool {
    (rule.method == "*" || rule.method.eq_ignore_ascii_case(&request.method))
        && fake_incus::path_matches(&rule.path, &request.path)
        && rule.body.as_ref().is_none_or(|body| {
            serde_json::from_str::<serde_json::Value>(&request.body).is_ok_and(|b| b == *body)
        })
        && rule
            .conditional
            .is_none_or(|conditional| conditional == request.if_match.is_some())
        && rule
            .applied
            .is_none_or(|applied| applied == request.applied)
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (fake-only expectations on the requests a
    //! step sent to the backend); a promise of the harness seen from outside (its command line,
    //! certification, the wire) goes in `tests/harness`.

    use super::*;
    use fake_incus::path_matches;

    fn request(method: &str, path: &str) -> Request {
        Request {
            method: method.into(),
            path: path.into(),
            query: None,
            body: String::new(),
            if_match: None,
            applied: false,
        }
    }

    fn rule(method: &str, path: &str, count: usize) -> RequestCount {
        RequestCount {
            method: method.into(),
            path: path.into(),
            count,
            body: None,
            conditional: None,
            applied: None,
        }
    }

    #[test]
    fn body_and_if_match_narrow_the_count() {
        let mut patch = request("PATCH", "/1.0/instances/web");
        patch.body = r#"{"description": "x"}"#.into();
        patch.if_match = Some("\"abc\"".into());
        let mut only_body = rule("PATCH", "/1.0/instances/web", 1);
        only_body.body = Some(serde_json::json!({"description": "x"}));
        only_body.conditional = Some(true);
        let expect = JournalExpect {
            no_backend_request: false,
            requests: vec![only_body.clone()],
        };
        assert!(mismatches(&expect, std::slice::from_ref(&patch)).is_empty());
        let mut wider = only_body;
        wider.body = Some(serde_json::json!({"description": "x", "config": {}}));
        let expect = JournalExpect {
            no_backend_request: false,
            requests: vec![wider],
        };
        assert_eq!(mismatches(&expect, &[patch]).len(), 1);
    }

    #[test]
    fn path_patterns_match_segments() {
        assert!(path_matches("/1.0/instances/*", "/1.0/instances/web"));
        assert!(!path_matches(
            "/1.0/instances/*",
            "/1.0/instances/web/state"
        ));
        assert!(path_matches(
            "/1.0/instances/**",
            "/1.0/instances/web/state"
        ));
        assert!(path_matches(
            "/1.0/operations/*/wait",
            "/1.0/operations/abc/wait?timeout=9"
        ));
        assert!(!path_matches("/1.0", "/1.0/instances"));
        // One dialect with the fake's rules and journal: `*` also matches part of a segment.
        assert!(path_matches("/1.0/instances/c*", "/1.0/instances/c1"));
        assert!(!path_matches(
            "/1.0/instances/c*",
            "/1.0/instances/c1/state"
        ));
    }

    #[test]
    fn counts_and_no_request_are_checked() {
        let requests = vec![
            request("GET", "/1.0"),
            request("DELETE", "/1.0/instances/web"),
        ];
        let expect = JournalExpect {
            no_backend_request: false,
            requests: vec![rule("DELETE", "/1.0/instances/*", 1)],
        };
        assert!(mismatches(&expect, &requests).is_empty());
        let none = JournalExpect {
            no_backend_request: true,
            requests: vec![],
        };
        assert_eq!(mismatches(&none, &requests).len(), 1);
        assert!(mismatches(&none, &[]).is_empty());
    }
}
