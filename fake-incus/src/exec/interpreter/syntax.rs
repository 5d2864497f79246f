//! `sh` syntax: a tokenizer and a parser for the small language the fake understands. A script is a flat
//! list of simple commands joined by `;`, newlines, `&&` and `||`, each with words (quoted with `'…'`,
//! `"…"` or `\`, with `$NAME`, `${NAME}`, `$?`, `$0`…`$9` and a leading `~` expanded) and output
//! redirections `>&2`, `2>&1`, `N>/dev/null`. Anything else is a syntax error, never a guess.

use std::fmt;

/// Why a script was refused; printed as `sh: syntax error: <message>` with exit status 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SyntaxError(pub(super) String);

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn unsupported(what: &str) -> SyntaxError {
    SyntaxError(format!("{what} not supported by the fake's shell"))
}

/// A piece of a word before expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Part {
    /// Literal text; `quoted` text keeps an empty word alive (`""`).
    Text { text: String, quoted: bool },
    /// A parameter: a name, a digit (positional) or `?`. Unquoted values are split on blanks.
    Param { name: String, quoted: bool },
}

/// A word: parts joined without separators.
pub(super) type Word = Vec<Part>;

/// Where a redirected descriptor goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Target {
    /// `N>&M`: the current destination of descriptor M (1 or 2).
    Fd(u8),
    /// `N>/dev/null`.
    Null,
}

/// `N>&M` or `N>/dev/null` for N in 1, 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Redirect {
    pub(super) fd: u8,
    pub(super) target: Target,
}

/// A simple command: words and redirections in the order written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Command {
    pub(super) words: Vec<Word>,
    pub(super) redirects: Vec<Redirect>,
}

impl Command {
    fn is_empty(&self) -> bool {
        self.words.is_empty() && self.redirects.is_empty()
    }
}

/// When a step runs, given the status of the last command that ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Condition {
    Always,
    IfSuccess,
    IfFailure,
}

impl Condition {
    pub(super) fn allows(self, last_status: i32) -> bool {
        match self {
            Condition::Always => true,
            Condition::IfSuccess => last_status == 0,
            Condition::IfFailure => last_status != 0,
        }
    }
}

/// One pipeline of a script (`a | b | c`, or a single command) and the condition under which it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Step {
    pub(super) condition: Condition,
    /// The commands of the pipeline, left to right; never empty.
    pub(super) pipeline: Vec<Command>,
    /// How many newlines precede it in the script (busybox's `sh` reports this as the line).
    pub(super) line: usize,
}

/// A parsed script: steps run left to right; `&&` and `||` have equal precedence, as in `sh`, and bind
/// looser than `|`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Script {
    pub(super) steps: Vec<Step>,
}

/// Parses a whole script (`sh -c LINE` or a script read from stdin).
pub(super) fn parse(source: &str) -> Result<Script, SyntaxError> {
    let mut parser = Parser::default();
    for token in Lexer::new(source).tokens()? {
        parser.push(token)?;
    }
    parser.finish()
}

const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for",
    "in", "{", "}", "!", "function", "select",
];

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(Word),
    Redirect(Redirect),
    Semicolon,
    Newline,
    And,
    Or,
    Pipe,
}

#[derive(Default)]
struct Parser {
    steps: Vec<Step>,
    /// The commands of the current pipeline before `current`.
    piped: Vec<Command>,
    current: Command,
    condition: Option<Condition>,
    /// Newlines seen so far.
    newlines: usize,
    /// The line of the current pipeline's first word.
    start: Option<usize>,
}

impl Parser {
    fn push(&mut self, token: Token) -> Result<(), SyntaxError> {
        match token {
            Token::Word(word) => {
                if self.current.words.is_empty() {
                    check_command_name(&word)?;
                }
                self.start.get_or_insert(self.newlines);
                self.current.words.push(word);
            }
            Token::Redirect(redirect) => self.current.redirects.push(redirect),
            Token::Newline if self.current.is_empty() => self.newlines += 1,
            Token::Newline => {
                self.end_command(";", Condition::Always)?;
                self.newlines += 1;
            }
            Token::Semicolon => self.end_command(";", Condition::Always)?,
            Token::And => self.end_command("&&", Condition::IfSuccess)?,
            Token::Or => self.end_command("||", Condition::IfFailure)?,
            Token::Pipe => self.pipe()?,
        }
        Ok(())
    }

    /// `|`: the current command feeds the next one; a newline may follow, as in `sh`.
    fn pipe(&mut self) -> Result<(), SyntaxError> {
        if self.current.is_empty() {
            return Err(SyntaxError("unexpected \"|\"".into()));
        }
        self.piped.push(std::mem::take(&mut self.current));
        Ok(())
    }

    fn end_command(&mut self, operator: &str, next: Condition) -> Result<(), SyntaxError> {
        if self.current.is_empty() {
            return Err(SyntaxError(format!("unexpected \"{operator}\"")));
        }
        let mut pipeline = std::mem::take(&mut self.piped);
        pipeline.push(std::mem::take(&mut self.current));
        let condition = self.condition.replace(next).unwrap_or(Condition::Always);
        let line = self.start.take().unwrap_or(self.newlines);
        self.steps.push(Step {
            condition,
            pipeline,
            line,
        });
        Ok(())
    }

    fn finish(mut self) -> Result<Script, SyntaxError> {
        let dangling_connector = matches!(
            self.condition,
            Some(Condition::IfSuccess | Condition::IfFailure)
        );
        if !self.current.is_empty() {
            self.end_command(";", Condition::Always)?;
        } else if !self.piped.is_empty() || dangling_connector {
            return Err(SyntaxError("unexpected end of file".into()));
        }
        Ok(Script { steps: self.steps })
    }
}

/// Refuses reserved words and variable assignments where a command name is expected: they would mean
/// something the fake does not do.
fn check_command_name(word: &Word) -> Result<(), SyntaxError> {
    let Some(Part::Text {
        text,
        quoted: false,
    }) = word.first()
    else {
        return Ok(());
    };
    if word.len() == 1 && KEYWORDS.contains(&text.as_str()) {
        return Err(unsupported(&format!("\"{text}\"")));
    }
    if let Some((name, _)) = text.split_once('=') {
        if is_name(name) {
            return Err(unsupported("variable assignment"));
        }
    }
    Ok(())
}

fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

struct Lexer {
    chars: Vec<char>,
    at: usize,
}

impl Lexer {
    fn new(source: &str) -> Self {
        Self {
            chars: source.chars().collect(),
            at: 0,
        }
    }

    fn peek(&self) -> Option<char> {
        self.peek_at(0)
    }

    fn peek_at(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += 1;
        Some(c)
    }

    fn tokens(mut self) -> Result<Vec<Token>, SyntaxError> {
        let mut tokens = Vec::new();
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' => self.at += 1,
                '#' => self.skip_comment(),
                '\n' => {
                    self.at += 1;
                    tokens.push(Token::Newline);
                }
                ';' if self.peek_at(1) == Some(';') => return Err(unsupported("\";;\"")),
                ';' => {
                    self.at += 1;
                    tokens.push(Token::Semicolon);
                }
                '&' if self.peek_at(1) == Some('&') => {
                    self.at += 2;
                    tokens.push(Token::And);
                }
                '|' if self.peek_at(1) == Some('|') => {
                    self.at += 2;
                    tokens.push(Token::Or);
                }
                '&' => return Err(unsupported("background job (&)")),
                '|' if self.peek_at(1) == Some('&') => return Err(unsupported("\"|&\"")),
                '|' => {
                    self.at += 1;
                    tokens.push(Token::Pipe);
                }
                '(' | ')' => return Err(unsupported("subshell (…)")),
                '<' => return Err(unsupported("input redirection (<)")),
                '>' => tokens.push(Token::Redirect(self.redirect(1)?)),
                '0'..='9' if matches!(self.peek_at(1), Some('>' | '<')) => {
                    let fd = c.to_digit(10).unwrap_or(0) as u8;
                    self.at += 1;
                    if self.peek() == Some('<') {
                        return Err(unsupported("input redirection (<)"));
                    }
                    tokens.push(Token::Redirect(self.redirect(fd)?));
                }
                _ => tokens.push(Token::Word(self.word()?)),
            }
        }
        Ok(tokens)
    }

    fn skip_comment(&mut self) {
        while self.peek().is_some_and(|c| c != '\n') {
            self.at += 1;
        }
    }

    /// After the optional descriptor digit, at `>`: `>&M`, `>/dev/null` or `>>/dev/null`.
    fn redirect(&mut self, fd: u8) -> Result<Redirect, SyntaxError> {
        self.at += 1;
        if !(1..=2).contains(&fd) {
            return Err(unsupported(&format!("redirection of descriptor {fd}")));
        }
        if self.peek() == Some('&') {
            self.at += 1;
            let target = match self.bump() {
                Some('1') => 1,
                Some('2') => 2,
                _ => return Err(unsupported("redirection other than to 1, 2 or /dev/null")),
            };
            return Ok(Redirect {
                fd,
                target: Target::Fd(target),
            });
        }
        if self.peek() == Some('>') {
            self.at += 1;
        }
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.at += 1;
        }
        match self.word()?.as_slice() {
            [Part::Text { text, .. }] if text == "/dev/null" => Ok(Redirect {
                fd,
                target: Target::Null,
            }),
            _ => Err(unsupported(
                "redirection to a file (the fake has no filesystem; only /dev/null)",
            )),
        }
    }

    fn word(&mut self) -> Result<Word, SyntaxError> {
        let mut word = WordBuilder::default();
        if self.peek() == Some('~')
            && matches!(self.peek_at(1), None | Some('/' | ' ' | '\t' | '\n' | ';'))
        {
            self.at += 1;
            word.param("HOME".into(), true);
        }
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')' => break,
                '\'' => {
                    self.at += 1;
                    let text = self.until_single_quote()?;
                    word.text_str(&text, true);
                }
                '"' => {
                    self.at += 1;
                    self.double_quoted(&mut word)?;
                }
                '\\' => {
                    self.at += 1;
                    match self.bump() {
                        Some('\n') => {}
                        Some(escaped) => word.text(escaped, true),
                        None => word.text('\\', false),
                    }
                }
                '$' => {
                    self.at += 1;
                    self.dollar(&mut word, false)?;
                }
                '`' => return Err(unsupported("command substitution (`…`)")),
                _ => {
                    self.at += 1;
                    word.text(c, false);
                }
            }
        }
        Ok(word.finish())
    }

    fn until_single_quote(&mut self) -> Result<String, SyntaxError> {
        let mut text = String::new();
        loop {
            match self.bump() {
                Some('\'') => return Ok(text),
                Some(c) => text.push(c),
                None => return Err(SyntaxError("unterminated quoted string".into())),
            }
        }
    }

    fn double_quoted(&mut self, word: &mut WordBuilder) -> Result<(), SyntaxError> {
        word.text_str("", true);
        loop {
            match self.bump() {
                Some('"') => return Ok(()),
                Some('\\') => match self.bump() {
                    Some('\n') => {}
                    Some(c @ ('$' | '`' | '"' | '\\')) => word.text(c, true),
                    Some(c) => {
                        word.text('\\', true);
                        word.text(c, true);
                    }
                    None => return Err(SyntaxError("unterminated quoted string".into())),
                },
                Some('$') => self.dollar(word, true)?,
                Some('`') => return Err(unsupported("command substitution (`…`)")),
                Some(c) => word.text(c, true),
                None => return Err(SyntaxError("unterminated quoted string".into())),
            }
        }
    }

    /// After a `$`: a parameter, or a literal `$` when no parameter follows.
    fn dollar(&mut self, word: &mut WordBuilder, quoted: bool) -> Result<(), SyntaxError> {
        match self.peek() {
            Some('{') => {
                self.at += 1;
                let mut name = String::new();
                loop {
                    match self.bump() {
                        Some('}') => break,
                        Some(c) => name.push(c),
                        None => return Err(SyntaxError("missing '}'".into())),
                    }
                }
                if !(is_name(&name) || is_special_parameter(&name)) {
                    return Err(unsupported(&format!("parameter expansion ${{{name}}}")));
                }
                word.param(name, quoted);
            }
            Some(c) if c == '?' || c.is_ascii_digit() => {
                self.at += 1;
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
            Some('(') => return Err(unsupported("command substitution $(…)")),
            Some(c @ ('@' | '*' | '#' | '$' | '!' | '-')) => {
                return Err(unsupported(&format!("special parameter ${c}")))
            }
            _ => word.text('$', quoted),
        }
        Ok(())
    }
}

fn is_special_parameter(name: &str) -> bool {
    name == "?" || (name.len() == 1 && name.chars().all(|c| c.is_ascii_digit()))
}

/// Builds a word, merging adjacent text of the same quoting.
#[derive(Default)]
struct WordBuilder {
    parts: Vec<Part>,
}

impl WordBuilder {
    fn text(&mut self, c: char, quoted: bool) {
        let mut buffer = [0; 4];
        self.text_str(c.encode_utf8(&mut buffer), quoted);
    }

    fn text_str(&mut self, s: &str, quoted: bool) {
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
        self.parts.push(Part::Param { name, quoted });
    }

    fn finish(self) -> Word {
        self.parts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str, quoted: bool) -> Part {
        Part::Text {
            text: s.into(),
            quoted,
        }
    }

    fn conditions(script: &Script) -> Vec<Condition> {
        script.steps.iter().map(|s| s.condition).collect()
    }

    #[test]
    fn connectors_give_each_command_its_condition() {
        let script = parse("a; b && c || d\n\ne").unwrap();
        use Condition::*;
        assert_eq!(
            conditions(&script),
            vec![Always, Always, IfSuccess, IfFailure, Always]
        );
    }

    #[test]
    fn quotes_and_escapes_make_one_word() {
        let script = parse(r#"echo 'a b'"c\"d"\ e"#).unwrap();
        let words = &script.steps[0].pipeline[0].words;
        assert_eq!(words.len(), 2);
        assert_eq!(words[1], vec![text("a bc\"d ", true), text("e", false)]);
    }

    #[test]
    fn empty_quotes_are_a_word() {
        let script = parse("echo '' \"\"").unwrap();
        assert_eq!(script.steps[0].pipeline[0].words.len(), 3);
    }

    #[test]
    fn parameters_are_recognised_in_words_and_double_quotes_only() {
        let script = parse(r#"echo $HOME "${USER}x" '$HOME' $? $1 a$"#).unwrap();
        let words = &script.steps[0].pipeline[0].words;
        assert_eq!(
            words[1],
            vec![Part::Param {
                name: "HOME".into(),
                quoted: false
            }]
        );
        assert_eq!(
            words[2],
            vec![
                text("", true),
                Part::Param {
                    name: "USER".into(),
                    quoted: true
                },
                text("x", true)
            ]
        );
        assert_eq!(words[3], vec![text("$HOME", true)]);
        assert!(matches!(&words[4][0], Part::Param { name, .. } if name == "?"));
        assert!(matches!(&words[5][0], Part::Param { name, .. } if name == "1"));
        assert_eq!(words[6], vec![text("a$", false)]);
    }

    #[test]
    fn redirections_to_descriptors_and_dev_null_are_parsed() {
        let script = parse("echo a >&2 2>&1 1>/dev/null 2> /dev/null").unwrap();
        let command = &script.steps[0].pipeline[0];
        assert_eq!(command.words.len(), 2);
        assert_eq!(
            command.redirects,
            vec![
                Redirect {
                    fd: 1,
                    target: Target::Fd(2)
                },
                Redirect {
                    fd: 2,
                    target: Target::Fd(1)
                },
                Redirect {
                    fd: 1,
                    target: Target::Null
                },
                Redirect {
                    fd: 2,
                    target: Target::Null
                },
            ]
        );
    }

    #[test]
    fn a_digit_inside_a_word_is_not_a_descriptor() {
        let script = parse("echo a2>&1").unwrap();
        let command = &script.steps[0].pipeline[0];
        assert_eq!(command.words[1], vec![text("a2", false)]);
        assert_eq!(command.redirects[0].fd, 1);
    }

    #[test]
    fn comments_and_line_continuations_are_skipped() {
        let script = parse("echo a # b; c\necho \\\nd").unwrap();
        assert_eq!(script.steps.len(), 2);
        assert_eq!(script.steps[1].pipeline[0].words[1], vec![text("d", false)]);
    }

    #[test]
    fn a_leading_tilde_is_home() {
        let script = parse("echo ~ ~/x a~").unwrap();
        let words = &script.steps[0].pipeline[0].words;
        assert!(matches!(&words[1][0], Part::Param { name, quoted: true } if name == "HOME"));
        assert_eq!(words[2][1], text("/x", false));
        assert_eq!(words[3], vec![text("a~", false)]);
    }

    #[test]
    fn unsupported_syntax_is_an_error_not_a_guess() {
        for line in [
            "echo a |",
            "| cat",
            "a | | b",
            "a | && b",
            "a |& b",
            "sleep 1 &",
            "(echo a)",
            "echo `id`",
            "echo $(id)",
            "cat < x",
            "echo a > file",
            "if true; then echo; fi",
            "X=1 echo",
            "echo ${X:-y}",
            "echo $@",
            "echo 'open",
            "echo \"open",
            "a &&",
            "; a",
            "a ;; b",
            "a && || b",
            "echo >&3",
        ] {
            assert!(parse(line).is_err(), "{line:?} should be refused");
        }
    }

    /// Every string of up to three characters from an alphabet of shell metacharacters.
    fn short_inputs(alphabet: &[char]) -> Vec<String> {
        let mut inputs = vec![String::new()];
        let mut last = inputs.clone();
        for _ in 0..3 {
            last = last
                .iter()
                .flat_map(|prefix| alphabet.iter().map(move |c| format!("{prefix}{c}")))
                .collect();
            inputs.extend(last.iter().cloned());
        }
        inputs
    }

    #[test]
    fn parsing_never_panics_on_short_metacharacter_strings() {
        let alphabet = [
            ' ', '\n', ';', '&', '|', '>', '<', '\'', '"', '\\', '$', '{', '}', '~', '#', '2', 'a',
            'é',
        ];
        let mut accepted = 0;
        for input in short_inputs(&alphabet) {
            if parse(&input).is_ok() {
                accepted += 1;
            }
        }
        assert!(accepted > 100, "only {accepted} inputs parsed");
    }

    #[test]
    fn pipes_bind_tighter_than_connectors_and_may_end_a_line() {
        let script = parse("a | b && c | d\n e |\n f").unwrap();
        let lengths: Vec<usize> = script.steps.iter().map(|s| s.pipeline.len()).collect();
        assert_eq!(lengths, [2, 2, 2]);
        assert_eq!(
            conditions(&script),
            [Condition::Always, Condition::IfSuccess, Condition::Always]
        );
        assert_eq!(script.steps[0].pipeline[1].words[0], vec![text("b", false)]);
    }

    #[test]
    fn trailing_separators_and_blank_lines_are_allowed() {
        assert_eq!(parse("a;").unwrap().steps.len(), 1);
        assert_eq!(parse("\n a &&\n b \n").unwrap().steps.len(), 2);
        assert_eq!(parse("").unwrap().steps.len(), 0);
    }
}
