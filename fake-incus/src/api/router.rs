//! How the route table ([`super::routes`]) is read: a row's path pattern, methods, API
//! extension and guard, what a request carries to its handler ([`Call`]), and the one walk
//! down the table ([`dispatch`]).
//!
//! A request walks the rows in order. A row takes part when its pattern matches the path, the
//! Incus line has its API extension (a row names the extension that introduced its endpoint)
//! and its guard holds. A check row ([`Step::Check`]) runs what every request below it is
//! checked for first (the project, the instance's name) and the walk goes on; an endpoint row
//! ([`Step::Answer`]) answers when it serves the method. Once a row of a path matched but did
//! not serve the method, only rows of that same path pattern are looked at: none serving the
//! method, the answer is the daemon's `501 not implemented`; no row matching, `404 not found`.

use super::Ctx;
use crate::envelope::{ApiError, ApiResult};
use bytes::Bytes;
use http::{HeaderMap, Method, Request};
use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// The future of an asynchronous handler.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A generic implementation's check (see [`Check::Generic`]).
pub(crate) type GenericCheck = Arc<dyn Fn(&Ctx, &Call) -> Result<(), ApiError> + Send + Sync>;

/// A generic implementation's handler (see [`Handler::Generic`]).
pub(crate) type GenericHandler = Arc<dyn Fn(&Ctx, &Call) -> ApiResult + Send + Sync>;

/// Every method: the row answers (or checks) whatever the method.
pub(crate) const ANY: &[&str] = &[];

/// One row of the route table.
#[derive(Clone)]
pub(crate) struct Route {
    /// The path, as Incus's API documentation writes it: `/1.0/instances/{name}/state`. A
    /// `{...}` segment matches any one segment (the handler reads it with [`Call::arg`]); a last
    /// `**` matches any number of segments, none included.
    pub(crate) path: Cow<'static, str>,
    /// The methods the row serves ([`ANY`]: every method; such a row answers what no endpoint
    /// of its path took).
    pub(crate) methods: &'static [&'static str],
    /// The API extension that introduced the endpoint: a line without it does not route it.
    pub(crate) extension: Option<&'static str>,
    /// When the row applies beyond its path, method and extension.
    pub(crate) guard: Option<Guard>,
    pub(crate) step: Step,
}

/// A condition on the request (a header, the cluster, trust) and what it says, for `API.md`.
#[derive(Clone, Copy)]
pub(crate) struct Guard {
    pub(crate) says: &'static str,
    pub(crate) holds: fn(&Ctx, &Call) -> bool,
}

/// What a row does.
#[derive(Clone)]
pub(crate) enum Step {
    /// Checked before anything below it answers: an error is the answer, else the walk goes on.
    Check(Check),
    /// The endpoint's handler.
    Answer(Handler),
}

/// A check row's check.
#[derive(Clone)]
pub(crate) enum Check {
    Fn(fn(&Ctx, &Call) -> Result<(), ApiError>),
    /// A check made by a generic implementation (what a declared resource checks first: see
    /// `resource::routes`).
    Generic(GenericCheck),
}

/// An endpoint row's handler.
#[derive(Clone)]
pub(crate) enum Handler {
    Sync(fn(&Ctx, &mut Call) -> ApiResult),
    Async(for<'a> fn(&'a Ctx, &'a mut Call) -> BoxFuture<'a, ApiResult>),
    /// An endpoint served by a generic implementation (a declared resource's: see
    /// `resource::routes`).
    Generic(GenericHandler),
}

impl Route {
    /// A row serving `methods` of `path` with `handler`.
    pub(crate) const fn new(
        path: &'static str,
        methods: &'static [&'static str],
        handler: fn(&Ctx, &mut Call) -> ApiResult,
    ) -> Self {
        Self {
            path: Cow::Borrowed(path),
            methods,
            extension: None,
            guard: None,
            step: Step::Answer(Handler::Sync(handler)),
        }
    }
    /// A row serving `methods` of `path` with an asynchronous handler.
    pub(crate) const fn new_async(
        path: &'static str,
        methods: &'static [&'static str],
        handler: for<'a> fn(&'a Ctx, &'a mut Call) -> BoxFuture<'a, ApiResult>,
    ) -> Self {
        Self {
            path: Cow::Borrowed(path),
            methods,
            extension: None,
            guard: None,
            step: Step::Answer(Handler::Async(handler)),
        }
    }
    /// A check row: every request whose path matches `path` is checked so first.
    pub(crate) const fn check(
        path: &'static str,
        check: fn(&Ctx, &Call) -> Result<(), ApiError>,
    ) -> Self {
        Self {
            path: Cow::Borrowed(path),
            methods: ANY,
            extension: None,
            guard: None,
            step: Step::Check(Check::Fn(check)),
        }
    }
    /// The row, served only by a line with this API extension.
    pub(crate) const fn extension(mut self, extension: &'static str) -> Self {
        self.extension = Some(extension);
        self
    }
    /// The row, taking part only when `holds` (which `says`, in `API.md`).
    pub(crate) const fn when(mut self, says: &'static str, holds: fn(&Ctx, &Call) -> bool) -> Self {
        self.guard = Some(Guard { says, holds });
        self
    }
    fn serves(&self, method: &Method) -> bool {
        self.methods.is_empty() || self.methods.contains(&method.as_str())
    }
}

/// One segment of a path pattern.
#[derive(Debug, Clone, PartialEq)]
enum Seg {
    Literal(String),
    /// `{...}`: any one segment.
    Arg,
    /// A last `**`: any number of segments.
    Rest,
}

/// A path pattern, split once.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Pattern(Vec<Seg>);

impl Pattern {
    pub(crate) fn parse(path: &str) -> Self {
        let path = path.trim_start_matches('/');
        if path.is_empty() {
            return Self(Vec::new());
        }
        Self(
            path.split('/')
                .map(|s| match s {
                    "**" => Seg::Rest,
                    s if s.starts_with('{') && s.ends_with('}') => Seg::Arg,
                    s => Seg::Literal(s.to_owned()),
                })
                .collect(),
        )
    }
    /// Whether the pattern matches the segments; the indices of its `{...}` segments in `args`.
    fn matches(&self, segments: &[String], args: &mut Vec<usize>) -> bool {
        args.clear();
        let mut i = 0;
        for seg in &self.0 {
            match seg {
                Seg::Rest => return true,
                Seg::Arg if i < segments.len() => args.push(i),
                Seg::Literal(literal) if segments.get(i) == Some(literal) => {}
                _ => return false,
            }
            i += 1;
        }
        i == segments.len()
    }
    /// Whether a concrete path (`/1.0/instances/c1`) matches the pattern.
    pub(crate) fn matches_path(&self, path: &str) -> bool {
        let segments: Vec<String> = Pattern::parse(path)
            .0
            .into_iter()
            .map(|s| match s {
                Seg::Literal(s) => s,
                Seg::Arg => "{}".to_owned(),
                Seg::Rest => "**".to_owned(),
            })
            .collect();
        self.matches(&segments, &mut Vec::new())
    }
}

/// A request as the table hands it to a row: the request itself, its path's segments
/// (percent-decoded) and the segments the row's `{...}` matched.
pub(crate) struct Call {
    pub(crate) req: Request<Bytes>,
    /// The path's segments after `/`, decoded (`1.0`, `instances`, `c1`).
    segments: Vec<String>,
    args: Vec<usize>,
}

impl Call {
    pub(crate) fn new(req: Request<Bytes>) -> Self {
        let segments = segments(req.uri().path());
        Self {
            req,
            segments,
            args: Vec::new(),
        }
    }
    /// The `n`th segment the row's `{...}` matched.
    pub(crate) fn arg(&self, n: usize) -> &str {
        self.args
            .get(n)
            .and_then(|i| self.segments.get(*i))
            .map_or("", String::as_str)
    }
    /// The segments the row's `{...}` matched, in order.
    pub(crate) fn args(&self) -> Vec<&str> {
        (0..self.args.len()).map(|n| self.arg(n)).collect()
    }
    /// The path's segments after `/1.0`.
    pub(crate) fn below_1_0(&self) -> Vec<&str> {
        self.segments.iter().skip(1).map(String::as_str).collect()
    }
    pub(crate) fn segments(&self) -> &[String] {
        &self.segments
    }
    pub(crate) fn method(&self) -> &Method {
        self.req.method()
    }
    pub(crate) fn headers(&self) -> &HeaderMap {
        self.req.headers()
    }
    pub(crate) fn body(&self) -> &Bytes {
        self.req.body()
    }
    /// The request, taken out (for an upgrade); the call keeps an empty one.
    pub(crate) fn take_request(&mut self) -> Request<Bytes> {
        std::mem::take(&mut self.req)
    }
}

/// A path's segments after `/`, percent-decoded (`/1.0/instances/c%31` is `1.0`, `instances`,
/// `c1`); a trailing `/` makes no segment.
pub(crate) fn segments(path: &str) -> Vec<String> {
    path.trim_end_matches('/')
        .split('/')
        .skip(1)
        .map(|s| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        })
        .collect()
}

/// A row of the table with its pattern split.
pub(crate) struct Row {
    pub(crate) route: Route,
    pattern: Pattern,
}

/// The rows, in order, with an index by a path's second segment (`instances` of
/// `/1.0/instances/...`): a request walks only the rows that can match it, in table order.
pub(crate) struct Table {
    rows: Vec<Row>,
    by_second: std::collections::HashMap<String, Vec<usize>>,
    /// The rows any path may match (a pattern of fewer than two literal segments).
    anywhere: Vec<usize>,
}

impl Table {
    pub(crate) fn new(routes: impl IntoIterator<Item = Route>) -> Self {
        let rows: Vec<Row> = routes
            .into_iter()
            .map(|route| Row {
                pattern: Pattern::parse(&route.path),
                route,
            })
            .collect();
        let second = |row: &Row| match row.pattern.0.get(..2) {
            Some([Seg::Literal(_), Seg::Literal(second)]) => Some(second.clone()),
            _ => None,
        };
        let anywhere: Vec<usize> = (0..rows.len())
            .filter(|i| second(&rows[*i]).is_none())
            .collect();
        let mut by_second = std::collections::HashMap::<String, Vec<usize>>::new();
        for (i, row) in rows.iter().enumerate() {
            if let Some(key) = second(row) {
                by_second.entry(key).or_default().push(i);
            }
        }
        for indices in by_second.values_mut() {
            indices.extend(&anywhere);
            indices.sort_unstable();
        }
        Self {
            rows,
            by_second,
            anywhere,
        }
    }
    pub(crate) fn rows(&self) -> &[Row] {
        &self.rows
    }
    /// The rows a path of these segments may match, in table order.
    fn candidates(&self, segments: &[String]) -> impl Iterator<Item = &Row> {
        let indices = segments
            .get(1)
            .and_then(|second| self.by_second.get(second))
            .unwrap_or(&self.anywhere);
        indices.iter().map(|i| &self.rows[*i])
    }
}

/// Answers a request by walking the table.
pub(crate) async fn dispatch(ctx: &Ctx, table: &Table, mut call: Call) -> ApiResult {
    let mut args = Vec::new();
    let mut seen: Option<&Pattern> = None;
    for row in table.candidates(&call.segments) {
        if seen.is_some_and(|pattern| *pattern != row.pattern) {
            continue;
        }
        let route = &row.route;
        if !row.pattern.matches(&call.segments, &mut args)
            || route.extension.is_some_and(|e| !ctx.app.has_extension(e))
        {
            continue;
        }
        std::mem::swap(&mut call.args, &mut args);
        if route.guard.is_some_and(|guard| !(guard.holds)(ctx, &call)) {
            continue;
        }
        match &route.step {
            Step::Check(Check::Fn(check)) => check(ctx, &call)?,
            Step::Check(Check::Generic(check)) => check(ctx, &call)?,
            Step::Answer(handler) if route.serves(call.method()) => {
                return match handler {
                    Handler::Sync(handler) => handler(ctx, &mut call),
                    Handler::Async(handler) => handler(ctx, &mut call).await,
                    Handler::Generic(handler) => handler(ctx, &call),
                };
            }
            Step::Answer(_) => seen = Some(&row.pattern),
        }
    }
    Err(if seen.is_some() {
        ApiError::not_implemented()
    } else {
        ApiError::not_found()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_matches_its_arguments_and_a_last_double_star_any_rest() {
        let mut args = Vec::new();
        let state = Pattern::parse("/1.0/instances/{name}/state");
        assert!(state.matches(&segments("/1.0/instances/c1/state"), &mut args));
        assert_eq!(args, [2]);
        assert!(!state.matches(&segments("/1.0/instances/c1"), &mut args));
        assert!(!state.matches(&segments("/1.0/instances/c1/state/x"), &mut args));
        let below = Pattern::parse("/1.0/instances/{name}/**");
        assert!(below.matches(&segments("/1.0/instances/c1"), &mut args));
        assert!(below.matches(&segments("/1.0/instances/c1/logs/lxc.log"), &mut args));
        assert!(!below.matches(&segments("/1.0/instances"), &mut args));
        assert!(Pattern::parse("/").matches(&[], &mut args));
    }
}
