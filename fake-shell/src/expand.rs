//! Word expansion, in POSIX order: tilde, parameters, command substitution and arithmetic, then field
//! splitting of what was unquoted, then pathname expansion, then quote removal.

use std::sync::PoisonError;

use crate::io::{Fd, Sink};
use crate::pattern;
use crate::shell::{Shell, Stop, USAGE_STATUS};
use crate::syntax::{ParamOp, Part, Word};

/// One field being built: its text, the same as a pattern (quoted characters escaped), and whether
/// it has unquoted pattern characters.
#[derive(Debug, Default)]
struct Field {
    text: String,
    pattern: String,
    magic: bool,
}

#[derive(Debug, Default)]
struct Fields {
    done: Vec<Field>,
    current: Field,
    /// The current field exists even if empty (something quoted or literal was in it).
    live: bool,
}

impl Fields {
    fn literal(&mut self, text: &str, quoted: bool) {
        self.live = true;
        for c in text.chars() {
            self.push(c, quoted);
        }
    }

    fn push(&mut self, c: char, quoted: bool) {
        self.current.text.push(c);
        if quoted && matches!(c, '*' | '?' | '[' | ']' | '\\' | '-' | '!' | '^') {
            self.current.pattern.push('\\');
        } else if !quoted && matches!(c, '*' | '?' | '[') {
            self.current.magic = true;
        }
        self.current.pattern.push(c);
    }

    /// An unquoted expansion's value: split on `ifs`.
    fn split(&mut self, value: &str, ifs: &str) {
        for c in value.chars() {
            if ifs.contains(c) {
                if c.is_whitespace() {
                    if self.live {
                        self.end();
                    }
                } else {
                    self.live = true;
                    self.end();
                }
            } else {
                self.live = true;
                self.push(c, false);
            }
        }
    }

    fn end(&mut self) {
        if self.live {
            self.done.push(std::mem::take(&mut self.current));
        }
        self.current = Field::default();
        self.live = false;
    }
}

impl Shell {
    /// Expands words into fields (split and globbed): a command's arguments, `for`'s list.
    pub(crate) async fn expand_words(&mut self, words: &[Word]) -> Result<Vec<String>, Stop> {
        let mut out = Vec::new();
        for word in words {
            let mut fields = Fields::default();
            self.expand_into(word, &mut fields, true).await?;
            fields.end();
            for field in fields.done {
                if field.magic {
                    let found = pattern::glob(&self.m.fs, &self.cwd, &field.pattern);
                    if !found.is_empty() {
                        out.extend(found);
                        continue;
                    }
                }
                out.push(field.text);
            }
        }
        Ok(out)
    }

    /// Expands a word into one string, without splitting or globbing (assignments, redirections,
    /// `case`, here-documents).
    pub(crate) async fn expand_string(&mut self, word: &Word) -> Result<String, Stop> {
        let mut fields = Fields::default();
        self.expand_into(word, &mut fields, false).await?;
        Ok(fields.current.text)
    }

    /// Expands a word into a pattern: quoted characters stand for themselves.
    pub(crate) async fn expand_pattern(&mut self, word: &Word) -> Result<String, Stop> {
        let mut fields = Fields::default();
        self.expand_into(word, &mut fields, false).await?;
        Ok(fields.current.pattern)
    }

    fn expand_into<'a>(
        &'a mut self,
        word: &'a Word,
        fields: &'a mut Fields,
        split: bool,
    ) -> crate::shell::Boxed<'a, Result<(), Stop>> {
        Box::pin(async move {
            for part in word {
                match part {
                    Part::Text { text, quoted } => fields.literal(text, *quoted),
                    Part::Tilde => {
                        let home = self.var("HOME").unwrap_or_default().to_owned();
                        fields.literal(&home, true);
                    }
                    Part::Param {
                        name,
                        length,
                        op,
                        quoted,
                    } => {
                        if name == "@" && *quoted && op.is_none() && !length {
                            let args = self.args.clone();
                            fields.live = fields.live || !args.is_empty();
                            for (index, arg) in args.iter().enumerate() {
                                if index > 0 {
                                    fields.end();
                                    fields.live = true;
                                }
                                fields.literal(arg, true);
                            }
                            continue;
                        }
                        let value = self.parameter(name, *length, op.as_ref()).await?;
                        self.place(fields, &value, *quoted, split);
                    }
                    Part::Subst { list, quoted } => {
                        let value = self.substitute(list).await?;
                        self.place(fields, &value, *quoted, split);
                    }
                    Part::Arith { expr, quoted } => {
                        let text = self.expand_string(expr).await?;
                        let value = match crate::arith::eval(&text, self) {
                            Ok(value) => value,
                            Err(message) => {
                                self.err_line(&format!("sh: arithmetic syntax error: {message}"))
                                    .await?;
                                self.status = USAGE_STATUS;
                                return Err(Stop::Exit);
                            }
                        };
                        self.place(fields, &value.to_string(), *quoted, split);
                    }
                }
            }
            Ok(())
        })
    }

    fn place(&self, fields: &mut Fields, value: &str, quoted: bool, split: bool) {
        if quoted || !split {
            fields.literal(value, quoted);
        } else {
            let ifs = self.var("IFS").unwrap_or(" \t\n").to_owned();
            fields.split(value, &ifs);
        }
    }

    /// `$(...)`: the list's output without its trailing newlines; `$?` becomes its status.
    async fn substitute(&mut self, list: &crate::syntax::List) -> Result<String, Stop> {
        let buffer = Shell::capture();
        let mut sub = self.clone();
        sub.fds.set(1, Fd::Out(Sink::Capture(buffer.clone())));
        let ran = sub.run_list(list).await;
        let status = sub.status;
        drop(sub);
        if ran == Err(Stop::BrokenPipe) {
            return Err(Stop::BrokenPipe);
        }
        self.status = status;
        self.substituted = Some(status);
        let bytes = std::mem::take(&mut *buffer.lock().unwrap_or_else(PoisonError::into_inner));
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        while text.ends_with('\n') {
            text.pop();
        }
        Ok(text)
    }

    /// A parameter's value (`$@` and `$*` joined by spaces), `None` when unset.
    pub(crate) fn lookup(&self, name: &str) -> Option<String> {
        match name {
            "?" => Some(self.status.to_string()),
            "$" => Some(self.pid.to_string()),
            "#" => Some(self.args.len().to_string()),
            "@" | "*" => Some(self.args.join(" ")),
            "!" => None,
            "-" => Some(if self.errexit { "e" } else { "" }.to_owned()),
            "0" => Some(self.arg0.clone()),
            _ => match name.parse::<usize>() {
                Ok(index) => self.args.get(index - 1).cloned(),
                Err(_) => self.vars.get(name).cloned(),
            },
        }
    }

    async fn parameter(
        &mut self,
        name: &str,
        length: bool,
        op: Option<&(ParamOp, bool, Word)>,
    ) -> Result<String, Stop> {
        let value = self.lookup(name);
        if length {
            return Ok(value.unwrap_or_default().chars().count().to_string());
        }
        let Some((op, colon, word)) = op else {
            if value.is_none() && self.nounset && !matches!(name, "@" | "*") {
                self.err_line(&format!("sh: {name}: parameter not set"))
                    .await?;
                self.status = USAGE_STATUS;
                return Err(Stop::Exit);
            }
            return Ok(value.unwrap_or_default());
        };
        let set = match &value {
            Some(v) => !(*colon && v.is_empty()),
            None => false,
        };
        match op {
            ParamOp::Default if !set => self.expand_string(word).await,
            ParamOp::Assign if !set => {
                let new = self.expand_string(word).await?;
                self.vars.insert(name.to_owned(), new.clone());
                Ok(new)
            }
            ParamOp::Error if !set => {
                let message = self.expand_string(word).await?;
                let message = if message.is_empty() {
                    "parameter not set".to_owned()
                } else {
                    message
                };
                self.err_line(&format!("sh: {name}: {message}")).await?;
                self.status = USAGE_STATUS;
                Err(Stop::Exit)
            }
            ParamOp::Alternative if set => self.expand_string(word).await,
            ParamOp::Alternative => Ok(String::new()),
            ParamOp::Default | ParamOp::Assign | ParamOp::Error => Ok(value.unwrap_or_default()),
            ParamOp::SuffixShort | ParamOp::SuffixLong => {
                let value = value.unwrap_or_default();
                let pattern = self.expand_pattern(word).await?;
                let longest = *op == ParamOp::SuffixLong;
                Ok(match pattern::suffix_start(&pattern, &value, longest) {
                    Some(start) => value[..start].to_owned(),
                    None => value,
                })
            }
            ParamOp::PrefixShort | ParamOp::PrefixLong => {
                let value = value.unwrap_or_default();
                let pattern = self.expand_pattern(word).await?;
                let longest = *op == ParamOp::PrefixLong;
                Ok(match pattern::prefix_len(&pattern, &value, longest) {
                    Some(end) => value[end..].to_owned(),
                    None => value,
                })
            }
        }
    }
}
