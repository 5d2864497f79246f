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
    /// Whether the pattern matches the `len` segments `segment` gives; the indices of its
    /// `{...}` segments in `args`.
    fn matches<'s>(
        &self,
        len: usize,
        segment: impl Fn(usize) -> &'s str,
        args: &mut Vec<usize>,
    ) -> bool {
        args.clear();
        // A pattern without `**` matches only paths of its own length; with one, paths at least
        // as long as what comes before it. Most rows are told apart here, without
        // reading a segment.
        let fixed = self.0.iter().position(|seg| *seg == Seg::Rest);
        if fixed.map_or(len != self.0.len(), |before| len < before) {
            return false;
        }
        let mut i = 0;
        for seg in &self.0 {
            match seg {
                Seg::Rest => return true,
                Seg::Arg if i < len => args.push(i),
                Seg::Literal(literal) if i < len && segment(i) == literal => {}
                _ => return false,
            }
            i += 1;
        }
        i == len
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
        self.matches(segments.len(), |i| &segments[i], &mut Vec::new())
    }
}

/// A request as the table hands it to a row: the request itself, its path's segments
/// (percent-decoded) and the segments the row's `{...}` matched.
pub(crate) struct Call {
    pub(crate) req: Request<Bytes>,
    /// The path's segments after `/` (`1.0`, `instances`, `c1`): ranges of the request's path,
    /// decoded copies only where a segment has a `%` (a request routes without a copy of its
    /// path).
    segments: Vec<Segment>,
    args: Vec<usize>,
}

/// One segment of a [`Call`]'s path.
enum Segment {
    /// This range of the request's path, as it is (nothing to decode).
    Raw(std::ops::Range<usize>),
    /// Decoded (the path has a `%` there, or the request was taken out).
    Decoded(Box<str>),
}

impl Call {
    pub(crate) fn new(req: Request<Bytes>) -> Self {
        let path = req.uri().path();
        let trimmed = path.trim_end_matches('/');
        let mut segments = Vec::new();
        // What [`segments`] gives, as ranges: each piece after a `/`.
        if let Some(first) = trimmed.find('/') {
            let mut at = first + 1;
            for piece in trimmed[at..].split('/') {
                let range = at..at + piece.len();
                at = range.end + 1;
                segments.push(if piece.contains('%') {
                    Segment::Decoded(decode(piece).into())
                } else {
                    Segment::Raw(range)
                });
            }
        }
        Self {
            req,
            segments,
            args: Vec::new(),
        }
    }
    /// The `i`th segment of the path (`""` past the last).
    pub(crate) fn segment(&self, i: usize) -> &str {
        match self.segments.get(i) {
            Some(Segment::Raw(range)) => self.req.uri().path().get(range.clone()).unwrap_or(""),
            Some(Segment::Decoded(text)) => text,
            None => "",
        }
    }
    /// How many segments the path has.
    pub(crate) fn len(&self) -> usize {
        self.segments.len()
    }
    /// The `n`th segment the row's `{...}` matched.
    pub(crate) fn arg(&self, n: usize) -> &str {
        self.args.get(n).map_or("", |i| self.segment(*i))
    }
    /// The segments the row's `{...}` matched, in order.
    pub(crate) fn args(&self) -> Vec<&str> {
        (0..self.args.len()).map(|n| self.arg(n)).collect()
    }
    /// The path's segments after `/1.0`.
    pub(crate) fn below_1_0(&self) -> Vec<&str> {
        (1..self.len()).map(|i| self.segment(i)).collect()
    }
    /// The first segment (`1.0`), if any.
    pub(crate) fn first(&self) -> Option<&str> {
        (!self.segments.is_empty()).then(|| self.segment(0))
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
    /// The request, taken out (for an upgrade); the call keeps an empty one, and its
    /// segments as copies.
    pub(crate) fn take_request(&mut self) -> Request<Bytes> {
        for i in 0..self.segments.len() {
            if let Segment::Raw(_) = self.segments[i] {
                self.segments[i] = Segment::Decoded(self.segment(i).into());
            }
        }
        std::mem::take(&mut self.req)
    }
}

/// A segment, percent-decoded (invalid UTF-8 replaced).
fn decode(segment: &str) -> String {
    percent_encoding::percent_decode_str(segment)
        .decode_utf8_lossy()
        .into_owned()
}

/// A path's segments after `/`, percent-decoded (`/1.0/instances/c%31` is `1.0`, `instances`,
/// `c1`); a trailing `/` makes no segment.
pub(crate) fn segments(path: &str) -> Vec<String> {
    path.trim_end_matches('/')
        .split('/')
        .skip(1)
        .map(decode)
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
    /// The rows the call's path may match, in table order.
    fn candidates(&self, call: &Call) -> impl Iterator<Item = &Row> {
        let indices = (call.len() > 1)
            .then(|| self.by_second.get(call.segment(1)))
            .flatten()
            .unwrap_or(&self.anywhere);
        indices.iter().map(|i| &self.rows[*i])
    }
}

/// Answers a request by walking the table.
pub(crate) async fn dispatch(ctx: &Ctx, table: &Table, mut call: Call) -> ApiResult {
    let mut args = Vec::new();
    let mut seen: Option<&Pattern> = None;
    for row in table.candidates(&call) {
        if seen.is_some_and(|pattern| *pattern != row.pattern) {
            continue;
        }
        let route = &row.route;
        if !row
            .pattern
            .matches(call.len(), |i| call.segment(i), &mut args)
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

    /// Whether `pattern` matches `path`, its `{...}` indices in `args`.
    fn matches(pattern: &Pattern, path: &str, args: &mut Vec<usize>) -> bool {
        let segments = segments(path);
        pattern.matches(segments.len(), |i| &segments[i], args)
    }

    #[test]
    fn a_pattern_matches_its_arguments_and_a_last_double_star_any_rest() {
        let mut args = Vec::new();
        let state = Pattern::parse("/1.0/instances/{name}/state");
        assert!(matches(&state, "/1.0/instances/c1/state", &mut args));
        assert_eq!(args, [2]);
        assert!(!matches(&state, "/1.0/instances/c1", &mut args));
        assert!(!matches(&state, "/1.0/instances/c1/state/x", &mut args));
        let below = Pattern::parse("/1.0/instances/{name}/**");
        assert!(matches(&below, "/1.0/instances/c1", &mut args));
        assert!(matches(&below, "/1.0/instances/c1/logs/lxc.log", &mut args));
        assert!(!matches(&below, "/1.0/instances", &mut args));
        assert!(matches(&Pattern::parse("/"), "/", &mut args));
    }

    #[test]
    fn a_call_reads_the_segments_of_its_path_decoded_and_keeps_them_when_its_request_is_taken() {
        for path in [
            "/",
            "/1.0",
            "/1.0/",
            "/1.0/instances/c1",
            "/1.0/instances/c%31/logs/a%2Fb",
            "//1.0//x/",
            "/1.0/%ff%fe",
        ] {
            let req = Request::builder().uri(path).body(Bytes::new()).unwrap();
            let mut call = Call::new(req);
            let read = |call: &Call| -> Vec<String> {
                (0..call.len())
                    .map(|i| call.segment(i).to_owned())
                    .collect()
            };
            let want = segments(path);
            assert_eq!(read(&call), want, "{path}");
            assert_eq!(call.first(), want.first().map(String::as_str), "{path}");
            let _ = call.take_request();
            assert_eq!(read(&call), want, "{path} taken");
        }
    }
}
