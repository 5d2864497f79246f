//! The checks of `run`, all of them, in the order of the README's table ("Running operations",
//! the order the specification gives): [`in_order`] runs them and the first that fails decides
//! the result. The export gate (check 1) runs before, in `pipeline`, where the descriptor is found.
//!
//! The input is parsed once, right after the byte bound and the schema, into the operation's typed
//! input ([`Input`]); the later checks read that, and the executor receives it. The JSON input
//! stays beside it only for what reads JSON: the confirmation rule (`Confirmation::expected`) and
//! the host's `authorize`, which sees the validated, normalized input (`project` filled in).
//!
//! The byte bound is measured on the compact serialization of the input (`serde_json::to_vec`),
//! before schema validation, so that an oversized input never reaches the schema validator:
//! 16 KiB for reads, 64 KiB for mutations, 1 MiB for exec. An input of exactly the bound passes.
//! Nothing before discovery talks to the backend; the host callbacks run under their bound.
use serde_json::{Map, Value};

use super::callback::ask;
use super::native::Input;
use super::output::json_len;
use super::results::RunError;
use super::{writes, RunOptions};
use crate::catalogue::{Confirmation, Descriptor, Scope};
use crate::client::Client;
use crate::host::Binding;

/// The project used when neither the input nor the binding names one.
const DEFAULT_PROJECT: &str = "default";

/// The exec stdin bound in bytes of UTF-8 (the schema bounds characters).
const EXEC_STDIN_BYTES: usize = 64 * 1024;

/// Image server protocols a host may name for a remote.
const IMAGE_PROTOCOLS: [&str; 2] = ["simplestreams", "incus"];

/// What the checks hand the executor: the call, authorized and ready for its native requests.
pub(crate) struct Checked {
    /// The discovered client.
    pub(crate) client: Client,
    /// The native project, selected after authorization.
    pub(crate) project: String,
    /// The operation's typed input (a create's image remote resolved and its implied profiles
    /// made explicit).
    pub(crate) input: Input,
}

/// Runs checks 2 to 10 of the README's table, in its order.
pub(crate) async fn in_order<C: Send + Sync>(
    descriptor: &'static Descriptor,
    input: Value,
    options: &RunOptions<'_, C>,
) -> Result<Checked, RunError> {
    // 2. The scope.
    scope(descriptor, &options.scopes)?;
    // 3. The byte bound, then the schema; the input parsed once into its typed form.
    input_bytes(descriptor, &input)?;
    let (input, mut typed) = schema(descriptor, input)?;
    // 4. The confirmation.
    confirmation(descriptor, &input)?;
    // 5. What create and update may write.
    writes::check_input(descriptor, &typed, options).await?;
    // 6. The binding.
    let binding = bind(descriptor, options).await?;
    // 7. Authorization, of the input with its native project.
    let (input, project) = with_project(descriptor, input, &binding)?;
    authorize(descriptor, &input, options).await?;
    // 8. The image remote.
    resolve_remote(&mut typed, options).await?;
    // 9. Discovery.
    let client = discover(binding).await?;
    // 10. What the call applies, read from Incus.
    writes::check_applied(descriptor, &client, &project, &mut typed, options).await?;
    Ok(Checked {
        client,
        project,
        input: typed,
    })
}

/// The operation's scope must be among the caller's verified scopes.
fn scope(descriptor: &Descriptor, granted: &[Scope]) -> Result<(), RunError> {
    if granted.contains(&descriptor.scope()) {
        Ok(())
    } else {
        Err(RunError::ScopeMissing(
            descriptor.scope().as_str().to_owned(),
        ))
    }
}

/// The serialized input must not exceed the operation's bound.
fn input_bytes(descriptor: &Descriptor, input: &Value) -> Result<(), RunError> {
    let limit = usize::try_from(descriptor.max_input_bytes()).unwrap_or(usize::MAX);
    let size = json_len(input);
    if size > limit {
        return Err(RunError::InputTooLarge { size, limit });
    }
    Ok(())
}

/// The input schema and the semantic rules, then the input with whole numbers as integers and
/// the schema's defaults filled in, beside its typed form.
fn schema(descriptor: &Descriptor, input: Value) -> Result<(Value, Input), RunError> {
    validate_input(descriptor, &input)?;
    let mut input = whole_numbers_as_integers(input);
    if let Some(fields) = input.as_object_mut() {
        fill_defaults(descriptor.input_schema(), fields);
    }
    let typed = Input::parse(descriptor.native(), &input)?;
    Ok((input, typed))
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

/// A destructive operation needs `confirm` equal, byte for byte, to the affected resource.
/// Nothing is trimmed or case-folded, so "yes", prefixes and near misses are refused.
fn confirmation(descriptor: &Descriptor, input: &Value) -> Result<(), RunError> {
    let Some(rule) = descriptor.confirmation() else {
        return Ok(());
    };
    let target = rule.expected(input).unwrap_or_default();
    match input.get(Confirmation::FIELD) {
        None | Some(Value::Null) => Err(RunError::ConfirmationRequired(target)),
        Some(Value::String(confirm)) if !target.is_empty() && *confirm == target => Ok(()),
        Some(_) => Err(RunError::ConfirmationMismatch(target)),
    }
}

/// The host's binding for this caller.
async fn bind<C: Send + Sync>(
    descriptor: &Descriptor,
    options: &RunOptions<'_, C>,
) -> Result<Binding, RunError> {
    let binding = options.host.binding(options.caller, descriptor.name());
    let bound = options.callback_timeout;
    ask(bound, "binding", binding, RunError::BindingDenied).await
}

/// The input with its native project (the input's, else the binding's default, else
/// `default`), and that project. A malformed default project from the binding denies the call.
fn with_project(
    descriptor: &Descriptor,
    mut input: Value,
    binding: &Binding,
) -> Result<(Value, String), RunError> {
    let given = input
        .get("project")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let Some(project) = given {
        return Ok((input, project));
    }
    let project = match binding {
        Binding::Connection { context, .. } => context.default_project.clone(),
        Binding::Client(_) => None,
    };
    let project = project.unwrap_or_else(|| DEFAULT_PROJECT.to_owned());
    if let Some(fields) = input.as_object_mut() {
        fields.insert("project".into(), Value::String(project.clone()));
    }
    if let Some(error) = descriptor.input_validator().iter_errors(&input).next() {
        return Err(RunError::BindingDenied(format!(
            "the binding's default project is malformed: {error}"
        )));
    }
    Ok((input, project))
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
    let bound = options.callback_timeout;
    ask(bound, "authorize", decision, RunError::Unauthorized).await
}

/// The image server named by `source.remote`, approved by the host, set on the create.
async fn resolve_remote<C: Send + Sync>(
    input: &mut Input,
    options: &RunOptions<'_, C>,
) -> Result<(), RunError> {
    let Input::InstanceCreate(create) = input else {
        return Ok(());
    };
    let Some(name) = create.source.remote.as_deref() else {
        return Ok(());
    };
    let remote = options.host.image_remote(options.caller, name);
    let deny = |message| RunError::UnknownRemote(format!("{name}: {message}"));
    let remote = ask(options.callback_timeout, "image_remote", remote, deny).await?;
    if !is_https_server(&remote.server) || !IMAGE_PROTOCOLS.contains(&remote.protocol.as_str()) {
        return Err(RunError::UnknownRemote(format!(
            "{name}: the host returned a malformed image server"
        )));
    }
    create.resolved_remote = Some(remote);
    Ok(())
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
