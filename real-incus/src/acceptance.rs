//! One acceptance run from start to end: opt-in, discovery, isolated setup, the plan, cleanup (also
//! after a failure or Ctrl-C), the leftovers check and the report.
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use serde_json::Value;

use crate::admin::Admin;
use crate::cleanup::{self, CleanupOutcome};
use crate::cli::{Cli, OPT_IN_REFUSAL};
use crate::cluster::ClusterInfo;
use crate::compare;
use crate::endpoint::Endpoint;
use crate::extensions;
use crate::plan;
use crate::portable;
use crate::recorder::CheckSink;
use crate::report::{Report, ServerInfo};
use crate::safety;
use crate::sandbox::{self, ImageSource};
use crate::targets::{self, Targets};

/// Exit status after Ctrl-C (cleanup done).
const EXIT_INTERRUPTED: u8 = 130;

/// Runs what the command line asks for and returns the process exit status.
pub async fn main(cli: Cli) -> ExitCode {
    if !cli.opted_in() {
        eprintln!("{OPT_IN_REFUSAL}");
        return ExitCode::from(2);
    }
    let endpoint = match cli.endpoint() {
        Ok(endpoint) => endpoint,
        Err(e) => {
            eprintln!("real-incus-acceptance: {e}");
            return ExitCode::from(2);
        }
    };
    let admin = match Admin::new(endpoint.clone()) {
        Ok(admin) => admin,
        Err(e) => {
            eprintln!("real-incus-acceptance: {e}");
            return ExitCode::from(2);
        }
    };
    if cli.cleanup_only {
        return cleanup_only(&admin).await;
    }
    let source = match image_source(&cli) {
        Ok(source) => source,
        Err(message) => {
            eprintln!("real-incus-acceptance: {message}");
            return ExitCode::from(2);
        }
    };
    let report = acceptance(&cli, &admin, endpoint, source).await;
    finish(&report, &cli.report_dir)
}

fn image_source(cli: &Cli) -> Result<ImageSource, String> {
    if let Some(alias) = &cli.image {
        return Ok(ImageSource::Existing {
            alias: alias.clone(),
            project: cli.image_project.clone(),
        });
    }
    cli.busybox_path()
        .map(ImageSource::Busybox)
        .ok_or_else(|| "no busybox found on PATH; pass --busybox PATH or --image ALIAS".to_owned())
}

async fn acceptance(cli: &Cli, admin: &Admin, endpoint: Endpoint, source: ImageSource) -> Report {
    let started = Instant::now();
    let project = sandbox::random_project_name();
    let mut report = Report {
        runner_version: env!("CARGO_PKG_VERSION").to_owned(),
        started_at: now_rfc3339(),
        endpoint: endpoint.describe(),
        project: project.clone(),
        image: source.describe(),
        ..Report::default()
    };
    eprintln!(
        "real-incus-acceptance: {} in project {project}",
        report.endpoint
    );
    match admin.server().await {
        Ok(server) => {
            let info = server_info(&server);
            match discover_cluster(admin, &server).await {
                Ok(found) => report.cluster = found,
                Err(e) => report.errors.push(e),
            }
            report.extensions_relied_on =
                extensions::relied_on(&info.api_extensions, report.cluster.is_some());
            report
                .errors
                .extend(extensions::missing(&report.extensions_relied_on));
            report.server = Some(info);
        }
        Err(e) => {
            report
                .errors
                .push(format!("discovery (GET /1.0) failed: {e}"));
        }
    }
    if !report.errors.is_empty() {
        report.duration_ms = elapsed_ms(started);
        return report;
    }
    if let Some(cluster) = &report.cluster {
        eprintln!(
            "cluster: through member {} of {}",
            cluster.member,
            cluster
                .members
                .iter()
                .map(|m| format!("{} ({})", m.name, m.status))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let cluster = report.cluster.clone();
    let extensions = report
        .server
        .as_ref()
        .map(|server| server.api_extensions.clone())
        .unwrap_or_default();
    let catalogue = targets::catalogue();
    let sink: CheckSink = CheckSink::default();
    let work = async {
        let targets = Targets::new(&endpoint, &project, cli)
            .map_err(|e| format!("binding the operation core: {e}"))?;
        let remote = cli.image_remote.as_ref().zip(cli.remote_alias.as_ref());
        let remote = remote.map(|((name, _), alias)| (name.clone(), alias.clone()));
        eprintln!("setup: project, root disk on pool {}, test image", cli.pool);
        let mut sandbox = sandbox::prepare(admin, &project, &cli.pool, &source, remote)
            .await
            .map_err(|e| format!("setup: {e}"))?;
        eprintln!("setup done: image {}", sandbox.fingerprint);
        if let Some(cluster) = &cluster {
            place_workload(admin, cluster, &mut sandbox).await?;
        }
        let plan::PlanRun {
            mut checks,
            mut answers,
        } = plan::run_plan(&targets, &sandbox, "", Some(sink.clone())).await;
        let mut divergences = Vec::new();
        let mut errors = Vec::new();
        let fake_line = compare::fake_line(&extensions);
        if cli.compare_fake {
            answers.push(compare::fake_line_answer(fake_line));
            match compare::against_fake(cli, &checks, cluster.as_ref(), fake_line, &sandbox).await {
                Ok(rows) => divergences = rows,
                Err(e) => errors.push(format!("differential run of the plan: {e}")),
            }
        }
        let real = portable::RealSide {
            admin,
            targets: &targets,
            sandbox: &sandbox,
            source: &source,
            cluster: cluster.as_ref(),
            fake_line,
        };
        let scenarios = portable::run_all(cli, real, cli.compare_fake).await;
        checks.extend(scenarios.checks);
        // The value rules need no fake to compare with: the conformance run checks them there.
        let safety = if cli.compare_fake {
            None
        } else {
            let run = safety::run(
                admin,
                &targets,
                &sandbox,
                &source,
                cli.timeout,
                Some(sink.clone()),
            )
            .await;
            checks.extend(run.checks);
            Some(run.section)
        };
        divergences.extend(scenarios.divergences);
        answers.extend(scenarios.answers);
        Ok::<_, String>((
            checks,
            scenarios.rows,
            divergences,
            errors,
            scenarios.clustered_answers,
            answers,
            safety,
        ))
    };
    tokio::select! {
        result = work => match result {
            Ok((checks, scenarios, divergences, errors, clustered_answers, answers, safety)) => {
                report.checks = checks;
                report.scenarios = scenarios;
                report.divergences = divergences;
                report.errors.extend(errors);
                report.clustered_answers = clustered_answers;
                report.server_answers = answers;
                report.safety_values = safety;
            }
            Err(e) => report.errors.push(e),
        },
        _ = tokio::signal::ctrl_c() => {
            eprintln!("interrupted: cleaning up before exit");
            report.interrupted = true;
            report.checks = std::mem::take(&mut *sink.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        }
    }
    eprintln!("cleanup: removing project {project} and all it holds");
    report.cleanup = cleanup::remove_projects(admin, std::slice::from_ref(&project)).await;
    if report.cluster.is_some() {
        report.placements = crate::report::placements(&report.checks);
    }
    report.summarize(
        &catalogue
            .iter()
            .map(|info| (info.name.clone(), info.exported, info.evidence.clone()))
            .collect::<Vec<_>>(),
    );
    report.duration_ms = elapsed_ms(started);
    report
}

/// Name of the instance the exec, operation and snapshot checks run on in a cluster.
const WORKLOAD: &str = "c2";

/// Reads the members when `GET /1.0` says the server is clustered.
async fn discover_cluster(admin: &Admin, server: &Value) -> Result<Option<ClusterInfo>, String> {
    if server["environment"]["server_clustered"] != Value::Bool(true) {
        return Ok(None);
    }
    let members = admin
        .get("/1.0/cluster/members?recursion=1")
        .await
        .map_err(|e| format!("discovery (GET /1.0/cluster/members) failed: {e}"))?;
    Ok(ClusterInfo::from_answers(server, &members.metadata))
}

/// Clustered: creates and starts the workload on another online member than the one the runner
/// talks to (the admin set-up may target a member; the operations under test never do).
async fn place_workload(
    admin: &Admin,
    cluster: &ClusterInfo,
    sandbox: &mut crate::plan::Sandbox,
) -> Result<(), String> {
    let member = cluster.other_member().ok_or_else(|| {
        format!(
            "setup: the cluster has no online member other than {} for the workload",
            cluster.member
        )
    })?;
    eprintln!(
        "setup: instance {WORKLOAD} on member {member} (the checks go through {})",
        cluster.member
    );
    admin
        .launch_on(&sandbox.project, WORKLOAD, &sandbox.alias, member)
        .await
        .map_err(|e| format!("setup: instance {WORKLOAD} on member {member}: {e}"))?;
    sandbox.workload = WORKLOAD.to_owned();
    sandbox.workload_member = Some(member.to_owned());
    Ok(())
}

async fn cleanup_only(admin: &Admin) -> ExitCode {
    let projects = match cleanup::acceptance_projects(admin).await {
        Ok(projects) => projects,
        Err(e) => {
            eprintln!("real-incus-acceptance: cannot list projects: {e}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!(
        "cleanup-only: {} leftover acceptance project(s): {}",
        projects.len(),
        projects.join(", ")
    );
    let outcome: CleanupOutcome = cleanup::remove_projects(admin, &projects).await;
    for done in &outcome.done {
        eprintln!("  done: {done}");
    }
    for failed in &outcome.failed {
        eprintln!("  FAILED: {failed}");
    }
    for left in &outcome.leftovers {
        eprintln!("  LEFT OVER: {left}");
    }
    if outcome.clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn finish(report: &Report, dir: &Path) -> ExitCode {
    match report.write(dir) {
        Ok((md, json)) => eprintln!("report: {} and {}", md.display(), json.display()),
        Err(e) => {
            eprintln!(
                "real-incus-acceptance: cannot write the report into {}: {e}",
                dir.display()
            );
            return ExitCode::FAILURE;
        }
    }
    let passed = report
        .operations
        .iter()
        .filter(|o| o.outcome == crate::report::Outcome::Passed)
        .count();
    eprintln!(
        "{}: {passed}/{} operations passed, cleanup {}",
        if report.passed() { "PASSED" } else { "FAILED" },
        report.operations.len(),
        if report.cleanup.clean() {
            "left nothing"
        } else {
            "LEFT SOMETHING"
        }
    );
    if report.interrupted {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn server_info(server: &Value) -> ServerInfo {
    let env = &server["environment"];
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    ServerInfo {
        version: text(&env["server_version"]),
        api_version: text(&server["api_version"]),
        driver: format!("{} / {}", text(&env["driver"]), text(&env["storage"])),
        kernel: text(&env["kernel_version"]),
        api_extensions: server["api_extensions"]
            .as_array()
            .map(|list| {
                list.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
    }
}

fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}
