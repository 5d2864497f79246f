//! Nesting depth: a parsed `Value` can be nested deeper than any JSON text `serde_json` parses
//! (128 levels), and every later check recurses, so deeper documents are refused up front.

use serde_json::Value;

use super::Sink;
use crate::tama::pointer::Pointer;

/// Arrays and objects nested deeper than this are refused (`serde_json`'s own parsing limit).
pub(crate) const MAX_DEPTH: usize = 128;

/// Reports `document.depth` and returns false when `document` nests more than [`MAX_DEPTH`]
/// arrays and objects. Iterative, so any depth is safe to measure.
pub(crate) fn check(document: &Value, sink: &mut Sink) -> bool {
    let mut pending: Vec<(&Value, usize)> = vec![(document, 0)];
    while let Some((value, depth)) = pending.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(members) => Box::new(members.values()),
            _ => continue,
        };
        if depth + 1 > MAX_DEPTH {
            sink.report(
                &Pointer::root(),
                "document.depth",
                format!("the document nests arrays and objects more than {MAX_DEPTH} levels deep"),
            );
            return false;
        }
        pending.extend(children.map(|child| (child, depth + 1)));
    }
    true
}
