//! Request bodies decoded the way the daemon's Go decoder reads them.

use crate::envelope::ApiError;
use serde::de::DeserializeOwned;

/// Parses a JSON body the way the daemon does, with Go's streaming `json.Decoder`: only the
/// first value is read (trailing bytes are ignored), an empty body is `EOF`, a truncated one
/// `unexpected EOF`, and syntax errors are worded like Go's. Like Go, a duplicate key keeps
/// its last value, invalid UTF-8 and lone UTF-16 surrogates in strings become U+FFFD, `null`
/// leaves every field at its zero value, and a top-level value that is not an object is
/// refused for the daemon's request structs. Every error is a 400.
pub(crate) fn parse_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    /// The Go type (of Incus's `shared/api`) the daemon decodes each request body into.
    fn api_struct<T>() -> Option<&'static str> {
        let name = std::any::type_name::<T>();
        let table = [
            ("::instances::CreateBody", "api.InstancesPost"),
            ("::instances::PutBody", "api.InstancePut"),
            ("::instances::PatchBody", "api.InstancePut"),
            ("::instances::RenameBody", "api.InstancePost"),
            ("::snapshots::CreateBody", "api.InstanceSnapshotsPost"),
            ("::power::StateBody", "api.InstanceStatePut"),
            ("::power::InstancesPut", "api.InstancesPut"),
            ("::cluster_enable::ClusterPut", "api.ClusterPut"),
            (
                "::debug_repair::InstanceDebugRepairPost",
                "api.InstanceDebugRepairPost",
            ),
            ("::exec::ExecBody", "api.InstanceExecPost"),
            ("::console::ConsoleBody", "api.InstanceConsolePost"),
            ("::profiles::ProfileCreateBody", "api.ProfilesPost"),
            ("::profiles::ProfilePutBody", "api.ProfilePut"),
            ("::profiles::ProfileRenameBody", "api.ProfilePost"),
            ("::projects::ProjectCreateBody", "api.ProjectsPost"),
            ("::projects::ProjectPutBody", "api.ProjectPut"),
            ("::projects::ProjectRenameBody", "api.ProjectPost"),
            ("::volumes::VolumeCreateBody", "api.StorageVolumesPost"),
            ("::volumes::VolumePutBody", "api.StorageVolumePut"),
        ];
        table
            .iter()
            .find(|(suffix, _)| name.ends_with(suffix))
            .map(|(_, go)| *go)
    }
    let cleaned = crate::go::encoding_json::read_strings(body);
    let body = cleaned.as_slice();
    let first = serde_json::Deserializer::from_slice(body)
        .into_iter::<serde_json::Value>()
        .next();
    let value = match first {
        Some(Ok(value)) => value,
        // Deeper than serde_json's value limit: decode straight into the target instead.
        Some(Err(e)) if e.to_string().starts_with("recursion limit exceeded") => {
            return match serde_json::Deserializer::from_slice(body)
                .into_iter::<T>()
                .next()
            {
                Some(Ok(value)) => Ok(value),
                Some(Err(e)) => Err(ApiError::bad_request(
                    crate::go::encoding_json::decode_error(body, &e),
                )),
                None => Err(ApiError::bad_request("EOF")),
            };
        }
        Some(Err(e)) => {
            return Err(ApiError::bad_request(
                crate::go::encoding_json::decode_error(body, &e),
            ))
        }
        None => return Err(ApiError::bad_request("EOF")),
    };
    if let Some(go) = api_struct::<T>() {
        let kind = match &value {
            serde_json::Value::Array(_) => Some("array"),
            serde_json::Value::String(_) => Some("string"),
            serde_json::Value::Number(_) => Some("number"),
            serde_json::Value::Bool(_) => Some("bool"),
            _ => None,
        };
        if let Some(kind) = kind {
            return Err(ApiError::bad_request(
                crate::go::encoding_json::unmarshal_type_error(kind, go),
            ));
        }
    }
    if value.is_null() {
        if let Ok(parsed) = T::deserialize(serde_json::Value::Null) {
            return Ok(parsed);
        }
        return T::deserialize(serde_json::json!({}))
            .map_err(|e| ApiError::bad_request(e.to_string()));
    }
    T::deserialize(value).map_err(|e| ApiError::bad_request(e.to_string()))
}

/// Deserializes `null` as the default value, as Go's decoder does for maps, slices and strings.
pub(crate) fn null_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + serde::Deserialize<'de>,
{
    use serde::Deserialize;
    Option::<T>::deserialize(deserializer).map(Option::unwrap_or_default)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_errors_are_worded_like_go() {
        let err = |text: &str| {
            parse_body::<serde_json::Value>(text.as_bytes())
                .unwrap_err()
                .message
        };
        assert_eq!(
            err("{bad"),
            "invalid character 'b' looking for beginning of object key string"
        );
        assert_eq!(
            err("{\"a\": }"),
            "invalid character '}' looking for beginning of value"
        );
        assert_eq!(err(""), "EOF");
        assert_eq!(err("  \n"), "EOF");
        assert_eq!(err("{"), "unexpected EOF");
        assert_eq!(err("{\"a\": 1"), "unexpected EOF");
        assert_eq!(err("[1"), "unexpected EOF");
    }

    #[test]
    fn only_the_first_json_value_is_read_as_by_gos_decoder() {
        let first = parse_body::<serde_json::Value>(b"{\"a\": 1}} junk").unwrap();
        assert_eq!(first, serde_json::json!({"a": 1}));
    }
}

/// The body of a rename that asks for nothing but a new name (`POST` on a backup, a volume
/// snapshot or a cluster group; Go's `api.*Post` with only `name`).
#[derive(serde::Deserialize, Default)]
#[serde(default)]
pub(crate) struct RenameBody {
    #[serde(deserialize_with = "null_default")]
    pub(crate) name: String,
}

/// Go's `encoding/json` error for a field of the wrong JSON kind, for a body decoded into
/// `go_type` whose `fields` are (JSON name, Go type): `json: cannot unmarshal string into Go
/// struct field InstanceConsolePost.width of type int`. A body that is not an object, or does
/// not parse, is left to [`parse_body`].
pub(crate) fn check_field_kinds(
    body: &[u8],
    go_type: &str,
    fields: &[(&str, &str)],
) -> Result<(), ApiError> {
    let Ok(serde_json::Value::Object(object)) = serde_json::from_slice(body) else {
        return Ok(());
    };
    for (field, go) in fields {
        let Some(value) = object.get(*field) else {
            continue;
        };
        let fits = match *go {
            "int" | "int64" => value.is_i64() || value.is_u64(),
            "string" => value.is_string(),
            "bool" => value.is_boolean(),
            _ => true,
        };
        let kind = match value {
            serde_json::Value::Null => continue,
            serde_json::Value::Bool(_) => "bool",
            serde_json::Value::Number(n) if n.is_f64() && go.starts_with("int") => {
                return Err(ApiError::bad_request(
                    crate::go::encoding_json::unmarshal_field_type_error(
                        &format!("number {n}"),
                        go_type,
                        field,
                        go,
                    ),
                ))
            }
            serde_json::Value::Number(_) => "number",
            serde_json::Value::String(_) => "string",
            serde_json::Value::Array(_) => "array",
            serde_json::Value::Object(_) => "object",
        };
        if !fits {
            return Err(ApiError::bad_request(
                crate::go::encoding_json::unmarshal_field_type_error(kind, go_type, field, go),
            ));
        }
    }
    Ok(())
}
