//! The `filter=` expressions of collection endpoints, parsed and evaluated as the daemon's
//! `internal/filter` does: whitespace-separated `[not] field op value` clauses joined by `and` /
//! `or` and evaluated left to right without precedence (`a or b and c` is `(a or b) and c`),
//! `"`-quoted values spanning words, and a comparison that depends on the field's type: a string
//! field compares case-insensitively, as an anchored case-insensitive regular expression when the
//! value is one (`name eq c.*`); a boolean or number field parses the value first; a map field
//! (`config.image.os`) yields `""` for a missing key. Errors of the text are 400; errors of a
//! comparison (an unknown field, a value that does not parse, an operator other than `eq`/`ne`)
//! are the daemon's 500 texts, raised only when an object is compared.

use crate::envelope::ApiError;
use serde_json::Value;
use std::borrow::Cow;

/// A field's value with the type the daemon's Go struct gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FieldValue<'a> {
    Str(Cow<'a, str>),
    Int(i64),
    Bool(bool),
    /// A `[]string` (profiles): compared with the value parsed as a JSON array.
    List(Vec<String>),
    /// An integer of a named type (`status_code`): the value is parsed, then the daemon's type
    /// switch misses it and the comparison fails with "Unsupported filter type".
    NamedInt,
    /// A type the daemon cannot compare (its reflect kind: `struct`, `map`, `ptr`, `invalid`).
    Uncomparable(&'static str),
    /// A slice of something other than strings (snapshots, backups): the element kind.
    Slice(&'static str),
}

impl FieldValue<'_> {
    pub(crate) fn text(s: &str) -> FieldValue<'_> {
        FieldValue::Str(Cow::Borrowed(s))
    }
}

/// What a filter looks fields up in: the object as rendered at recursion 1, or anything that
/// answers the same for every field without being rendered.
pub(crate) trait Fields {
    /// The field's value; `Uncomparable("invalid")` when the object has no such field.
    fn field(&self, path: &str) -> FieldValue<'_>;
}

impl Fields for Value {
    fn field(&self, path: &str) -> FieldValue<'_> {
        value_of(self, path)
    }
}

/// The daemon's `ValueOf` over a rendered object: the first dotted part names a member; a map of
/// strings takes the whole rest as its key (`config.image.os` is the key `image.os`), missing
/// keys reading `""`; a map of maps takes one part per level.
fn value_of<'a>(object: &'a Value, path: &str) -> FieldValue<'a> {
    let Some(map) = object.as_object() else {
        return FieldValue::Uncomparable("invalid");
    };
    let (head, rest) = match path.split_once('.') {
        Some((head, rest)) => (head, Some(rest)),
        None => (path, None),
    };
    let Some(member) = map.get(head) else {
        return FieldValue::Uncomparable("invalid");
    };
    match rest {
        None => leaf(member),
        Some(rest) => lookup_in(member, rest),
    }
}

/// A dotted path below a member: into a map of strings (the rest is one key), a map of maps (one
/// level per part) or a nested object.
fn lookup_in<'a>(member: &'a Value, rest: &str) -> FieldValue<'a> {
    let Some(inner) = member.as_object() else {
        return FieldValue::Uncomparable("invalid");
    };
    if inner.values().all(Value::is_string) {
        return FieldValue::text(inner.get(rest).and_then(Value::as_str).unwrap_or(""));
    }
    value_of(member, rest)
}

fn leaf(value: &Value) -> FieldValue<'_> {
    match value {
        Value::String(s) => FieldValue::text(s),
        Value::Bool(b) => FieldValue::Bool(*b),
        Value::Number(n) => n.as_i64().map_or(FieldValue::NamedInt, FieldValue::Int),
        Value::Array(items) if items.iter().all(Value::is_string) => FieldValue::List(
            items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
        ),
        Value::Array(_) => FieldValue::Slice("struct"),
        Value::Object(_) => FieldValue::Uncomparable("map"),
        Value::Null => FieldValue::Uncomparable("invalid"),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Logical {
    And,
    Or,
}

#[derive(Debug)]
struct Clause {
    previous: Logical,
    negate: bool,
    field: String,
    operator: String,
    value: String,
}

/// A parsed filter: clauses evaluated left to right.
pub(crate) struct Filter {
    clauses: Vec<Clause>,
}

impl Filter {
    /// Parses `filter=`; errors are the daemon's 400 texts.
    pub(crate) fn parse(text: &str) -> Result<Self, ApiError> {
        let invalid = |why: &str| ApiError::bad_request(format!("Invalid filter: {why}"));
        let parts: Vec<&str> = text.split_whitespace().collect();
        let mut clauses = Vec::new();
        let mut index = 0;
        let mut previous = Logical::And;
        while index < parts.len() {
            let negate = parts[index].eq_ignore_ascii_case("not");
            if negate {
                index += 1;
                if index == parts.len() {
                    return Err(invalid("incomplete not clause"));
                }
            }
            let field = parts[index].to_string();
            index += 1;
            let operator = parts
                .get(index)
                .ok_or_else(|| invalid("clause has no operator"))?
                .to_string();
            index += 1;
            let mut value = parts
                .get(index)
                .ok_or_else(|| invalid("clause has no value"))?
                .to_string();
            // A value opening with `"` runs to the next word that ends with one (never the word
            // it opens in: the daemon's quirk, so `"c1"` alone is unterminated).
            if let Some(opened) = value.strip_prefix('"') {
                let mut joined = opened.to_string();
                loop {
                    index += 1;
                    let word = parts
                        .get(index)
                        .ok_or_else(|| invalid("unterminated quote"))?;
                    if let Some(end) = word.strip_suffix('"') {
                        joined.push(' ');
                        joined.push_str(end);
                        break;
                    }
                    joined.push(' ');
                    joined.push_str(word);
                }
                value = joined;
            }
            index += 1;
            clauses.push(Clause {
                previous,
                negate,
                field,
                operator,
                value,
            });
            if let Some(word) = parts.get(index) {
                previous = match *word {
                    "and" => Logical::And,
                    "or" => Logical::Or,
                    _ => return Err(invalid("invalid clause composition")),
                };
                index += 1;
                if index == parts.len() {
                    return Err(invalid("unterminated compound clause"));
                }
            }
        }
        Ok(Self { clauses })
    }

    /// Whether an object passes; a comparison the daemon cannot make is its 500 error.
    pub(crate) fn matches(&self, object: &impl Fields) -> Result<bool, ApiError> {
        let mut result = true;
        for clause in &self.clauses {
            let matched = clause.matches(object).map_err(ApiError::internal)? != clause.negate;
            result = match clause.previous {
                Logical::And => result && matched,
                Logical::Or => result || matched,
            };
        }
        Ok(result)
    }
}

impl Clause {
    fn matches(&self, object: &impl Fields) -> Result<bool, String> {
        let field = &self.field;
        let equal = match self.operator.as_str() {
            "eq" => Some(true),
            "ne" => Some(false),
            _ => None,
        };
        let unsupported = || "Unsupported operation".to_string();
        let same = match object.field(field) {
            FieldValue::Str(actual) => {
                let pattern = if self.value.contains('^') || self.value.contains('$') {
                    self.value.clone()
                } else {
                    format!("^{}$", self.value)
                };
                let equal = equal.ok_or_else(unsupported)?;
                let same = match regex::Regex::new(&format!("(?i){pattern}")) {
                    Ok(re) => re.is_match(&actual),
                    Err(_) => actual.to_lowercase() == self.value.to_lowercase(),
                };
                return Ok(same == equal);
            }
            FieldValue::Int(actual) => parse_int(&self.value)? == actual,
            FieldValue::Bool(actual) => parse_bool(&self.value)? == actual,
            FieldValue::List(actual) => {
                let wanted: Vec<String> = serde_json::from_str(&self.value)
                    .map_err(|_| format!("Failed to parse value: {}", json_error(&self.value)))?;
                wanted == actual
            }
            FieldValue::NamedInt => {
                parse_int(&self.value)?;
                return Err(format!(
                    "Unsupported filter type \"int\" for field \"{field}\""
                ));
            }
            FieldValue::Uncomparable(kind) => {
                return Err(format!("Invalid type \"{kind}\" for field \"{field}\""));
            }
            FieldValue::Slice(kind) => {
                return Err(format!(
                    "Invalid slice type \"{kind}\" for field \"{field}\""
                ));
            }
        };
        Ok(same == equal.ok_or_else(unsupported)?)
    }
}

/// Go's `strconv.ParseInt(v, 10, 0)`.
fn parse_int(value: &str) -> Result<i64, String> {
    value.parse().map_err(|_| {
        format!("Failed to parse value: strconv.ParseInt: parsing \"{value}\": invalid syntax")
    })
}

/// Go's `strconv.ParseBool`.
fn parse_bool(value: &str) -> Result<bool, String> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(format!(
            "Failed to parse value: strconv.ParseBool: parsing \"{value}\": invalid syntax"
        )),
    }
}

/// The text Go's JSON decoder gives for a value that is not a string array.
fn json_error(value: &str) -> String {
    match value.trim_start().chars().next() {
        Some(c) if !matches!(c, '[' | '{' | '"' | '-' | '0'..='9' | 't' | 'f' | 'n') => {
            format!("invalid character '{c}' looking for beginning of value")
        }
        _ => "json: cannot unmarshal into Go value of type []string".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn passes(filter: &str, object: &Value) -> bool {
        Filter::parse(filter).unwrap().matches(object).unwrap()
    }

    #[test]
    fn string_fields_compare_case_insensitively_and_as_anchored_patterns() {
        let obj = json!({"name": "c1", "status": "Running", "config": {"image.os": "busybox"}});
        assert!(passes("status eq running", &obj));
        assert!(passes("status eq RUNNING", &obj));
        assert!(passes("name eq C.*", &obj));
        assert!(!passes("name eq c", &obj));
        assert!(passes("name eq ^c", &obj));
        assert!(!passes("name ne c.*", &obj));
        // A value that is no pattern compares as text.
        assert!(!passes("name eq [", &obj));
        assert!(passes("config.image.os eq BusyBox", &obj));
    }

    #[test]
    fn a_missing_config_key_reads_empty_and_an_unknown_field_is_a_500() {
        let obj = json!({"name": "c1", "config": {"image.os": "busybox"}, "created": {"a": 1}});
        assert!(!passes("config.nope eq x", &obj));
        assert!(passes("config.nope ne x", &obj));
        assert!(passes("config.nope eq ^$", &obj));
        let err = Filter::parse("nope eq x")
            .unwrap()
            .matches(&obj)
            .unwrap_err();
        assert_eq!(
            (err.status, err.message.as_str()),
            (500, "Invalid type \"invalid\" for field \"nope\"")
        );
    }

    #[test]
    fn clauses_are_evaluated_left_to_right_without_precedence() {
        let obj = json!({"name": "c1", "status": "Running"});
        // (c1 or c2) and Stopped: false; with `and` binding tighter it would be true.
        assert!(!passes(
            "name eq c1 or name eq c2 and status eq Stopped",
            &obj
        ));
        assert!(passes("NOT name eq c2", &obj));
        assert!(passes(
            "name eq c2 and status eq Running or name eq c1",
            &obj
        ));
    }

    #[test]
    fn typed_fields_parse_the_value_first_with_the_daemon_texts() {
        let obj = json!({"ephemeral": false, "pid": 7, "profiles": ["default"]});
        assert!(passes("ephemeral eq FALSE", &obj));
        assert!(passes("pid eq 7", &obj));
        assert!(passes(r#"profiles eq ["default"]"#, &obj));
        let err = |f: &str| Filter::parse(f).unwrap().matches(&obj).unwrap_err().message;
        assert_eq!(
            err("ephemeral eq x"),
            "Failed to parse value: strconv.ParseBool: parsing \"x\": invalid syntax"
        );
        assert_eq!(
            err("pid eq abc"),
            "Failed to parse value: strconv.ParseInt: parsing \"abc\": invalid syntax"
        );
        assert_eq!(
            err("profiles eq x"),
            "Failed to parse value: invalid character 'x' looking for beginning of value"
        );
        assert_eq!(err("pid zz 7"), "Unsupported operation");
    }

    #[test]
    fn filter_text_errors_use_the_daemon_texts() {
        let msg = |t: &str| Filter::parse(t).err().unwrap().message;
        assert_eq!(msg("name zz"), "Invalid filter: clause has no value");
        assert_eq!(msg("name"), "Invalid filter: clause has no operator");
        assert_eq!(msg("not"), "Invalid filter: incomplete not clause");
        assert_eq!(
            msg("name zz eq x"),
            "Invalid filter: invalid clause composition"
        );
        assert_eq!(
            msg("name eq c1 OR name eq c2"),
            "Invalid filter: invalid clause composition"
        );
        assert_eq!(
            msg("name eq c1 and"),
            "Invalid filter: unterminated compound clause"
        );
        assert_eq!(msg("name eq \"c1\""), "Invalid filter: unterminated quote");
        let obj = json!({"description": "a b"});
        assert!(passes("description eq \"a b\"", &obj));
    }
}
