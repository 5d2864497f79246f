//! API.md's part on the declared resources, written from their declarations: for each, its
//! endpoints, what the fake answers and what it does not do.

use super::{table, Answer, Resource, Scope};
use std::fmt::Write;

/// An endpoint a declaration serves: method, path (`{name}` for keys) and what it does.
pub(crate) fn endpoints(resource: &dyn Resource) -> Vec<(&'static str, String, String)> {
    let decl = resource.decl();
    let collection = decl.collection.replace("{}", "{name}");
    let object = format!("{collection}/{{{}}}", decl.key.replace('_', "-"));
    let answer = |a: Answer| match a {
        Answer::Location => "201 with `Location`",
        Answer::Empty => "200 `{}`",
        Answer::Operation(_) => "an operation",
        Answer::No => "",
    };
    let scope = match decl.scope {
        Scope::Global => String::new(),
        Scope::Project(None) => ", per project".to_owned(),
        Scope::Project(Some(feature)) => {
            format!(", per project with `{feature}` (else `default`'s)")
        }
    };
    let mut out = vec![
        (
            "GET",
            collection.clone(),
            format!("List: recursion 0 and 1, `filter=`, `all-projects`{scope}."),
        ),
        ("GET", object.clone(), "Get, with the ETag.".to_owned()),
    ];
    if decl.create != Answer::No {
        out.push((
            "POST",
            collection,
            format!("Create: {}.", answer(decl.create)),
        ));
    }
    if decl.update {
        out.push((
            "PUT",
            object.clone(),
            "Replace the writable fields (`If-Match` checked).".to_owned(),
        ));
        out.push((
            "PATCH",
            object.clone(),
            "Merge: maps key by key, `\"\"` unsets.".to_owned(),
        ));
    }
    if decl.rename != Answer::No {
        out.push((
            "POST",
            object.clone(),
            format!("Rename: {}.", answer(decl.rename)),
        ));
    }
    if decl.delete {
        out.push((
            "DELETE",
            object.clone(),
            "Delete (refused while in use).".to_owned(),
        ));
    }
    for sub in decl.subs {
        let path = sub
            .path
            .iter()
            .map(|s| if *s == "{}" { "{name}" } else { s })
            .collect::<Vec<_>>()
            .join("/");
        out.push((sub.method, format!("{object}/{path}"), sub.does.to_owned()));
    }
    out
}

/// The declared resources as Markdown.
pub(crate) fn markdown() -> String {
    let mut out = String::new();
    for resource in table() {
        let decl = resource.decl();
        let _ = writeln!(out, "### `{}`\n", decl.collection.replace("{}", "{name}"));
        out.push_str("| method | path | the fake |\n| --- | --- | --- |\n");
        for (method, path, does) in endpoints(*resource) {
            let _ = writeln!(out, "| {method} | `{path}` | {does} |");
        }
        let writable = decl.writable.join("`, `");
        let _ = writeln!(
            out,
            "\nWritable: `{writable}`. Unknown: 404 `{}`.",
            decl.not_found
        );
        if !decl.limits.is_empty() {
            let _ = writeln!(out, "Not done: {}", decl.limits);
        }
        out.push('\n');
    }
    out
}
