//! Applets that read and transform text: `cat`, `head`, `tail`, `wc`, `grep`, `sed`, `cut`, `sort`,
//! `uniq`, `tr`, `base64`, `tee`.

use std::sync::Arc;

use bytes::Bytes;

use super::{inputs, opts, read_file};
use crate::io::{FileOut, Sink};
use crate::shell::{Shell, Status};

/// Copies stdin to stdout chunk by chunk (memory stays bounded whatever flows).
async fn copy_stdin(process: &Shell) -> Status {
    let input = process.fds.input();
    loop {
        let chunk = input.lock().await.next_chunk().await;
        match chunk {
            Some(chunk) => process.out(chunk).await?,
            None => return Ok(0),
        }
    }
}

/// `cat [-n] [FILE...]`.
pub(super) async fn cat(process: &mut Shell, args: &[String]) -> Status {
    let opts = opts!(process, "cat", args, "nbvetAu");
    let number = opts.has('n') || opts.has('b');
    let operands = if opts.operands.is_empty() {
        vec!["-".to_owned()]
    } else {
        opts.operands.clone()
    };
    let mut status = 0;
    let mut line_number = 0;
    for operand in &operands {
        let content = if operand == "-" {
            if !number {
                copy_stdin(process).await?;
                continue;
            }
            Bytes::from(process.read_stdin().await)
        } else {
            match read_file(process, operand) {
                Ok(content) => content,
                Err(error) => {
                    process
                        .err_line(&format!("cat: can't open '{operand}': {}", error.text()))
                        .await?;
                    status = 1;
                    continue;
                }
            }
        };
        if number {
            let mut out = Vec::new();
            for line in content.split_inclusive(|b| *b == b'\n') {
                let blank = line == b"\n";
                if opts.has('b') && blank {
                    out.extend_from_slice(line);
                    continue;
                }
                line_number += 1;
                out.extend_from_slice(format!("{line_number:6}\t").as_bytes());
                out.extend_from_slice(line);
            }
            process.out(out).await?;
        } else {
            process.out(content).await?;
        }
    }
    Ok(status)
}

/// A count of lines or bytes, `+N` meaning "from N" for `tail`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Count {
    bytes: bool,
    n: u64,
    from_start: bool,
}

/// Reads `-n N`, `-c N`, `-N` and `+N`; the rest are operands.
fn count_args(args: &[String], default: u64) -> Result<(Count, Vec<String>, bool, bool), String> {
    let mut count = Count {
        bytes: false,
        n: default,
        from_start: false,
    };
    let mut operands = Vec::new();
    let mut quiet = false;
    let mut verbose = false;
    let mut rest = args.iter();
    let parse = |value: &str, bytes: bool| -> Result<Count, String> {
        let (from_start, digits) = match value.strip_prefix('+') {
            Some(digits) => (true, digits),
            None => (false, value.strip_prefix('-').unwrap_or(value)),
        };
        let n = digits
            .parse::<u64>()
            .map_err(|_| format!("invalid number '{value}'"))?;
        Ok(Count {
            bytes,
            n,
            from_start,
        })
    };
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "-n" | "-c" => {
                let value = rest
                    .next()
                    .ok_or_else(|| format!("option requires an argument -- '{}'", &arg[1..]))?;
                count = parse(value, arg == "-c")?;
            }
            "-q" => quiet = true,
            "-v" => verbose = true,
            "-f" | "-F" => return Err("-f: following a file is not simulated by the fake".into()),
            a if a.starts_with("-n") || a.starts_with("-c") => {
                count = parse(&a[2..], a.starts_with("-c"))?;
            }
            a if a.len() > 1
                && a.starts_with('-')
                && a[1..].bytes().all(|b| b.is_ascii_digit()) =>
            {
                count = parse(&a[1..], false)?;
            }
            a if a.len() > 1
                && a.starts_with('+')
                && a[1..].bytes().all(|b| b.is_ascii_digit()) =>
            {
                count = parse(a, false)?;
            }
            a if a.starts_with('-') && a != "-" => {
                return Err(format!("invalid option -- '{}'", &a[1..2]))
            }
            operand => operands.push(operand.to_owned()),
        }
    }
    Ok((count, operands, quiet, verbose))
}

/// `head [-n N | -c N | -N] [FILE...]`: from stdin it takes only what it prints and leaves the rest
/// for the next command.
pub(super) async fn head(process: &mut Shell, args: &[String]) -> Status {
    let (count, operands, quiet, verbose) = match count_args(args, 10) {
        Ok(parsed) => parsed,
        Err(message) => return process.fail(&format!("head: {message}")).await,
    };
    if operands.is_empty() {
        return head_stdin(process, count).await;
    }
    let headers = (operands.len() > 1 && !quiet) || verbose;
    let mut failed = false;
    let files = inputs(process, "head", &operands, &mut failed).await?;
    for (index, (name, content)) in files.iter().enumerate() {
        if headers {
            let gap = if index > 0 { "\n" } else { "" };
            process.out(format!("{gap}==> {name} <==\n")).await?;
        }
        let end = if count.bytes {
            content.len().min(count.n as usize)
        } else {
            line_end(content, count.n)
        };
        process.out(content.slice(..end)).await?;
    }
    Ok(i32::from(failed))
}

/// The byte length of the first `n` lines.
fn line_end(content: &[u8], n: u64) -> usize {
    if n == 0 {
        return 0;
    }
    let mut seen = 0;
    for (index, byte) in content.iter().enumerate() {
        if *byte == b'\n' {
            seen += 1;
            if seen == n {
                return index + 1;
            }
        }
    }
    content.len()
}

async fn head_stdin(process: &Shell, count: Count) -> Status {
    let input = process.fds.input();
    let mut left = count.n;
    while left > 0 {
        let mut reader = input.lock().await;
        let Some(mut chunk) = reader.next_chunk().await else {
            break;
        };
        let take = if count.bytes {
            chunk.len().min(usize::try_from(left).unwrap_or(usize::MAX))
        } else {
            let end = line_end(&chunk, left);
            left -= chunk[..end].iter().filter(|b| **b == b'\n').count() as u64;
            end
        };
        if count.bytes {
            left -= take as u64;
        }
        let rest = chunk.split_off(take);
        reader.unread(rest);
        drop(reader);
        process.out(chunk).await?;
    }
    Ok(0)
}

/// `tail [-n N | -c N | -N | +N] [FILE...]`.
pub(super) async fn tail(process: &mut Shell, args: &[String]) -> Status {
    let (count, operands, quiet, verbose) = match count_args(args, 10) {
        Ok(parsed) => parsed,
        Err(message) => return process.fail(&format!("tail: {message}")).await,
    };
    let headers = (operands.len() > 1 && !quiet) || verbose;
    let mut failed = false;
    let files = inputs(process, "tail", &operands, &mut failed).await?;
    for (index, (name, content)) in files.iter().enumerate() {
        if headers {
            let gap = if index > 0 { "\n" } else { "" };
            process.out(format!("{gap}==> {name} <==\n")).await?;
        }
        let start = if count.bytes {
            if count.from_start {
                (count.n.saturating_sub(1) as usize).min(content.len())
            } else {
                content.len().saturating_sub(count.n as usize)
            }
        } else if count.from_start {
            line_end(content, count.n.saturating_sub(1))
        } else {
            let body = content.strip_suffix(b"\n").unwrap_or(content);
            let mut seen = 0;
            let mut start = 0;
            for (index, byte) in body.iter().enumerate().rev() {
                if *byte == b'\n' {
                    seen += 1;
                    if seen == count.n {
                        start = index + 1;
                        break;
                    }
                }
            }
            if count.n == 0 {
                content.len()
            } else {
                start
            }
        };
        process.out(content.slice(start..)).await?;
    }
    Ok(i32::from(failed))
}

/// `wc [-lwcmL] [FILE...]`.
pub(super) async fn wc(process: &mut Shell, args: &[String]) -> Status {
    let opts = opts!(process, "wc", args, "lwcmL");
    let mut columns: Vec<char> = ['l', 'w', 'c', 'm', 'L']
        .into_iter()
        .filter(|c| opts.has(*c))
        .collect();
    if columns.is_empty() {
        columns = vec!['l', 'w', 'c'];
    }
    let mut failed = false;
    let files = inputs(process, "wc", &opts.operands, &mut failed).await?;
    let mut totals = [0u64; 5];
    let mut out = String::new();
    let plain = columns.len() == 1;
    for (name, content) in &files {
        let text = String::from_utf8_lossy(content);
        let counts = [
            content.iter().filter(|b| **b == b'\n').count() as u64,
            text.split_whitespace().count() as u64,
            content.len() as u64,
            text.chars().count() as u64,
            text.lines().map(|l| l.chars().count()).max().unwrap_or(0) as u64,
        ];
        for (total, count) in totals.iter_mut().zip(counts) {
            *total += count;
        }
        let label = if opts.operands.is_empty() {
            None
        } else {
            Some(name.as_str())
        };
        out.push_str(&wc_line(&columns, &counts, label, plain));
    }
    if files.len() > 1 {
        out.push_str(&wc_line(&columns, &totals, Some("total"), false));
    }
    process.out(out).await?;
    Ok(i32::from(failed))
}

fn wc_line(columns: &[char], counts: &[u64; 5], name: Option<&str>, plain: bool) -> String {
    let values: Vec<String> = columns
        .iter()
        .map(|c| {
            let index = "lwcmL".find(*c).unwrap_or(0);
            if plain {
                counts[index].to_string()
            } else {
                format!("{:9}", counts[index])
            }
        })
        .collect();
    match name {
        Some(name) => format!("{} {name}\n", values.join(" ")),
        None => format!("{}\n", values.join(" ")),
    }
}

/// A POSIX basic regular expression in the `regex` crate's syntax.
pub(crate) fn bre_to_regex(pattern: &str, extended: bool) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars().peekable();
    let mut in_bracket = false;
    while let Some(c) = chars.next() {
        if in_bracket {
            if c == ']' {
                in_bracket = false;
            }
            if c == '[' && chars.peek() == Some(&':') {
                out.push('[');
                continue;
            }
            if c == '\\' {
                out.push_str("\\\\");
                continue;
            }
            out.push(c);
            continue;
        }
        match c {
            '[' => {
                in_bracket = true;
                out.push('[');
                if chars.peek() == Some(&'^') {
                    out.extend(chars.next());
                }
                if chars.peek() == Some(&']') {
                    chars.next();
                    out.push_str("\\]");
                }
            }
            '\\' => match chars.next() {
                Some(n @ ('(' | ')' | '{' | '}' | '|' | '+' | '?')) if !extended => out.push(n),
                Some('<') | Some('>') => out.push_str("\\b"),
                Some(n) if n.is_ascii_digit() => {
                    // Back-references are not in the regex crate: matched literally as the group.
                    out.push('\\');
                    out.push(n);
                }
                Some(n) => {
                    out.push('\\');
                    out.push(n);
                }
                None => out.push_str("\\\\"),
            },
            '(' | ')' | '{' | '}' | '|' | '+' | '?' if !extended => {
                out.push('\\');
                out.push(c);
            }
            '*' if !extended && (out.is_empty() || out.ends_with('^') || out.ends_with("\\(")) => {
                out.push_str("\\*");
            }
            c => out.push(c),
        }
    }
    out
}

/// A compiled pattern for `grep` and `sed`.
pub(crate) fn compile(
    pattern: &str,
    extended: bool,
    fixed: bool,
    ignore_case: bool,
) -> Result<regex::bytes::Regex, String> {
    let source = if fixed {
        regex::escape(pattern)
    } else {
        bre_to_regex(pattern, extended)
    };
    regex::bytes::RegexBuilder::new(&source)
        .case_insensitive(ignore_case)
        .unicode(false)
        .build()
        .map_err(|_| format!("bad regex '{pattern}'"))
}

pub(super) async fn egrep(process: &mut Shell, args: &[String]) -> Status {
    grep_with(process, args, "egrep", true, false).await
}

pub(super) async fn fgrep(process: &mut Shell, args: &[String]) -> Status {
    grep_with(process, args, "fgrep", false, true).await
}

/// `grep [-ivclLnqsEFwxoHhr] [-e PATTERN]... [PATTERN] [FILE...]`.
pub(super) async fn grep(process: &mut Shell, args: &[String]) -> Status {
    grep_with(process, args, "grep", false, false).await
}

async fn grep_with(
    process: &Shell,
    args: &[String],
    name: &str,
    extended: bool,
    fixed: bool,
) -> Status {
    let opts = match super::Opts::parse(args, "ivclLnqsEFwxoHhRre:f:m:A:B:C:") {
        Ok(opts) => opts,
        Err(message) => {
            process.err_line(&format!("{name}: {message}")).await?;
            return Ok(2);
        }
    };
    if ["r", "R", "A", "B", "C"]
        .iter()
        .any(|f| opts.has(f.chars().next().unwrap_or(' ')))
    {
        process
            .err_line(&format!(
                "{name}: recursion and context lines are not simulated by the fake"
            ))
            .await?;
        return Ok(2);
    }
    let mut operands = opts.operands.clone();
    let mut patterns = opts.values('e');
    for file in opts.values('f') {
        match read_file(process, &file) {
            Ok(content) => {
                patterns.extend(String::from_utf8_lossy(&content).lines().map(str::to_owned))
            }
            Err(error) => {
                process
                    .err_line(&format!("{name}: {file}: {}", error.text()))
                    .await?;
                return Ok(2);
            }
        }
    }
    if patterns.is_empty() {
        if operands.is_empty() {
            process
                .err_line(&format!(
                    "{name}: usage: {name} [OPTIONS] PATTERN [FILE]..."
                ))
                .await?;
            return Ok(2);
        }
        patterns.push(operands.remove(0));
    }
    let extended = extended || opts.has('E');
    let fixed = fixed || opts.has('F');
    let mut regexes = Vec::new();
    for pattern in patterns
        .iter()
        .flat_map(|p| p.split('\n').map(str::to_owned).collect::<Vec<_>>())
    {
        let mut source = if fixed {
            regex::escape(&pattern)
        } else {
            bre_to_regex(&pattern, extended)
        };
        if opts.has('w') {
            source = format!("\\b(?:{source})\\b");
        }
        if opts.has('x') {
            source = format!("^(?:{source})$");
        }
        match regex::bytes::RegexBuilder::new(&source)
            .case_insensitive(opts.has('i'))
            .unicode(false)
            .build()
        {
            Ok(regex) => regexes.push(regex),
            Err(_) => {
                process
                    .err_line(&format!("{name}: bad regex '{pattern}'"))
                    .await?;
                return Ok(2);
            }
        }
    }
    let max: Option<usize> = opts.value('m').and_then(|m| m.parse().ok());
    let mut failed = false;
    let files = if opts.has('s') {
        let mut quiet_failed = false;
        let mut files = Vec::new();
        for operand in &operands {
            match read_file(process, operand) {
                Ok(content) => files.push((operand.clone(), content)),
                Err(_) => quiet_failed = true,
            }
        }
        if operands.is_empty() {
            files.push((
                "(standard input)".to_owned(),
                Bytes::from(process.read_stdin().await),
            ));
        }
        failed = quiet_failed;
        files
    } else {
        let mut files = Vec::new();
        if operands.is_empty() {
            files.push((
                "(standard input)".to_owned(),
                Bytes::from(process.read_stdin().await),
            ));
        }
        for operand in &operands {
            if operand == "-" {
                files.push((
                    "(standard input)".to_owned(),
                    Bytes::from(process.read_stdin().await),
                ));
                continue;
            }
            match read_file(process, operand) {
                Ok(content) => files.push((operand.clone(), content)),
                Err(error) => {
                    process
                        .err_line(&format!("{name}: {operand}: {}", error.text()))
                        .await?;
                    failed = true;
                }
            }
        }
        files
    };
    let prefix = (operands.len() > 1 || opts.has('H')) && !opts.has('h');
    let mut any = false;
    for (file, content) in &files {
        let mut count = 0;
        let mut out = Vec::new();
        let lines = content.split(|b| *b == b'\n');
        let total = content.split(|b| *b == b'\n').count();
        for (index, line) in lines.enumerate() {
            if index + 1 == total && line.is_empty() {
                break;
            }
            if max.is_some_and(|m| count >= m) {
                break;
            }
            let hit = regexes.iter().any(|r| r.is_match(line));
            if hit == opts.has('v') {
                continue;
            }
            count += 1;
            any = true;
            if opts.has('q') {
                return Ok(0);
            }
            if opts.has('c') || opts.has('l') || opts.has('L') {
                continue;
            }
            let mut lead = Vec::new();
            if prefix {
                lead.extend_from_slice(format!("{file}:").as_bytes());
            }
            if opts.has('n') {
                lead.extend_from_slice(format!("{}:", index + 1).as_bytes());
            }
            if opts.has('o') && !opts.has('v') {
                for regex in &regexes {
                    for found in regex.find_iter(line) {
                        out.extend_from_slice(&lead);
                        out.extend_from_slice(found.as_bytes());
                        out.push(b'\n');
                    }
                }
            } else {
                out.extend_from_slice(&lead);
                out.extend_from_slice(line);
                out.push(b'\n');
            }
        }
        if opts.has('c') {
            let line = if prefix {
                format!("{file}:{count}\n")
            } else {
                format!("{count}\n")
            };
            out.extend_from_slice(line.as_bytes());
        }
        if opts.has('l') && count > 0 {
            out.extend_from_slice(format!("{file}\n").as_bytes());
        }
        if opts.has('L') && count == 0 {
            out.extend_from_slice(format!("{file}\n").as_bytes());
        }
        process.out(out).await?;
    }
    Ok(if failed && !(opts.has('q') && any) {
        2
    } else if any {
        0
    } else {
        1
    })
}

/// One `sed` command with its address.
#[derive(Debug, Clone)]
struct SedCommand {
    from: Option<Address>,
    to: Option<Address>,
    negate: bool,
    action: Action,
}

#[derive(Debug, Clone)]
enum Address {
    Line(usize),
    Last,
    Regex(regex::bytes::Regex),
}

#[derive(Debug, Clone)]
enum Action {
    Substitute {
        regex: regex::bytes::Regex,
        replacement: Vec<u8>,
        global: bool,
        nth: usize,
        print: bool,
    },
    Delete,
    Print,
    Quit,
    Append(String),
    Insert(String),
    Change(String),
    LineNumber,
    Translate(Vec<char>, Vec<char>),
}

struct SedParser<'a> {
    chars: Vec<char>,
    at: usize,
    extended: bool,
    _source: &'a str,
}

impl SedParser<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn blanks(&mut self) {
        while self.peek().is_some_and(|c| c == ' ' || c == '\t') {
            self.at += 1;
        }
    }

    fn delimited(&mut self, delimiter: char) -> Result<String, String> {
        let mut out = String::new();
        loop {
            match self.chars.get(self.at).copied() {
                None => return Err("unterminated".into()),
                Some(c) if c == delimiter => {
                    self.at += 1;
                    return Ok(out);
                }
                Some('\\') => {
                    self.at += 1;
                    match self.chars.get(self.at).copied() {
                        Some(c) if c == delimiter => out.push(c),
                        Some('n') => out.push('\n'),
                        Some(c) => {
                            out.push('\\');
                            out.push(c);
                        }
                        None => return Err("unterminated".into()),
                    }
                    self.at += 1;
                }
                Some(c) => {
                    out.push(c);
                    self.at += 1;
                }
            }
        }
    }

    fn address(&mut self) -> Result<Option<Address>, String> {
        match self.peek() {
            Some(c) if c.is_ascii_digit() => {
                let mut n = 0usize;
                while let Some(d) = self.peek().and_then(|c| c.to_digit(10)) {
                    n = n * 10 + d as usize;
                    self.at += 1;
                }
                Ok(Some(Address::Line(n)))
            }
            Some('$') => {
                self.at += 1;
                Ok(Some(Address::Last))
            }
            Some('/') | Some('\\') => {
                let delimiter = if self.peek() == Some('\\') {
                    self.at += 1;
                    self.peek().ok_or("unterminated address regex")?
                } else {
                    '/'
                };
                self.at += 1;
                let pattern = self.delimited(delimiter)?;
                let regex = compile(&pattern, self.extended, false, false)?;
                Ok(Some(Address::Regex(regex)))
            }
            _ => Ok(None),
        }
    }

    fn text_argument(&mut self) -> String {
        self.blanks();
        if self.peek() == Some('\\') {
            self.at += 1;
            if self.peek() == Some('\n') {
                self.at += 1;
            }
        }
        let mut text = String::new();
        while let Some(c) = self.peek() {
            if c == '\n' {
                break;
            }
            self.at += 1;
            if c == '\\' {
                if let Some(n) = self.peek() {
                    self.at += 1;
                    text.push(n);
                    continue;
                }
            }
            text.push(c);
        }
        text
    }

    fn commands(&mut self) -> Result<Vec<SedCommand>, String> {
        let mut out = Vec::new();
        loop {
            while self.peek().is_some_and(|c| c.is_whitespace() || c == ';') {
                self.at += 1;
            }
            if self.peek().is_none() {
                return Ok(out);
            }
            let from = self.address()?;
            let to = if from.is_some() && self.peek() == Some(',') {
                self.at += 1;
                Some(self.address()?.ok_or("unexpected ','")?)
            } else {
                None
            };
            self.blanks();
            let negate = self.peek() == Some('!');
            if negate {
                self.at += 1;
                self.blanks();
            }
            let Some(command) = self.peek() else {
                return Err("missing command".into());
            };
            self.at += 1;
            let action = match command {
                's' => {
                    let delimiter = self.peek().ok_or("unterminated `s' command")?;
                    self.at += 1;
                    let pattern = self.delimited(delimiter)?;
                    let replacement = self.delimited(delimiter)?;
                    let mut global = false;
                    let mut print = false;
                    let mut nth = 1;
                    let mut ignore_case = false;
                    while let Some(flag) = self.peek() {
                        match flag {
                            'g' => global = true,
                            'p' => print = true,
                            'I' | 'i' => ignore_case = true,
                            d if d.is_ascii_digit() => nth = d.to_digit(10).unwrap_or(1) as usize,
                            _ => break,
                        }
                        self.at += 1;
                    }
                    let regex = compile(&pattern, self.extended, false, ignore_case)?;
                    Action::Substitute {
                        regex,
                        replacement: sed_replacement(&replacement),
                        global,
                        nth,
                        print,
                    }
                }
                'd' => Action::Delete,
                'p' => Action::Print,
                'q' => Action::Quit,
                '=' => Action::LineNumber,
                'a' => Action::Append(self.text_argument()),
                'i' => Action::Insert(self.text_argument()),
                'c' => Action::Change(self.text_argument()),
                'y' => {
                    let delimiter = self.peek().ok_or("unterminated `y' command")?;
                    self.at += 1;
                    let from: Vec<char> = self.delimited(delimiter)?.chars().collect();
                    let to: Vec<char> = self.delimited(delimiter)?.chars().collect();
                    if from.len() != to.len() {
                        return Err("strings for `y' command are different lengths".into());
                    }
                    Action::Translate(from, to)
                }
                other => {
                    return Err(format!(
                        "unsupported command {other} (not simulated by the fake)"
                    ))
                }
            };
            out.push(SedCommand {
                from,
                to,
                negate,
                action,
            });
        }
    }
}

/// A replacement with `&` and `\N` as markers: `\x00` then the group number (0 for `&`).
fn sed_replacement(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '&' => out.extend_from_slice(&[0, 0]),
            '\\' => match chars.next() {
                Some(d) if d.is_ascii_digit() => out.extend_from_slice(&[0, d as u8 - b'0']),
                Some('n') => out.push(b'\n'),
                Some('t') => out.push(b'\t'),
                Some(other) => {
                    let mut buffer = [0; 4];
                    out.extend_from_slice(other.encode_utf8(&mut buffer).as_bytes());
                }
                None => out.push(b'\\'),
            },
            other => {
                let mut buffer = [0; 4];
                out.extend_from_slice(other.encode_utf8(&mut buffer).as_bytes());
            }
        }
    }
    out
}

fn expand_replacement(template: &[u8], captures: &regex::bytes::Captures<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut index = 0;
    while index < template.len() {
        if template[index] == 0 && index + 1 < template.len() {
            let group = template[index + 1] as usize;
            if let Some(found) = captures.get(group) {
                out.extend_from_slice(found.as_bytes());
            }
            index += 2;
        } else {
            out.push(template[index]);
            index += 1;
        }
    }
    out
}

/// `sed [-nEri] [-e SCRIPT]... [SCRIPT] [FILE...]`: `s`, `d`, `p`, `q`, `a`, `i`, `c`, `y`, `=` with
/// line, `$` and regex addresses and ranges.
pub(super) async fn sed(process: &mut Shell, args: &[String]) -> Status {
    let opts = opts!(process, "sed", args, "nErie:f:s");
    let mut operands = opts.operands.clone();
    let mut scripts = opts.values('e');
    for file in opts.values('f') {
        match read_file(process, &file) {
            Ok(content) => scripts.push(String::from_utf8_lossy(&content).into_owned()),
            Err(error) => {
                return process
                    .fail(&format!("sed: can't open '{file}': {}", error.text()))
                    .await
            }
        }
    }
    if scripts.is_empty() {
        if operands.is_empty() {
            return process.fail("sed: no script specified").await;
        }
        scripts.push(operands.remove(0));
    }
    let source = scripts.join("\n");
    let mut parser = SedParser {
        chars: source.chars().collect(),
        at: 0,
        extended: opts.has('E') || opts.has('r'),
        _source: &source,
    };
    let commands = match parser.commands() {
        Ok(commands) => commands,
        Err(message) => {
            return process
                .fail(&format!("sed: -e expression #1: {message}"))
                .await
        }
    };
    let quiet = opts.has('n');
    if opts.has('i') {
        let mut status = 0;
        for operand in &operands {
            let content = match read_file(process, operand) {
                Ok(content) => content,
                Err(error) => {
                    process
                        .err_line(&format!("sed: can't open '{operand}': {}", error.text()))
                        .await?;
                    status = 4;
                    continue;
                }
            };
            let output = run_sed(&commands, &content, quiet);
            let path = process.path(operand);
            if let Err(error) =
                process
                    .m
                    .fs
                    .write(&path, Bytes::from(output), false, 0o644, process.owner())
            {
                return process
                    .fail(&format!("sed: {operand}: {}", error.text()))
                    .await;
            }
        }
        return Ok(status);
    }
    let mut failed = false;
    let files = inputs(process, "sed", &operands, &mut failed).await?;
    let mut all = Vec::new();
    for (_, content) in &files {
        all.extend_from_slice(content);
    }
    let output = run_sed(&commands, &all, quiet);
    process.out(output).await?;
    Ok(if failed { 2 } else { 0 })
}

fn run_sed(commands: &[SedCommand], input: &[u8], quiet: bool) -> Vec<u8> {
    let mut lines: Vec<&[u8]> = input.split(|b| *b == b'\n').collect();
    let trailing_newline = input.ends_with(b"\n");
    if trailing_newline || input.is_empty() {
        lines.pop();
    }
    let count = lines.len();
    let mut out = Vec::new();
    let mut active = vec![false; commands.len()];
    'lines: for (index, line) in lines.iter().enumerate() {
        let number = index + 1;
        let last = number == count;
        let mut space = line.to_vec();
        let mut appended: Vec<String> = Vec::new();
        let mut deleted = false;
        for (slot, command) in commands.iter().enumerate() {
            let hit = |address: &Address, space: &[u8]| match address {
                Address::Line(n) => *n == number,
                Address::Last => last,
                Address::Regex(regex) => regex.is_match(space),
            };
            let selected = match (&command.from, &command.to) {
                (None, _) => true,
                (Some(from), None) => hit(from, &space),
                (Some(from), Some(to)) => {
                    if active[slot] {
                        if hit(to, &space) || matches!(to, Address::Line(n) if *n <= number) {
                            active[slot] = false;
                        }
                        true
                    } else if hit(from, &space) {
                        active[slot] = !matches!(to, Address::Line(n) if *n <= number);
                        true
                    } else {
                        false
                    }
                }
            };
            if selected == command.negate {
                continue;
            }
            match &command.action {
                Action::Substitute {
                    regex,
                    replacement,
                    global,
                    nth,
                    print,
                } => {
                    let mut result = Vec::new();
                    let mut last_end = 0;
                    let mut done = false;
                    for (occurrence, captures) in regex.captures_iter(&space).enumerate() {
                        let Some(whole) = captures.get(0) else {
                            continue;
                        };
                        if occurrence + 1 < *nth {
                            continue;
                        }
                        result.extend_from_slice(&space[last_end..whole.start()]);
                        result.extend(expand_replacement(replacement, &captures));
                        last_end = whole.end();
                        done = true;
                        if !global {
                            break;
                        }
                    }
                    if done {
                        result.extend_from_slice(&space[last_end..]);
                        space = result;
                        if *print {
                            out.extend_from_slice(&space);
                            out.push(b'\n');
                        }
                    }
                }
                Action::Delete => {
                    deleted = true;
                    break;
                }
                Action::Print => {
                    out.extend_from_slice(&space);
                    out.push(b'\n');
                }
                Action::Quit => {
                    if !quiet {
                        out.extend_from_slice(&space);
                        out.push(b'\n');
                    }
                    break 'lines;
                }
                Action::Append(text) => appended.push(text.clone()),
                Action::Insert(text) => {
                    out.extend_from_slice(text.as_bytes());
                    out.push(b'\n');
                }
                Action::Change(text) => {
                    out.extend_from_slice(text.as_bytes());
                    out.push(b'\n');
                    deleted = true;
                    break;
                }
                Action::LineNumber => out.extend_from_slice(format!("{number}\n").as_bytes()),
                Action::Translate(from, to) => {
                    let text: String = String::from_utf8_lossy(&space)
                        .chars()
                        .map(|c| from.iter().position(|f| *f == c).map_or(c, |i| to[i]))
                        .collect();
                    space = text.into_bytes();
                }
            }
        }
        if !deleted && !quiet {
            out.extend_from_slice(&space);
            if !last || trailing_newline {
                out.push(b'\n');
            }
        }
        for text in appended {
            out.extend_from_slice(text.as_bytes());
            out.push(b'\n');
        }
    }
    out
}

/// A list of 1-based positions and ranges: `1,3-5,7-`.
fn ranges(list: &str) -> Option<Vec<(usize, usize)>> {
    list.split(',')
        .map(|part| {
            let (from, to) = match part.split_once('-') {
                Some((from, to)) => (
                    if from.is_empty() {
                        1
                    } else {
                        from.parse().ok()?
                    },
                    if to.is_empty() {
                        usize::MAX
                    } else {
                        to.parse().ok()?
                    },
                ),
                None => {
                    let n = part.parse().ok()?;
                    (n, n)
                }
            };
            (from >= 1 && from <= to).then_some((from, to))
        })
        .collect()
}

/// `cut -f LIST [-d DELIM] [-s] | -c LIST | -b LIST [FILE...]`.
pub(super) async fn cut(process: &mut Shell, args: &[String]) -> Status {
    let opts = opts!(process, "cut", args, "f:d:c:b:sn");
    let (list, fields) = match (opts.value('f'), opts.value('c').or(opts.value('b'))) {
        (Some(list), _) => (list, true),
        (None, Some(list)) => (list, false),
        (None, None) => {
            return process
                .fail("cut: expected a list of bytes, characters, or fields")
                .await
        }
    };
    let Some(ranges) = ranges(list) else {
        return process.fail(&format!("cut: invalid range '{list}'")).await;
    };
    let delimiter = opts
        .value('d')
        .map_or('\t', |d| d.chars().next().unwrap_or('\t'));
    let selected = |n: usize| ranges.iter().any(|(from, to)| *from <= n && n <= *to);
    let mut failed = false;
    let files = inputs(process, "cut", &opts.operands, &mut failed).await?;
    let mut out = String::new();
    for (_, content) in &files {
        for line in String::from_utf8_lossy(content).lines() {
            if fields {
                if !line.contains(delimiter) {
                    if !opts.has('s') {
                        out.push_str(line);
                        out.push('\n');
                    }
                    continue;
                }
                let picked: Vec<&str> = line
                    .split(delimiter)
                    .enumerate()
                    .filter(|(i, _)| selected(i + 1))
                    .map(|(_, f)| f)
                    .collect();
                out.push_str(&picked.join(&delimiter.to_string()));
            } else {
                out.extend(
                    line.chars()
                        .enumerate()
                        .filter(|(i, _)| selected(i + 1))
                        .map(|(_, c)| c),
                );
            }
            out.push('\n');
        }
    }
    process.out(out).await?;
    Ok(i32::from(failed))
}

/// `sort [-nrufb] [-t SEP] [-k N[,M]] [-o FILE] [FILE...]`.
pub(super) async fn sort(process: &mut Shell, args: &[String]) -> Status {
    let opts = opts!(process, "sort", args, "nrufbst:k:o:");
    let mut failed = false;
    let files = inputs(process, "sort", &opts.operands, &mut failed).await?;
    let mut lines: Vec<String> = Vec::new();
    for (_, content) in &files {
        lines.extend(String::from_utf8_lossy(content).lines().map(str::to_owned));
    }
    let separator = opts.value('t').and_then(|t| t.chars().next());
    let key = opts.value('k').and_then(|k| {
        let (from, to) = match k.split_once(',') {
            Some((from, to)) => (from, Some(to)),
            None => (k, None),
        };
        let field = |s: &str| {
            s.trim_end_matches(|c: char| c.is_ascii_alphabetic())
                .split('.')
                .next()?
                .parse::<usize>()
                .ok()
        };
        Some((field(from)?, to.and_then(field)))
    });
    let extract = |line: &str| -> String {
        let Some((from, to)) = key else {
            return line.to_owned();
        };
        let parts: Vec<&str> = match separator {
            Some(sep) => line.split(sep).collect(),
            None => line.split_whitespace().collect(),
        };
        let end = to.unwrap_or(parts.len()).min(parts.len());
        if from == 0 || from > parts.len() {
            return String::new();
        }
        parts[from - 1..end].join(&separator.map_or(" ".to_owned(), |s| s.to_string()))
    };
    let numeric = opts.has('n');
    let fold = opts.has('f');
    let number = |s: &str| -> f64 {
        let s = s.trim_start();
        let end = s
            .char_indices()
            .take_while(|(i, c)| c.is_ascii_digit() || *c == '.' || (*i == 0 && *c == '-'))
            .count();
        s[..end].parse().unwrap_or(0.0)
    };
    lines.sort_by(|a, b| {
        let (ka, kb) = (extract(a), extract(b));
        let ordering = if numeric {
            number(&ka)
                .partial_cmp(&number(&kb))
                .unwrap_or(std::cmp::Ordering::Equal)
        } else if fold {
            ka.to_lowercase().cmp(&kb.to_lowercase())
        } else {
            ka.cmp(&kb)
        };
        ordering.then_with(|| {
            if key.is_some() || numeric {
                a.cmp(b)
            } else {
                std::cmp::Ordering::Equal
            }
        })
    });
    if opts.has('r') {
        lines.reverse();
    }
    if opts.has('u') {
        lines.dedup_by(|a, b| {
            if numeric {
                number(&extract(a)) == number(&extract(b))
            } else {
                extract(a) == extract(b)
            }
        });
    }
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    if let Some(file) = opts.value('o') {
        let path = process.path(file);
        let mode = process.file_mode();
        if let Err(error) =
            process
                .m
                .fs
                .write(&path, Bytes::from(text), false, mode, process.owner())
        {
            return process
                .fail(&format!("sort: can't open '{file}': {}", error.text()))
                .await;
        }
        return Ok(i32::from(failed) * 2);
    }
    process.out(text).await?;
    Ok(i32::from(failed) * 2)
}

/// `uniq [-cdu] [INPUT [OUTPUT]]`.
pub(super) async fn uniq(process: &mut Shell, args: &[String]) -> Status {
    let opts = opts!(process, "uniq", args, "cdui");
    let mut failed = false;
    let operands: Vec<String> = opts.operands.iter().take(1).cloned().collect();
    let files = inputs(process, "uniq", &operands, &mut failed).await?;
    let mut out = String::new();
    for (_, content) in &files {
        let text = String::from_utf8_lossy(content);
        let mut groups: Vec<(String, usize)> = Vec::new();
        for line in text.lines() {
            let same = groups.last().is_some_and(|(last, _)| {
                if opts.has('i') {
                    last.eq_ignore_ascii_case(line)
                } else {
                    last == line
                }
            });
            if same {
                if let Some(group) = groups.last_mut() {
                    group.1 += 1;
                }
            } else {
                groups.push((line.to_owned(), 1));
            }
        }
        for (line, count) in groups {
            if (opts.has('d') && count < 2) || (opts.has('u') && count > 1) {
                continue;
            }
            if opts.has('c') {
                out.push_str(&format!("{count:7} {line}\n"));
            } else {
                out.push_str(&line);
                out.push('\n');
            }
        }
    }
    process.out(out).await?;
    Ok(i32::from(failed))
}

/// A `tr` set: ranges, classes and escapes expanded.
fn tr_set(spec: &str) -> Vec<char> {
    let chars: Vec<char> = spec.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '[' && chars.get(i + 1) == Some(&':') {
            if let Some(end) = (i + 2..chars.len().saturating_sub(1))
                .find(|&j| chars[j] == ':' && chars[j + 1] == ']')
            {
                let class: String = chars[i + 2..end].iter().collect();
                let members: Vec<char> = (0u8..128)
                    .map(char::from)
                    .filter(|c| match class.as_str() {
                        "upper" => c.is_ascii_uppercase(),
                        "lower" => c.is_ascii_lowercase(),
                        "digit" => c.is_ascii_digit(),
                        "alpha" => c.is_ascii_alphabetic(),
                        "alnum" => c.is_ascii_alphanumeric(),
                        "space" => c.is_ascii_whitespace() || *c == '\x0b',
                        "blank" => *c == ' ' || *c == '\t',
                        "punct" => c.is_ascii_punctuation(),
                        "xdigit" => c.is_ascii_hexdigit(),
                        "cntrl" => c.is_ascii_control(),
                        _ => false,
                    })
                    .collect();
                out.extend(members);
                i = end + 2;
                continue;
            }
        }
        let c = if chars[i] == '\\' && i + 1 < chars.len() {
            i += 1;
            match chars[i] {
                'n' => '\n',
                't' => '\t',
                'r' => '\r',
                '\\' => '\\',
                other => other,
            }
        } else {
            chars[i]
        };
        if chars.get(i + 1) == Some(&'-') && i + 2 < chars.len() {
            let high = chars[i + 2];
            if c <= high {
                out.extend(c..=high);
            }
            i += 3;
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

/// `tr [-cds] SET1 [SET2]`.
pub(super) async fn tr(process: &mut Shell, args: &[String]) -> Status {
    let opts = opts!(process, "tr", args, "cdsC");
    let Some(first) = opts.operands.first() else {
        return process.fail("tr: missing operand").await;
    };
    let set1 = tr_set(first);
    let set2 = opts.operands.get(1).map(|s| tr_set(s));
    let complement = opts.has('c') || opts.has('C');
    let in_set1 = |c: char| set1.contains(&c) != complement;
    let input = process.read_stdin().await;
    let text = String::from_utf8_lossy(&input);
    let mut out = String::new();
    let mut last: Option<char> = None;
    for c in text.chars() {
        let mapped = if opts.has('d') {
            if in_set1(c) {
                continue;
            }
            c
        } else if let Some(set2) = &set2 {
            if complement {
                if in_set1(c) {
                    set2.last().copied().unwrap_or(c)
                } else {
                    c
                }
            } else {
                match set1.iter().position(|s| *s == c) {
                    Some(index) => set2.get(index).or(set2.last()).copied().unwrap_or(c),
                    None => c,
                }
            }
        } else {
            c
        };
        if opts.has('s') {
            let squeeze_set = if opts.has('d') || set2.is_none() {
                in_set1(mapped)
            } else {
                set2.as_ref().is_some_and(|s| s.contains(&mapped))
            };
            if squeeze_set && last == Some(mapped) {
                continue;
            }
        }
        last = Some(mapped);
        out.push(mapped);
    }
    process.out(out).await?;
    Ok(0)
}

/// `base64 [-d] [-w COLS] [FILE]`.
pub(super) async fn base64(process: &mut Shell, args: &[String]) -> Status {
    use base64::Engine;
    let opts = opts!(process, "base64", args, "dw:i");
    let mut failed = false;
    let files = inputs(process, "base64", &opts.operands, &mut failed).await?;
    if failed {
        return Ok(1);
    }
    let content: Vec<u8> = files.into_iter().flat_map(|(_, c)| c.to_vec()).collect();
    if opts.has('d') {
        let cleaned: Vec<u8> = content
            .into_iter()
            .filter(|b| !b.is_ascii_whitespace())
            .collect();
        return match base64::engine::general_purpose::STANDARD.decode(&cleaned) {
            Ok(decoded) => {
                process.out(decoded).await?;
                Ok(0)
            }
            Err(_) => process.fail("base64: invalid input").await,
        };
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(&content);
    let width: usize = opts.value('w').and_then(|w| w.parse().ok()).unwrap_or(76);
    let mut out = String::new();
    if width == 0 {
        out.push_str(&encoded);
        out.push('\n');
    } else {
        for chunk in encoded.as_bytes().chunks(width) {
            out.push_str(&String::from_utf8_lossy(chunk));
            out.push('\n');
        }
    }
    process.out(out).await?;
    Ok(0)
}

/// `tee [-a] [FILE...]`: stdin to stdout and to each file.
pub(super) async fn tee(process: &mut Shell, args: &[String]) -> Status {
    let opts = opts!(process, "tee", args, "ai");
    let mut files: Vec<Arc<FileOut>> = Vec::new();
    let mut status = 0;
    for operand in &opts.operands {
        let path = process.path(operand);
        match FileOut::open(
            &process.m.fs,
            &path,
            opts.has('a'),
            process.file_mode(),
            process.owner(),
        ) {
            Ok(file) => files.push(file),
            Err(error) => {
                process
                    .err_line(&format!("tee: can't open '{operand}': {}", error.text()))
                    .await?;
                status = 1;
            }
        }
    }
    let input = process.fds.input();
    loop {
        let chunk = input.lock().await.next_chunk().await;
        let Some(chunk) = chunk else {
            break;
        };
        for file in &files {
            let _ = Sink::File(Arc::clone(file)).write(chunk.clone()).await;
        }
        process.out(chunk).await?;
    }
    for file in files {
        if let Err(error) = file.finish() {
            process.err_line(&format!("tee: {}", error.text())).await?;
            status = 1;
        }
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (applets that read and transform text); a
    //! command run through the fake's exec goes in fake-incus's tests.

    use super::*;

    #[test]
    fn basic_regular_expressions_translate_to_the_regex_crate() {
        assert_eq!(bre_to_regex("a\\(b\\)*c", false), "a(b)*c");
        assert_eq!(bre_to_regex("a+b?", false), "a\\+b\\?");
        assert_eq!(bre_to_regex("a+b?", true), "a+b?");
        assert_eq!(bre_to_regex("*a", false), "\\*a");
        assert!(compile("^ok=[0-9]\\{2\\}$", false, false, false)
            .unwrap()
            .is_match(b"ok=12"));
    }

    #[test]
    fn sed_substitutes_deletes_and_prints_by_address() {
        let run = |script: &str, input: &str, quiet: bool| {
            let mut parser = SedParser {
                chars: script.chars().collect(),
                at: 0,
                extended: false,
                _source: script,
            };
            let commands = parser.commands().unwrap();
            String::from_utf8(run_sed(&commands, input.as_bytes(), quiet)).unwrap()
        };
        assert_eq!(run("s/a/b/g", "aa\nca\n", false), "bb\ncb\n");
        assert_eq!(run("s/\\(x\\)y/[\\1&]/", "xy\n", false), "[xxy]\n");
        assert_eq!(run("2d", "1\n2\n3\n", false), "1\n3\n");
        assert_eq!(run("/b/p", "a\nb\n", true), "b\n");
        assert_eq!(run("$!d", "1\n2\n3\n", false), "3\n");
        assert_eq!(run("2,3d", "1\n2\n3\n4\n", false), "1\n4\n");
        assert_eq!(run("1q", "1\n2\n", false), "1\n");
        assert_eq!(run("s/x/y/", "x", false), "y");
    }

    #[test]
    fn tr_sets_expand_ranges_and_classes() {
        assert_eq!(tr_set("a-c"), vec!['a', 'b', 'c']);
        assert_eq!(tr_set("[:digit:]").len(), 10);
        assert_eq!(tr_set("\\n"), vec!['\n']);
    }
}
