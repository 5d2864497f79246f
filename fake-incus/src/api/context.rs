//! What a handler knows about its request: who called (the listener's [`Peer`]) and the
//! request context ([`Ctx`]: app, trust, journal sequence, query parameters).

use crate::app::App;
use crate::cluster::Scope;
use crate::envelope::ApiError;
use crate::faults::exec::ExecFaults;
use crate::faults::operation::OperationFault;
use crate::journal::Listener;
use crate::operations::OpSpec;
use crate::operations::Work;
use serde_json::Value;
use std::sync::Arc;

/// Who is calling, as the listener saw it.
#[derive(Debug, Clone)]
pub(crate) struct Peer {
    pub(crate) listener: Listener,
    /// SHA-256 of the client certificate (HTTPS only).
    pub(crate) fingerprint: Option<String>,
    /// The cluster member whose listener took the request (`None`: not clustered).
    pub(crate) member: Option<std::sync::Arc<str>>,
}

/// The context of one request.
pub(crate) struct Ctx {
    pub(crate) app: Arc<App>,
    pub(crate) peer: Peer,
    pub(crate) trusted: bool,
    pub(crate) seq: u64,
    /// The fault on the operation this request creates, if a rule selected one.
    pub(super) operation_fault: Option<OperationFault>,
    /// The exec faults of the session this request creates.
    pub(super) exec_faults: ExecFaults,
    pub(super) query: Query,
    /// What the request belongs to on a cluster (default: nothing, standalone).
    pub(crate) scope: Scope,
}

/// A request's query parameters, as `url::form_urlencoded` reads them (pairs split at `&`, the
/// first `=` between key and value, `+` and `%XX` decoded). A query with nothing to decode (the
/// usual `project=NAME&recursion=1`) is kept as it came with where its pairs are, split once:
/// no copy per parameter, no search per look-up.
#[derive(Debug, Default)]
pub(crate) struct Query(Parsed);

#[derive(Debug)]
enum Parsed {
    /// Nothing to decode: the query as it came, and each pair's key start, `=` (or end) and end.
    Plain(Box<str>, Vec<[usize; 3]>),
    /// The decoded pairs.
    Decoded(Vec<(String, String)>),
}

impl Default for Parsed {
    fn default() -> Self {
        Self::Plain(Box::default(), Vec::new())
    }
}

impl Query {
    /// The query of a request (`None`: it had none).
    pub(crate) fn parse(query: Option<&str>) -> Self {
        let query = query.unwrap_or_default();
        let bytes = query.as_bytes();
        if bytes.iter().any(|b| *b == b'%' || *b == b'+') {
            let pairs = url::form_urlencoded::parse(bytes).into_owned().collect();
            return Self(Parsed::Decoded(pairs));
        }
        let position = |from: usize, to: usize, byte: u8| {
            bytes[from..to]
                .iter()
                .position(|b| *b == byte)
                .map_or(to, |i| from + i)
        };
        let mut pairs = Vec::new();
        let mut start = 0;
        while start < bytes.len() {
            let end = position(start, bytes.len(), b'&');
            if end > start {
                pairs.push([start, position(start, end, b'='), end]);
            }
            start = end + 1;
        }
        Self(Parsed::Plain(query.into(), pairs))
    }
    /// The value of the first parameter named `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        match &self.0 {
            Parsed::Plain(query, pairs) => {
                let [_, eq, end] = pairs
                    .iter()
                    .find(|[start, eq, _]| query.get(*start..*eq) == Some(key))?;
                query.get((*eq + 1).min(*end)..*end)
            }
            Parsed::Decoded(pairs) => pairs
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str()),
        }
    }
}

impl Ctx {
    /// Starts a task operation for this request, shaped by its operation fault.
    pub(crate) fn start_task(&self, spec: OpSpec, work: Work) -> Value {
        self.app
            .operations
            .start_task(spec, self.operation_fault.clone(), self.location(), work)
    }
    /// Registers a running operation for this request (its work driven by the caller),
    /// shaped by its operation fault; returns its id and JSON.
    pub(crate) fn create_operation(&self, spec: OpSpec) -> (String, Value) {
        self.app
            .operations
            .create_operation(spec, self.operation_fault.as_ref(), self.location())
    }
    /// The cluster member what this request creates belongs to (`None`: not clustered).
    pub(crate) fn location(&self) -> Option<String> {
        self.scope.location.clone()
    }
    /// The operation fault of this request (exec operations take it).
    pub(crate) fn operation_fault(&self) -> Option<OperationFault> {
        self.operation_fault.clone()
    }
    /// The exec faults of this request.
    pub(crate) fn exec_faults(&self) -> ExecFaults {
        self.exec_faults.clone()
    }
    /// Marks the request as applied in the journal.
    pub(crate) fn applied(&self) {
        self.app.journal.set_applied(self.seq);
    }
    pub(crate) fn param(&self, key: &str) -> Option<&str> {
        self.query.get(key)
    }
    /// `project`, default `default`.
    pub(crate) fn project(&self) -> String {
        self.project_name().to_string()
    }
    /// `project`, default `default`, borrowed.
    pub(crate) fn project_name(&self) -> &str {
        self.param("project")
            .filter(|p| !p.is_empty())
            .unwrap_or("default")
    }
    /// `recursion`; anything that is not an integer counts as 0.
    pub(crate) fn recursion(&self) -> u8 {
        self.param("recursion")
            .and_then(|r| r.parse().ok())
            .unwrap_or(0)
    }
    pub(crate) fn all_projects(&self) -> bool {
        self.param("all-projects") == Some("true")
    }
    /// 404 with the endpoint's own message when `project` names no project (unless
    /// `all-projects=true`).
    pub(crate) fn require_project(
        &self,
        message: impl FnOnce(&str) -> String,
    ) -> Result<(), ApiError> {
        let project = self.project_name();
        if self.all_projects() || self.app.snapshot().state.project(project).is_some() {
            Ok(())
        } else {
            Err(ApiError::new(404, message(project)))
        }
    }

    /// The projects a collection request covers.
    pub(crate) fn projects(&self) -> Vec<String> {
        if self.all_projects() {
            self.app
                .snapshot()
                .state
                .projects
                .iter()
                .map(|p| p.name.clone())
                .collect()
        } else {
            vec![self.project()]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Query;

    #[test]
    fn a_query_parameter_reads_as_form_urlencoded_reads_it() {
        let keys = ["project", "recursion", "filter", "a", "b", ""];
        for query in [
            "",
            "project=p1",
            "project=p1&recursion=1",
            "&&project=&project=second&a",
            "a=b=c&b",
            "=x&a=1",
            "project=p%31&filter=name+eq+c1",
            "recursion=2&project=%ff",
        ] {
            let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
                .into_owned()
                .collect();
            let parsed = Query::parse(Some(query));
            for key in keys {
                let want = pairs
                    .iter()
                    .find(|(k, _)| k == key)
                    .map(|(_, v)| v.as_str());
                assert_eq!(parsed.get(key), want, "{query:?} {key:?}");
            }
        }
        assert_eq!(Query::parse(None).get("project"), None);
    }
}
