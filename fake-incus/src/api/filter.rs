//! The `filter=` expressions of collection endpoints: `field eq value`, `ne`, `not`, `and`, `or`,
//! quoted values, dotted fields (`config.image.os`). `and` binds tighter than `or`.

use crate::envelope::ApiError;
use serde_json::Value;
use std::borrow::Cow;

/// What a filter looks fields up in: the object as rendered at recursion 1, or anything that
/// answers the same for every field without being rendered.
pub(crate) trait Fields {
    /// The field's value as a filter compares it (a string as it is, any other value as its
    /// JSON text); `None` when the object has no such field.
    fn field(&self, path: &str) -> Option<Cow<'_, str>>;
}

impl Fields for Value {
    fn field(&self, path: &str) -> Option<Cow<'_, str>> {
        lookup(self, path).map(|v| match v {
            Value::String(s) => Cow::Borrowed(s.as_str()),
            other => Cow::Owned(other.to_string()),
        })
    }
}

struct Clause {
    negate: bool,
    field: String,
    equal: bool,
    value: String,
}

/// A parsed filter: alternatives (`or`) of conjunctions (`and`).
pub(crate) struct Filter {
    any_of: Vec<Vec<Clause>>,
}

impl Filter {
    /// Parses `filter=`; errors are the daemon's 400 texts.
    pub(crate) fn parse(text: &str) -> Result<Self, ApiError> {
        let invalid = |why: &str| ApiError::bad_request(format!("Invalid filter: {why}"));
        let tokens = tokenize(text);
        let mut any_of = vec![Vec::new()];
        let mut i = 0;
        let mut bad_op: Option<String> = None;
        while i < tokens.len() {
            let negate = tokens[i] == "not";
            if negate {
                i += 1;
            }
            let field = tokens
                .get(i)
                .ok_or_else(|| invalid("clause has no field"))?
                .clone();
            let op = tokens
                .get(i + 1)
                .ok_or_else(|| invalid("clause has no operator"))?;
            let value = tokens
                .get(i + 2)
                .ok_or_else(|| invalid("clause has no value"))?
                .clone();
            let equal = op == "eq";
            if op != "eq" && op != "ne" {
                bad_op.get_or_insert_with(|| op.clone());
            }
            if let Some(last) = any_of.last_mut() {
                last.push(Clause {
                    negate,
                    field,
                    equal,
                    value,
                });
            }
            i += 3;
            match tokens.get(i).map(String::as_str) {
                None => {}
                Some("and") => i += 1,
                Some("or") => {
                    any_of.push(Vec::new());
                    i += 1;
                }
                Some(_) => return Err(invalid("invalid clause composition")),
            }
        }
        match bad_op {
            Some(op) => Err(invalid(&format!("invalid operator \"{op}\""))),
            None => Ok(Self { any_of }),
        }
    }

    /// Whether an object (as rendered at recursion 1) passes.
    pub(crate) fn matches(&self, object: &impl Fields) -> bool {
        self.any_of
            .iter()
            .any(|all| all.iter().all(|c| c.matches(object)))
    }
}

impl Clause {
    fn matches(&self, object: &impl Fields) -> bool {
        let actual = object.field(&self.field);
        let same = actual.as_deref() == Some(self.value.as_str());
        (same == self.equal) != self.negate
    }
}

/// `config.image.os` -> object["config"]["image.os"] (map keys may contain dots).
fn lookup<'a>(object: &'a Value, field: &str) -> Option<&'a Value> {
    if let Some(v) = object.get(field) {
        return Some(v);
    }
    let (head, rest) = field.split_once('.')?;
    lookup(object.get(head)?, rest)
}

fn tokenize(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                tokens.push(std::mem::take(&mut current));
            }
            (Some(_), c) => current.push(c),
            (None, '"' | '\'') => quote = Some(c),
            (None, c) if c.is_whitespace() => {
                if !current.is_empty() {
                    tokens.push(std::mem::take(&mut current));
                }
            }
            (None, c) => current.push(c),
        }
    }
    if !current.is_empty() {
        tokens.push(current);
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn filter_matches_dotted_config_keys_and_combinations() {
        let obj = json!({"name": "c1", "status": "Running", "config": {"image.os": "busybox"}});
        assert!(Filter::parse("config.image.os eq busybox")
            .unwrap()
            .matches(&obj));
        assert!(Filter::parse("name eq c2 or status eq Running")
            .unwrap()
            .matches(&obj));
        assert!(!Filter::parse("name eq c1 and not status eq Running")
            .unwrap()
            .matches(&obj));
        assert!(Filter::parse("name ne 'c 2'").unwrap().matches(&obj));
    }

    #[test]
    fn filter_errors_use_the_daemon_texts() {
        let msg = |t: &str| Filter::parse(t).err().unwrap().message;
        assert_eq!(msg("name zz"), "Invalid filter: clause has no value");
        assert_eq!(msg("name"), "Invalid filter: clause has no operator");
        assert_eq!(
            msg("name zz eq x"),
            "Invalid filter: invalid clause composition"
        );
        assert_eq!(msg("name zz x"), "Invalid filter: invalid operator \"zz\"");
    }
}
