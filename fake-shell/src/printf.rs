//! `printf` formatting and the backslash escapes shared with `echo -e`, following busybox (the shell of
//! the reference image): the format is reused while arguments remain, a bad number prints `0` and makes
//! the status 1, and `\c` stops all output.

/// Which backslash escapes apply: the format string's (`\NNN` octal) or `%b`/`echo -e`'s (`\0NNN`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Escapes {
    Format,
    Argument,
}

/// Output so far, and whether `\c` asked to stop.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Rendered {
    pub(super) bytes: Vec<u8>,
    pub(super) stopped: bool,
}

/// Expands the backslash escapes of `text`.
pub(super) fn unescape(text: &str, escapes: Escapes) -> Rendered {
    let mut rendered = Rendered::default();
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'\\' || at + 1 == bytes.len() {
            rendered.bytes.push(bytes[at]);
            at += 1;
            continue;
        }
        match escape(&bytes[at + 1..], escapes) {
            Some((Escaped::Byte(byte), used)) => {
                rendered.bytes.push(byte);
                at += 1 + used;
            }
            Some((Escaped::Stop, _)) => {
                rendered.stopped = true;
                return rendered;
            }
            None => {
                rendered.bytes.push(b'\\');
                at += 1;
            }
        }
    }
    rendered
}

enum Escaped {
    Byte(u8),
    Stop,
}

/// The escape after a backslash and how many bytes it used, or `None` to keep the backslash.
fn escape(rest: &[u8], escapes: Escapes) -> Option<(Escaped, usize)> {
    let simple = match rest.first()? {
        b'\\' => b'\\',
        b'a' => 0x07,
        b'b' => 0x08,
        b'e' => 0x1b,
        b'f' => 0x0c,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'v' => 0x0b,
        b'c' => return Some((Escaped::Stop, 1)),
        b'x' => {
            let (value, digits) = number(&rest[1..], 16, 2);
            return (digits > 0).then_some((Escaped::Byte(value as u8), 1 + digits));
        }
        b'0' if escapes == Escapes::Argument => {
            let (value, digits) = number(&rest[1..], 8, 3);
            return Some((Escaped::Byte(value as u8), 1 + digits));
        }
        b'0'..=b'7' if escapes == Escapes::Format => {
            let (value, digits) = number(rest, 8, 3);
            return Some((Escaped::Byte(value as u8), digits));
        }
        _ => return None,
    };
    Some((Escaped::Byte(simple), 1))
}

/// Reads up to `max` digits of `radix`: the value and how many digits were used.
fn number(digits: &[u8], radix: u32, max: usize) -> (u32, usize) {
    let mut value = 0;
    let mut used = 0;
    for &d in digits.iter().take(max) {
        match (d as char).to_digit(radix) {
            Some(v) => {
                value = value * radix + v;
                used += 1;
            }
            None => break,
        }
    }
    (value, used)
}

/// The result of `printf FORMAT ARGS...`: output, and messages for arguments that were not numbers.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Printed {
    pub(super) bytes: Vec<u8>,
    pub(super) bad_numbers: Vec<String>,
}

/// Formats like `printf`; an invalid conversion is an error (nothing should be printed).
pub(super) fn printf(format: &str, args: &[String]) -> Result<Printed, String> {
    let mut printer = Printer {
        args,
        next: 0,
        printed: Printed::default(),
    };
    loop {
        let before = printer.next;
        if printer.render(format)? {
            break;
        }
        if printer.next == before || printer.next >= args.len() {
            break;
        }
    }
    Ok(printer.printed)
}

struct Printer<'a> {
    args: &'a [String],
    next: usize,
    printed: Printed,
}

/// A conversion specification: `%[flags][width][.precision]conversion`.
#[derive(Default)]
struct Spec {
    left: bool,
    zero: bool,
    plus: bool,
    space: bool,
    alternate: bool,
    width: usize,
    precision: Option<usize>,
}

impl Printer<'_> {
    /// Renders the format once; `true` when `\c` stopped all output.
    fn render(&mut self, format: &str) -> Result<bool, String> {
        let bytes = format.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            match bytes[at] {
                b'%' => {
                    let (spec, conversion, used) = parse_spec(&bytes[at + 1..])
                        .ok_or_else(|| format!("{}: invalid format", &format[at..]))?;
                    at += 1 + used;
                    if self.convert(&spec, conversion)? {
                        return Ok(true);
                    }
                }
                b'\\' => {
                    let end = escape_end(bytes, at);
                    let rendered = unescape(&format[at..end], Escapes::Format);
                    self.printed.bytes.extend(rendered.bytes);
                    if rendered.stopped {
                        return Ok(true);
                    }
                    at = end;
                }
                byte => {
                    self.printed.bytes.push(byte);
                    at += 1;
                }
            }
        }
        Ok(false)
    }

    fn arg(&mut self) -> &str {
        let arg = self.args.get(self.next).map_or("", String::as_str);
        self.next += 1;
        arg
    }

    /// Applies one conversion; `true` when a `%b` argument's `\c` stopped all output.
    fn convert(&mut self, spec: &Spec, conversion: u8) -> Result<bool, String> {
        let field = match conversion {
            b'%' => {
                self.printed.bytes.push(b'%');
                return Ok(false);
            }
            b's' => truncate(self.arg().as_bytes().to_vec(), spec.precision),
            b'b' => {
                let rendered = unescape(self.arg(), Escapes::Argument);
                let stopped = rendered.stopped;
                let field = truncate(rendered.bytes, spec.precision);
                self.printed.bytes.extend(pad(spec, field, 0));
                return Ok(stopped);
            }
            b'c' => self
                .arg()
                .chars()
                .next()
                .map_or_else(Vec::new, |c| c.to_string().into_bytes()),
            b'd' | b'i' => {
                let value = self.integer();
                integer(spec, value < 0, value.unsigned_abs(), 10, false)
            }
            b'u' | b'o' | b'x' | b'X' => {
                let value = self.integer() as u64;
                let radix = if conversion == b'o' {
                    8
                } else if conversion == b'u' {
                    10
                } else {
                    16
                };
                integer(spec, false, value, radix, conversion == b'X')
            }
            b'f' | b'F' => {
                let value = self.float();
                let mut text = format!("{:.*}", spec.precision.unwrap_or(6), value.abs());
                if value.is_sign_negative() {
                    text.insert(0, '-');
                } else if spec.plus {
                    text.insert(0, '+');
                }
                text.into_bytes()
            }
            other => return Err(format!("%{}: invalid format", other as char)),
        };
        let sign_len = usize::from(matches!(field.first(), Some(b'-' | b'+' | b' ')));
        self.printed.bytes.extend(pad(spec, field, sign_len));
        Ok(false)
    }

    /// The next argument as an integer: decimal, `0x` hex, `0` octal or `'c` (a character's code).
    fn integer(&mut self) -> i64 {
        let arg = self.arg().to_owned();
        parse_integer(&arg).unwrap_or_else(|| {
            self.printed.bad_numbers.push(arg);
            0
        })
    }

    fn float(&mut self) -> f64 {
        let arg = self.arg().to_owned();
        match arg.trim_start().parse::<f64>() {
            Ok(value) => value,
            Err(_) => {
                self.printed.bad_numbers.push(arg);
                0.0
            }
        }
    }
}

/// Where the escape starting at `at` ends: `\` and the longest escape body (at most 4 bytes).
fn escape_end(bytes: &[u8], at: usize) -> usize {
    let rest = &bytes[at + 1..];
    let used = match rest.first() {
        Some(b'x') => 1 + number(&rest[1..], 16, 2).1,
        Some(b'0'..=b'7') => number(rest, 8, 3).1,
        Some(_) => std::str::from_utf8(rest)
            .ok()
            .and_then(|r| r.chars().next())
            .map_or(1, char::len_utf8),
        None => 0,
    };
    at + 1 + used
}

fn parse_spec(bytes: &[u8]) -> Option<(Spec, u8, usize)> {
    let mut spec = Spec::default();
    let mut at = 0;
    while let Some(flag) = bytes.get(at) {
        match flag {
            b'-' => spec.left = true,
            b'0' => spec.zero = true,
            b'+' => spec.plus = true,
            b' ' => spec.space = true,
            b'#' => spec.alternate = true,
            _ => break,
        }
        at += 1;
    }
    let (width, used) = decimal(&bytes[at..]);
    spec.width = width;
    at += used;
    if bytes.get(at) == Some(&b'.') {
        let (precision, used) = decimal(&bytes[at + 1..]);
        spec.precision = Some(precision);
        at += 1 + used;
    }
    let conversion = *bytes.get(at)?;
    Some((spec, conversion, at + 1))
}

fn decimal(bytes: &[u8]) -> (usize, usize) {
    let used = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    let value = bytes[..used].iter().fold(0usize, |v, d| {
        v.saturating_mul(10).saturating_add(usize::from(d - b'0'))
    });
    (value.min(4096), used)
}

fn parse_integer(arg: &str) -> Option<i64> {
    let text = arg.trim_start();
    if let Some(quoted) = text.strip_prefix(['\'', '"']) {
        return Some(quoted.chars().next().map_or(0, |c| i64::from(u32::from(c))));
    }
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let (radix, digits) = if let Some(hex) = digits.strip_prefix("0x").or(digits.strip_prefix("0X"))
    {
        (16, hex)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = u64::from_str_radix(digits, radix).ok()?;
    if negative {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}

fn integer(spec: &Spec, negative: bool, magnitude: u64, radix: u32, upper: bool) -> Vec<u8> {
    let mut digits = match radix {
        8 => format!("{magnitude:o}"),
        16 if upper => format!("{magnitude:X}"),
        16 => format!("{magnitude:x}"),
        _ => magnitude.to_string(),
    };
    if let Some(precision) = spec.precision {
        if digits.len() < precision {
            digits.insert_str(0, &"0".repeat(precision - digits.len()));
        }
    }
    if spec.alternate && radix == 8 && !digits.starts_with('0') {
        digits.insert(0, '0');
    }
    if spec.alternate && radix == 16 && magnitude != 0 {
        digits.insert_str(0, if upper { "0X" } else { "0x" });
    }
    let sign = if negative {
        "-"
    } else if spec.plus && radix == 10 {
        "+"
    } else if spec.space && radix == 10 {
        " "
    } else {
        ""
    };
    format!("{sign}{digits}").into_bytes()
}

fn truncate(mut bytes: Vec<u8>, precision: Option<usize>) -> Vec<u8> {
    if let Some(precision) = precision {
        bytes.truncate(precision);
    }
    bytes
}

/// Pads to the width: spaces on the right with `-`, zeros after the sign with `0` (numbers only),
/// spaces on the left otherwise.
fn pad(spec: &Spec, mut field: Vec<u8>, sign_len: usize) -> Vec<u8> {
    let missing = spec.width.saturating_sub(field.len());
    if missing == 0 {
        return field;
    }
    if spec.left {
        field.resize(field.len() + missing, b' ');
        field
    } else if spec.zero && spec.precision.is_none() && field.iter().any(u8::is_ascii_digit) {
        field.splice(sign_len..sign_len, std::iter::repeat_n(b'0', missing));
        field
    } else {
        let mut padded = vec![b' '; missing];
        padded.extend(field);
        padded
    }
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (`printf` formatting and the backslash
    //! escapes shared with `echo -e`); a command run through the fake's exec goes in fake-incus's
    //! tests.

    use super::*;

    fn run(format: &str, args: &[&str]) -> (String, Vec<String>) {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let printed = printf(format, &args).unwrap();
        (
            String::from_utf8(printed.bytes).unwrap(),
            printed.bad_numbers,
        )
    }

    #[test]
    fn printf_reuses_format_for_extra_arguments() {
        assert_eq!(run("%s-%d\n", &["a", "1", "b", "2"]).0, "a-1\nb-2\n");
    }

    #[test]
    fn printf_missing_arguments_are_empty_strings_and_bad_numbers() {
        // busybox prints `0` and complains about the empty number too.
        let (out, bad) = run("%s-%d\n", &["a", "1", "c"]);
        assert_eq!(out, "a-1\nc-0\n");
        assert_eq!(bad, vec![String::new()]);
    }

    #[test]
    fn printf_format_without_conversions_is_printed_once() {
        assert_eq!(run("x\n", &["a", "b"]).0, "x\n");
    }

    #[test]
    fn printf_bad_numbers_print_zero_and_are_reported() {
        let (out, bad) = run("%d %d\n", &["abc", "3x"]);
        assert_eq!(out, "0 0\n");
        assert_eq!(bad, vec!["abc".to_string(), "3x".to_string()]);
    }

    #[test]
    fn printf_numbers_accept_hex_octal_sign_and_character_codes() {
        assert_eq!(
            run("%d %d %d %d %d", &["0x1f", "010", "-5", "+7", "'A"]).0,
            "31 8 -5 7 65"
        );
    }

    #[test]
    fn printf_flags_width_and_precision_match_busybox() {
        let (out, _) = run(
            "%c|%x|%o|%5.2s|%+d|%05d|%-3d|%X|%#x|%.3d|%5s\n",
            &[
                "abc", "255", "8", "abcdef", "3", "42", "7", "255", "255", "5", "ab",
            ],
        );
        assert_eq!(out, "a|ff|10|   ab|+3|00042|7  |FF|0xff|005|   ab\n");
        assert_eq!(run("%05d", &["-42"]).0, "-0042");
    }

    #[test]
    fn printf_percent_b_expands_escapes_in_the_argument_but_percent_s_does_not() {
        assert_eq!(run("%b|%s\n", &["a\\tb", "c\\td"]).0, "a\tb|c\\td\n");
        assert_eq!(run("%b", &["p\\0101q"]).0, "pAq");
    }

    #[test]
    fn printf_format_escapes_include_hex_and_octal() {
        assert_eq!(run("x\\x41\\101\\t\\\\\\n", &[]).0, "xAA\t\\\n");
        let bytes = printf("\\xff\\0", &[]).unwrap().bytes;
        assert_eq!(bytes, vec![0xff, 0]);
    }

    #[test]
    fn printf_backslash_c_stops_all_output() {
        assert_eq!(run("a\\c b\n", &[]).0, "a");
        assert_eq!(run("%b-%s\n", &["x\\cy", "z"]).0, "x");
    }

    #[test]
    fn printf_percent_percent_and_floats() {
        assert_eq!(run("100%% %.2f %f", &["1.5", "2"]).0, "100% 1.50 2.000000");
    }

    #[test]
    fn printf_invalid_conversion_is_an_error() {
        assert!(printf("%z", &[]).is_err());
        assert!(printf("abc %", &[]).is_err());
    }

    #[test]
    fn printf_never_panics_on_odd_formats() {
        for format in [
            "\\é", "%é", "%", "%5", "\\x", "\\0", "%.", "%-", "é%sé", "\\",
        ] {
            let _ = printf(format, &["é".to_string(), "1".to_string()]);
        }
        assert_eq!(run("\\é%s", &["é"]).0, "\\éé");
    }

    #[test]
    fn unknown_escapes_keep_their_backslash() {
        assert_eq!(unescape("a\\qb\\", Escapes::Argument).bytes, b"a\\qb\\");
    }
}
