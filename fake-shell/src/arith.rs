//! `$((...))`: integer arithmetic with the C operators the shell has (no assignment), variables read
//! by name.

use crate::shell::Shell;

/// Evaluates an expanded arithmetic expression.
pub(crate) fn eval(text: &str, shell: &Shell) -> Result<i64, String> {
    let tokens = tokens(text)?;
    let mut parser = Parser {
        tokens,
        at: 0,
        shell,
        depth: 0,
    };
    let value = parser.ternary()?;
    match parser.tokens.get(parser.at) {
        None => Ok(value),
        Some(token) => Err(format!("unexpected {token:?}")),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Number(i64),
    Name(String),
    Op(&'static str),
}

const OPS: &[&str] = &[
    "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+", "-", "*", "/", "%", "<", ">", "&", "|",
    "^", "!", "~", "(", ")", "?", ":",
];

fn tokens(text: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && chars[i].is_ascii_alphanumeric() {
                i += 1;
            }
            let literal: String = chars[start..i].iter().collect();
            out.push(Token::Number(number(&literal).ok_or(literal)?));
        } else if c == '_' || c.is_ascii_alphabetic() {
            let start = i;
            while i < chars.len() && (chars[i] == '_' || chars[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            out.push(Token::Name(chars[start..i].iter().collect()));
        } else {
            let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
            let op = OPS
                .iter()
                .find(|op| rest.starts_with(**op))
                .ok_or_else(|| format!("{c}"))?;
            i += op.len();
            out.push(Token::Op(op));
        }
    }
    Ok(out)
}

/// A C integer literal: decimal, `0x` hex or `0` octal.
fn number(literal: &str) -> Option<i64> {
    if let Some(hex) = literal
        .strip_prefix("0x")
        .or_else(|| literal.strip_prefix("0X"))
    {
        return i64::from_str_radix(hex, 16).ok();
    }
    if literal.len() > 1 && literal.starts_with('0') {
        return i64::from_str_radix(&literal[1..], 8).ok();
    }
    literal.parse().ok()
}

struct Parser<'a> {
    tokens: Vec<Token>,
    at: usize,
    shell: &'a Shell,
    depth: usize,
}

/// Binary operators by precedence, loosest first.
const LEVELS: &[&[&str]] = &[
    &["||"],
    &["&&"],
    &["|"],
    &["^"],
    &["&"],
    &["==", "!="],
    &["<", ">", "<=", ">="],
    &["<<", ">>"],
    &["+", "-"],
    &["*", "/", "%"],
];

impl Parser<'_> {
    fn peek_op(&self) -> Option<&'static str> {
        match self.tokens.get(self.at) {
            Some(Token::Op(op)) => Some(op),
            _ => None,
        }
    }

    fn ternary(&mut self) -> Result<i64, String> {
        let cond = self.binary(0)?;
        if self.peek_op() == Some("?") {
            self.at += 1;
            let yes = self.ternary()?;
            if self.peek_op() != Some(":") {
                return Err("expected ':'".into());
            }
            self.at += 1;
            let no = self.ternary()?;
            return Ok(if cond != 0 { yes } else { no });
        }
        Ok(cond)
    }

    fn binary(&mut self, level: usize) -> Result<i64, String> {
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut left = self.binary(level + 1)?;
        while let Some(op) = self.peek_op().filter(|op| LEVELS[level].contains(op)) {
            self.at += 1;
            let right = self.binary(level + 1)?;
            left = apply(op, left, right)?;
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<i64, String> {
        self.depth += 1;
        if self.depth > 200 {
            return Err("expression too deep".into());
        }
        let value = match self.tokens.get(self.at).cloned() {
            Some(Token::Op("-")) => {
                self.at += 1;
                self.unary()?.wrapping_neg()
            }
            Some(Token::Op("+")) => {
                self.at += 1;
                self.unary()?
            }
            Some(Token::Op("!")) => {
                self.at += 1;
                i64::from(self.unary()? == 0)
            }
            Some(Token::Op("~")) => {
                self.at += 1;
                !self.unary()?
            }
            Some(Token::Op("(")) => {
                self.at += 1;
                let value = self.ternary()?;
                if self.peek_op() != Some(")") {
                    return Err("missing ')'".into());
                }
                self.at += 1;
                value
            }
            Some(Token::Number(n)) => {
                self.at += 1;
                n
            }
            Some(Token::Name(name)) => {
                self.at += 1;
                let value = self.shell.lookup(&name).unwrap_or_default();
                let value = value.trim();
                if value.is_empty() {
                    0
                } else {
                    number(value).ok_or_else(|| value.to_owned())?
                }
            }
            Some(token) => return Err(format!("unexpected {token:?}")),
            None => return Err("unexpected end".into()),
        };
        self.depth -= 1;
        Ok(value)
    }
}

fn apply(op: &str, a: i64, b: i64) -> Result<i64, String> {
    Ok(match op {
        "||" => i64::from(a != 0 || b != 0),
        "&&" => i64::from(a != 0 && b != 0),
        "|" => a | b,
        "^" => a ^ b,
        "&" => a & b,
        "==" => i64::from(a == b),
        "!=" => i64::from(a != b),
        "<" => i64::from(a < b),
        ">" => i64::from(a > b),
        "<=" => i64::from(a <= b),
        ">=" => i64::from(a >= b),
        "<<" => a.wrapping_shl(b as u32),
        ">>" => a.wrapping_shr(b as u32),
        "+" => a.wrapping_add(b),
        "-" => a.wrapping_sub(b),
        "*" => a.wrapping_mul(b),
        "/" | "%" if b == 0 => return Err("divide by zero".into()),
        "/" => a.wrapping_div(b),
        "%" => a.wrapping_rem(b),
        _ => return Err(op.to_owned()),
    })
}
