//! The ordered checks of `run` (in the order of the README's table, "Running operations"), the
//! bounded host callbacks, and dispatch to the executors.
use serde_json::{Map, Value};

use super::call::Call;
use super::callback::bounded;
use super::deadline::Progress;
use super::output::{self, Success};
use super::results::RunError;
use super::{checks, native, writes, RunOptions};
use crate::catalogue::{self, Confirmation, Descriptor};
use crate::client::Client;
use crate::host::{Binding, ImageRemote};

/// The project used when neither the input nor the binding names one.
const DEFAULT_PROJECT: &str = "default";

/// The exec stdin bound in bytes of UTF-8 (the schema bounds characters).
const EXEC_STDIN_BYTES: usize = 64 * 1024;

/// Image server protocols a host may name for a remote.
const IMAGE_PROTOCOLS: [&str; 2] = ["simplestreams", "incus"];

/// Runs the checks in the order of the README's table ("Running operations"), then the operation.
pub(crate) async fn run<C: Send + Sync>(
    name: &str,
    input: Value,
    options: &RunOptions<'_, C>,
) -> Result<Value, RunError> {
    let Some(descriptor) = catalogue::fetch(name) else {
        let reason = if catalogue::lookup(name).is_some() {
            format!("{name} is not exported: its client evidence is incomplete (see unavailable())")
        } else {
            format!("{name:?} is not an operation")
        };
        return Err(RunError::UnknownOperation(reason));
    };
    run_operation(descriptor, input, options).await
}

/// Runs every check after the export gate, then the operation, within the call's bound (tests use
/// it directly for operations the gate does not export yet).
pub(crate) async fn run_operation<C: Send + Sync>(
    descriptor: &'static Descriptor,
    input: Value,
    options: &RunOptions<'_, C>,
) -> Result<Value, RunError> {
    let progress = Progress::default();
    let bound = options.call_timeout;
    match tokio::time::timeout(bound, checked(descriptor, input, options, &progress)).await {
        Ok(result) => result,
        Err(_) => {
            let reason = format!(
                "the call did not finish within its bound of {} ms",
                bound.as_millis()
            );
            match progress.take(&reason) {
                Some(result) => output::finish(descriptor.native(), Success::Object(result)),
                None => Err(RunError::Timeout(format!(
                    "{reason}; nothing that changes state was sent"
                ))),
            }
        }
    }
}

/// The checks and the operation, recording in `progress` what to report if the bound passes.
async fn checked<C: Send + Sync>(
    descriptor: &'static Descriptor,
    input: Value,
    options: &RunOptions<'_, C>,
    progress: &Progress,
) -> Result<Value, RunError> {
    checks::scope(descriptor, &options.scopes)?;
    checks::input_bytes(descriptor, &input)?;
    validate_input(descriptor, &input)?;
    let input = whole_numbers_as_integers(input);
    checks::confirmation(descriptor, &input)?;
    writes::check_input(descriptor, &input, options).await?;
    let binding = bind(descriptor, options).await?;
    let input = normalize(descriptor, input, &binding)?;
    authorize(descriptor, &input, options).await?;
    let remote = resolve_remote(&input, options).await?;
    let client = discover(binding).await?;
    let project = input
        .get("project")
        .and_then(Value::as_str)
        .unwrap_or(DEFAULT_PROJECT)
        .to_owned();
    let input = writes::check_applied(descriptor, &client, &project, input, options).await?;
    let call = Call {
        descriptor,
        client: &client,
        project,
        input,
        remote,
        progress,
    };
    let success = native::execute(&call).await?;
    output::finish(descriptor.native(), success)
}

/// The input schema (compiled once per descriptor by the catalogue), plus semantic rules.
///
/// A missing `confirm` is left to the confirmation check, so that it is reported as
/// `confirmation_required` rather than as a schema failure.
fn validate_input(descriptor: &Descriptor, input: &Value) -> Result<(), RunError> {
    let first = descriptor
        .input_validator()
        .iter_errors(input)
        .find(|error| !is_missing_confirm(error));
    if let Some(error) = first {
        return Err(RunError::InvalidInput {
            message: error.to_string(),
            pointer: error.instance_path().as_str().to_owned(),
        });
    }
    let stdin = input
        .get("stdin")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if stdin.len() > EXEC_STDIN_BYTES {
        return Err(RunError::InvalidInput {
            message: format!(
                "stdin is {} bytes of UTF-8, over {EXEC_STDIN_BYTES}",
                stdin.len()
            ),
            pointer: "/stdin".into(),
        });
    }
    if descriptor.confirmation() == Some(Confirmation::Fingerprint) {
        let fingerprint = input
            .get("fingerprint")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !is_full_fingerprint(fingerprint) {
            return Err(RunError::InvalidInput {
                message: "fingerprint must be the full 64-character lowercase hex fingerprint"
                    .into(),
                pointer: "/fingerprint".into(),
            });
        }
    }
    Ok(())
}

/// Rewrites every whole number written as a float (`1000.0`, `1e3`) as the integer it is.
///
/// JSON Schema 2020-12 counts such numbers as integers, so they pass an `"type": "integer"`
/// schema; every later reader (the executors, the host's `authorize`, the native request) then
/// sees the value the caller meant, never a float that an integer read would drop. Numbers out
/// of the 64-bit range are left alone: every integer field of the catalogue has a `maximum`
/// (and a `minimum`) inside it, so such a number never passes validation as an integer.
fn whole_numbers_as_integers(value: Value) -> Value {
    match value {
        Value::Number(number) if number.is_f64() => {
            let float = number.as_f64().unwrap_or(f64::NAN);
            let whole = float.fract() == 0.0;
            if whole && float >= 0.0 && float < u64::MAX as f64 {
                Value::from(float as u64)
            } else if whole && float < 0.0 && float >= i64::MIN as f64 {
                Value::from(float as i64)
            } else {
                Value::Number(number)
            }
        }
        Value::Array(items) => {
            Value::Array(items.into_iter().map(whole_numbers_as_integers).collect())
        }
        Value::Object(fields) => Value::Object(
            fields
                .into_iter()
                .map(|(key, value)| (key, whole_numbers_as_integers(value)))
                .collect(),
        ),
        other => other,
    }
}

fn is_missing_confirm(error: &jsonschema::ValidationError<'_>) -> bool {
    matches!(error.kind(), jsonschema::error::ValidationErrorKind::Required { property }
        if property == Confirmation::FIELD)
        && error.instance_path().as_str().is_empty()
}

fn is_full_fingerprint(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The host's binding for this caller.
async fn bind<C: Send + Sync>(
    descriptor: &Descriptor,
    options: &RunOptions<'_, C>,
) -> Result<Binding, RunError> {
    let binding = options.host.binding(options.caller, descriptor.name());
    match bounded(options.callback_timeout, binding).await {
        Ok(Ok(binding)) => Ok(binding),
        Ok(Err(error)) => Err(RunError::BindingDenied(error.to_string())),
        Err(failure) => Err(RunError::BindingDenied(format!(
            "the binding callback {failure}"
        ))),
    }
}

/// Fills in schema defaults and the native project (the input's, else the binding's default,
/// else `default`). A malformed default project from the binding denies the call.
fn normalize(
    descriptor: &Descriptor,
    mut input: Value,
    binding: &Binding,
) -> Result<Value, RunError> {
    let Some(fields) = input.as_object_mut() else {
        return Err(RunError::InvalidInput {
            message: "input must be an object".into(),
            pointer: String::new(),
        });
    };
    fill_defaults(descriptor.input_schema(), fields);
    if !fields.contains_key("project") {
        let project = match binding {
            Binding::Connection { context, .. } => context.default_project.clone(),
            Binding::Client(_) => None,
        };
        let project = project.unwrap_or_else(|| DEFAULT_PROJECT.to_owned());
        fields.insert("project".into(), Value::String(project));
        if let Some(error) = descriptor.input_validator().iter_errors(&input).next() {
            return Err(RunError::BindingDenied(format!(
                "the binding's default project is malformed: {error}"
            )));
        }
    }
    Ok(input)
}

fn fill_defaults(schema: &Value, fields: &mut Map<String, Value>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (key, property) in properties {
        if let Some(default) = property.get("default") {
            fields.entry(key.clone()).or_insert_with(|| default.clone());
        }
    }
}

/// The host's decision on this caller, operation and normalized input.
async fn authorize<C: Send + Sync>(
    descriptor: &Descriptor,
    input: &Value,
    options: &RunOptions<'_, C>,
) -> Result<(), RunError> {
    let decision = options
        .host
        .authorize(options.caller, descriptor.name(), input);
    match bounded(options.callback_timeout, decision).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(RunError::Unauthorized(error.to_string())),
        Err(failure) => Err(RunError::Unauthorized(format!(
            "the authorize callback {failure}"
        ))),
    }
}

/// The image server named by `source.remote`, approved by the host.
async fn resolve_remote<C: Send + Sync>(
    input: &Value,
    options: &RunOptions<'_, C>,
) -> Result<Option<ImageRemote>, RunError> {
    let Some(name) = input.pointer("/source/remote").and_then(Value::as_str) else {
        return Ok(None);
    };
    let remote = options.host.image_remote(options.caller, name);
    let remote = match bounded(options.callback_timeout, remote).await {
        Ok(Ok(remote)) => remote,
        Ok(Err(error)) => return Err(RunError::UnknownRemote(format!("{name}: {error}"))),
        Err(failure) => {
            return Err(RunError::UnknownRemote(format!(
                "{name}: the image_remote callback {failure}"
            )))
        }
    };
    if !is_https_server(&remote.server) || !IMAGE_PROTOCOLS.contains(&remote.protocol.as_str()) {
        return Err(RunError::UnknownRemote(format!(
            "{name}: the host returned a malformed image server"
        )));
    }
    Ok(Some(remote))
}

fn is_https_server(server: &str) -> bool {
    server.strip_prefix("https://").is_some_and(|rest| {
        !rest.is_empty() && !rest.starts_with('/') && !rest.chars().any(char::is_whitespace)
    })
}

/// The binding's client; a connection is discovered now, after authorization.
async fn discover(binding: Binding) -> Result<Client, RunError> {
    match binding {
        Binding::Client(client) => Ok(client),
        Binding::Connection { connection, .. } => Client::connect(connection)
            .await
            .map_err(|error| RunError::DiscoveryFailed(error.to_string())),
    }
}
