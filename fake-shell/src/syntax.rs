//! The POSIX shell language, parsed by recursive descent straight from the characters: lists with `;`,
//! newlines, `&&`, `||`, pipelines with `|` and `!`, simple commands with assignments and
//! redirections (`<`, `>`, `>>`, `>|`, `<>`, `N>&M`, `N<&M`, `<<`, `<<-`), compound commands (`{ }`,
//! `( )`, `if`, `for`, `while`, `until`, `case`), function definitions, and words with quotes,
//! `$NAME`, `${...}` with the POSIX operators, `$(...)`, backticks, `$((...))` and `~`. Background jobs
//! (`&`) are refused with a clear message: the fake runs a command to its end.

use std::sync::{Arc, OnceLock};

/// Why a script was refused; printed as `sh: syntax error: <message>` with exit status 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError(pub(crate) String);

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A list of and-or lists run one after the other.
pub(crate) type List = Vec<AndOr>;

/// `a && b || c`.
#[derive(Debug, Clone)]
pub(crate) struct AndOr {
    pub(crate) first: Pipeline,
    /// `true` for `&&`, `false` for `||`.
    pub(crate) rest: Vec<(bool, Pipeline)>,
}

/// `[!] a | b | c`.
#[derive(Debug, Clone)]
pub(crate) struct Pipeline {
    pub(crate) bang: bool,
    pub(crate) commands: Vec<Command>,
}

/// One command of a pipeline.
#[derive(Debug, Clone)]
pub(crate) enum Command {
    Simple(Simple),
    Compound(Box<Compound>, Vec<Redir>),
    Function(String, Arc<Command>),
}

/// Assignments, words and redirections.
#[derive(Debug, Clone, Default)]
pub(crate) struct Simple {
    pub(crate) assigns: Vec<(String, Word)>,
    pub(crate) words: Vec<Word>,
    pub(crate) redirs: Vec<Redir>,
    /// The line it starts on (0 for the first line, as busybox counts for `-c`).
    pub(crate) line: usize,
}

#[derive(Debug, Clone)]
pub(crate) enum Compound {
    Brace(List),
    Subshell(List),
    If(Vec<(List, List)>, Option<List>),
    For(String, Option<Vec<Word>>, List),
    Loop { until: bool, cond: List, body: List },
    Case(Word, Vec<(Vec<Word>, List)>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RedirOp {
    /// `>` and `>|`.
    Out,
    Append,
    In,
    ReadWrite,
    DupOut,
    DupIn,
    /// A here-document; `quoted` delimiters leave the body unexpanded.
    Here,
}

#[derive(Debug, Clone)]
pub(crate) struct Redir {
    pub(crate) fd: Option<u32>,
    pub(crate) op: RedirOp,
    /// The target word; for a here-document, its body (filled in when the body is read).
    pub(crate) target: Arc<OnceLock<Word>>,
}

/// `${NAME OP WORD}` operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParamOp {
    /// `-` / `:-`
    Default,
    /// `=` / `:=`
    Assign,
    /// `?` / `:?`
    Error,
    /// `+` / `:+`
    Alternative,
    /// `%`
    SuffixShort,
    /// `%%`
    SuffixLong,
    /// `#`
    PrefixShort,
    /// `##`
    PrefixLong,
}

/// A piece of a word before expansion.
#[derive(Debug, Clone)]
pub(crate) enum Part {
    /// Literal text; `quoted` text is not split nor globbed and keeps an empty word alive.
    Text { text: String, quoted: bool },
    /// A parameter expansion.
    Param {
        name: String,
        /// `${#NAME}`.
        length: bool,
        /// The operator, whether it has a colon, and its word.
        op: Option<(ParamOp, bool, Word)>,
        quoted: bool,
    },
    /// `$(...)` or backticks.
    Subst { list: Arc<List>, quoted: bool },
    /// `$((...))`: the expression, expanded before it is evaluated.
    Arith { expr: Word, quoted: bool },
    /// A leading unquoted `~`.
    Tilde,
}

/// A word: parts joined without separators.
pub(crate) type Word = Vec<Part>;

/// Parses a whole script.
pub(crate) fn parse(source: &str) -> Result<List, SyntaxError> {
    let mut parser = Parser::new(source);
    let list = parser.list()?;
    parser.blanks();
    match parser.peek() {
        None => {}
        Some(')') => return Err(parser.unexpected(")")),
        Some(_) => {
            let word = parser.reserved().unwrap_or("?");
            return Err(parser.unexpected(word));
        }
    }
    parser.finish_heredocs_at_end();
    Ok(list)
}

/// Parses text as the inside of double quotes (a here-document body, an arithmetic expression).
pub(crate) fn parse_quoted_text(source: &str, heredoc: bool) -> Result<Word, SyntaxError> {
    let mut parser = Parser::new(source);
    let mut word = Builder::default();
    while let Some(c) = parser.bump() {
        match c {
            '\\' => match parser.peek() {
                Some(n @ ('$' | '`' | '\\')) => {
                    parser.bump();
                    word.text_char(n, true);
                }
                Some('"') if !heredoc => {
                    parser.bump();
                    word.text_char('"', true);
                }
                Some('\n') => {
                    parser.bump();
                }
                _ => word.text_char('\\', true),
            },
            '$' => parser.dollar(&mut word, true)?,
            '`' => parser.backtick(&mut word, true)?,
            c => word.text_char(c, true),
        }
    }
    Ok(word.finish_quoted())
}

const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for",
    "in", "{", "}", "!",
];

/// A pending here-document: its delimiter, `<<-`, whether quoted, and where the body goes.
struct PendingHeredoc {
    delimiter: String,
    strip_tabs: bool,
    quoted: bool,
    body: Arc<OnceLock<Word>>,
}

struct Parser {
    chars: Vec<char>,
    at: usize,
    line: usize,
    heredocs: Vec<PendingHeredoc>,
}

fn is_meta(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')'
    )
}

pub(crate) fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

impl Parser {
    fn new(source: &str) -> Self {
        Self {
            chars: source.chars().collect(),
            at: 0,
            line: 0,
            heredocs: Vec::new(),
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += 1;
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn unexpected(&self, what: &str) -> SyntaxError {
        SyntaxError(format!("unexpected \"{what}\""))
    }

    fn eof(&self) -> SyntaxError {
        SyntaxError("unexpected end of file".into())
    }

    /// Skips blanks, line continuations and a comment (not the newline).
    fn blanks(&mut self) {
        loop {
            match self.peek() {
                Some(' ' | '\t') => {
                    self.at += 1;
                }
                Some('\\') if self.peek_at(1) == Some('\n') => {
                    self.bump();
                    self.bump();
                }
                Some('#') => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.at += 1;
                    }
                }
                _ => return,
            }
        }
    }

    /// A newline: reads the bodies of the here-documents started on the line.
    fn newline(&mut self) -> Result<(), SyntaxError> {
        self.bump();
        let pending = std::mem::take(&mut self.heredocs);
        for heredoc in pending {
            self.heredoc_body(heredoc)?;
        }
        Ok(())
    }

    /// Skips blanks, comments and newlines.
    fn linebreaks(&mut self) -> Result<(), SyntaxError> {
        loop {
            self.blanks();
            if self.peek() == Some('\n') {
                self.newline()?;
            } else {
                return Ok(());
            }
        }
    }

    fn heredoc_body(&mut self, heredoc: PendingHeredoc) -> Result<(), SyntaxError> {
        let mut body = String::new();
        loop {
            if self.peek().is_none() {
                break;
            }
            let mut line = String::new();
            while let Some(c) = self.bump() {
                if c == '\n' {
                    break;
                }
                line.push(c);
            }
            let compared = if heredoc.strip_tabs {
                line.trim_start_matches('\t').to_owned()
            } else {
                line.clone()
            };
            if compared == heredoc.delimiter {
                break;
            }
            body.push_str(&compared);
            body.push('\n');
        }
        let word = if heredoc.quoted {
            vec![Part::Text {
                text: body,
                quoted: true,
            }]
        } else {
            parse_quoted_text(&body, true)?
        };
        let _ = heredoc.body.set(word);
        Ok(())
    }

    fn finish_heredocs_at_end(&mut self) {
        for heredoc in std::mem::take(&mut self.heredocs) {
            let _ = heredoc.body.set(Vec::new());
        }
    }

    /// The reserved word at the cursor, if one stands there as a whole word.
    fn reserved(&self) -> Option<&'static str> {
        let mut end = self.at;
        while self
            .chars
            .get(end)
            .is_some_and(|c| !is_meta(*c) && !matches!(c, '\'' | '"' | '\\' | '$' | '`'))
        {
            end += 1;
        }
        if end == self.at {
            return None;
        }
        let word: String = self.chars[self.at..end].iter().collect();
        RESERVED.iter().copied().find(|r| *r == word)
    }

    fn take_reserved(&mut self, word: &str) -> bool {
        self.blanks();
        if self.reserved() == Some(word) {
            self.at += word.chars().count();
            true
        } else {
            false
        }
    }

    fn expect_reserved(&mut self, word: &str) -> Result<(), SyntaxError> {
        self.linebreaks()?;
        if self.take_reserved(word) {
            return Ok(());
        }
        match self.peek() {
            None => Err(self.eof()),
            Some(_) => Err(self.unexpected(self.reserved().unwrap_or("word"))),
        }
    }

    /// Whether the cursor is at something that ends a list.
    fn at_list_end(&self) -> bool {
        match self.peek() {
            None | Some(')') => true,
            Some(';') if self.peek_at(1) == Some(';') => true,
            _ => matches!(
                self.reserved(),
                Some("then" | "else" | "elif" | "fi" | "do" | "done" | "esac" | "}")
            ),
        }
    }

    fn list(&mut self) -> Result<List, SyntaxError> {
        let mut list = Vec::new();
        loop {
            self.linebreaks()?;
            if self.at_list_end() {
                return Ok(list);
            }
            if self.peek() == Some(';') {
                return Err(self.unexpected(";"));
            }
            list.push(self.and_or()?);
            self.blanks();
            match self.peek() {
                Some(';') if self.peek_at(1) != Some(';') => {
                    self.bump();
                }
                Some('&') => {
                    return Err(SyntaxError(
                        "background jobs (&) are not supported by the fake's shell".into(),
                    ))
                }
                Some('\n') => self.newline()?,
                _ => {
                    if !self.at_list_end() {
                        let what = self.peek().map(String::from).unwrap_or_default();
                        return Err(self.unexpected(&what));
                    }
                }
            }
        }
    }

    fn and_or(&mut self) -> Result<AndOr, SyntaxError> {
        let first = self.pipeline()?;
        let mut rest = Vec::new();
        loop {
            self.blanks();
            let and = match (self.peek(), self.peek_at(1)) {
                (Some('&'), Some('&')) => true,
                (Some('|'), Some('|')) => false,
                _ => return Ok(AndOr { first, rest }),
            };
            self.at += 2;
            self.linebreaks()?;
            rest.push((and, self.pipeline()?));
        }
    }

    fn pipeline(&mut self) -> Result<Pipeline, SyntaxError> {
        self.blanks();
        let bang = self.take_reserved("!");
        let mut commands = vec![self.command()?];
        loop {
            self.blanks();
            if self.peek() == Some('|') && self.peek_at(1) != Some('|') {
                self.bump();
                self.linebreaks()?;
                commands.push(self.command()?);
            } else {
                return Ok(Pipeline { bang, commands });
            }
        }
    }

    fn command(&mut self) -> Result<Command, SyntaxError> {
        self.blanks();
        let compound = match self.peek() {
            None => return Err(self.eof()),
            Some('(') => {
                self.bump();
                let list = self.list()?;
                self.blanks();
                if self.bump() != Some(')') {
                    return Err(self.eof());
                }
                Compound::Subshell(list)
            }
            Some(c) if matches!(c, ')' | ';' | '|' | '&') => {
                return Err(self.unexpected(&c.to_string()))
            }
            _ => match self.reserved() {
                Some("{") => {
                    self.at += 1;
                    let list = self.list()?;
                    self.expect_reserved("}")?;
                    Compound::Brace(list)
                }
                Some("if") => {
                    self.at += 2;
                    self.if_clause()?
                }
                Some(word @ ("while" | "until")) => {
                    self.at += word.len();
                    let cond = self.list()?;
                    self.expect_reserved("do")?;
                    let body = self.list()?;
                    self.expect_reserved("done")?;
                    Compound::Loop {
                        until: word == "until",
                        cond,
                        body,
                    }
                }
                Some("for") => {
                    self.at += 3;
                    self.for_clause()?
                }
                Some("case") => {
                    self.at += 4;
                    self.case_clause()?
                }
                Some(word @ ("then" | "else" | "elif" | "fi" | "do" | "done" | "esac" | "}")) => {
                    return Err(self.unexpected(word))
                }
                _ => return self.simple(),
            },
        };
        let redirs = self.redirections()?;
        Ok(Command::Compound(Box::new(compound), redirs))
    }

    fn redirections(&mut self) -> Result<Vec<Redir>, SyntaxError> {
        let mut redirs = Vec::new();
        loop {
            self.blanks();
            match self.redirection()? {
                Some(redir) => redirs.push(redir),
                None => return Ok(redirs),
            }
        }
    }

    fn if_clause(&mut self) -> Result<Compound, SyntaxError> {
        let mut arms = Vec::new();
        loop {
            let cond = self.list()?;
            self.expect_reserved("then")?;
            let body = self.list()?;
            arms.push((cond, body));
            self.linebreaks()?;
            if self.take_reserved("elif") {
                continue;
            }
            let otherwise = if self.take_reserved("else") {
                Some(self.list()?)
            } else {
                None
            };
            self.expect_reserved("fi")?;
            return Ok(Compound::If(arms, otherwise));
        }
    }

    fn for_clause(&mut self) -> Result<Compound, SyntaxError> {
        self.blanks();
        let name = self.plain_word();
        if !is_name(&name) {
            return Err(SyntaxError(format!("bad for loop variable '{name}'")));
        }
        self.linebreaks()?;
        let words = if self.take_reserved("in") {
            let mut words = Vec::new();
            loop {
                self.blanks();
                match self.peek() {
                    Some(';') => {
                        self.bump();
                        break;
                    }
                    Some('\n') => {
                        self.newline()?;
                        break;
                    }
                    None => return Err(self.eof()),
                    Some(c) if is_meta(c) => return Err(self.unexpected(&c.to_string())),
                    _ => words.push(self.word()?),
                }
            }
            Some(words)
        } else {
            self.blanks();
            if self.peek() == Some(';') {
                self.bump();
            }
            None
        };
        self.expect_reserved("do")?;
        let body = self.list()?;
        self.expect_reserved("done")?;
        Ok(Compound::For(name, words, body))
    }

    fn case_clause(&mut self) -> Result<Compound, SyntaxError> {
        self.blanks();
        let subject = self.word()?;
        self.expect_reserved("in")?;
        let mut arms = Vec::new();
        loop {
            self.linebreaks()?;
            if self.take_reserved("esac") {
                return Ok(Compound::Case(subject, arms));
            }
            if self.peek().is_none() {
                return Err(self.eof());
            }
            if self.peek() == Some('(') {
                self.bump();
            }
            let mut patterns = Vec::new();
            loop {
                self.blanks();
                patterns.push(self.word()?);
                self.blanks();
                match self.bump() {
                    Some('|') => continue,
                    Some(')') => break,
                    None => return Err(self.eof()),
                    Some(c) => return Err(self.unexpected(&c.to_string())),
                }
            }
            let body = self.list()?;
            self.linebreaks()?;
            if self.peek() == Some(';') && self.peek_at(1) == Some(';') {
                self.at += 2;
            } else if self.reserved() != Some("esac") {
                return Err(self.eof());
            }
            arms.push((patterns, body));
        }
    }

    /// Letters up to the next metacharacter, unparsed.
    fn plain_word(&mut self) -> String {
        let mut word = String::new();
        while let Some(c) = self.peek().filter(|c| !is_meta(*c)) {
            word.push(c);
            self.at += 1;
        }
        word
    }

    fn simple(&mut self) -> Result<Command, SyntaxError> {
        let mut simple = Simple {
            line: self.line,
            ..Simple::default()
        };
        loop {
            self.blanks();
            if let Some(redir) = self.redirection()? {
                simple.redirs.push(redir);
                continue;
            }
            match self.peek() {
                None => break,
                Some(c) if is_meta(c) && c != '(' => break,
                Some('(') => {
                    // `name()`: a function definition.
                    let Some(name) = function_name(&simple) else {
                        return Err(self.unexpected("("));
                    };
                    self.bump();
                    self.blanks();
                    if self.bump() != Some(')') {
                        return Err(self.unexpected("("));
                    }
                    self.linebreaks()?;
                    let body = self.command()?;
                    return Ok(Command::Function(name, Arc::new(body)));
                }
                Some(_) => {}
            }
            let word = self.word()?;
            if simple.words.is_empty() {
                if let Some((name, value)) = assignment(&word) {
                    simple.assigns.push((name, value));
                    continue;
                }
            }
            simple.words.push(word);
        }
        if simple.words.is_empty() && simple.assigns.is_empty() && simple.redirs.is_empty() {
            return match self.peek() {
                None => Err(self.eof()),
                Some(c) => Err(self.unexpected(&c.to_string())),
            };
        }
        Ok(Command::Simple(simple))
    }

    /// A redirection at the cursor (an optional descriptor number then an operator), if any.
    fn redirection(&mut self) -> Result<Option<Redir>, SyntaxError> {
        let mut digits = 0;
        while self.peek_at(digits).is_some_and(|c| c.is_ascii_digit()) {
            digits += 1;
        }
        if !matches!(self.peek_at(digits), Some('<' | '>')) {
            return Ok(None);
        }
        let fd = if digits > 0 {
            let text: String = self.chars[self.at..self.at + digits].iter().collect();
            Some(
                text.parse::<u32>()
                    .map_err(|_| SyntaxError(format!("bad file descriptor {text}")))?,
            )
        } else {
            None
        };
        self.at += digits;
        let first = self.bump();
        let op = match (first, self.peek()) {
            (Some('>'), Some('>')) => {
                self.bump();
                RedirOp::Append
            }
            (Some('>'), Some('|')) => {
                self.bump();
                RedirOp::Out
            }
            (Some('>'), Some('&')) => {
                self.bump();
                RedirOp::DupOut
            }
            (Some('>'), _) => RedirOp::Out,
            (Some('<'), Some('<')) => {
                self.bump();
                let strip_tabs = self.peek() == Some('-');
                if strip_tabs {
                    self.bump();
                }
                self.blanks();
                let (delimiter, quoted) = self.heredoc_delimiter()?;
                let body = Arc::new(OnceLock::new());
                self.heredocs.push(PendingHeredoc {
                    delimiter,
                    strip_tabs,
                    quoted,
                    body: Arc::clone(&body),
                });
                return Ok(Some(Redir {
                    fd,
                    op: RedirOp::Here,
                    target: body,
                }));
            }
            (Some('<'), Some('&')) => {
                self.bump();
                RedirOp::DupIn
            }
            (Some('<'), Some('>')) => {
                self.bump();
                RedirOp::ReadWrite
            }
            _ => RedirOp::In,
        };
        self.blanks();
        match self.peek() {
            None => return Err(self.eof()),
            Some(c) if is_meta(c) => return Err(self.unexpected(&c.to_string())),
            _ => {}
        }
        let word = self.word()?;
        let target = Arc::new(OnceLock::new());
        let _ = target.set(word);
        Ok(Some(Redir { fd, op, target }))
    }

    /// A here-document's delimiter with quotes removed, and whether any part was quoted.
    fn heredoc_delimiter(&mut self) -> Result<(String, bool), SyntaxError> {
        let mut delimiter = String::new();
        let mut quoted = false;
        while let Some(c) = self.peek().filter(|c| !is_meta(*c)) {
            self.bump();
            match c {
                '\'' | '"' => {
                    quoted = true;
                    loop {
                        match self.bump() {
                            Some(q) if q == c => break,
                            Some(other) => delimiter.push(other),
                            None => return Err(self.eof()),
                        }
                    }
                }
                '\\' => {
                    quoted = true;
                    if let Some(next) = self.bump() {
                        delimiter.push(next);
                    }
                }
                other => delimiter.push(other),
            }
        }
        if delimiter.is_empty() && !quoted {
            return Err(self.eof());
        }
        Ok((delimiter, quoted))
    }

    /// One word, up to an unquoted metacharacter.
    fn word(&mut self) -> Result<Word, SyntaxError> {
        let mut word = Builder::default();
        if self.peek() == Some('~') && self.peek_at(1).is_none_or(|c| c == '/' || is_meta(c)) {
            self.bump();
            word.parts.push(Part::Tilde);
        }
        while let Some(c) = self.peek() {
            if is_meta(c) {
                break;
            }
            self.bump();
            match c {
                '\'' => {
                    let mut text = String::new();
                    loop {
                        match self.bump() {
                            Some('\'') => break,
                            Some(c) => text.push(c),
                            None => return Err(SyntaxError("unterminated quoted string".into())),
                        }
                    }
                    word.text(&text, true);
                }
                '"' => self.double_quoted(&mut word)?,
                '\\' => match self.bump() {
                    Some('\n') => {}
                    Some(escaped) => word.text_char(escaped, true),
                    None => word.text_char('\\', false),
                },
                '$' => self.dollar(&mut word, false)?,
                '`' => self.backtick(&mut word, false)?,
                c => word.text_char(c, false),
            }
        }
        Ok(word.finish())
    }

    fn double_quoted(&mut self, word: &mut Builder) -> Result<(), SyntaxError> {
        let before = word.parts.len();
        loop {
            match self.bump() {
                Some('"') => {
                    if word.parts.len() == before {
                        word.text("", true);
                    }
                    return Ok(());
                }
                Some('\\') => match self.bump() {
                    Some('\n') => {}
                    Some(c @ ('$' | '`' | '"' | '\\')) => word.text_char(c, true),
                    Some(c) => {
                        word.text_char('\\', true);
                        word.text_char(c, true);
                    }
                    None => return Err(SyntaxError("unterminated quoted string".into())),
                },
                Some('$') => self.dollar(word, true)?,
                Some('`') => self.backtick(word, true)?,
                Some(c) => word.text_char(c, true),
                None => return Err(SyntaxError("unterminated quoted string".into())),
            }
        }
    }

    /// After a backtick: the command up to the closing one, parsed on its own.
    fn backtick(&mut self, word: &mut Builder, quoted: bool) -> Result<(), SyntaxError> {
        let mut source = String::new();
        loop {
            match self.bump() {
                Some('`') => break,
                Some('\\') => match self.bump() {
                    Some(c @ ('$' | '`' | '\\')) => source.push(c),
                    Some(c) => {
                        source.push('\\');
                        source.push(c);
                    }
                    None => return Err(self.eof()),
                },
                Some(c) => source.push(c),
                None => return Err(SyntaxError("unterminated `".into())),
            }
        }
        let list = parse(&source)?;
        word.parts.push(Part::Subst {
            list: Arc::new(list),
            quoted,
        });
        Ok(())
    }

    /// After a `$`: a parameter, a command substitution, arithmetic, or a literal `$`.
    fn dollar(&mut self, word: &mut Builder, quoted: bool) -> Result<(), SyntaxError> {
        match self.peek() {
            Some('(') if self.peek_at(1) == Some('(') => {
                self.at += 2;
                let mut depth = 0usize;
                let mut text = String::new();
                loop {
                    match self.bump() {
                        Some('(') => {
                            depth += 1;
                            text.push('(');
                        }
                        Some(')') if depth == 0 => {
                            if self.bump() != Some(')') {
                                return Err(SyntaxError("missing '))'".into()));
                            }
                            break;
                        }
                        Some(')') => {
                            depth -= 1;
                            text.push(')');
                        }
                        Some(c) => text.push(c),
                        None => return Err(SyntaxError("missing '))'".into())),
                    }
                }
                let expr = parse_quoted_text(&text, false)?;
                word.parts.push(Part::Arith { expr, quoted });
            }
            Some('(') => {
                self.bump();
                let list = self.list()?;
                self.linebreaks()?;
                if self.bump() != Some(')') {
                    return Err(SyntaxError("missing ')'".into()));
                }
                word.parts.push(Part::Subst {
                    list: Arc::new(list),
                    quoted,
                });
            }
            Some('{') => {
                self.bump();
                self.braced_param(word, quoted)?;
            }
            Some(c)
                if matches!(c, '?' | '@' | '*' | '#' | '$' | '!' | '-') || c.is_ascii_digit() =>
            {
                self.bump();
                word.param(c.to_string(), quoted);
            }
            Some(c) if c == '_' || c.is_ascii_alphabetic() => {
                let mut name = String::new();
                while let Some(c) = self
                    .peek()
                    .filter(|c| *c == '_' || c.is_ascii_alphanumeric())
                {
                    name.push(c);
                    self.at += 1;
                }
                word.param(name, quoted);
            }
            _ => word.text_char('$', quoted),
        }
        Ok(())
    }

    /// After `${`.
    fn braced_param(&mut self, word: &mut Builder, quoted: bool) -> Result<(), SyntaxError> {
        let length = self.peek() == Some('#')
            && self
                .peek_at(1)
                .is_some_and(|c| c != '}' && (c.is_ascii_alphanumeric() || "_?@*#$!-".contains(c)));
        if length {
            self.bump();
        }
        let mut name = String::new();
        match self.peek() {
            Some(c) if "?@*#$!-".contains(c) || c.is_ascii_digit() => {
                self.bump();
                name.push(c);
                while c.is_ascii_digit() && self.peek().is_some_and(|d| d.is_ascii_digit()) {
                    name.extend(self.bump());
                }
            }
            _ => {
                while let Some(c) = self
                    .peek()
                    .filter(|c| *c == '_' || c.is_ascii_alphanumeric())
                {
                    name.push(c);
                    self.bump();
                }
            }
        }
        if name.is_empty() {
            return Err(SyntaxError("bad substitution".into()));
        }
        let colon = !length && self.peek() == Some(':');
        if colon {
            self.bump();
        }
        let op = match self.peek() {
            Some('}') if !colon => {
                self.bump();
                None
            }
            Some(c) if !length => {
                self.bump();
                let op = match c {
                    '-' => ParamOp::Default,
                    '=' => ParamOp::Assign,
                    '?' => ParamOp::Error,
                    '+' => ParamOp::Alternative,
                    '%' if !colon && self.peek() == Some('%') => {
                        self.bump();
                        ParamOp::SuffixLong
                    }
                    '%' if !colon => ParamOp::SuffixShort,
                    '#' if !colon && self.peek() == Some('#') => {
                        self.bump();
                        ParamOp::PrefixLong
                    }
                    '#' if !colon => ParamOp::PrefixShort,
                    _ => return Err(SyntaxError("bad substitution".into())),
                };
                let argument = self.param_word(quoted)?;
                Some((op, colon, argument))
            }
            _ => return Err(SyntaxError("bad substitution".into())),
        };
        word.parts.push(Part::Param {
            name,
            length,
            op,
            quoted,
        });
        Ok(())
    }

    /// The word of `${NAME OP WORD}`, up to the closing brace.
    fn param_word(&mut self, quoted: bool) -> Result<Word, SyntaxError> {
        let mut word = Builder::default();
        loop {
            match self.bump() {
                Some('}') => return Ok(word.finish()),
                Some('\'') if !quoted => {
                    let mut text = String::new();
                    loop {
                        match self.bump() {
                            Some('\'') => break,
                            Some(c) => text.push(c),
                            None => return Err(SyntaxError("missing '}'".into())),
                        }
                    }
                    word.text(&text, true);
                }
                Some('"') => self.double_quoted(&mut word)?,
                Some('\\') => match self.bump() {
                    Some(c) => word.text_char(c, true),
                    None => return Err(SyntaxError("missing '}'".into())),
                },
                Some('$') => self.dollar(&mut word, quoted)?,
                Some('`') => self.backtick(&mut word, quoted)?,
                Some(c) => word.text_char(c, quoted),
                None => return Err(SyntaxError("missing '}'".into())),
            }
        }
    }
}

/// The name of a would-be function definition: one plain word and nothing else.
fn function_name(simple: &Simple) -> Option<String> {
    if !simple.assigns.is_empty() || !simple.redirs.is_empty() {
        return None;
    }
    match simple.words.as_slice() {
        [word] => match word.as_slice() {
            [Part::Text {
                text,
                quoted: false,
            }] if is_name(text) || !text.contains('=') => Some(text.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// `NAME=VALUE` as an assignment.
fn assignment(word: &Word) -> Option<(String, Word)> {
    let Some(Part::Text {
        text,
        quoted: false,
    }) = word.first()
    else {
        return None;
    };
    let (name, rest) = text.split_once('=')?;
    if !is_name(name) {
        return None;
    }
    let mut value = Vec::new();
    if !rest.is_empty() {
        value.push(Part::Text {
            text: rest.to_owned(),
            quoted: false,
        });
    }
    value.extend(word[1..].iter().cloned());
    if value.is_empty() {
        value.push(Part::Text {
            text: String::new(),
            quoted: true,
        });
    }
    Some((name.to_owned(), value))
}

/// Builds a word, merging adjacent text of the same quoting.
#[derive(Default)]
struct Builder {
    parts: Vec<Part>,
}

impl Builder {
    fn text_char(&mut self, c: char, quoted: bool) {
        let mut buffer = [0; 4];
        self.text(c.encode_utf8(&mut buffer), quoted);
    }

    fn text(&mut self, s: &str, quoted: bool) {
        if let Some(Part::Text { text, quoted: q }) = self.parts.last_mut() {
            if *q == quoted {
                text.push_str(s);
                return;
            }
        }
        self.parts.push(Part::Text {
            text: s.to_owned(),
            quoted,
        });
    }

    fn param(&mut self, name: String, quoted: bool) {
        self.parts.push(Part::Param {
            name,
            length: false,
            op: None,
            quoted,
        });
    }

    fn finish(self) -> Word {
        self.parts
    }

    fn finish_quoted(mut self) -> Word {
        if self.parts.is_empty() {
            self.text("", true);
        }
        self.parts
    }
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (the POSIX shell language, parsed by
    //! recursive descent straight from the characters); a command run through the fake's exec goes
    //! in fake-incus's tests.

    use super::*;

    fn parses(source: &str) -> bool {
        parse(source).is_ok()
    }

    #[test]
    fn the_posix_grammar_parses() {
        for source in [
            "echo a; echo b && c || d",
            "umask 77 && mkdir -p \"$(echo ~/.tmp)\" && echo ok=$(pwd)",
            "echo `echo a` $(echo $(echo b))",
            "(cd /tmp; pwd); pwd",
            "for i in 1 2; do echo $i; done",
            "for i\ndo echo $i\ndone",
            "if [ -d /tmp ]; then echo y; elif false; then :; else echo n; fi",
            "while false; do :; done; until true; do :; done",
            "case ab in a*|b) echo A;; (c) ;; *) echo z; esac",
            "f(){ echo f$1; return 3; }; f x",
            "f() (echo sub)",
            "x=1 y=$x; export x",
            "cat <<EOF\na $HOME\nEOF\necho after",
            "cat <<'E' >/tmp/x\n$HOME\nE",
            "cat <<-E\n\tx\n\tE",
            "echo ${x:-d} ${x#*/} ${#x} ${x:+a b}",
            "echo $((1 + 2 * (3 - 1)))",
            "! false | true",
            "a |\n b",
            "echo a 2>&1 >/dev/null 3>>f <in",
            "{ echo a; echo b; } > /tmp/o",
            "",
            "# comment only",
        ] {
            assert!(
                parses(source),
                "{source:?} should parse: {:?}",
                parse(source)
            );
        }
    }

    #[test]
    fn malformed_scripts_are_syntax_errors() {
        for source in [
            "echo a |",
            "| cat",
            "a && || b",
            "if true; then echo",
            "for 1 in a; do :; done",
            "echo $(",
            "echo 'open",
            "(echo",
            "a ;; b",
            "sleep 1 &",
            "fi",
            "echo ${",
        ] {
            assert!(!parses(source), "{source:?} should be refused");
        }
    }

    #[test]
    fn here_document_bodies_are_attached_to_their_redirection() {
        let list = parse("cat <<E\nx $y\nE\n").unwrap();
        let Command::Simple(simple) = &list[0].first.commands[0] else {
            panic!("a simple command");
        };
        let body = simple.redirs[0].target.get().unwrap();
        assert!(matches!(&body[1], Part::Param { name, .. } if name == "y"));
    }

    #[test]
    fn parsing_never_panics_on_short_metacharacter_strings() {
        let alphabet = [
            ' ', '\n', ';', '&', '|', '>', '<', '\'', '"', '\\', '$', '{', '}', '(', ')', '`', '~',
            '#', '2', 'a',
        ];
        let mut inputs = vec![String::new()];
        let mut last = inputs.clone();
        for _ in 0..3 {
            last = last
                .iter()
                .flat_map(|p| alphabet.iter().map(move |c| format!("{p}{c}")))
                .collect();
            inputs.extend(last.iter().cloned());
        }
        let accepted = inputs.iter().filter(|i| parse(i).is_ok()).count();
        assert!(accepted > 100, "only {accepted} parsed");
    }
}
