//! Running a scenario against a target: the same engine for the fake Incus and a real one.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use super::format::{Action, MemberChange, Moment, OperatorRequest, Scenario, Step, When};
use super::target::Target;
use super::{journal, matcher};

/// How long an operator's request waits for the operation it starts.
const OPERATOR_WAIT_SECONDS: u64 = 60;

/// What one step did.
#[derive(Debug, Clone, PartialEq)]
pub struct StepOutcome {
    /// The step's label, or what it does (its operation's name for a call).
    pub label: String,
    /// The operation called (empty for a step that makes no call: a member change, an
    /// operator's request).
    pub operation: String,
    /// The caller's scopes.
    pub scopes: Vec<String>,
    /// The input given, after substitution of saved values.
    pub input: Value,
    /// The result the target returned (for an operator's request, its answer; for a member
    /// change, what changed).
    pub result: Value,
    /// Wall time of the call.
    pub duration: Duration,
    /// Every expectation of the step that did not hold (empty when the step passed).
    pub problems: Vec<String>,
    /// The alternative of the step's `any_of` that the result met, by name (`None` when the step
    /// has none, or the result met none).
    pub alternative: Option<String>,
}

/// What a scenario run did: the steps that ran, in order. The run stops after the first
/// failing step.
#[derive(Debug, Clone, PartialEq)]
pub struct Transcript {
    /// The scenario's name.
    pub scenario: String,
    /// The steps that ran.
    pub steps: Vec<StepOutcome>,
}

impl Transcript {
    /// Every step that ran passed, and every step ran.
    pub fn passed(&self) -> bool {
        self.failing().is_none()
    }

    /// The failing step, with its index, if any.
    pub fn failing(&self) -> Option<(usize, &StepOutcome)> {
        self.steps
            .iter()
            .enumerate()
            .find(|(_, step)| !step.problems.is_empty())
    }

    /// `Ok` when the scenario passed; otherwise every mismatch of the failing step, with the
    /// call and the result, so that the failure reads as a reproducer.
    pub fn verdict(&self) -> Result<(), String> {
        match self.failing() {
            None => Ok(()),
            Some((index, step)) => Err(report(&self.scenario, index, step)),
        }
    }
}

/// What the runner supplies: the world the scenario runs in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Context {
    /// Variables known before the first step, as `"${name}"` in inputs and expectations:
    /// `project`, `pool`, `alias` (of the test image) and `fingerprint` (its full fingerprint),
    /// where the runner has them. Values saved by steps are added to them.
    pub variables: BTreeMap<String, Value>,
    /// The target is a member of a cluster: steps with `when: standalone` are skipped, and those
    /// with `when: clustered` run.
    pub clustered: bool,
    /// The target keeps no journal and the runner accepts that the steps' `journal`
    /// expectations go unchecked (a cluster scenario on a real cluster); otherwise a `journal`
    /// expectation on such a target fails.
    pub journal_unchecked: bool,
}

impl Context {
    /// A standalone context with these variables.
    pub fn standalone<'a>(variables: impl IntoIterator<Item = (&'a str, Value)>) -> Self {
        Self {
            variables: variables
                .into_iter()
                .map(|(name, value)| (name.to_owned(), value))
                .collect(),
            clustered: false,
            journal_unchecked: false,
        }
    }

    /// The same variables, on a cluster member.
    pub fn on_cluster(mut self) -> Self {
        self.clustered = true;
        self
    }

    /// The runner's variables of a world that holds the test image `alias` in `project` and the
    /// storage pool `pool`: `fingerprint` is read through the target, as the alias's target in
    /// `incus_image_alias_list`. Without it (the alias is missing, the call refused) the other
    /// variables are still given, and a step that names `${fingerprint}` fails saying so.
    pub async fn discover(target: &dyn Target, project: &str, pool: &str, alias: &str) -> Self {
        let mut context = Self::standalone([
            ("project", Value::from(project)),
            ("pool", Value::from(pool)),
            ("alias", Value::from(alias)),
        ]);
        let scopes = ["incus.read".to_owned()];
        let input = serde_json::json!({"project": project});
        let listed = target.call("incus_image_alias_list", &scopes, input).await;
        let fingerprint = listed["items"].as_array().and_then(|items| {
            items
                .iter()
                .find(|item| item["name"] == alias)
                .and_then(|item| item.get("target").cloned())
        });
        if let Some(fingerprint) = fingerprint {
            context.variables.insert("fingerprint".into(), fingerprint);
        }
        context
    }

    fn runs(&self, step: &Step) -> bool {
        match step.when {
            None => true,
            Some(When::Clustered) => self.clustered,
            Some(When::Standalone) => !self.clustered,
        }
    }
}

/// Runs every step in order, until one fails, on a standalone target with no runner-supplied
/// variables ([`run_in`] with the default [`Context`]).
///
/// ```
/// use incus_conformance::scenario::{load, run, target::HostTarget};
/// use incus_conformance::ReferenceHost;
/// use incus_operations::Connection;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let scenario = load::parse(r#"{"name": "unknown", "description": "An unknown name.",
///     "clauses": ["catalogue::unknown_name"], "steps": [{"operation": "incus_nothing",
///     "scopes": [], "input": {}, "expect": {"error_kind": "unknown_operation"}}]}"#).unwrap();
/// // Refused before any request: no Incus needs to listen on this socket.
/// let host = ReferenceHost::new(Connection::unix("/nonexistent/incus.socket"));
/// let transcript = run::run(&scenario, &HostTarget::new(host, ())).await;
/// assert!(transcript.passed(), "{:?}", transcript.verdict());
/// # });
/// ```
pub async fn run(scenario: &Scenario, target: &dyn Target) -> Transcript {
    run_in(scenario, target, &Context::default()).await
}

/// Runs every step that applies to `context`, in order, until one fails.
pub async fn run_in(scenario: &Scenario, target: &dyn Target, context: &Context) -> Transcript {
    let mut saved = context.variables.clone();
    let mut steps = Vec::new();
    for step in scenario.steps.iter().filter(|step| context.runs(step)) {
        let outcome = match step.action() {
            Action::Call(during) => call(step, during, target, &mut saved, context).await,
            Action::Member(change) => member(step, change, target, &saved).await,
            Action::Operator(request) => operator(step, request, target, &mut saved).await,
        };
        let failed = !outcome.problems.is_empty();
        steps.push(outcome);
        if failed {
            break;
        }
    }
    Transcript {
        scenario: scenario.name.clone(),
        steps,
    }
}

/// A call step; with `during`, a member goes down once the call reaches its moment.
async fn call(
    step: &Step,
    during: Option<&MemberChange>,
    target: &dyn Target,
    saved: &mut BTreeMap<String, Value>,
    context: &Context,
) -> StepOutcome {
    let input = substitute(&step.input, saved);
    let mut expect = step.expect.clone();
    for value in expect.values_mut() {
        *value = substitute(value, saved);
    }
    let before = target.journal().map(|j| j.len());
    let started = Instant::now();
    let call = target.call(&step.operation, &step.scopes, input.clone());
    let (result, acted) = match during.and_then(|change| change.down.as_ref().zip(change.once)) {
        Some((member, moment)) => {
            let member = text(member, saved);
            let act = down_once(target, &member, moment);
            tokio::join!(call, act)
        }
        None => (call.await, Ok(())),
    };
    let duration = started.elapsed();
    let mut problems = matcher::mismatches(
        &expect,
        &result,
        target.output_schema(&step.operation).as_ref(),
    );
    problems.extend(acted.err());
    if let Some(expect) = &step.journal {
        match (target.journal(), before) {
            (Some(all), Some(before)) => {
                problems.extend(journal::mismatches(
                    expect,
                    all.get(before..).unwrap_or(&[]),
                ));
            }
            _ if context.journal_unchecked => {}
            _ => problems.push("journal expectations need a fake backend".into()),
        }
    }
    save(step, &result, saved, &mut problems);
    let alternative = matcher::matching_alternative(&expect, &result).map(str::to_owned);
    StepOutcome {
        label: text(&step.describe(), saved),
        operation: step.operation.clone(),
        scopes: step.scopes.clone(),
        input,
        result,
        duration,
        problems,
        alternative,
    }
}

/// `member` goes down once the call in flight reaches `moment`.
async fn down_once(target: &dyn Target, member: &str, moment: Moment) -> Result<(), String> {
    let members = target.members().ok_or_else(no_members)?;
    members
        .moment(moment)
        .await
        .map_err(|e| format!("{member} was to go down when the call was {moment:?}: {e}"))?;
    members.down(member).await
}

fn no_members() -> String {
    "this step takes a member down: it needs a cluster target whose members the runner can take \
     down and bring back"
        .to_owned()
}

/// A member goes down or comes back.
async fn member(
    step: &Step,
    change: &MemberChange,
    target: &dyn Target,
    saved: &BTreeMap<String, Value>,
) -> StepOutcome {
    let started = Instant::now();
    let (result, done) = match (&change.down, &change.up, target.members()) {
        (_, _, None) => (Value::Null, Err(no_members())),
        (Some(member), _, Some(members)) => {
            let member = text(member, saved);
            let done = members.down(&member).await;
            (serde_json::json!({"down": member}), done)
        }
        (None, Some(member), Some(members)) => {
            let member = text(member, saved);
            let done = members.up(&member).await;
            (serde_json::json!({"up": member}), done)
        }
        (None, None, Some(_)) => (Value::Null, Err("the member step names no member".into())),
    };
    StepOutcome {
        label: text(&step.describe(), saved),
        operation: String::new(),
        scopes: Vec::new(),
        input: Value::Null,
        result,
        duration: started.elapsed(),
        problems: done.err().into_iter().collect(),
        alternative: None,
    }
}

/// An operator's request beside the core; an operation it starts is waited for.
async fn operator(
    step: &Step,
    request: &OperatorRequest,
    target: &dyn Target,
    saved: &mut BTreeMap<String, Value>,
) -> StepOutcome {
    let started = Instant::now();
    let path = text(&request.path, saved);
    let body = request.body.as_ref().map(|body| substitute(body, saved));
    let input = serde_json::json!({"method": request.method, "path": path, "body": body});
    let mut problems = Vec::new();
    let result = match send(target, &request.method, &path, body).await {
        Ok(answer) => answer,
        Err(e) => {
            problems.push(e);
            Value::Null
        }
    };
    save(step, &result, saved, &mut problems);
    StepOutcome {
        label: text(&step.describe(), saved),
        operation: String::new(),
        scopes: Vec::new(),
        input,
        result,
        duration: started.elapsed(),
        problems,
        alternative: None,
    }
}

/// Sends one operator request; its answer, or once it started an operation, the operation's
/// end. An error status or a failed operation is an error.
async fn send(
    target: &dyn Target,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> Result<Value, String> {
    let (status, answer) = target.native(method, path, body).await?;
    if status >= 400 {
        return Err(format!(
            "{method} {path} was refused ({status}): {}",
            matcher::short(&answer)
        ));
    }
    let Some(operation) = answer["operation"].as_str().filter(|o| !o.is_empty()) else {
        return Ok(answer);
    };
    let (operation, query) = operation.split_once('?').unwrap_or((operation, ""));
    let mut wait = format!("{operation}/wait?timeout={OPERATOR_WAIT_SECONDS}");
    if !query.is_empty() {
        wait = format!("{wait}&{query}");
    }
    let (_, waited) = target.native("GET", &wait, None).await?;
    if waited["metadata"]["status"] != "Success" {
        return Err(format!(
            "the operation of {method} {path} did not succeed: {}",
            matcher::short(&waited)
        ));
    }
    Ok(waited)
}

/// Saves the values the step names from `result`.
fn save(
    step: &Step,
    result: &Value,
    saved: &mut BTreeMap<String, Value>,
    problems: &mut Vec<String>,
) {
    for (name, pointer) in &step.save {
        match result.pointer(pointer) {
            Some(value) => {
                saved.insert(name.clone(), value.clone());
            }
            None => problems.push(format!("cannot save {name}: {pointer} is absent")),
        }
    }
}

/// A string of the scenario with its variables substituted, as text.
fn text(template: &str, saved: &BTreeMap<String, Value>) -> String {
    match substitute_text(template, saved) {
        Value::String(text) => text,
        other => other.to_string(),
    }
}

fn report(scenario: &str, index: usize, step: &StepOutcome) -> String {
    let mut text = format!(
        "scenario {scenario} step {} ({}) failed:\n",
        index + 1,
        step.label
    );
    for problem in &step.problems {
        text.push_str(&format!("  - {problem}\n"));
    }
    if step.operation.is_empty() {
        text.push_str(&format!(
            "  request: {}\n  result: {}",
            matcher::short(&step.input),
            matcher::short(&step.result)
        ));
    } else {
        text.push_str(&format!(
            "  call: {} scopes={:?} input={}\n  result: {}",
            step.operation,
            step.scopes,
            matcher::short(&step.input),
            matcher::short(&step.result)
        ));
    }
    text
}

/// Replaces `"${name}"` strings by saved values, and `${name}` inside longer strings by the
/// saved value's text.
pub fn substitute(input: &Value, saved: &BTreeMap<String, Value>) -> Value {
    match input {
        Value::String(text) => substitute_text(text, saved),
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, saved)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), substitute(v, saved)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn substitute_text(text: &str, saved: &BTreeMap<String, Value>) -> Value {
    if let Some(name) = text.strip_prefix("${").and_then(|t| t.strip_suffix('}')) {
        if let Some(value) = saved.get(name) {
            return value.clone();
        }
    }
    let mut out = text.to_owned();
    for (name, value) in saved {
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out = out.replace(&format!("${{{name}}}"), &text);
    }
    Value::String(out)
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (running a scenario against a target); a
    //! promise of the harness seen from outside (its command line, certification, the wire) goes in
    //! `tests/harness`.

    use super::*;
    use serde_json::json;

    #[test]
    fn when_selects_the_steps_of_a_cluster_or_of_a_standalone_daemon() {
        let step = |when: Option<When>| Step {
            label: None,
            operation: "incus_server_get".into(),
            scopes: vec![],
            input: json!({}),
            expect: Default::default(),
            journal: None,
            save: BTreeMap::new(),
            when,
            member: None,
            operator: None,
        };
        let standalone = Context::standalone([("project", json!("p"))]);
        let clustered = standalone.clone().on_cluster();
        let runs = |context: &Context| {
            [None, Some(When::Clustered), Some(When::Standalone)]
                .map(|when| context.runs(&step(when)))
        };
        assert_eq!(runs(&standalone), [true, false, true]);
        assert_eq!(runs(&clustered), [true, true, false]);
        assert_eq!(clustered.variables["project"], json!("p"));
    }

    #[test]
    fn saved_values_replace_whole_strings_and_parts() {
        let saved = BTreeMap::from([("op".to_owned(), json!("abc")), ("n".to_owned(), json!(3))]);
        let input = json!({"operation_id": "${op}", "path": "/x/${op}", "count": "${n}", "k": 1});
        assert_eq!(
            substitute(&input, &saved),
            json!({"operation_id": "abc", "path": "/x/abc", "count": 3, "k": 1})
        );
    }
}
