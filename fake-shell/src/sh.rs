//! `sh`: busybox's `ash` as a program: `sh -c LINE [NAME [ARG...]]`, `sh FILE [ARG...]`, or a script
//! read from stdin.

use std::collections::BTreeMap;

use crate::shell::{Shell, Status, Stop, USAGE_STATUS};
use crate::syntax;

/// A script read from stdin larger than this is refused.
const MAX_SCRIPT_BYTES: usize = 1 << 20;

/// The `sh` applet.
pub(crate) async fn sh(process: &mut Shell, args: &[String]) -> Status {
    let mut command = false;
    let mut errexit = false;
    let mut nounset = false;
    let mut rest = args;
    while let Some(option) = rest
        .first()
        .filter(|a| (a.starts_with('-') || a.starts_with('+')) && a.len() > 1)
    {
        rest = &rest[1..];
        if option == "--" {
            break;
        }
        for flag in option.chars().skip(1) {
            match flag {
                'c' => command = true,
                'e' => errexit = true,
                'u' => nounset = true,
                's' | 'l' | 'i' => {}
                other => {
                    return process
                        .fail(&format!(
                            "sh: -{other}: option not supported by the fake's shell"
                        ))
                        .await
                        .map(|_| USAGE_STATUS)
                }
            }
        }
    }
    let (source, arg0, positional) = if command {
        let Some((line, tail)) = rest.split_first() else {
            process.err_line("sh: -c requires an argument").await?;
            return Ok(USAGE_STATUS);
        };
        let (arg0, positional) = match tail.split_first() {
            Some((name, args)) => (name.clone(), args.to_vec()),
            None => (process.arg0.clone(), Vec::new()),
        };
        (line.clone(), arg0, positional)
    } else if let Some((file, tail)) = rest.split_first() {
        let path = process.path(file);
        match process.m.fs.read(&path) {
            Ok(content) => (
                String::from_utf8_lossy(&content).into_owned(),
                file.clone(),
                tail.to_vec(),
            ),
            Err(error) => {
                let message = format!("sh: can't open '{file}': {}", error.text());
                process.err_line(&message).await?;
                return Ok(NOT_FOUND);
            }
        }
    } else {
        match read_script(process).await {
            Some(source) => (source, process.arg0.clone(), Vec::new()),
            None => {
                process
                    .err_line("sh: script on stdin is too long or not UTF-8")
                    .await?;
                return Ok(USAGE_STATUS);
            }
        }
    };
    process.errexit = errexit;
    process.nounset = nounset;
    run_source(process, &source, arg0, positional).await
}

/// Status of `sh FILE` when the file cannot be opened.
const NOT_FOUND: i32 = 127;

/// Runs a script as a new shell in `process` (its environment already set): `SHLVL` one higher and
/// `PWD` set, like busybox's.
pub(crate) async fn run_source(
    process: &mut Shell,
    source: &str,
    arg0: String,
    positional: Vec<String>,
) -> Status {
    let list = match syntax::parse(source) {
        Ok(list) => list,
        Err(error) => {
            process
                .err_line(&format!("sh: syntax error: {error}"))
                .await?;
            return Ok(USAGE_STATUS);
        }
    };
    let level = process
        .var("SHLVL")
        .and_then(|l| l.parse::<u32>().ok())
        .unwrap_or(0);
    set_exported(
        &mut process.vars,
        &mut process.exported,
        "SHLVL",
        level.saturating_add(1).to_string(),
    );
    let cwd = process.cwd.clone();
    set_exported(&mut process.vars, &mut process.exported, "PWD", cwd);
    process.arg0 = arg0;
    process.args = positional;
    process.status = 0;
    match process.run_list(&list).await {
        Ok(()) | Err(Stop::Exit | Stop::Return | Stop::Break(_) | Stop::Continue(_)) => {
            Ok(process.status)
        }
        Err(Stop::BrokenPipe) => Err(Stop::BrokenPipe),
    }
}

fn set_exported(
    vars: &mut BTreeMap<String, String>,
    exported: &mut std::collections::BTreeSet<String>,
    name: &str,
    value: String,
) {
    vars.insert(name.to_owned(), value);
    exported.insert(name.to_owned());
}

/// Reads the whole of stdin as a script, at most [`MAX_SCRIPT_BYTES`].
async fn read_script(process: &Shell) -> Option<String> {
    let input = process.fds.input();
    let mut reader = input.lock().await;
    let mut source = Vec::new();
    while let Some(chunk) = reader.next_chunk().await {
        if source.len() + chunk.len() > MAX_SCRIPT_BYTES {
            return None;
        }
        source.extend_from_slice(&chunk);
    }
    String::from_utf8(source).ok()
}
