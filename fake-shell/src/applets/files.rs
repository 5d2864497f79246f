//! Applets that look at and change the instance's files: `ls`, `mkdir`, `rmdir`, `rm`, `chmod`,
//! `chown`, `touch`, `stat`, `cp`, `mv`, `ln`, `readlink`, `realpath`, `mktemp`, `find`, `dd`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;

use super::{opts, read_file};
use crate::applets::basic::strftime;
use crate::fs::{self, Device, FsError, Kind, Meta, Owner};
use crate::io::{input_of, FileOut, Input, Sink, CHUNK};
use crate::shell::{Search, Shell, Status, Stop};

const LS_USAGE: &str = include_str!("../busybox/ls-usage.txt");
const DD_USAGE: &str = include_str!("../busybox/dd-usage.txt");

/// `-rwxr-xr-x` for a mode and kind.
fn mode_string(meta: &Meta, device: bool) -> String {
    let kind = match meta.kind {
        Kind::Directory => 'd',
        Kind::Symlink(_) => 'l',
        Kind::File(_) if device => 'c',
        Kind::File(_) => '-',
    };
    let mut out = String::from(kind);
    for shift in [6, 3, 0] {
        let bits = (meta.mode >> shift) & 7;
        out.push(if bits & 4 != 0 { 'r' } else { '-' });
        out.push(if bits & 2 != 0 { 'w' } else { '-' });
        let special = match shift {
            6 => meta.mode & 0o4000 != 0,
            3 => meta.mode & 0o2000 != 0,
            _ => meta.mode & 0o1000 != 0,
        };
        out.push(match (bits & 1 != 0, special, shift) {
            (true, true, 0) => 't',
            (false, true, 0) => 'T',
            (true, true, _) => 's',
            (false, true, _) => 'S',
            (true, false, _) => 'x',
            (false, false, _) => '-',
        });
    }
    out
}

fn size_of(meta: &Meta) -> u64 {
    match &meta.kind {
        Kind::File(n) => *n,
        Kind::Directory => 4096,
        Kind::Symlink(target) => target.len() as u64,
    }
}

fn blocks_of(meta: &Meta) -> u64 {
    match &meta.kind {
        Kind::File(n) => n.div_ceil(4096) * 4,
        Kind::Directory => 4,
        Kind::Symlink(_) => 0,
    }
}

fn time_of(seconds: i64) -> time::OffsetDateTime {
    time::OffsetDateTime::from_unix_timestamp(seconds).unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
}

/// Options of `ls`.
#[derive(Debug, Default)]
struct Ls {
    long: bool,
    directory: bool,
    recursive: bool,
    all: bool,
    almost_all: bool,
    classify: bool,
    reverse: bool,
    by_time: bool,
    dereference: bool,
    human: bool,
}

/// `ls [-1aAdlnRrtFLh] [FILE...]`: one name per line (standard output is never a terminal here).
pub(super) async fn ls(process: &mut Shell, args: &[String]) -> Status {
    let mut ls = Ls::default();
    let mut operands: Vec<String> = Vec::new();
    let mut options_done = false;
    for arg in args {
        let flags = arg
            .strip_prefix('-')
            .filter(|f| !f.is_empty() && !options_done);
        let Some(flags) = flags else {
            operands.push(arg.clone());
            continue;
        };
        if flags == "-" {
            options_done = true;
            continue;
        }
        for flag in flags.chars() {
            match flag {
                '1' | 'C' | 'x' => {}
                'a' => ls.all = true,
                'A' => ls.almost_all = true,
                'l' | 'n' | 'g' | 'o' => ls.long = true,
                'd' => ls.directory = true,
                'R' => ls.recursive = true,
                'F' | 'p' => ls.classify = true,
                'r' => ls.reverse = true,
                't' => ls.by_time = true,
                'L' | 'H' => ls.dereference = true,
                'h' => ls.human = true,
                'i' | 's' | 'S' | 'X' | 'v' | 'c' | 'u' | 'w' | 'e' => {
                    let message = format!("ls: option -{flag} is not simulated by the fake");
                    process.err_line(&message).await?;
                    return Ok(2);
                }
                other => {
                    process
                        .err_line(&format!("ls: invalid option -- '{other}'"))
                        .await?;
                    process.err(LS_USAGE.as_bytes().to_vec()).await?;
                    return Ok(2);
                }
            }
        }
    }
    let implicit = operands.is_empty();
    if implicit {
        operands.push(".".into());
    }
    operands.sort();
    let mut status = 0;
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    for operand in &operands {
        let path = process.path(operand);
        let meta = if ls.dereference || !ls.long {
            process.m.fs.stat(&path)
        } else {
            process.m.fs.lstat(&path)
        };
        match meta {
            Err(error) => {
                process
                    .err_line(&format!("ls: {operand}: {}", error.text()))
                    .await?;
                // Busybox's ls fails with 1 (coreutils' with 2).
                status = 1;
            }
            Ok(meta) if meta.kind == Kind::Directory && !ls.directory => dirs.push(operand.clone()),
            Ok(_) if !ls.directory && !ls.long && process.m.fs.is_dir(&path) => {
                dirs.push(operand.clone())
            }
            Ok(meta) => files.push((operand.clone(), path, meta)),
        }
    }
    let mut out = String::new();
    for (name, path, meta) in &files {
        out.push_str(&ls_entry(process, &ls, name, path, meta));
    }
    let headings = operands.len() > 1 || ls.recursive;
    let mut queue: Vec<String> = dirs;
    let mut first = files.is_empty();
    while !queue.is_empty() {
        let dir = queue.remove(0);
        let path = process.path(&dir);
        if headings {
            if !first || !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&format!("{dir}:\n"));
        }
        first = false;
        let mut names = match process.m.fs.list(&path) {
            Ok(names) => names,
            Err(error) => {
                process
                    .err_line(&format!("ls: can't open '{dir}': {}", error.text()))
                    .await?;
                status = 1;
                continue;
            }
        };
        if !(ls.all || ls.almost_all) {
            names.retain(|n| !n.starts_with('.'));
        }
        let mut entries: Vec<(String, String, Meta)> = names
            .into_iter()
            .filter_map(|name| {
                let child = fs::absolute(&path, &name);
                let meta = process.m.fs.lstat(&child).ok()?;
                Some((name, child, meta))
            })
            .collect();
        if ls.by_time {
            entries.sort_by(|a, b| b.2.modified.cmp(&a.2.modified).then(a.0.cmp(&b.0)));
        }
        if ls.reverse {
            entries.reverse();
        }
        if ls.long {
            let total: u64 = entries.iter().map(|(_, _, m)| blocks_of(m)).sum();
            out.push_str(&format!("total {total}\n"));
        }
        if ls.all {
            for dot in [".", ".."] {
                let dot_path = fs::absolute(&path, dot);
                if let Ok(meta) = process.m.fs.stat(&dot_path) {
                    out.push_str(&ls_entry(process, &ls, dot, &dot_path, &meta));
                }
            }
        }
        let mut subdirs = Vec::new();
        for (name, child, meta) in &entries {
            out.push_str(&ls_entry(process, &ls, name, child, meta));
            if ls.recursive && meta.kind == Kind::Directory {
                let shown = if dir == "." && implicit {
                    format!("./{name}")
                } else if dir.ends_with('/') {
                    format!("{dir}{name}")
                } else {
                    format!("{dir}/{name}")
                };
                subdirs.push(shown);
            }
        }
        for (index, sub) in subdirs.into_iter().enumerate() {
            queue.insert(index, sub);
        }
        if out.len() > CHUNK {
            process.out(std::mem::take(&mut out)).await?;
        }
    }
    process.out(out).await?;
    Ok(status)
}

fn ls_entry(process: &Shell, ls: &Ls, name: &str, path: &str, meta: &Meta) -> String {
    let mut shown = name.to_owned();
    if ls.classify {
        match meta.kind {
            Kind::Directory => shown.push('/'),
            Kind::Symlink(_) => shown.push('@'),
            Kind::File(_) if meta.mode & 0o111 != 0 => shown.push('*'),
            Kind::File(_) => {}
        }
    }
    if !ls.long {
        return format!("{shown}\n");
    }
    let device = fs::device(path).is_some();
    let links = match meta.kind {
        Kind::Directory => {
            2 + process
                .m
                .fs
                .list(path)
                .unwrap_or_default()
                .iter()
                .filter(|n| {
                    process
                        .m
                        .fs
                        .0
                        .lstat(&fs::absolute(path, n))
                        .is_ok_and(|m| m.kind == Kind::Directory)
                })
                .count()
        }
        _ => 1,
    };
    let size = if ls.human {
        human(size_of(meta))
    } else {
        size_of(meta).to_string()
    };
    let when = time_of(meta.modified);
    let recent = (time::OffsetDateTime::now_utc() - when).whole_days().abs() < 182;
    let date = if recent {
        strftime("%b %e %H:%M", when)
    } else {
        strftime("%b %e  %Y", when)
    };
    let target = match &meta.kind {
        Kind::Symlink(target) => format!(" -> {target}"),
        _ => String::new(),
    };
    format!(
        "{} {:4} {:<8} {:<8} {:>9} {date} {shown}{target}\n",
        mode_string(meta, device),
        links,
        meta.uid,
        meta.gid,
        size
    )
}

fn human(size: u64) -> String {
    if size < 1024 {
        return size.to_string();
    }
    let mut value = size as f64;
    for unit in ["K", "M", "G", "T"] {
        value /= 1024.0;
        if value < 1024.0 {
            return if value < 10.0 {
                format!("{value:.1}{unit}")
            } else {
                format!("{value:.0}{unit}")
            };
        }
    }
    format!("{value:.0}P")
}

/// `mkdir [-p] [-m MODE] DIR...`.
pub(super) async fn mkdir(process: &mut Shell, args: &[String]) -> Status {
    let opts = opts!(process, "mkdir", args, "pm:v");
    if opts.operands.is_empty() {
        return process.fail("mkdir: missing operand").await;
    }
    let mode = match opts.value('m') {
        Some(spec) => match parse_mode(spec, 0o777) {
            Some(mode) => Some(mode),
            None => return process.fail(&format!("mkdir: invalid mode '{spec}'")).await,
        },
        None => None,
    };
    let mut status = 0;
    for operand in &opts.operands {
        let path = process.path(operand);
        let result = if opts.has('p') {
            make_parents(process, &path, mode)
        } else {
            make_dir(process, &path, mode.unwrap_or(process.dir_mode()))
        };
        if let Err(error) = result {
            process
                .err_line(&format!(
                    "mkdir: can't create directory '{operand}': {}",
                    error.text()
                ))
                .await?;
            status = 1;
        }
    }
    Ok(status)
}

fn make_dir(process: &Shell, path: &str, mode: u32) -> Result<(), FsError> {
    let real = process.m.fs.resolve(path, false)?;
    process.m.fs.0.mkdir(&real, mode, process.owner())
}

/// `mkdir -p`: every missing directory on the way; an existing directory is fine.
fn make_parents(process: &Shell, path: &str, mode: Option<u32>) -> Result<(), FsError> {
    let mut at = String::new();
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    for (index, part) in parts.iter().enumerate() {
        at.push('/');
        at.push_str(part);
        if process.m.fs.is_dir(&at) {
            continue;
        }
        let last = index + 1 == parts.len();
        let this_mode = if last {
            mode.unwrap_or(process.dir_mode())
        } else {
            process.dir_mode() | 0o300
        };
        match make_dir(process, &at, this_mode) {
            Ok(()) => {}
            Err(FsError::Exists) => return Err(FsError::Exists),
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// `rmdir [-p] DIR...`.
pub(super) async fn rmdir(process: &mut Shell, args: &[String]) -> Status {
    let opts = opts!(process, "rmdir", args, "p");
    let mut status = 0;
    for operand in &opts.operands {
        let mut path = process.path(operand);
        loop {
            let result = match process.m.fs.lstat(&path) {
                Ok(meta) if meta.kind != Kind::Directory => Err(FsError::NotDirectory),
                Ok(_) => process.m.fs.0.remove(&path),
                Err(error) => Err(error),
            };
            if let Err(error) = result {
                process
                    .err_line(&format!("rmdir: '{operand}': {}", error.text()))
                    .await?;
                status = 1;
                break;
            }
            if !opts.has('p') || fs::parent(&path) == "/" {
                break;
            }
            path = fs::parent(&path).to_owned();
        }
    }
    Ok(status)
}

/// Removes a path and, for a directory, everything in it.
fn remove_tree(process: &Shell, path: &str) -> Result<(), FsError> {
    let meta = process.m.fs.0.lstat(path)?;
    if meta.kind == Kind::Directory {
        for name in process.m.fs.0.list(path)? {
            remove_tree(process, &fs::absolute(path, &name))?;
        }
    }
    process.m.fs.0.remove(path)
}

/// `rm [-rRfiv] FILE...`.
pub(super) async fn rm(process: &mut Shell, args: &[String]) -> Status {
    let opts = opts!(process, "rm", args, "rRfiv");
    let recursive = opts.has('r') || opts.has('R');
    let force = opts.has('f');
    if opts.operands.is_empty() && !force {
        return process.fail("rm: missing operand").await;
    }
    let mut status = 0;
    for operand in &opts.operands {
        let path = match process.m.fs.resolve(&process.path(operand), false) {
            Ok(path) => path,
            Err(error) => {
                if !force {
                    process
                        .err_line(&format!("rm: can't remove '{operand}': {}", error.text()))
                        .await?;
                    status = 1;
                }
                continue;
            }
        };
        if path == "/"
            || operand.trim_end_matches('/').ends_with('.')
                && fs::base_name(operand).starts_with('.')
                && matches!(fs::base_name(operand), "." | "..")
        {
            process.err_line("rm: can't remove '.' or '..'").await?;
            status = 1;
            continue;
        }
        let result = match process.m.fs.0.lstat(&path) {
            Err(error) => Err(error),
            Ok(meta) if meta.kind == Kind::Directory && !recursive => {
                process
                    .err_line(&format!("rm: '{operand}' is a directory"))
                    .await?;
                status = 1;
                continue;
            }
            Ok(_) => remove_tree(process, &path),
        };
        match result {
            Ok(()) => {}
            Err(FsError::NotFound) if force => {}
            Err(error) => {
                process
                    .err_line(&format!("rm: can't remove '{operand}': {}", error.text()))
                    .await?;
                status = 1;
            }
        }
    }
    Ok(status)
}

/// A mode given in octal or symbolically (`u+x`, `go-w`, `a=r`, `+x`, `u=rwx,g=rx`), applied to
/// `current`.
pub(super) fn parse_mode(spec: &str, current: u32) -> Option<u32> {
    if !spec.is_empty() && spec.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        return u32::from_str_radix(spec, 8).ok().filter(|m| *m <= 0o7777);
    }
    symbolic_mode(spec, current, true)
}

/// Applies a symbolic mode; `umask_free` leaves `+x` (no who) unaffected by the umask, as chmod does.
pub(crate) fn symbolic_mode(spec: &str, current: u32, _umask_free: bool) -> Option<u32> {
    let mut mode = current;
    for clause in spec.split(',') {
        let who_end = clause
            .find(|c: char| !matches!(c, 'u' | 'g' | 'o' | 'a'))
            .unwrap_or(clause.len());
        let who = &clause[..who_end];
        let mask = if who.is_empty() || who.contains('a') {
            0o7777
        } else {
            let mut mask = 0;
            if who.contains('u') {
                mask |= 0o4700;
            }
            if who.contains('g') {
                mask |= 0o2070;
            }
            if who.contains('o') {
                mask |= 0o1007;
            }
            mask
        };
        let mut rest = &clause[who_end..];
        if rest.is_empty() {
            return None;
        }
        while !rest.is_empty() {
            let op = rest.chars().next()?;
            if !matches!(op, '+' | '-' | '=') {
                return None;
            }
            rest = &rest[1..];
            let perm_end = rest.find(['+', '-', '=']).unwrap_or(rest.len());
            let perms = &rest[..perm_end];
            rest = &rest[perm_end..];
            let mut bits = 0;
            for p in perms.chars() {
                bits |= match p {
                    'r' => 0o444,
                    'w' => 0o222,
                    'x' => 0o111,
                    'X' if mode & 0o111 != 0 => 0o111,
                    'X' => 0,
                    's' => 0o6000,
                    't' => 0o1000,
                    _ => return None,
                };
            }
            let bits = bits & mask;
            mode = match op {
                '+' => mode | bits,
                '-' => mode & !bits,
                _ => (mode & !(mask & 0o7777)) | bits,
            };
        }
    }
    Some(mode & 0o7777)
}

/// Visits `path` and, with `recursive`, everything under it (not following links inside).
fn walk(process: &Shell, path: &str, recursive: bool, out: &mut Vec<String>) {
    out.push(path.to_owned());
    if !recursive {
        return;
    }
    if let Ok(Meta {
        kind: Kind::Directory,
        ..
    }) = process.m.fs.0.lstat(path)
    {
        for name in process.m.fs.0.list(path).unwrap_or_default() {
            walk(process, &fs::absolute(path, &name), true, out);
        }
    }
}

/// `chmod [-R] MODE FILE...`.
pub(super) async fn chmod(process: &mut Shell, args: &[String]) -> Status {
    // A mode like `-x` looks like an option: take the first non-option operand as the mode.
    let recursive = args.iter().any(|a| a == "-R");
    let rest: Vec<String> = args
        .iter()
        .filter(|a| *a != "-R" && *a != "-f" && *a != "-v")
        .cloned()
        .collect();
    let Some((spec, files)) = rest.split_first() else {
        return process.fail("chmod: missing operand").await;
    };
    if files.is_empty() {
        return process.fail("chmod: missing operand").await;
    }
    let mut status = 0;
    for operand in files {
        let path = process.path(operand);
        let real = match process.m.fs.resolve(&path, true) {
            Ok(real) if process.m.fs.0.lstat(&real).is_ok() => real,
            Ok(_) | Err(_) => {
                process
                    .err_line(&format!("chmod: {operand}: No such file or directory"))
                    .await?;
                status = 1;
                continue;
            }
        };
        let mut paths = Vec::new();
        walk(process, &real, recursive, &mut paths);
        for path in paths {
            let Ok(meta) = process.m.fs.0.lstat(&path) else {
                continue;
            };
            if matches!(meta.kind, Kind::Symlink(_)) {
                continue;
            }
            let Some(mode) = parse_mode(spec, meta.mode) else {
                return process.fail(&format!("chmod: invalid mode '{spec}'")).await;
            };
            if let Err(error) = process.m.fs.0.set_mode(&path, mode) {
                process
                    .err_line(&format!("chmod: {operand}: {}", error.text()))
                    .await?;
                status = 1;
            }
        }
    }
    Ok(status)
}

/// A user or group by name (from the instance's `/etc/passwd` or `/etc/group`) or number.
fn lookup_id(process: &Shell, file: &str, name: &str) -> Option<u32> {
    if let Ok(n) = name.parse::<u32>() {
        return Some(n);
    }
    let content = process.m.fs.read(file).ok()?;
    String::from_utf8_lossy(&content).lines().find_map(|line| {
        let mut fields = line.split(':');
        (fields.next()? == name).then(|| fields.nth(1)?.parse().ok())?
    })
}

/// `chown [-Rh] USER[:GROUP] FILE...`.
pub(super) async fn chown(process: &mut Shell, args: &[String]) -> Status {
    let opts = opts!(process, "chown", args, "RhfLHPv");
    let Some((spec, files)) = opts.operands.split_first() else {
        return process.fail("chown: missing operand").await;
    };
    let (user, group) = match spec.split_once([':', '.']) {
        Some((user, group)) => (user, Some(group)),
        None => (spec.as_str(), None),
    };
    let uid = if user.is_empty() {
        None
    } else {
        match lookup_id(process, "/etc/passwd", user) {
            Some(uid) => Some(uid),
            None => return process.fail(&format!("chown: unknown user {user}")).await,
        }
    };
    let gid = match group.filter(|g| !g.is_empty()) {
        None => None,
        Some(group) => match lookup_id(process, "/etc/group", group) {
            Some(gid) => Some(gid),
            None => return process.fail(&format!("chown: unknown group {group}")).await,
        },
    };
    let mut status = 0;
    for operand in files {
        let path = process.path(operand);
        let Ok(real) = process.m.fs.resolve(&path, !opts.has('h')) else {
            process
                .err_line(&format!("chown: {operand}: No such file or directory"))
                .await?;
            status = 1;
            continue;
        };
        let mut paths = Vec::new();
        walk(process, &real, opts.has('R'), &mut paths);
        for path in paths {
            let Ok(meta) = process.m.fs.0.lstat(&path) else {
                process
                    .err_line(&format!("chown: {operand}: No such file or directory"))
                    .await?;
                status = 1;
                continue;
            };
            let owner = Owner {
                uid: uid.unwrap_or(meta.uid),
                gid: gid.unwrap_or(meta.gid),
            };
            if let Err(error) = process.m.fs.0.set_owner(&path, owner) {
                process
                    .err_line(&format!("chown: {operand}: {}", error.text()))
                    .await?;
                status = 1;
            }
        }
    }
    Ok(status)
}

fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// `touch [-c] [-d @SECONDS] [-r FILE] FILE...`.
pub(super) async fn touch(process: &mut Shell, args: &[String]) -> Status {
    let opts = opts!(process, "touch", args, "cd:r:t:am");
    let mut when = now();
    if let Some(spec) = opts.value('d') {
        match spec.strip_prefix('@').and_then(|s| s.parse::<i64>().ok()) {
            Some(seconds) => when = seconds,
            None => {
                return process
                    .fail(&format!(
                        "touch: invalid date '{spec}' (the fake reads only @SECONDS)"
                    ))
                    .await
            }
        }
    }
    if opts.value('t').is_some() {
        return process.fail("touch: -t is not simulated by the fake").await;
    }
    if let Some(file) = opts.value('r') {
        match process.m.fs.stat(&process.path(file)) {
            Ok(meta) => when = meta.modified,
            Err(error) => {
                return process
                    .fail(&format!("touch: {file}: {}", error.text()))
                    .await
            }
        }
    }
    if opts.operands.is_empty() {
        return process.fail("touch: missing operand").await;
    }
    let mut status = 0;
    for operand in &opts.operands {
        let path = process.path(operand);
        if fs::device(&path).is_some() {
            continue;
        }
        let result = match process.m.fs.resolve(&path, true) {
            Ok(real) => match process.m.fs.0.lstat(&real) {
                Ok(_) => process.m.fs.0.set_modified(&real, when),
                Err(FsError::NotFound) if opts.has('c') => Ok(()),
                Err(FsError::NotFound) => process
                    .m
                    .fs
                    .0
                    .write(
                        &real,
                        Bytes::new(),
                        true,
                        process.file_mode(),
                        process.owner(),
                    )
                    .and_then(|()| process.m.fs.0.set_modified(&real, when)),
                Err(error) => Err(error),
            },
            Err(error) => Err(error),
        };
        if let Err(error) = result {
            process
                .err_line(&format!("touch: {operand}: {}", error.text()))
                .await?;
            status = 1;
        }
    }
    Ok(status)
}

/// A stable inode number for a path.
fn inode(path: &str) -> u64 {
    path.bytes().fold(1469598103934665603u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(1099511628211)
    }) % 1_000_000
        + 2
}

fn name_or_unknown(process: &Shell, file: &str, id: u32) -> String {
    let content = process.m.fs.read(file).ok();
    content
        .and_then(|c| {
            String::from_utf8_lossy(&c).lines().find_map(|line| {
                let mut fields = line.split(':');
                let name = fields.next()?;
                (fields.nth(1)?.parse::<u32>().ok()? == id).then(|| name.to_owned())
            })
        })
        .unwrap_or_else(|| "UNKNOWN".into())
}

/// `stat [-L] [-c FORMAT] FILE...`.
pub(super) async fn stat(process: &mut Shell, args: &[String]) -> Status {
    let opts = opts!(process, "stat", args, "Lc:tf");
    if opts.has('f') {
        return process.fail("stat: -f is not simulated by the fake").await;
    }
    if opts.operands.is_empty() {
        return process.fail("stat: missing operand").await;
    }
    let mut status = 0;
    for operand in &opts.operands {
        let path = process.path(operand);
        let meta = if opts.has('L') {
            process.m.fs.stat(&path)
        } else {
            process.m.fs.lstat(&path)
        };
        let meta = match meta {
            Ok(meta) => meta,
            Err(error) => {
                process
                    .err_line(&format!("stat: can't stat '{operand}': {}", error.text()))
                    .await?;
                status = 1;
                continue;
            }
        };
        let device = fs::device(&path).is_some();
        let line = match opts.value('c') {
            Some(format) => format!(
                "{}\n",
                stat_format(process, format, operand, &path, &meta, device)
            ),
            None => {
                let kind = match meta.kind {
                    Kind::Directory => "directory",
                    Kind::Symlink(_) => "symbolic link",
                    Kind::File(0) if !device => "regular empty file",
                    Kind::File(_) if device => "character special file",
                    Kind::File(_) => "regular file",
                };
                let name = match &meta.kind {
                    Kind::Symlink(target) => format!("'{operand}' -> '{target}'"),
                    _ => operand.clone(),
                };
                let stamp = strftime("%Y-%m-%d %H:%M:%S.000000000 +0000", time_of(meta.modified));
                format!(
                    "  File: {name}\n  Size: {:<10}\tBlocks: {:<10} IO Block: 4096   {kind}\nDevice: fe00h/65024d\tInode: {:<11} Links: 1\nAccess: ({:04o}/{})  Uid: ({:5}/{:>8})   Gid: ({:5}/{:>8})\nAccess: {stamp}\nModify: {stamp}\nChange: {stamp}\n",
                    size_of(&meta),
                    blocks_of(&meta) * 2,
                    inode(&path),
                    meta.mode & 0o7777,
                    mode_string(&meta, device),
                    meta.uid,
                    name_or_unknown(process, "/etc/passwd", meta.uid),
                    meta.gid,
                    name_or_unknown(process, "/etc/group", meta.gid),
                )
            }
        };
        process.out(line).await?;
    }
    Ok(status)
}

fn stat_format(
    process: &Shell,
    format: &str,
    operand: &str,
    path: &str,
    meta: &Meta,
    device: bool,
) -> String {
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push_str(operand),
            Some('N') => match &meta.kind {
                Kind::Symlink(target) => out.push_str(&format!("'{operand}' -> '{target}'")),
                _ => out.push_str(&format!("'{operand}'")),
            },
            Some('s') => out.push_str(&size_of(meta).to_string()),
            Some('a') => out.push_str(&format!("{:o}", meta.mode & 0o7777)),
            Some('A') => out.push_str(&mode_string(meta, device)),
            Some('f') => {
                let kind = match meta.kind {
                    Kind::Directory => 0o040000,
                    Kind::Symlink(_) => 0o120000,
                    Kind::File(_) if device => 0o020000,
                    Kind::File(_) => 0o100000,
                };
                out.push_str(&format!("{:x}", kind | meta.mode))
            }
            Some('u') => out.push_str(&meta.uid.to_string()),
            Some('g') => out.push_str(&meta.gid.to_string()),
            Some('U') => out.push_str(&name_or_unknown(process, "/etc/passwd", meta.uid)),
            Some('G') => out.push_str(&name_or_unknown(process, "/etc/group", meta.gid)),
            Some('F') => out.push_str(match meta.kind {
                Kind::Directory => "directory",
                Kind::Symlink(_) => "symbolic link",
                Kind::File(0) if !device => "regular empty file",
                Kind::File(_) if device => "character special file",
                Kind::File(_) => "regular file",
            }),
            Some('Y' | 'X' | 'Z') => out.push_str(&meta.modified.to_string()),
            Some('y' | 'x' | 'z') => out.push_str(&strftime(
                "%Y-%m-%d %H:%M:%S.000000000 +0000",
                time_of(meta.modified),
            )),
            Some('i') => out.push_str(&inode(path).to_string()),
            Some('h') => out.push('1'),
            Some('b') => out.push_str(&(blocks_of(meta) * 2).to_string()),
            Some('B') => out.push_str("512"),
            Some('o') => out.push_str("4096"),
            Some('d') => out.push_str("65024"),
            Some('D') => out.push_str("fe00"),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('?');
                let _ = other;
            }
            None => out.push('%'),
        }
    }
    out
}

/// Copies `from` (a file, a link, or with `recursive` a directory) to `to`.
fn copy_tree(
    process: &Shell,
    from: &str,
    to: &str,
    recursive: bool,
    preserve: bool,
    follow: bool,
) -> Result<(), String> {
    let meta = if follow {
        process.m.fs.stat(from)
    } else {
        process.m.fs.lstat(from)
    };
    let meta = meta.map_err(|e| format!("can't stat '{from}': {}", e.text()))?;
    let write_error = |e: FsError| format!("can't create '{to}': {}", e.text());
    match &meta.kind {
        Kind::Directory => {
            if !recursive {
                return Err(format!("omitting directory '{from}'"));
            }
            if to == from || to.starts_with(&format!("{from}/")) {
                return Err(format!(
                    "can't copy a directory into itself: '{from}' into '{to}'"
                ));
            }
            if !process.m.fs.is_dir(to) {
                let mode = if preserve {
                    meta.mode
                } else {
                    meta.mode & !process.umask
                };
                process
                    .m
                    .fs
                    .0
                    .mkdir(
                        &process.m.fs.resolve(to, false).map_err(write_error)?,
                        mode,
                        process.owner(),
                    )
                    .map_err(write_error)?;
            }
            for name in process
                .m
                .fs
                .list(from)
                .map_err(|e| format!("can't open '{from}': {}", e.text()))?
            {
                copy_tree(
                    process,
                    &fs::absolute(from, &name),
                    &fs::absolute(to, &name),
                    recursive,
                    preserve,
                    false,
                )?;
            }
        }
        Kind::Symlink(target) => {
            let real = process.m.fs.resolve(to, false).map_err(write_error)?;
            let _ = process.m.fs.0.remove(&real);
            process
                .m
                .fs
                .0
                .symlink(target, &real, process.owner())
                .map_err(write_error)?;
        }
        Kind::File(_) => {
            let content = read_file(process, from)
                .map_err(|e| format!("can't open '{from}': {}", e.text()))?;
            let mode = if preserve {
                meta.mode
            } else {
                meta.mode & !process.umask & 0o777
            };
            let existed = process.m.fs.stat(to).is_ok();
            process
                .m
                .fs
                .write(to, content, false, mode, process.owner())
                .map_err(write_error)?;
            if preserve || !existed {
                let real = process.m.fs.resolve(to, true).map_err(write_error)?;
                let _ = process.m.fs.0.set_mode(&real, mode);
                if preserve {
                    let _ = process.m.fs.0.set_owner(
                        &real,
                        Owner {
                            uid: meta.uid,
                            gid: meta.gid,
                        },
                    );
                    let _ = process.m.fs.0.set_modified(&real, meta.modified);
                }
            }
        }
    }
    Ok(())
}

/// The destination of each source: into `target` when it is a directory (or there are several).
fn destinations(
    process: &Shell,
    sources: &[String],
    target: &str,
) -> Result<Vec<(String, String)>, String> {
    let target_path = process.path(target);
    let into = process.m.fs.is_dir(&target_path);
    if sources.len() > 1 && !into {
        return Err(format!("'{target}' is not a directory"));
    }
    Ok(sources
        .iter()
        .map(|source| {
            let from = process.path(source);
            let to = if into {
                fs::absolute(&target_path, fs::base_name(source))
            } else {
                target_path.clone()
            };
            (from, to)
        })
        .collect())
}

/// `cp [-rRapfdL] SOURCE... DEST`.
pub(super) async fn cp(process: &mut Shell, args: &[String]) -> Status {
    let opts = opts!(process, "cp", args, "rRapfdLPHiuvnT");
    let recursive = opts.has('r') || opts.has('R') || opts.has('a');
    let preserve = opts.has('p') || opts.has('a');
    let follow = !(opts.has('d') || opts.has('P') || opts.has('a')) || opts.has('L');
    let Some((target, sources)) = opts.operands.split_last().filter(|(_, s)| !s.is_empty()) else {
        return process.fail("cp: missing operand").await;
    };
    let pairs = match destinations(process, sources, target) {
        Ok(pairs) => pairs,
        Err(message) => return process.fail(&format!("cp: {message}")).await,
    };
    let mut status = 0;
    for (from, to) in pairs {
        if let Err(message) = copy_tree(process, &from, &to, recursive, preserve, follow) {
            process.err_line(&format!("cp: {message}")).await?;
            status = 1;
        }
    }
    Ok(status)
}

/// `mv [-fin] SOURCE... DEST`.
pub(super) async fn mv(process: &mut Shell, args: &[String]) -> Status {
    let opts = opts!(process, "mv", args, "finvT");
    let Some((target, sources)) = opts.operands.split_last().filter(|(_, s)| !s.is_empty()) else {
        return process.fail("mv: missing operand").await;
    };
    let pairs = match destinations(process, sources, target) {
        Ok(pairs) => pairs,
        Err(message) => return process.fail(&format!("mv: {message}")).await,
    };
    let mut status = 0;
    for ((from, to), source) in pairs.into_iter().zip(sources) {
        let result = process
            .m
            .fs
            .resolve(&from, false)
            .and_then(|from| Ok((from, process.m.fs.resolve(&to, false)?)))
            .and_then(|(from, to)| {
                process.m.fs.0.lstat(&from)?;
                if opts.has('n') && process.m.fs.0.lstat(&to).is_ok() {
                    return Ok(());
                }
                process.m.fs.0.rename(&from, &to)
            });
        if let Err(error) = result {
            process
                .err_line(&format!("mv: can't rename '{source}': {}", error.text()))
                .await?;
            status = 1;
        }
    }
    Ok(status)
}

/// `ln -s [-fn] TARGET... LINK`: hard links are not simulated (the tree has none).
pub(super) async fn ln(process: &mut Shell, args: &[String]) -> Status {
    let opts = opts!(process, "ln", args, "sfnvT");
    if !opts.has('s') {
        return process
            .fail("ln: hard links are not simulated by the fake (use ln -s)")
            .await;
    }
    let (targets, link) = match opts.operands.as_slice() {
        [] => return process.fail("ln: missing operand").await,
        [target] => (vec![target.clone()], ".".to_owned()),
        [targets @ .., link] => (targets.to_vec(), link.clone()),
    };
    let link_path = process.path(&link);
    let into = !opts.has('n') && process.m.fs.is_dir(&link_path);
    let mut status = 0;
    for target in targets {
        let path = if into {
            fs::absolute(&link_path, fs::base_name(&target))
        } else {
            link_path.clone()
        };
        let result = process.m.fs.resolve(&path, false).and_then(|real| {
            if opts.has('f') {
                if let Ok(meta) = process.m.fs.0.lstat(&real) {
                    if meta.kind != Kind::Directory {
                        process.m.fs.0.remove(&real)?;
                    }
                }
            }
            process.m.fs.0.symlink(&target, &real, process.owner())
        });
        if let Err(error) = result {
            let shown = if into {
                format!("{link}/{}", fs::base_name(&target))
            } else {
                link.clone()
            };
            process
                .err_line(&format!("ln: {shown}: {}", error.text()))
                .await?;
            status = 1;
        }
    }
    Ok(status)
}

/// `readlink [-fen] FILE`.
pub(super) async fn readlink(process: &mut Shell, args: &[String]) -> Status {
    let opts = opts!(process, "readlink", args, "fenqsv");
    let Some(operand) = opts.operands.first() else {
        return process.fail("readlink: missing operand").await;
    };
    let path = process.path(operand);
    let result = if opts.has('f') || opts.has('e') {
        match process.m.fs.resolve(&path, true) {
            Ok(real) if opts.has('e') && process.m.fs.0.lstat(&real).is_err() => None,
            Ok(real) => Some(real),
            Err(_) => None,
        }
    } else {
        match process.m.fs.lstat(&path) {
            Ok(Meta {
                kind: Kind::Symlink(target),
                ..
            }) => Some(target),
            _ => None,
        }
    };
    match result {
        Some(text) => {
            let newline = if opts.has('n') { "" } else { "\n" };
            process.out(format!("{text}{newline}")).await?;
            Ok(0)
        }
        None => Ok(1),
    }
}

/// `realpath FILE...`.
pub(super) async fn realpath(process: &mut Shell, args: &[String]) -> Status {
    let mut status = 0;
    for operand in args {
        match process.m.fs.resolve(&process.path(operand), true) {
            Ok(real) if process.m.fs.0.lstat(&real).is_ok() => {
                process.out(format!("{real}\n")).await?
            }
            _ => {
                process
                    .err_line(&format!("realpath: {operand}: No such file or directory"))
                    .await?;
                status = 1;
            }
        }
    }
    Ok(status)
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// `mktemp [-dqu] [-p DIR] [-t] [TEMPLATE]`: the `X`s are replaced by letters and digits.
pub(super) async fn mktemp(process: &mut Shell, args: &[String]) -> Status {
    let opts = opts!(process, "mktemp", args, "dqutp:");
    let template = opts
        .operands
        .first()
        .cloned()
        .unwrap_or_else(|| "tmp.XXXXXX".into());
    let dir = opts.value('p').map(str::to_owned).or_else(|| {
        (opts.has('t') || opts.operands.is_empty())
            .then(|| process.var("TMPDIR").unwrap_or("/tmp").to_owned())
    });
    let base = match &dir {
        Some(dir) => format!("{dir}/{template}"),
        None => template.clone(),
    };
    let xs = base.len() - base.trim_end_matches('X').len();
    if xs < 3 {
        return process.fail("mktemp: Invalid argument").await;
    }
    const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for _ in 0..100 {
        let mut seed = TEMP_COUNTER
            .fetch_add(1, Ordering::SeqCst)
            .wrapping_mul(6364136223846793005)
            .wrapping_add(u64::from(process.pid) << 32 | now() as u64 & 0xffff_ffff);
        let suffix: String = (0..xs)
            .map(|_| {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                LETTERS[(seed >> 33) as usize % LETTERS.len()] as char
            })
            .collect();
        let name = format!("{}{suffix}", &base[..base.len() - xs]);
        let path = process.path(&name);
        if process.m.fs.lstat(&path).is_ok() {
            continue;
        }
        if !opts.has('u') {
            let created = if opts.has('d') {
                process
                    .m
                    .fs
                    .resolve(&path, false)
                    .and_then(|real| process.m.fs.0.mkdir(&real, 0o700, process.owner()))
            } else {
                process
                    .m
                    .fs
                    .write(&path, Bytes::new(), false, 0o600, process.owner())
            };
            if let Err(error) = created {
                if opts.has('q') {
                    return Ok(1);
                }
                return process.fail(&format!("mktemp: {}", error.text())).await;
            }
        }
        process.out(format!("{name}\n")).await?;
        return Ok(0);
    }
    process.fail("mktemp: File exists").await
}

/// One test of `find`.
#[derive(Debug, Clone)]
enum Test {
    Name(String, bool),
    Path(String),
    Type(char),
    Empty,
    Print,
    Print0,
    Delete,
    Exec(Vec<String>, bool),
    Not(Box<Test>),
    Or(Vec<Vec<Test>>),
    Perm(u32),
    True,
}

/// `find [PATH...] [-maxdepth N] [-mindepth N] [EXPRESSION]`: `-name`, `-iname`, `-path`, `-type`,
/// `-empty`, `-perm`, `-print`, `-print0`, `-delete`, `-exec ... ;`/`+`, `!`, `-a`, `-o`.
pub(super) async fn find(process: &mut Shell, args: &[String]) -> Status {
    let split = args
        .iter()
        .position(|a| a.starts_with('-') || a == "!" || a == "(")
        .unwrap_or(args.len());
    let mut roots: Vec<String> = args[..split].to_vec();
    if roots.is_empty() {
        roots.push(".".into());
    }
    let mut max_depth = usize::MAX;
    let mut min_depth = 0;
    let mut alternatives: Vec<Vec<Test>> = vec![Vec::new()];
    let mut negate = false;
    let mut acts = false;
    let mut rest = args[split..].iter();
    while let Some(arg) = rest.next() {
        let mut value = |what: &str| -> Result<String, String> {
            rest.next()
                .cloned()
                .ok_or_else(|| format!("find: {what} requires an argument"))
        };
        let test = match arg.as_str() {
            "-maxdepth" | "-mindepth" => {
                let n = match value(arg).map(|v| v.parse::<usize>()) {
                    Ok(Ok(n)) => n,
                    Ok(Err(_)) => {
                        return process
                            .fail(&format!("find: invalid number for {arg}"))
                            .await
                    }
                    Err(message) => return process.fail(&message).await,
                };
                if arg == "-maxdepth" {
                    max_depth = n
                } else {
                    min_depth = n
                }
                continue;
            }
            "!" | "-not" => {
                negate = !negate;
                continue;
            }
            "-a" | "-and" => continue,
            "-o" | "-or" => {
                alternatives.push(Vec::new());
                continue;
            }
            "-name" | "-iname" => match value(arg) {
                Ok(v) => Test::Name(v, arg == "-iname"),
                Err(message) => return process.fail(&message).await,
            },
            "-path" | "-wholename" => match value(arg) {
                Ok(v) => Test::Path(v),
                Err(message) => return process.fail(&message).await,
            },
            "-type" => match value(arg) {
                Ok(v) if matches!(v.as_str(), "f" | "d" | "l") => {
                    Test::Type(v.chars().next().unwrap_or('f'))
                }
                Ok(v) => {
                    return process
                        .fail(&format!(
                            "find: unsupported -type {v} (not simulated by the fake)"
                        ))
                        .await
                }
                Err(message) => return process.fail(&message).await,
            },
            "-perm" => {
                match value(arg).map(|v| u32::from_str_radix(v.trim_start_matches('-'), 8)) {
                    Ok(Ok(mode)) => Test::Perm(mode),
                    _ => return process.fail("find: invalid mode for -perm").await,
                }
            }
            "-empty" => Test::Empty,
            "-print" => {
                acts = true;
                Test::Print
            }
            "-print0" => {
                acts = true;
                Test::Print0
            }
            "-delete" => {
                acts = true;
                Test::Delete
            }
            "-depth" | "-xdev" | "-follow" => Test::True,
            "-exec" => {
                let mut command = Vec::new();
                let mut batch = false;
                loop {
                    match rest.next() {
                        Some(end) if end == ";" => break,
                        Some(end)
                            if end == "+" && command.last().is_some_and(|l: &String| l == "{}") =>
                        {
                            batch = true;
                            break;
                        }
                        Some(word) => command.push(word.clone()),
                        None => return process.fail("find: -exec requires an argument").await,
                    }
                }
                acts = true;
                Test::Exec(command, batch)
            }
            other => {
                return process
                    .fail(&format!(
                        "find: unrecognized: {other} (not simulated by the fake)"
                    ))
                    .await
            }
        };
        let test = if negate {
            Test::Not(Box::new(test))
        } else {
            test
        };
        negate = false;
        if let Some(last) = alternatives.last_mut() {
            last.push(test);
        }
    }
    let mut expression = if alternatives.len() > 1 {
        vec![Test::Or(alternatives)]
    } else {
        alternatives.pop().unwrap_or_default()
    };
    if !acts {
        expression.push(Test::Print);
    }
    let mut status = 0;
    let mut batches: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    let mut out = Vec::new();
    for root in &roots {
        let root_path = process.path(root);
        if process.m.fs.lstat(&root_path).is_err() {
            process
                .err_line(&format!("find: {root}: No such file or directory"))
                .await?;
            status = 1;
            continue;
        }
        let mut stack = vec![(root.clone(), root_path, 0usize)];
        let mut deletions = Vec::new();
        while let Some((shown, path, depth)) = stack.pop() {
            let Ok(meta) = process.m.fs.lstat(&path) else {
                continue;
            };
            if meta.kind == Kind::Directory && depth < max_depth {
                let mut names = process.m.fs.list(&path).unwrap_or_default();
                names.reverse();
                for name in names {
                    let child_shown = if shown.ends_with('/') {
                        format!("{shown}{name}")
                    } else {
                        format!("{shown}/{name}")
                    };
                    stack.push((child_shown, fs::absolute(&path, &name), depth + 1));
                }
            }
            if depth < min_depth {
                continue;
            }
            let mut runs = Vec::new();
            if evaluate(
                process,
                &expression,
                &shown,
                &path,
                &meta,
                &mut out,
                &mut runs,
                &mut batches,
                &mut deletions,
            ) {
                for argv in runs {
                    process.out(std::mem::take(&mut out)).await?;
                    let mut child = process.program(process.environ());
                    child.arg0 = "find".into();
                    if child.run_argv(&argv, Search::Program).await? != 0 {
                        status = 1;
                    }
                }
            }
            if out.len() > CHUNK {
                process.out(std::mem::take(&mut out)).await?;
            }
        }
        for path in deletions.into_iter().rev() {
            if let Err(error) = process.m.fs.0.remove(&path) {
                process
                    .err_line(&format!("find: {path}: {}", error.text()))
                    .await?;
                status = 1;
            }
        }
    }
    process.out(out).await?;
    for (command, files) in batches {
        let mut argv: Vec<String> = command.iter().filter(|w| *w != "{}").cloned().collect();
        argv.extend(files);
        let mut child = process.program(process.environ());
        child.arg0 = "find".into();
        if child.run_argv(&argv, Search::Program).await? != 0 {
            status = 1;
        }
    }
    Ok(status)
}

#[allow(clippy::too_many_arguments)]
fn evaluate(
    process: &Shell,
    tests: &[Test],
    shown: &str,
    path: &str,
    meta: &Meta,
    out: &mut Vec<u8>,
    runs: &mut Vec<Vec<String>>,
    batches: &mut Vec<(Vec<String>, Vec<String>)>,
    deletions: &mut Vec<String>,
) -> bool {
    for test in tests {
        let ok = match test {
            Test::Name(pattern, fold) => {
                let name = fs::base_name(shown);
                if *fold {
                    crate::pattern::matches(&pattern.to_lowercase(), &name.to_lowercase())
                } else {
                    crate::pattern::matches(pattern, name)
                }
            }
            Test::Path(pattern) => crate::pattern::matches(pattern, shown),
            Test::Type(kind) => matches!(
                (kind, &meta.kind),
                ('f', Kind::File(_)) | ('d', Kind::Directory) | ('l', Kind::Symlink(_))
            ),
            Test::Empty => match meta.kind {
                Kind::File(n) => n == 0,
                Kind::Directory => process.m.fs.list(path).is_ok_and(|n| n.is_empty()),
                Kind::Symlink(_) => false,
            },
            Test::Perm(mode) => meta.mode & 0o7777 == *mode,
            Test::Print => {
                out.extend_from_slice(shown.as_bytes());
                out.push(b'\n');
                true
            }
            Test::Print0 => {
                out.extend_from_slice(shown.as_bytes());
                out.push(0);
                true
            }
            Test::Delete => {
                deletions.push(path.to_owned());
                true
            }
            Test::Exec(command, batch) => {
                if *batch {
                    match batches.iter_mut().find(|(c, _)| c == command) {
                        Some((_, files)) => files.push(shown.to_owned()),
                        None => batches.push((command.clone(), vec![shown.to_owned()])),
                    }
                } else {
                    runs.push(command.iter().map(|w| w.replace("{}", shown)).collect());
                }
                true
            }
            Test::Not(inner) => !evaluate(
                process,
                std::slice::from_ref(inner),
                shown,
                path,
                meta,
                &mut Vec::new(),
                &mut Vec::new(),
                &mut Vec::new(),
                &mut Vec::new(),
            ),
            Test::Or(alternatives) => alternatives.iter().any(|alternative| {
                evaluate(
                    process,
                    alternative,
                    shown,
                    path,
                    meta,
                    out,
                    runs,
                    batches,
                    deletions,
                )
            }),
            Test::True => true,
        };
        if !ok {
            return false;
        }
    }
    true
}

/// Where `dd` reads.
enum DdInput {
    Zero,
    Random,
    Reader(Input),
}

/// `dd [if=F] [of=F] [bs=N] [ibs=N] [obs=N] [count=N] [skip=N] [seek=N] [conv=notrunc] [status=none]`.
pub(super) async fn dd(process: &mut Shell, args: &[String]) -> Status {
    let mut input_file = None;
    let mut output_file = None;
    let (mut ibs, mut obs) = (512u64, 512u64);
    let mut count = None;
    let mut skip = 0u64;
    let mut seek = 0u64;
    let mut quiet = false;
    let mut notrunc = false;
    for arg in args {
        let Some((key, value)) = arg.split_once('=') else {
            process.err(DD_USAGE.as_bytes().to_vec()).await?;
            return Ok(1);
        };
        let number =
            |value: &str| dd_number(value).ok_or_else(|| format!("dd: invalid number '{value}'"));
        let parsed = match key {
            "if" => {
                input_file = Some(value.to_owned());
                Ok(())
            }
            "of" => {
                output_file = Some(value.to_owned());
                Ok(())
            }
            "bs" => number(value).and_then(|n| {
                if n == 0 {
                    Err(format!("dd: invalid number '{value}'"))
                } else {
                    ibs = n;
                    obs = n;
                    Ok(())
                }
            }),
            "ibs" => number(value).map(|n| ibs = n.max(1)),
            "obs" => number(value).map(|n| obs = n.max(1)),
            "count" => number(value).map(|n| count = Some(n)),
            "skip" => number(value).map(|n| skip = n),
            "seek" => number(value).map(|n| seek = n),
            "status" => match value {
                "none" => {
                    quiet = true;
                    Ok(())
                }
                "noxfer" | "progress" => Ok(()),
                _ => Err(format!("dd: invalid status '{value}'")),
            },
            "conv" | "iflag" | "oflag" => {
                let mut result = Ok(());
                for flag in value.split(',') {
                    match (key, flag) {
                        ("conv", "notrunc") => notrunc = true,
                        ("conv", "noerror" | "fsync" | "sync")
                        | ("iflag", "fullblock" | "direct")
                        | ("oflag", "direct" | "append") => {}
                        _ => result = Err(format!("dd: {key}={flag} is not simulated by the fake")),
                    }
                }
                result
            }
            _ => {
                process.err(DD_USAGE.as_bytes().to_vec()).await?;
                return Ok(1);
            }
        };
        if let Err(message) = parsed {
            return process.fail(&message).await;
        }
    }
    let input = match input_file.as_deref().map(|f| (f, process.path(f))) {
        None => DdInput::Reader(process.fds.input()),
        Some((_, path)) if fs::device(&path) == Some(Device::Zero) => DdInput::Zero,
        Some((_, path)) if fs::device(&path) == Some(Device::Random) => DdInput::Random,
        Some((_, path)) if fs::device(&path) == Some(Device::Fd(0)) => {
            DdInput::Reader(process.fds.input())
        }
        Some((name, _)) => match read_file(process, name) {
            Ok(content) => DdInput::Reader(input_of(content)),
            Err(error) => {
                return process
                    .fail(&format!("dd: can't open '{name}': {}", error.text()))
                    .await
            }
        },
    };
    let mut opened = None;
    let sink = match output_file.as_deref().map(|f| (f, process.path(f))) {
        None => process.fds.sink(1),
        Some((_, path)) => match fs::device(&path) {
            Some(Device::Fd(n)) => process.fds.sink(n),
            Some(Device::Full) => Sink::Full,
            Some(_) => Sink::Null,
            None => {
                if seek > 0 {
                    return process.fail("dd: seek= is not simulated by the fake").await;
                }
                let name = output_file.clone().unwrap_or_default();
                match FileOut::open(
                    &process.m.fs,
                    &path,
                    notrunc,
                    process.file_mode(),
                    process.owner(),
                ) {
                    Ok(file) => {
                        opened = Some(Arc::clone(&file));
                        Sink::File(file)
                    }
                    Err(error) => {
                        return process
                            .fail(&format!("dd: can't open '{name}': {}", error.text()))
                            .await
                    }
                }
            }
        },
    };
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut read_block = |want: u64| -> Option<Bytes> {
        let want = usize::try_from(want).unwrap_or(usize::MAX);
        match &input {
            DdInput::Zero => Some(Bytes::from(vec![0u8; want.min(CHUNK)])),
            DdInput::Random => Some(Bytes::from(
                (0..want.min(CHUNK))
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        seed as u8
                    })
                    .collect::<Vec<u8>>(),
            )),
            DdInput::Reader(_) => None,
        }
    };
    let reader = match &input {
        DdInput::Reader(reader) => Some(reader.clone()),
        _ => None,
    };
    let next = |want: u64| {
        let reader = reader.clone();
        async move {
            let reader = reader?;
            let mut reader = reader.lock().await;
            let mut chunk = reader.next_chunk().await?;
            let take = chunk.len().min(usize::try_from(want).unwrap_or(usize::MAX));
            let rest = chunk.split_off(take);
            reader.unread(rest);
            Some(chunk)
        }
    };
    let mut to_skip = skip.saturating_mul(ibs);
    while to_skip > 0 {
        let block = match read_block(to_skip.min(CHUNK as u64)) {
            Some(block) => Some(block),
            None => next(to_skip.min(CHUNK as u64)).await,
        };
        let Some(block) = block else { break };
        to_skip -= block.len() as u64;
    }
    let (mut full_in, mut partial_in, mut total) = (0u64, 0u64, 0u64);
    while count.is_none_or(|count| full_in + partial_in < count) {
        let mut length = 0;
        while length < ibs {
            let want = (ibs - length).min(CHUNK as u64);
            let block = match read_block(want) {
                Some(block) => Some(block),
                None => next(want).await,
            };
            let Some(block) = block else { break };
            length += block.len() as u64;
            tokio::task::consume_budget().await;
            match sink.write(block).await {
                Ok(()) => {}
                Err(crate::io::WriteError::BrokenPipe) => return Err(Stop::BrokenPipe),
                Err(crate::io::WriteError::NoSpace) => {
                    return process
                        .fail("dd: error writing '/dev/full': No space left on device")
                        .await
                }
            }
        }
        if length == 0 {
            break;
        }
        total += length;
        if length == ibs {
            full_in += 1;
        } else {
            partial_in += 1;
        }
    }
    if let Some(file) = opened {
        if let Err(error) = file.finish() {
            return process
                .fail(&format!("dd: error writing: {}", error.text()))
                .await;
        }
    }
    let (full_out, partial_out) = if ibs == obs {
        (full_in, partial_in)
    } else {
        (total / obs, u64::from(total % obs != 0))
    };
    if !quiet {
        let summary =
            format!("{full_in}+{partial_in} records in\n{full_out}+{partial_out} records out\n");
        process.err(summary.into_bytes()).await?;
    }
    Ok(0)
}

/// A count with busybox's suffixes (`c` 1, `w` 2, `b` 512, `kB` 1000, `k` 1024, `MB`, `M`, `GB`, `G`).
fn dd_number(value: &str) -> Option<u64> {
    const SUFFIXES: &[(&str, u64)] = &[
        ("kB", 1000),
        ("MB", 1000 * 1000),
        ("GB", 1000 * 1000 * 1000),
        ("c", 1),
        ("w", 2),
        ("b", 512),
        ("k", 1024),
        ("K", 1024),
        ("M", 1024 * 1024),
        ("G", 1024 * 1024 * 1024),
    ];
    let (digits, factor) = SUFFIXES
        .iter()
        .find_map(|(suffix, factor)| value.strip_suffix(suffix).map(|d| (d, *factor)))
        .unwrap_or((value, 1));
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(factor)
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (applets that look at and change the
    //! instance's files); a command run through the fake's exec goes in fake-incus's tests.

    use super::*;

    #[test]
    fn modes_parse_in_octal_and_symbolically() {
        assert_eq!(parse_mode("755", 0), Some(0o755));
        assert_eq!(parse_mode("u+x", 0o644), Some(0o744));
        assert_eq!(parse_mode("go-w", 0o666), Some(0o644));
        assert_eq!(parse_mode("a=r", 0o777), Some(0o444));
        assert_eq!(parse_mode("+x", 0o644), Some(0o755));
        assert_eq!(parse_mode("u=rwx,g=rx,o=", 0o000), Some(0o750));
        assert_eq!(parse_mode("z", 0o644), None);
        assert_eq!(parse_mode("8", 0o644), None);
    }

    #[test]
    fn dd_numbers_take_busyboxs_suffixes() {
        assert_eq!(dd_number("12"), Some(12));
        assert_eq!(dd_number("2w"), Some(4));
        assert_eq!(dd_number("1k"), Some(1024));
        assert_eq!(dd_number("1kB"), Some(1000));
        for bad in ["", "x", "1x", "-1", "k", "99999999999999999999G"] {
            assert!(dd_number(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn modes_print_like_ls() {
        let meta = Meta {
            kind: Kind::Directory,
            uid: 0,
            gid: 0,
            mode: 0o755,
            modified: 0,
        };
        assert_eq!(mode_string(&meta, false), "drwxr-xr-x");
        let meta = Meta {
            kind: Kind::File(1),
            uid: 0,
            gid: 0,
            mode: 0o4751,
            modified: 0,
        };
        assert_eq!(mode_string(&meta, false), "-rwsr-x--x");
    }
}
