//! The core's value rules (`SECURITY.md`) on the daemon: every case of
//! `conformance/data/safety-values.json` ([`incus_conformance::safety_value_cases`], the list the
//! conformance run checks against the fake), on the line the run is pointed at.
//!
//! - **Refused inputs** go only to the core bound to the read-only relay ([`ReadOnlyRelay`]): the
//!   relay forwards plain `GET`s and answers anything else itself, so a core that failed to refuse
//!   could still change nothing on the daemon. A case passes when the core answers the expected
//!   error kind and the relay saw nothing but discovery (`GET /1.0`) and the reads the rule
//!   documents for the case (none for the cases of the data: they are refused before any
//!   request). They run first, on the untouched instance, which is then read and compared.
//! - **Benign values** go to the core bound to the daemon, as a caller with the case's scopes:
//!   each is applied and read back by the admin client (not through the core); a snapshot
//!   pattern's unnamed snapshot must get a name of the pattern. Then, per rule, a snapshot holding
//!   the rule's values, a restore of the baseline (the values gone), a restore of that snapshot
//!   (the values back) and of the baseline again. Where the values need `incus.exec`, their restore
//!   without it is refused through the relay after its documented reads (the snapshot, its
//!   profiles); the ephemeral instance's stop without `incus.delete` likewise (the instance), and
//!   the ephemeral instance is then deleted.
//!
//! The data's inputs name an existing instance `c1`, a new one `w1` and pool `default`; here they
//! are [`INSTANCE`], [`NEW_INSTANCE`] and the run's pool, and volume [`VOLUME`] is made for the
//! disks. All of it lives in the acceptance project and is removed at the end of the section.
use std::time::Instant;

use incus_conformance::scenario::format::Expect;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::admin::{enc, Admin};
use crate::plan::Sandbox;
use crate::recorder::{self, judged, CheckSink, Recorder};
use crate::relay::ReadOnlyRelay;
use crate::report::{BenignCase, Check, Outcome, RefusedCase, Relayed, RuleEvidence, SafetyValues};
use crate::sandbox::{self, ImageSource, SCENARIO_ALIAS};
use crate::targets::{self, Target, Targets};

/// The instance the data calls `c1`: created from the test image, never started.
pub(crate) const INSTANCE: &str = "values1";
/// The instance the data calls `w1` (created by a case).
pub(crate) const NEW_INSTANCE: &str = "values2";
/// The custom volume the data's disks name.
const VOLUME: &str = "vol1";
/// The snapshot of the instance as created, restored between rules.
const BASELINE: &str = "baseline";

const WRITE: &str = "incus.write";
const DELETE: &str = "incus.delete";
const EXEC: &str = "incus.exec";

/// How the section keeps refused inputs from the daemon, for the report.
const METHOD: &str = "The cases of conformance/data/safety-values.json (SECURITY.md's value rules; the \
conformance run checks the same list against the fake). Each refused input was given to the core bound to a \
read-only relay in front of the daemon: the relay noted every request, forwarded plain GETs and answered \
anything else itself (403) without forwarding it, so no refused input could change the daemon even if the \
core had sent it; a case passes only when the core refused it with the expected kind and nothing but \
discovery (GET /1.0) and the case's documented reads reached the daemon. Benign values were applied by the \
core bound to the daemon, with the case's scopes, and read back by the runner's own client; each rule's \
values then went through a snapshot and its restore.";

/// One case of the data.
#[derive(Debug, Clone, Deserialize)]
struct Case {
    rule: String,
    label: String,
    operation: String,
    scopes: Vec<String>,
    input: Value,
    expect: String,
    #[serde(default)]
    harm: Option<String>,
}

impl Case {
    fn refused(&self) -> bool {
        self.expect != "sent"
    }
}

/// What the section did: its record for the report, and every call as a check.
pub(crate) struct SafetyRun {
    pub(crate) section: SafetyValues,
    pub(crate) checks: Vec<Check>,
}

/// Runs the section in the sandbox's project; everything it creates is removed before it returns.
pub(crate) async fn run(
    admin: &Admin,
    targets: &Targets,
    sandbox: &Sandbox,
    source: &ImageSource,
    timeout_seconds: u64,
    sink: Option<CheckSink>,
) -> SafetyRun {
    let started = Instant::now();
    let mut section = SafetyValues {
        method: METHOD.to_owned(),
        ..SafetyValues::default()
    };
    let mut recorder = Recorder::new(targets, "", sink);
    match cases() {
        Ok(cases) => {
            eprintln!(
                "safety values: {} refused inputs through a read-only relay, {} benign values applied",
                cases.iter().filter(|c| c.refused()).count(),
                cases.iter().filter(|c| !c.refused()).count()
            );
            match Guard::start(admin, &sandbox.project, timeout_seconds) {
                Ok(guard) => {
                    let mut run = Section {
                        admin,
                        direct: &targets.standard,
                        guard: &guard,
                        sandbox,
                        recorder: &mut recorder,
                        out: &mut section,
                        member: None,
                        source: Some(source),
                    };
                    run.all(&cases).await;
                    run.late_requests();
                }
                Err(e) => section.errors.push(e),
            }
        }
        Err(e) => section.errors.push(e),
    }
    teardown(admin, sandbox, &mut section).await;
    section.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    SafetyRun {
        section,
        checks: recorder.checks,
    }
}

/// What a case of the data may expect: a refusal before any request, or `sent`.
const EXPECTED: [&str; 4] = ["invalid_input", "scope_missing", "restricted_input", "sent"];

/// The cases of the data, typed and checked.
fn cases() -> Result<Vec<Case>, String> {
    let cases: Vec<Case> = incus_conformance::safety_value_cases()
        .into_iter()
        .map(serde_json::from_value)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("a case of safety-values.json does not parse: {e}"))?;
    checked(cases)
}

/// The data as the section may use it: every case expects a known outcome, and none that is
/// sent to the daemon carries a harm note (a mislabelled harmful value is never applied: the
/// section then runs nothing).
fn checked(cases: Vec<Case>) -> Result<Vec<Case>, String> {
    if cases.is_empty() {
        return Err("safety-values.json holds no case".to_owned());
    }
    for case in &cases {
        if !EXPECTED.contains(&case.expect.as_str()) {
            return Err(format!(
                "case {:?} expects {:?}, not one of {EXPECTED:?}",
                case.label, case.expect
            ));
        }
        if !case.refused() && case.harm.is_some() {
            return Err(format!(
                "case {:?} is to be sent to the daemon but has a harm note: nothing was run",
                case.label
            ));
        }
    }
    Ok(cases)
}

/// The relay and the core bound to it.
struct Guard {
    relay: ReadOnlyRelay,
    core: Target,
}

impl Guard {
    fn start(admin: &Admin, project: &str, timeout_seconds: u64) -> Result<Guard, String> {
        let relay = ReadOnlyRelay::start(admin.clone())
            .map_err(|e| format!("starting the read-only relay: {e}"))?;
        let core = targets::bound(targets::unix(relay.socket()), project, timeout_seconds)
            .map_err(|e| format!("binding the core to the read-only relay: {e}"))?;
        Ok(Guard { relay, core })
    }
}

/// A refused input and what may reach the daemon for it besides discovery.
struct Refusal<'a> {
    rule: &'a str,
    label: String,
    operation: &'a str,
    scopes: Vec<String>,
    input: Value,
    expect: &'a str,
    harm: Option<String>,
    documented_reads: Vec<String>,
}

struct Section<'a, 'r> {
    admin: &'a Admin,
    direct: &'a Target,
    guard: &'r Guard,
    sandbox: &'a Sandbox,
    recorder: &'r mut Recorder<'a>,
    out: &'r mut SafetyValues,
    /// On a cluster, the member the instance (and so its volume) is on.
    member: Option<String>,
    /// Where the test image comes from, when the `busybox` alias must be made again (the
    /// scenarios before may have deleted the image).
    source: Option<&'a ImageSource>,
}

impl Section<'_, '_> {
    async fn all(&mut self, cases: &[Case]) {
        if let Err(e) = self.setup().await {
            self.out.errors.push(format!("setup: {e}"));
            return;
        }
        let before = match self.object(INSTANCE).await {
            Ok(object) => object,
            Err(e) => {
                self.out.errors.push(e);
                return;
            }
        };
        for case in cases.iter().filter(|c| c.refused()) {
            let refusal = Refusal {
                rule: &case.rule,
                label: case.label.clone(),
                operation: &case.operation,
                scopes: case.scopes.clone(),
                input: on_daemon(&case.input, &self.sandbox.pool),
                expect: &case.expect,
                harm: case.harm.clone(),
                documented_reads: Vec::new(),
            };
            let row = self.refuse(refusal).await;
            rule_entry(&mut self.out.rules, &case.rule)
                .refused
                .push(row);
        }
        self.unchanged(&before).await;
        let mut rules: Vec<(&str, Vec<&Case>)> = Vec::new();
        for case in cases.iter().filter(|c| !c.refused()) {
            match rules.iter_mut().find(|(rule, _)| *rule == case.rule) {
                Some((_, list)) => list.push(case),
                None => rules.push((&case.rule, vec![case])),
            }
        }
        for (index, (rule, benign)) in rules.into_iter().enumerate() {
            self.benign_rule(index + 1, rule, &benign).await;
        }
    }

    /// The instance (from the test image, not started), its volume and its baseline snapshot.
    async fn setup(&mut self) -> Result<(), String> {
        let project = &self.sandbox.project;
        if let (Err(_), Some(source)) = (
            self.admin.alias_target(project, SCENARIO_ALIAS).await,
            self.source,
        ) {
            sandbox::restore_image(self.admin, project, source, &[SCENARIO_ALIAS])
                .await
                .map_err(|e| format!("the test image: {e}"))?;
        }
        let created = self
            .core(
                &[WRITE],
                "incus_instance_create",
                "safety values: the instance the benign values go to",
                json!({"name": INSTANCE, "source": {"type": "image", "alias": SCENARIO_ALIAS}, "wait_seconds": 60}),
                Expect::status("completed"),
            )
            .await;
        created.1?;
        let object = self.object(INSTANCE).await?;
        self.member = object["location"]
            .as_str()
            .filter(|m| !m.is_empty() && *m != "none")
            .map(str::to_owned);
        self.admin
            .create_volume(
                &self.sandbox.project,
                &self.sandbox.pool,
                VOLUME,
                self.member.as_deref(),
            )
            .await
            .map_err(|e| format!("creating volume {VOLUME}: {e}"))?;
        let baseline = self
            .core(
                &[WRITE],
                "incus_instance_snapshot_create",
                "safety values: the baseline snapshot",
                json!({"instance": INSTANCE, "snapshot": BASELINE, "wait_seconds": 60}),
                Expect::status("completed"),
            )
            .await;
        baseline.1
    }

    /// Calls the core bound to the daemon and records the check; returns the output and the
    /// verdict of the matcher.
    async fn core(
        &mut self,
        scopes: &[&str],
        operation: &str,
        name: &str,
        input: Value,
        expect: Expect,
    ) -> (Value, Result<(), String>) {
        let scopes = owned(scopes);
        let (output, elapsed) =
            recorder::call_as(self.direct, &scopes, operation, input.clone()).await;
        let verdict = recorder::judge(self.direct, operation, &output, &expect);
        self.recorder.record_judged(judged(
            operation,
            name,
            input,
            output.clone(),
            elapsed,
            verdict.clone(),
        ));
        (output, verdict)
    }

    /// An instance as the daemon holds it, read by the runner's own client.
    async fn object(&self, name: &str) -> Result<Value, String> {
        self.read(name)
            .await?
            .ok_or_else(|| format!("reading instance {name}: it does not exist"))
    }

    /// An instance as the daemon holds it, `None` when it does not exist.
    async fn read(&self, name: &str) -> Result<Option<Value>, String> {
        let path = format!(
            "/1.0/instances/{}?project={}",
            enc(name),
            enc(&self.sandbox.project)
        );
        match self.admin.get(&path).await {
            Ok(answer) => Ok(Some(answer.metadata)),
            Err(e) if e.native_status() == Some(404) => Ok(None),
            Err(e) => Err(format!("reading instance {name}: {e}")),
        }
    }

    /// Sends a refused input to the core bound to the relay and judges it by the relay's notes.
    async fn refuse(&mut self, refusal: Refusal<'_>) -> RefusedCase {
        let relay = &self.guard.relay;
        self.late_requests();
        let (output, elapsed) = recorder::call_as(
            &self.guard.core,
            &refusal.scopes,
            refusal.operation,
            refusal.input.clone(),
        )
        .await;
        let requests = relay.take();
        let verdict = judge_refusal(
            refusal.expect,
            &output,
            &requests,
            &refusal.documented_reads,
        )
        .and_then(|()| {
            recorder::judge(
                self.direct,
                refusal.operation,
                &output,
                &Expect::error(refusal.expect),
            )
        });
        self.recorder.record_judged(judged(
            refusal.operation,
            &format!(
                "safety values: {}: refused: {}",
                short(refusal.rule),
                refusal.label
            ),
            refusal.input,
            output.clone(),
            elapsed,
            verdict.clone(),
        ));
        RefusedCase {
            label: refusal.label,
            operation: refusal.operation.to_owned(),
            scopes: refusal.scopes,
            expected: refusal.expect.to_owned(),
            got: answered(&output),
            harm: refusal.harm,
            requests,
            documented_reads: refusal
                .documented_reads
                .iter()
                .map(|path| format!("GET {path}"))
                .collect(),
            outcome: outcome(&verdict),
            problem: verdict.err(),
        }
    }

    /// Requests that reached the relay after the refused case before returned (none may: a
    /// refused call sends nothing once it has answered) are an error of the section.
    fn late_requests(&mut self) {
        let late = self.guard.relay.take();
        if !late.is_empty() {
            let listed: Vec<String> = late.iter().map(ToString::to_string).collect();
            self.out.errors.push(format!(
                "requests reached the read-only relay after a refused call had answered: {}",
                listed.join("; ")
            ));
        }
    }

    /// [`Section::refuse`], the row kept under its rule; its problem as the error.
    async fn refuse_in_rule(&mut self, refusal: Refusal<'_>) -> Result<(), String> {
        let rule = refusal.rule.to_owned();
        let row = self.refuse(refusal).await;
        let verdict = match row.outcome {
            Outcome::Passed => Ok(()),
            _ => Err(row.problem.clone().unwrap_or_default()),
        };
        rule_entry(&mut self.out.rules, &rule).refused.push(row);
        verdict
    }

    /// After the refusals: the instance as it was, and no new instance.
    async fn unchanged(&mut self, before: &Value) {
        let after = match self.object(INSTANCE).await {
            Ok(object) => object,
            Err(e) => {
                self.out.errors.push(e);
                return;
            }
        };
        let fields = ["config", "devices", "profiles", "ephemeral", "status"];
        let changed: Vec<&str> = fields
            .into_iter()
            .filter(|field| before[*field] != after[*field])
            .collect();
        if changed.is_empty() {
            self.out.verified.push(format!(
                "after the refusals, instance {INSTANCE} reads as before them (config, devices, profiles, ephemeral, status)"
            ));
        } else {
            self.out.errors.push(format!(
                "after the refusals, instance {INSTANCE} changed: {}",
                changed.join(", ")
            ));
        }
        match self.read(NEW_INSTANCE).await {
            Ok(None) => self.out.verified.push(format!(
                "after the refusals, instance {NEW_INSTANCE} (the refused creates' name) does not exist"
            )),
            Err(e) => self.out.errors.push(e),
            Ok(Some(_)) => self.out.errors.push(format!(
                "after the refusals, instance {NEW_INSTANCE} exists: a refused create reached the daemon"
            )),
        }
    }

    /// One rule's benign values: each applied and read back, then carried through a snapshot
    /// and its restore.
    async fn benign_rule(&mut self, index: usize, rule: &str, cases: &[&Case]) {
        let mut applied = Applied::default();
        for case in cases {
            let row = self.benign(rule, case, &mut applied).await;
            rule_entry(&mut self.out.rules, rule).benign.push(row);
        }
        if !applied.updates {
            return;
        }
        let row = self.round_trip(index, rule, &applied).await;
        rule_entry(&mut self.out.rules, rule).benign.push(row);
    }

    async fn benign(&mut self, rule: &str, case: &Case, applied: &mut Applied) -> BenignCase {
        let mut input = on_daemon(&case.input, &self.sandbox.pool);
        let create = case.operation == "incus_instance_create";
        if create && input.get("wait_seconds").is_none() {
            input["wait_seconds"] = json!(60);
        }
        let name = input["name"].as_str().unwrap_or_default().to_owned();
        let scopes: Vec<&str> = case.scopes.iter().map(String::as_str).collect();
        let (output, verdict) = self
            .core(
                &scopes,
                &case.operation,
                &format!("safety values: {}: benign: {}", short(rule), case.label),
                input.clone(),
                Expect::status("completed"),
            )
            .await;
        let mut evidence = vec![format!("{}: {}", case.operation, answered(&output))];
        let mut result = verdict;
        if result.is_ok() {
            result = match self.object(&name).await {
                Ok(object) => holds(&object, &input).map(|read| {
                    evidence.push(format!("read back from {name}: {}", read.join(", ")));
                }),
                Err(e) => Err(e),
            };
        }
        if result.is_ok() {
            if let Some(pattern) = input
                .pointer("/config/snapshots.pattern")
                .and_then(Value::as_str)
            {
                result = self
                    .unnamed_snapshot(rule, pattern)
                    .await
                    .map(|named| evidence.push(named));
            }
        }
        if result.is_ok() && create && input["ephemeral"] == true {
            result = self
                .ephemeral(rule, &name)
                .await
                .map(|done| evidence.extend(done));
        }
        if !create && name == INSTANCE {
            applied.add(&input, &case.scopes);
        }
        BenignCase {
            label: case.label.clone(),
            operation: case.operation.clone(),
            scopes: case.scopes.clone(),
            evidence,
            outcome: outcome(&result),
            problem: result.err(),
        }
    }

    /// A snapshot without a name: Incus names it by the pattern just set, which must give a valid
    /// name that starts with the pattern's literal text.
    async fn unnamed_snapshot(&mut self, rule: &str, pattern: &str) -> Result<String, String> {
        let list = format!("/1.0/instances/{}/snapshots", enc(INSTANCE));
        let before = self
            .admin
            .list(&self.sandbox.project, &list)
            .await
            .map_err(|e| format!("listing snapshots: {e}"))?;
        let (_, verdict) = self
            .core(
                &[WRITE],
                "incus_instance_snapshot_create",
                &format!(
                    "safety values: {}: unnamed snapshot, pattern {pattern:?}",
                    short(rule)
                ),
                json!({"instance": INSTANCE, "wait_seconds": 60}),
                Expect::status("completed"),
            )
            .await;
        verdict?;
        let after = self
            .admin
            .list(&self.sandbox.project, &list)
            .await
            .map_err(|e| format!("listing snapshots: {e}"))?;
        let new: Vec<&String> = after.iter().filter(|s| !before.contains(s)).collect();
        let [name] = new.as_slice() else {
            return Err(format!("expected one new snapshot, found {new:?}"));
        };
        pattern_named(pattern, name)?;
        Ok(format!("an unnamed snapshot is named {name:?}"))
    }

    /// The ephemeral instance: its stop without `incus.delete` is refused after one read (it
    /// would delete it), then `incus_instance_delete` removes it.
    async fn ephemeral(&mut self, rule: &str, name: &str) -> Result<Vec<String>, String> {
        let refusal = Refusal {
            rule,
            label: format!("stop of the ephemeral {name} without incus.delete (Incus deletes it when it stops)"),
            operation: "incus_instance_state_update",
            scopes: owned(&[WRITE]),
            input: json!({"name": name, "action": "stop", "wait_seconds": 60}),
            expect: "scope_missing",
            harm: None,
            documented_reads: vec![format!("/1.0/instances/{name}")],
        };
        self.refuse_in_rule(refusal)
            .await
            .map_err(|e| format!("its stop without incus.delete: {e}"))?;
        let (_, verdict) = self
            .core(
                &[DELETE],
                "incus_instance_delete",
                &format!(
                    "safety values: {}: the ephemeral instance deleted",
                    short(rule)
                ),
                json!({"name": name, "confirm": name, "wait_seconds": 60}),
                Expect::status("completed"),
            )
            .await;
        verdict?;
        match self.read(name).await? {
            None => Ok(vec![
                "its stop without incus.delete refused after reading it (relay)".to_owned(),
                format!("deleted by incus_instance_delete: {name} is gone"),
            ]),
            Some(_) => Err(format!("{name} still exists after its delete")),
        }
    }

    /// The rule's values through a snapshot: taken, the baseline restored (values gone), the
    /// snapshot restored (values back), the baseline again for the next rule.
    async fn round_trip(&mut self, index: usize, rule: &str, applied: &Applied) -> BenignCase {
        let snapshot = format!("values-{index}");
        let mut evidence = Vec::new();
        let mut scopes = applied.scopes.clone();
        if !scopes.iter().any(|s| s == DELETE) {
            scopes.push(DELETE.to_owned());
        }
        let result = self
            .snapshot_and_restore(rule, &snapshot, applied, &scopes, &mut evidence)
            .await;
        BenignCase {
            label: format!("the rule's values in snapshot {snapshot}, restored"),
            operation: "incus_instance_snapshot_restore".to_owned(),
            scopes,
            evidence,
            outcome: outcome(&result),
            problem: result.err(),
        }
    }

    async fn snapshot_and_restore(
        &mut self,
        rule: &str,
        snapshot: &str,
        applied: &Applied,
        scopes: &[String],
        evidence: &mut Vec<String>,
    ) -> Result<(), String> {
        let (_, verdict) = self
            .core(
                &[WRITE],
                "incus_instance_snapshot_create",
                &format!(
                    "safety values: {}: snapshot {snapshot} with the values",
                    short(rule)
                ),
                json!({"instance": INSTANCE, "snapshot": snapshot, "wait_seconds": 60}),
                Expect::status("completed"),
            )
            .await;
        verdict?;
        evidence.push(format!("snapshot {snapshot} taken"));
        if scopes.iter().any(|s| s == EXEC) {
            self.restore_without_exec(rule, snapshot).await?;
            evidence
                .push("its restore without incus.exec refused after reading it (relay)".to_owned());
        }
        self.restore(rule, BASELINE, &[DELETE]).await?;
        let object = self.object(INSTANCE).await?;
        absent(&object, applied)?;
        evidence.push(format!("{BASELINE} restored: the values are gone"));
        let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
        self.restore(rule, snapshot, &scopes).await?;
        let object = self.object(INSTANCE).await?;
        let read = holds(&object, &applied.as_input())?;
        evidence.push(format!(
            "{snapshot} restored: read back {}",
            read.join(", ")
        ));
        self.restore(rule, BASELINE, &[DELETE]).await?;
        evidence.push(format!("{BASELINE} restored again"));
        Ok(())
    }

    /// Restores a snapshot of the instance through the core bound to the daemon.
    async fn restore(&mut self, rule: &str, snapshot: &str, scopes: &[&str]) -> Result<(), String> {
        self.core(
            scopes,
            "incus_instance_snapshot_restore",
            &format!("safety values: {}: restore {snapshot}", short(rule)),
            json!({"instance": INSTANCE, "snapshot": snapshot, "confirm": format!("{INSTANCE}/{snapshot}"), "wait_seconds": 60}),
            Expect::status("completed"),
        )
        .await
        .1
    }

    /// A restore of guest code by a caller without `incus.exec`: refused after reading the
    /// snapshot and its profiles, through the relay.
    async fn restore_without_exec(&mut self, rule: &str, snapshot: &str) -> Result<(), String> {
        let path = format!(
            "/1.0/instances/{}/snapshots/{}?project={}",
            enc(INSTANCE),
            enc(snapshot),
            enc(&self.sandbox.project)
        );
        let profiles: Vec<String> = self
            .admin
            .get(&path)
            .await
            .map_err(|e| format!("reading snapshot {snapshot}: {e}"))?
            .metadata["profiles"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|p| format!("/1.0/profiles/{}", enc(p)))
            .collect();
        let mut documented_reads = vec![format!(
            "/1.0/instances/{}/snapshots/{}",
            enc(INSTANCE),
            enc(snapshot)
        )];
        documented_reads.extend(profiles);
        let refusal = Refusal {
            rule,
            label: format!("restore of {snapshot} (guest code) without incus.exec"),
            operation: "incus_instance_snapshot_restore",
            scopes: owned(&[DELETE]),
            input: json!({"instance": INSTANCE, "snapshot": snapshot, "confirm": format!("{INSTANCE}/{snapshot}"), "wait_seconds": 60}),
            expect: "scope_missing",
            harm: None,
            documented_reads,
        };
        self.refuse_in_rule(refusal)
            .await
            .map_err(|e| format!("its restore without incus.exec: {e}"))
    }
}

/// Removes what the section made (also after a failure); what cannot be removed is an error.
async fn teardown(admin: &Admin, sandbox: &Sandbox, section: &mut SafetyValues) {
    let project = &sandbox.project;
    let mut removed = Vec::new();
    for name in [NEW_INSTANCE, INSTANCE] {
        match admin
            .delete(&format!("/1.0/instances/{}", enc(name)), project)
            .await
        {
            Ok(()) => removed.push(format!("instance {name}")),
            Err(e) if e.native_status() == Some(404) => {}
            Err(e) => section
                .errors
                .push(format!("teardown: deleting {name}: {e}")),
        }
    }
    match admin.custom_volumes(project).await {
        Ok(volumes) => {
            for (pool, name, member) in volumes.into_iter().filter(|(_, n, _)| n == VOLUME) {
                match admin
                    .delete_volume(project, &pool, &name, Some(&member))
                    .await
                {
                    Ok(()) => removed.push(format!("volume {pool}/{name}")),
                    Err(e) => section
                        .errors
                        .push(format!("teardown: deleting volume {pool}/{name}: {e}")),
                }
            }
        }
        Err(e) => section
            .errors
            .push(format!("teardown: listing volumes: {e}")),
    }
    if !removed.is_empty() {
        section.verified.push(format!(
            "removed at the end of the section: {} (their snapshots with them)",
            removed.join(", ")
        ));
    }
}

/// What a rule's benign updates applied to the instance, merged in order.
#[derive(Debug, Default)]
struct Applied {
    updates: bool,
    config: Map<String, Value>,
    devices: Map<String, Value>,
    scopes: Vec<String>,
}

impl Applied {
    fn add(&mut self, input: &Value, scopes: &[String]) {
        self.updates = true;
        let merge = |into: &mut Map<String, Value>, from: &Value| {
            for (key, value) in from.as_object().into_iter().flatten() {
                into.insert(key.clone(), value.clone());
            }
        };
        merge(&mut self.config, &input["config"]);
        merge(&mut self.devices, &input["devices"]);
        for scope in scopes {
            if !self.scopes.contains(scope) {
                self.scopes.push(scope.clone());
            }
        }
    }

    fn as_input(&self) -> Value {
        json!({"config": self.config, "devices": self.devices})
    }
}

/// The rule's entry, made when first needed.
fn rule_entry<'a>(rules: &'a mut Vec<RuleEvidence>, rule: &str) -> &'a mut RuleEvidence {
    if let Some(index) = rules.iter().position(|r| r.rule == rule) {
        return &mut rules[index];
    }
    rules.push(RuleEvidence {
        rule: rule.to_owned(),
        ..RuleEvidence::default()
    });
    rules.last_mut().expect("just pushed")
}

/// The rule without its `safety::` prefix, for check names.
fn short(rule: &str) -> &str {
    rule.strip_prefix("safety::").unwrap_or(rule)
}

fn owned(scopes: &[&str]) -> Vec<String> {
    scopes.iter().map(|s| (*s).to_owned()).collect()
}

fn outcome(verdict: &Result<(), String>) -> Outcome {
    if verdict.is_ok() {
        Outcome::Passed
    } else {
        Outcome::Failed
    }
}

/// What a result says in a word: its error kind, else its status.
fn answered(output: &Value) -> String {
    if let Some(kind) = output.pointer("/error/kind").and_then(Value::as_str) {
        return kind.to_owned();
    }
    output["status"]
        .as_str()
        .map_or_else(|| "success".to_owned(), str::to_owned)
}

/// The data's input on this daemon: `c1` and `w1` renamed, pool `default` the run's pool.
fn on_daemon(input: &Value, pool: &str) -> Value {
    let mut input = input.clone();
    if let Some(name) = input.get_mut("name") {
        match name.as_str() {
            Some("c1") => *name = json!(INSTANCE),
            Some("w1") => *name = json!(NEW_INSTANCE),
            _ => {}
        }
    }
    if let Some(devices) = input.get_mut("devices").and_then(Value::as_object_mut) {
        for device in devices.values_mut() {
            if let Some(named) = device.get_mut("pool") {
                if named == "default" {
                    *named = json!(pool);
                }
            }
        }
    }
    input
}

/// Whether the daemon's `object` holds what `input` set: each config key with its value (an
/// empty value: the key unset or empty), each device with its fields, `ephemeral`. Returns what
/// was read back.
fn holds(object: &Value, input: &Value) -> Result<Vec<String>, String> {
    let mut read = Vec::new();
    for (key, value) in input["config"].as_object().into_iter().flatten() {
        let held = &object["config"][key];
        let empty = value == "" && (held.is_null() || held == "");
        if held != value && !empty {
            return Err(format!("config {key}: set {value}, read back {held}"));
        }
        read.push(format!("{key}={value}"));
    }
    for (name, fields) in input["devices"].as_object().into_iter().flatten() {
        let held = &object["devices"][name];
        for (field, value) in fields.as_object().into_iter().flatten() {
            if &held[field] != value {
                return Err(format!(
                    "device {name:?} field {field}: set {value}, read back {}",
                    held[field]
                ));
            }
        }
        read.push(format!("device {name:?}"));
    }
    if let Some(ephemeral) = input.get("ephemeral") {
        if &object["ephemeral"] != ephemeral {
            return Err(format!(
                "ephemeral: set {ephemeral}, read back {}",
                object["ephemeral"]
            ));
        }
        read.push(format!("ephemeral={ephemeral}"));
    }
    Ok(read)
}

/// Whether none of the applied keys and devices is in `object` (after the baseline's restore).
fn absent(object: &Value, applied: &Applied) -> Result<(), String> {
    let keys: Vec<&String> = applied
        .config
        .keys()
        .filter(|key| {
            let held = &object["config"][key.as_str()];
            !held.is_null() && held != ""
        })
        .collect();
    let devices: Vec<&String> = applied
        .devices
        .keys()
        .filter(|name| !object["devices"][name.as_str()].is_null())
        .collect();
    if keys.is_empty() && devices.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "after restoring {BASELINE}, still set: config {keys:?}, devices {devices:?}"
        ))
    }
}

/// A snapshot named by `pattern` (empty: Incus's default `snap%d`): a valid snapshot name by
/// Incus 7.0's rule (alphanumeric first and last; letters, digits, `-`, `_`, `.`; no `..`) that
/// is a rendering of the pattern: its literal text as written, `%d` a number, and a
/// `{{ creation_date|date:"LAYOUT" }}` the layout with Go's `2006` as four digits and `01`, `02`,
/// `15`, `04`, `05` as two.
fn pattern_named(pattern: &str, name: &str) -> Result<(), String> {
    let pattern = if pattern.is_empty() {
        "snap%d"
    } else {
        pattern
    };
    let edges = [name.chars().next(), name.chars().last()];
    let valid = edges
        .iter()
        .all(|c| c.is_some_and(|c| c.is_ascii_alphanumeric()))
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.contains("..");
    if !valid {
        return Err(format!(
            "pattern {pattern:?} named a snapshot {name:?}, not a valid name"
        ));
    }
    let shape = rendering(pattern)
        .ok_or_else(|| format!("pattern {pattern:?} is outside the grammar this runner reads"))?;
    if !renders(&shape, name.as_bytes()) {
        return Err(format!(
            "pattern {pattern:?} named a snapshot {name:?}, which is not a rendering of it"
        ));
    }
    Ok(())
}

/// A piece of a pattern's rendering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece {
    Literal(u8),
    /// Exactly this many digits.
    Digits(usize),
    /// One digit or more (`%d`).
    Number,
}

/// What a pattern of the safe grammar renders to, piece by piece.
fn rendering(pattern: &str) -> Option<Vec<Piece>> {
    const OPEN: &str = "{{ creation_date|date:\"";
    const CLOSE: &str = "\" }}";
    let mut pieces = Vec::new();
    let mut rest = pattern;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("%d") {
            pieces.push(Piece::Number);
            rest = after;
        } else if let Some(after) = rest.strip_prefix(OPEN) {
            let (layout, after) = after.split_once(CLOSE)?;
            pieces.extend(layout_pieces(layout));
            rest = after;
        } else {
            pieces.push(Piece::Literal(rest.as_bytes()[0]));
            rest = rest.get(1..)?;
        }
    }
    Some(pieces)
}

/// A Go date layout's rendering: the numeric elements as digits, anything else literal.
fn layout_pieces(mut layout: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    while !layout.is_empty() {
        if let Some(after) = layout.strip_prefix("2006") {
            pieces.push(Piece::Digits(4));
            layout = after;
        } else if let Some(after) = ["01", "02", "15", "04", "05"]
            .iter()
            .find_map(|element| layout.strip_prefix(element))
        {
            pieces.push(Piece::Digits(2));
            layout = after;
        } else {
            pieces.push(Piece::Literal(layout.as_bytes()[0]));
            layout = layout.get(1..).unwrap_or_default();
        }
    }
    pieces
}

/// Whether `name` is one rendering of `pieces`.
fn renders(pieces: &[Piece], name: &[u8]) -> bool {
    match pieces.split_first() {
        None => name.is_empty(),
        Some((Piece::Literal(byte), rest)) => {
            name.first() == Some(byte) && renders(rest, &name[1..])
        }
        Some((Piece::Digits(count), rest)) => {
            name.len() >= *count
                && name[..*count].iter().all(u8::is_ascii_digit)
                && renders(rest, &name[*count..])
        }
        Some((Piece::Number, rest)) => {
            let digits = name.iter().take_while(|b| b.is_ascii_digit()).count();
            (1..=digits).any(|taken| renders(rest, &name[taken..]))
        }
    }
}

/// The verdict on a refused input: the expected error kind, nothing blocked by the relay (what
/// the core tried to send beyond a read), and every read either discovery (`GET /1.0`) or one of
/// `documented` (paths, compared without their query).
pub(crate) fn judge_refusal(
    expected: &str,
    output: &Value,
    requests: &[Relayed],
    documented: &[String],
) -> Result<(), String> {
    let mut problems = Vec::new();
    let got = answered(output);
    if got != expected {
        problems.push(format!("expected {expected}, got {got}"));
    }
    let blocked: Vec<String> = requests
        .iter()
        .filter(|r| !r.forwarded)
        .map(ToString::to_string)
        .collect();
    if !blocked.is_empty() {
        problems.push(format!(
            "the core sent a change for a refused input, kept from the daemon by the relay: {}",
            blocked.join("; ")
        ));
    }
    let undocumented: Vec<String> = requests
        .iter()
        .filter(|r| r.forwarded)
        .filter(|r| {
            let path = r.path.split('?').next().unwrap_or_default();
            path != "/1.0" && !documented.iter().any(|d| d == path)
        })
        .map(ToString::to_string)
        .collect();
    if !undocumented.is_empty() {
        problems.push(format!(
            "reads beyond discovery and the documented ones: {}",
            undocumented.join("; ")
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use crate::endpoint::Endpoint;
    use clap::Parser as _;
    use fake_incus::FakeIncus;

    /// The fake, the runner's clients bound to it, and a sandbox in its default project (which
    /// holds the `busybox` image and a root disk on pool `default`).
    async fn on_the_fake() -> (FakeIncus, Admin, Targets, Sandbox) {
        let fake = FakeIncus::builder().start().await.expect("fake");
        let socket = fake.unix_socket().display().to_string();
        let cli = Cli::parse_from([
            "real-incus-acceptance",
            "--yes-create-resources",
            "--unix",
            &socket,
        ]);
        let endpoint = cli.endpoint().expect("endpoint");
        let admin = Admin::new(Endpoint::Unix(fake.unix_socket().to_path_buf())).expect("admin");
        let targets = Targets::new(&endpoint, "default", &cli).expect("targets");
        let sandbox = Sandbox {
            project: "default".into(),
            pool: "default".into(),
            alias: "busybox".into(),
            fingerprint: String::new(),
            remote: None,
            workload: crate::plan::C1.into(),
            workload_member: None,
        };
        (fake, admin, targets, sandbox)
    }

    #[tokio::test]
    async fn every_case_holds_on_the_fake_and_the_section_leaves_nothing() {
        let (fake, admin, targets, sandbox) = on_the_fake().await;
        let source = ImageSource::Existing {
            alias: "busybox".into(),
            project: "default".into(),
        };
        let run = run(&admin, &targets, &sandbox, &source, 90, None).await;
        let failed: Vec<&Check> = run
            .checks
            .iter()
            .filter(|c| c.outcome == Outcome::Failed)
            .collect();
        assert!(
            failed.is_empty(),
            "every call gave what it should: {failed:#?}"
        );
        let section = &run.section;
        assert!(section.errors.is_empty(), "{:?}", section.errors);
        let (refused, of_refused) = section.refused_passed();
        let data = cases().expect("cases");
        // The data's refusals, the guest code's restore without incus.exec and the ephemeral stop.
        assert_eq!(refused, data.iter().filter(|c| c.refused()).count() + 2);
        assert_eq!(refused, of_refused);
        // The fake names an unnamed snapshot by the instance's snapshots.pattern, as both real
        // daemons do: every benign value holds, the patterns' renderings included.
        let benign = section.rules.iter().flat_map(|r| &r.benign);
        let failed: Vec<&str> = benign
            .filter(|c| c.outcome == Outcome::Failed)
            .map(|c| c.problem.as_deref().unwrap_or_default())
            .collect();
        assert!(failed.is_empty(), "{failed:#?}");
        for name in [INSTANCE, NEW_INSTANCE] {
            let path = format!("/1.0/instances/{name}");
            assert!(admin.get(&path).await.is_err(), "{name} is left");
        }
        let volumes = admin.custom_volumes("default").await.expect("volumes");
        assert!(volumes.is_empty(), "{volumes:?}");
        let journal = fake.journal();
        // No refused input reached the daemon: no request carried a harmful value.
        for entry in &journal {
            let body = &entry.body;
            assert!(
                !body.contains("\"..\""),
                "{} {}: {body}",
                entry.method,
                entry.path
            );
        }
    }

    #[tokio::test]
    async fn a_change_sent_for_a_refused_input_is_kept_from_the_daemon_and_fails_the_case() {
        let (fake, admin, targets, sandbox) = on_the_fake().await;
        let mut recorder = Recorder::new(&targets, "", None);
        let mut out = SafetyValues::default();
        let guard = Guard::start(&admin, &sandbox.project, 90).expect("guard");
        let mut section = Section {
            admin: &admin,
            direct: &targets.standard,
            guard: &guard,
            sandbox: &sandbox,
            recorder: &mut recorder,
            out: &mut out,
            member: None,
            source: None,
        };
        section.setup().await.expect("setup");
        let before = fake.journal().len();
        // A benign value labelled as refused: the core sends it, the relay keeps it back.
        let row = section
            .refuse(Refusal {
                rule: "safety::config_values_checked",
                label: "a value the core lets through".into(),
                operation: "incus_instance_update",
                scopes: owned(&[WRITE]),
                input: json!({"name": INSTANCE, "config": {"user.note": "x"}}),
                expect: "invalid_input",
                harm: None,
                documented_reads: Vec::new(),
            })
            .await;
        assert_eq!(row.outcome, Outcome::Failed);
        let problem = row.problem.unwrap_or_default();
        assert!(
            problem.contains("PATCH /1.0/instances/values1"),
            "{problem}"
        );
        assert!(row
            .requests
            .iter()
            .any(|r| r.method == "PATCH" && !r.forwarded));
        let reached: Vec<String> = fake.journal()[before..]
            .iter()
            .map(|e| e.method.clone())
            .collect();
        assert!(reached.iter().all(|m| m == "GET"), "{reached:?}");
        let object = section.object(INSTANCE).await.expect("instance");
        assert!(
            object["config"]["user.note"].is_null(),
            "the change never arrived"
        );
        drop(section);
        teardown(&admin, &sandbox, &mut out).await;
        assert!(out.errors.is_empty(), "{:?}", out.errors);
    }

    fn relayed(method: &str, path: &str) -> Relayed {
        Relayed {
            method: method.to_owned(),
            path: path.to_owned(),
            forwarded: method == "GET",
        }
    }

    fn refused(kind: &str) -> Value {
        json!({"error": {"kind": kind, "message": "no"}})
    }

    #[test]
    fn a_refusal_with_nothing_sent_passes() {
        assert_eq!(
            judge_refusal("invalid_input", &refused("invalid_input"), &[], &[]),
            Ok(())
        );
    }

    #[test]
    fn discovery_and_the_documented_reads_are_all_that_may_reach_the_daemon() {
        let documented = vec!["/1.0/instances/values1/snapshots/s".to_owned()];
        let reads = [
            relayed("GET", "/1.0"),
            relayed("GET", "/1.0/instances/values1/snapshots/s?project=p"),
        ];
        assert_eq!(
            judge_refusal(
                "scope_missing",
                &refused("scope_missing"),
                &reads,
                &documented
            ),
            Ok(())
        );
        let more = [relayed("GET", "/1.0/instances/values1?project=p")];
        let problem = judge_refusal(
            "scope_missing",
            &refused("scope_missing"),
            &more,
            &documented,
        )
        .unwrap_err();
        assert!(problem.contains("reads beyond discovery"), "{problem}");
    }

    #[test]
    fn a_change_the_relay_kept_from_the_daemon_fails_the_case_even_when_the_kind_is_right() {
        let sent = [relayed("PATCH", "/1.0/instances/values1?project=p")];
        let problem =
            judge_refusal("invalid_input", &refused("invalid_input"), &sent, &[]).unwrap_err();
        assert!(
            problem.contains("kept from the daemon by the relay"),
            "{problem}"
        );
        assert!(
            problem.contains("PATCH /1.0/instances/values1"),
            "{problem}"
        );
    }

    #[test]
    fn a_case_the_core_let_through_fails_with_what_it_answered() {
        let problem = judge_refusal(
            "restricted_input",
            &json!({"status": "completed"}),
            &[],
            &[],
        )
        .unwrap_err();
        assert!(
            problem.contains("expected restricted_input, got completed"),
            "{problem}"
        );
    }

    #[test]
    fn the_data_is_renamed_for_the_daemon() {
        let input = json!({"name": "c1", "devices": {"d": {"type": "disk", "pool": "default", "source": "vol1"}}});
        let on = on_daemon(&input, "tank");
        assert_eq!(on["name"], INSTANCE);
        assert_eq!(on["devices"]["d"]["pool"], "tank");
        assert_eq!(
            on_daemon(&json!({"name": "w1"}), "tank")["name"],
            NEW_INSTANCE
        );
    }

    #[test]
    fn every_case_of_the_data_parses_and_names_only_the_renamed_instances() {
        let cases = cases().expect("the data parses");
        assert!(cases.iter().any(Case::refused));
        assert!(cases.iter().any(|c| !c.refused()));
        for case in &cases {
            let name = on_daemon(&case.input, "default")["name"].clone();
            assert!(
                name == INSTANCE || name == NEW_INSTANCE,
                "{}: {name}",
                case.label
            );
        }
    }

    #[test]
    fn a_value_to_apply_that_carries_a_harm_note_stops_the_section_before_anything_runs() {
        let case = |expect: &str, harm: Option<&str>| Case {
            rule: "safety::r".into(),
            label: "x".into(),
            operation: "incus_instance_update".into(),
            scopes: owned(&[WRITE]),
            input: json!({"name": "c1"}),
            expect: expect.into(),
            harm: harm.map(str::to_owned),
        };
        assert!(checked(vec![case("invalid_input", Some("bad")), case("sent", None)]).is_ok());
        let mislabelled = checked(vec![case("sent", Some("destroys"))]).unwrap_err();
        assert!(mislabelled.contains("harm note"), "{mislabelled}");
        assert!(checked(vec![case("completed", None)]).is_err());
        assert!(checked(Vec::new()).is_err());
    }

    #[test]
    fn read_back_holds_each_key_device_and_flag_and_an_empty_value_may_be_unset() {
        let object = json!({"config": {"limits.cpu": "2"}, "devices": {"data": {"type": "disk", "path": "/mnt/data"}}, "ephemeral": true});
        let input = json!({"config": {"limits.cpu": "2", "snapshots.pattern": ""}, "devices": {"data": {"path": "/mnt/data"}}, "ephemeral": true});
        assert!(holds(&object, &input).is_ok());
        let wrong = json!({"config": {"limits.cpu": "3"}});
        assert!(holds(&object, &wrong).unwrap_err().contains("limits.cpu"));
    }

    #[test]
    fn an_unnamed_snapshot_must_be_valid_and_of_its_pattern() {
        assert!(pattern_named("snap%d", "snap0").is_ok());
        assert!(pattern_named("", "snap3").is_ok());
        assert!(pattern_named(
            "{{ creation_date|date:\"2006-01-02_15-04-05\" }}",
            "2026-05-02_10-11-12"
        )
        .is_ok());
        assert!(pattern_named(
            "auto-{{ creation_date|date:\"20060102\" }}-%d",
            "auto-20260502-0"
        )
        .is_ok());
        assert!(pattern_named("backup-%d", "snap0").is_err());
        assert!(
            pattern_named("{{ creation_date|date:\"2006-01-02_15-04-05\" }}", "snap2").is_err()
        );
        assert!(pattern_named("snap%d", "snap").is_err());
        assert!(pattern_named("snap%d", "..").is_err());
    }
}
