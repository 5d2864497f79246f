//! Duplicate member names in the raw bytes, which a parsed `Value` silently drops (the last one
//! wins). A duplicate path is a duplicate operation; any other is an ambiguous document.

use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::Sink;
use crate::tama::pointer::Pointer;

/// Reports every member name that appears twice in one object of `bytes` (already known to be
/// JSON).
pub(crate) fn check(bytes: &[u8], sink: &mut Sink) {
    let mut found = Vec::new();
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let seed = Walk {
        at: Pointer::root(),
        found: &mut found,
    };
    // The bytes parsed once already; a failure here cannot add information.
    if seed.deserialize(&mut deserializer).is_err() {
        return;
    }
    let paths = Pointer::root().key("paths");
    for at in found {
        if parent_is(&at, &paths) {
            sink.report(
                &at,
                "operation.operationId.unique",
                "this operation path appears more than once; each would claim the same operationId",
            );
        } else {
            sink.report(
                &at,
                "document.duplicate-key",
                "this member name appears more than once in its object",
            );
        }
    }
}

fn parent_is(at: &Pointer, parent: &Pointer) -> bool {
    at.as_str()
        .strip_prefix(parent.as_str())
        .and_then(|rest| rest.strip_prefix('/'))
        .is_some_and(|segment| !segment.contains('/'))
}

struct Walk<'f> {
    at: Pointer,
    found: &'f mut Vec<Pointer>,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let at = self.at.key(&key);
            if !seen.insert(key) {
                self.found.push(at.clone());
            }
            map.next_value_seed(Walk {
                at,
                found: self.found,
            })?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        while seq
            .next_element_seed(Walk {
                at: self.at.index(index),
                found: self.found,
            })?
            .is_some()
        {
            index += 1;
        }
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}
