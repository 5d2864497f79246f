//! The main job's budget: `incus-conformance run` on virtual time (the default) beside the same
//! binary with `--real-time`, alternating, with the ten slowest trials of each from the JUnit
//! report.
//!
//! `cargo bench -p incus-conformance --bench main_job` prints, per run, the wall time, the CPU
//! time of the run (user + system, of the child process) and the load average when it started
//! (the machine may be shared: CPU time is what the run itself cost), then the ten slowest
//! trials of the last run of each mode. It fails when the virtual-time run's median wall time is
//! over the budget (5 s, `MAIN_JOB_BUDGET_SECONDS` to change it) or a run fails. `ROUNDS` (default
//! 3) sets how many runs of each mode. `cargo test --benches` runs one virtual-time round only.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The main job's budget on two cores (the target is under 3 s).
const BUDGET: Duration = Duration::from_secs(5);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Virtual,
    Real,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Virtual => "virtual time",
            Mode::Real => "real time",
        }
    }
}

/// One run of the main job.
struct Run {
    mode: Mode,
    wall: Duration,
    cpu: Duration,
    load: String,
    trials: Vec<(String, f64)>,
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let budget = std::env::var("MAIN_JOB_BUDGET_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(BUDGET, Duration::from_secs_f64);
    let modes: &[Mode] = if bench {
        &[Mode::Virtual, Mode::Real]
    } else {
        &[Mode::Virtual]
    };
    let rounds = if bench { rounds } else { 1 };
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_incus-conformance"));
    let scratch = tempfile::tempdir().expect("a temporary directory");
    println!(
        "main job: {} run, {rounds} round(s) alternating {}, {} CPU(s)",
        binary.display(),
        modes
            .iter()
            .map(|m| m.name())
            .collect::<Vec<_>>()
            .join(" / "),
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    println!(
        "{:<14} {:>5} {:>9} {:>9} {:>8}  load average",
        "mode", "round", "wall s", "cpu s", "trials"
    );
    let mut runs = Vec::new();
    for round in 1..=rounds {
        for &mode in modes {
            let junit = scratch
                .path()
                .join(format!("junit-{round}-{}.xml", mode == Mode::Real));
            let run = run(&binary, mode, &junit);
            println!(
                "{:<14} {round:>5} {:>9.2} {:>9.2} {:>8}  {}",
                mode.name(),
                run.wall.as_secs_f64(),
                run.cpu.as_secs_f64(),
                run.trials.len(),
                run.load
            );
            runs.push(run);
        }
    }
    for &mode in modes {
        let mine: Vec<&Run> = runs.iter().filter(|r| r.mode == mode).collect();
        let median = median(mine.iter().map(|r| r.wall).collect());
        let cpu = median_f(mine.iter().map(|r| r.cpu.as_secs_f64()).collect());
        let sum: f64 = mine
            .last()
            .map_or(0.0, |r| r.trials.iter().map(|t| t.1).sum());
        println!(
            "\n{}: median wall {:.2} s, median CPU {cpu:.2} s; the trials' own times add up to {sum:.1} s; ten slowest:",
            mode.name(),
            median.as_secs_f64()
        );
        if let Some(last) = mine.last() {
            let mut trials = last.trials.clone();
            trials.sort_by(|a, b| b.1.total_cmp(&a.1));
            for (name, seconds) in trials.iter().take(10) {
                println!("  {seconds:>7.3} s  {name}");
            }
        }
    }
    let virtual_wall = median(
        runs.iter()
            .filter(|r| r.mode == Mode::Virtual)
            .map(|r| r.wall)
            .collect(),
    );
    if virtual_wall > budget {
        eprintln!(
            "\nover budget: the main job took {:.2} s (median) on virtual time, the budget is {:.1} s",
            virtual_wall.as_secs_f64(),
            budget.as_secs_f64()
        );
        std::process::exit(1);
    }
    println!(
        "\nwithin budget: {:.2} s <= {:.1} s",
        virtual_wall.as_secs_f64(),
        budget.as_secs_f64()
    );
}

/// Runs the main job once and reads its JUnit report.
fn run(binary: &Path, mode: Mode, junit: &Path) -> Run {
    let mut command = Command::new(binary);
    command.arg("run").arg("--junit").arg(junit).arg("-q");
    if mode == Mode::Real {
        command.arg("--real-time");
    }
    let load = std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into());
    let cpu_before = children_cpu();
    let started = Instant::now();
    let output = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("the main job starts");
    let wall = started.elapsed();
    let cpu = children_cpu().saturating_sub(cpu_before);
    if !output.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&output.stdout));
        eprintln!("{}", String::from_utf8_lossy(&output.stderr));
        panic!("the main job on {} failed: {}", mode.name(), output.status);
    }
    let report = std::fs::read_to_string(junit).expect("the JUnit report");
    Run {
        mode,
        wall,
        cpu,
        load,
        trials: trial_times(&report),
    }
}

/// User + system time of the waited-for children so far (`/proc/self/stat`, clock ticks of
/// 1/100 s, the Linux default).
fn children_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // cutime and cstime are fields 16 and 17 of stat(5); `rest` starts at field 3.
    let ticks: u64 = [13, 14]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|f| f.parse::<u64>().ok()))
        .sum();
    Duration::from_millis(ticks * 10)
}

/// Each test case's name and time from a JUnit report.
fn trial_times(report: &str) -> Vec<(String, f64)> {
    let case = regex::Regex::new(r#"<testcase name="([^"]*)"[^>]*?time="([0-9.]+)""#)
        .expect("a valid pattern");
    case.captures_iter(report)
        .filter_map(|c| Some((unescape(&c[1]), c[2].parse().ok()?)))
        .collect()
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values.get(values.len() / 2).copied().unwrap_or_default()
}

fn median_f(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or_default()
}
