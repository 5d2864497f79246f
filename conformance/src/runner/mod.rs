//! The runner: turns registered checks into libtest-mimic trials, runs them, and reports.
//!
//! libtest-mimic does the filtering (`FILTER`, `--skip`, `--exact`), listing (`--list`),
//! scheduling (`--test-threads`) and the standard output with its closing `test result:` line.
//! Each trial's closure also records its own outcome, so that the runner can add what
//! libtest-mimic does not have: the JSON event stream (`--format json`, see [`json`]), the
//! JUnit report (`--junit FILE`) and the expected-failures baseline (`--expected-failures FILE`).

pub(crate) mod baseline;
pub(crate) mod check;
pub(crate) mod clause_report;
pub(crate) mod json;
pub(crate) mod junit;
pub(crate) mod progress;
pub(crate) mod record;
pub(crate) mod recorder;

use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use libtest_mimic::{Arguments, Completion, FormatSetting, Trial};

use self::baseline::Baseline;
pub(crate) use self::check::Check;
use self::json::{EventSink, Summary};
use self::progress::Progress;
use self::record::{Outcome, Record, STALE_MESSAGE};
use self::recorder::Recorder;

/// Exit code of a run that could not start (bad flags, unreadable baseline, broken registry).
const EXIT_USAGE: u8 = 2;
/// Default trial threads per CPU.
const THREADS_PER_CPU: usize = 4;
/// Exit code of a run with failures (libtest's own).
const EXIT_FAILED: u8 = 101;

/// The flags of `incus-conformance run` (and of a host's certification test binary).
///
/// All the standard libtest flags are accepted (`FILTER`, `--skip`, `--exact`, `--list`,
/// `--test-threads`, `--format pretty|terse|json`, `-q`, `--color`, ...), plus:
/// - `--junit FILE`: also write a JUnit XML report;
/// - `--expected-failures FILE`: a baseline of tests known to fail (text, one name per line, or
///   a JSON list); the run fails on a failure that is not listed and on a listed test that passes;
/// - `--incus-version 6.0|7.0`: the Incus line the fakes answer as, so that a producer certifies
///   against the Incus its users run (default: the fake's default line, 7.0).
///
/// Without `--test-threads`, trials run on four threads per CPU (they mostly wait on their fake).
///
/// Tests are named `area::clause::case` after the spec clause they check (`CLAUSES.md` lists
/// them per clause), or `scenario::<file>` for scenario files. After the closing
/// `test result:` line, a `clauses:` line counts the clauses checked and lists failing ones.
///
/// # JSON events (`--format json`)
///
/// One JSON object per line, schema `incus-conformance-events/1`: a `suite started` event, a
/// `started` and an outcome event per test, and a `suite finished` event with the totals and the
/// per-clause counts. The fields are listed in the crate README; they are only ever added.
///
/// # JUnit (`--junit FILE`)
///
/// One `testsuite` named `incus-conformance`; one `testcase` per test with the clause id as
/// `classname`; failures (and stale baseline entries) as `failure`, expected failures as
/// `skipped` with their message.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RunArgs {
    /// Also write a JUnit XML report to FILE.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,

    /// Tests known to fail (text: one name per line; or a JSON list). The run fails on new
    /// failures and on listed tests that pass.
    #[arg(long = "expected-failures", value_name = "FILE")]
    expected_failures: Option<PathBuf>,

    /// Run every trial on real time. By default a trial whose fake Incus and host run in this
    /// process waits on virtual time: its timers fire as soon as nothing else is left to do, so
    /// a 5 s exec grace or a 10 s member-down stall takes the time its steps compute. The same
    /// trials pass on real time; CI runs the time-dependent ones both ways.
    #[arg(long = "real-time")]
    real_time: bool,

    /// The Incus line the fake answers as in every suite and scenario: 6.0 or 7.0 (its
    /// server version, API extensions and behaviour). Default: the fake's default line, 7.0.
    #[arg(long = "incus-version", value_name = "6.0|7.0")]
    incus_version: Option<fake_incus::IncusLine>,

    #[command(flatten)]
    libtest: Arguments,
}

impl RunArgs {
    /// Whether these arguments only list the tests (`--list`).
    pub(crate) fn listing(&self) -> bool {
        self.libtest.list
    }

    /// The Incus line the fakes of this run answer as (`--incus-version`, else the default).
    pub(crate) fn incus_line(&self) -> fake_incus::IncusLine {
        self.incus_version.unwrap_or_default()
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Every selected test passed (or failed as the baseline expects), or `--list`.
    Passed,
    /// A test failed, a baseline entry is stale, or a report could not be written.
    Failed,
    /// The run could not start.
    Usage,
}

impl From<Verdict> for ExitCode {
    fn from(verdict: Verdict) -> Self {
        match verdict {
            Verdict::Passed => ExitCode::SUCCESS,
            Verdict::Failed => ExitCode::from(EXIT_FAILED),
            Verdict::Usage => ExitCode::from(EXIT_USAGE),
        }
    }
}

/// Whether the run was asked for real time (`--real-time`): trials' runtimes read it.
static REAL_TIME: AtomicBool = AtomicBool::new(false);

/// Whether trials must run on real time (`--real-time`), even where virtual time is possible.
pub(crate) fn real_time() -> bool {
    REAL_TIME.load(Ordering::Relaxed)
}

/// Panics whose message contains this marker are part of a check (a host callback scripted to
/// panic, by the scenario engine's host); the runner does not print them.
pub(crate) const EXPECTED_PANIC: &str = "(a panic scripted by the conformance run)";

/// Installs, once, a panic hook that keeps quiet about [`EXPECTED_PANIC`]s and passes every
/// other panic to the previous hook.
pub(crate) fn quiet_expected_panics() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = panic_message(info.payload());
            if !message.contains(EXPECTED_PANIC) {
                previous(info);
            }
        }));
    });
}

/// Runs `checks` as configured by `args` and returns the process exit code.
pub(crate) fn execute(args: &RunArgs, checks: Vec<Check>) -> ExitCode {
    execute_to(args, checks, EventSink::stdout).into()
}

/// Like [`execute`], with JSON events (if asked for) written to the sink `events` makes.
pub(crate) fn execute_to(
    args: &RunArgs,
    checks: Vec<Check>,
    events: impl FnOnce() -> EventSink,
) -> Verdict {
    quiet_expected_panics();
    if args.real_time {
        REAL_TIME.store(true, Ordering::Relaxed);
    }
    match prepare(args, &checks) {
        Ok(baseline) => run_checks(args, checks, baseline, events),
        Err(message) => {
            eprintln!("error: {message}");
            Verdict::Usage
        }
    }
}

/// Loads the baseline and checks that test names are unique.
fn prepare(args: &RunArgs, checks: &[Check]) -> Result<Baseline, String> {
    let mut seen = BTreeSet::new();
    for check in checks {
        if !seen.insert(check.name.as_str()) {
            return Err(format!("two tests are named {}", check.name));
        }
    }
    match &args.expected_failures {
        Some(path) => Baseline::load(path).map_err(|e| e.to_string()),
        None => Ok(Baseline::default()),
    }
}

fn run_checks(
    args: &RunArgs,
    checks: Vec<Check>,
    baseline: Baseline,
    events: impl FnOnce() -> EventSink,
) -> Verdict {
    let json = args.libtest.format == Some(FormatSetting::Json) && !args.libtest.list;
    let known: BTreeSet<&str> = checks.iter().map(|c| c.name.as_str()).collect();
    let unknown: Vec<String> = baseline
        .unknown(&known)
        .into_iter()
        .map(str::to_owned)
        .collect();
    let log_dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("error: cannot create a temporary directory: {e}");
            return Verdict::Usage;
        }
    };
    let libtest = libtest_arguments(
        &args.libtest,
        json.then(|| log_dir.path().join("libtest.log")),
    );
    let recorder = Arc::new(Recorder::new(json.then(events)));
    let baseline = Arc::new(baseline);
    let trials: Vec<Trial> = checks
        .into_iter()
        .map(|check| trial(check, Arc::clone(&baseline), Arc::clone(&recorder)))
        .collect();
    let selected = trials
        .iter()
        .filter(|t| !libtest.is_filtered_out(t))
        .count();
    if let Some(events) = recorder.events() {
        events.suite_started(selected);
    }

    let started = Instant::now();
    let progress = (!libtest.list)
        .then(|| Progress::start(Arc::clone(&recorder), selected, progress::INTERVAL));
    let conclusion = libtest_mimic::run(&libtest, trials);
    drop(progress);
    if libtest.list {
        return Verdict::Passed;
    }
    let elapsed = started.elapsed();

    let records = recorder.records();
    let mut summary = summarize(&records, &conclusion, unknown, elapsed);
    summary.clauses = clause_report::tally(&records);
    if let Some(events) = recorder.events() {
        events.suite_finished(&summary);
    } else {
        print_baseline_report(&summary, args.expected_failures.is_some());
        print!("{}", clause_report::render(&summary.clauses));
    }
    if let Some(path) = &args.junit {
        if let Err(e) = junit::write(path, &records, elapsed) {
            eprintln!(
                "error: cannot write the JUnit report {}: {e}",
                path.display()
            );
            return Verdict::Failed;
        }
    }
    if summary.ok() {
        Verdict::Passed
    } else {
        Verdict::Failed
    }
}

/// libtest-mimic's arguments; in JSON mode its own output goes to `log` so that only our
/// events reach standard output.
///
/// Without `--test-threads`, trials run on four threads per CPU: most of a trial's time is
/// spent waiting on its fake Incus (timers, sockets), not computing.
fn libtest_arguments(args: &Arguments, log: Option<PathBuf>) -> Arguments {
    let mut libtest = args.clone();
    if libtest.test_threads.is_none() {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        libtest.test_threads = Some(cpus * THREADS_PER_CPU);
    }
    if let Some(log) = log {
        libtest.format = Some(FormatSetting::Terse);
        libtest.quiet = false;
        libtest.logfile = Some(log.to_string_lossy().into_owned());
    }
    libtest
}

/// Wraps a check into a trial that records its outcome and applies the baseline.
fn trial(check: Check, baseline: Arc<Baseline>, recorder: Arc<Recorder>) -> Trial {
    let Check {
        name,
        clauses,
        body,
        in_process_only: _,
    } = check;
    Trial::ignorable_test(name.clone(), move || {
        recorder.started(&name);
        let started = Instant::now();
        let result = catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|panic| {
            Err(format!("test panicked: {}", panic_message(panic.as_ref())))
        });
        let outcome = match (result, baseline.contains(&name)) {
            (Ok(()), false) => Outcome::Passed,
            (Ok(()), true) => Outcome::StaleExpectedFailure,
            (Err(message), false) => Outcome::Failed(message),
            (Err(message), true) => Outcome::ExpectedFailure(message),
        };
        let verdict = match &outcome {
            Outcome::Passed => Ok(Completion::Completed),
            Outcome::ExpectedFailure(m) => Ok(Completion::ignored_with(format!(
                "expected failure: {}",
                m.lines().next().unwrap_or_default()
            ))),
            Outcome::Failed(m) => Err(m.into()),
            Outcome::StaleExpectedFailure => Err(STALE_MESSAGE.into()),
        };
        recorder.finished(Record {
            name,
            clauses,
            outcome,
            duration: started.elapsed(),
        });
        verdict
    })
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "a non-text payload".to_owned())
}

fn summarize(
    records: &[Record],
    conclusion: &libtest_mimic::Conclusion,
    unknown_baseline_entries: Vec<String>,
    elapsed: std::time::Duration,
) -> Summary {
    let count = |word: &str| records.iter().filter(|r| r.outcome.word() == word).count() as u64;
    let expected_failures = count("expected_failure");
    Summary {
        passed: count("passed"),
        failed: count("failed"),
        expected_failures,
        stale_expected_failures: count("stale_expected_failure"),
        ignored: conclusion.num_ignored.saturating_sub(expected_failures),
        filtered_out: conclusion.num_filtered_out,
        unknown_baseline_entries,
        duration_ms: json::millis(elapsed),
        clauses: Default::default(),
    }
}

fn print_baseline_report(summary: &Summary, has_baseline: bool) {
    if !has_baseline {
        return;
    }
    println!(
        "expected failures: {} still failing, {} stale (listed but passing)",
        summary.expected_failures, summary.stale_expected_failures
    );
    for name in &summary.unknown_baseline_entries {
        println!("expected failures: {name} names no test (stale entry)");
    }
}

#[cfg(test)]
mod tests;
