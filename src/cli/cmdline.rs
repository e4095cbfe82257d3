//! Turning a typed line into words and options exactly as zkCli 3.8 does: its word regex
//! (`ZooKeeperMain.MyCommandOptions`), Apache commons-cli 1.5's `DefaultParser` for the
//! single-letter options, and Java's number parsing where zkCli uses it.
//!
//! Pure; knows no command names (see `commands`).

use regex::Regex;
use std::sync::OnceLock;

/// Splits a line the way zkCli does: a word is a run of non-blanks, or a `"..."` or `'...'`
/// string whose quotes are removed. An unmatched quote is skipped, a lone blank between
/// blanks can itself become a word: both follow from Java's regex, kept for compatibility.
pub fn words(line: &str) -> Vec<String> {
    static WORD: OnceLock<Regex> = OnceLock::new();
    // Java's \s and \S are ASCII-only: [ \t\n\x0B\f\r].
    let re = WORD.get_or_init(|| {
        Regex::new(r#"[ \t\n\x0B\x0C\r]*([^"'][^ \t\n\x0B\x0C\r]*|"[^"]*"|'[^']*')[ \t\n\x0B\x0C\r]*"#)
            .expect("constant regex")
    });
    re.captures_iter(line)
        .filter_map(|c| c.get(1))
        .map(|m| {
            let w = m.as_str();
            let quoted = w.len() >= 2 && (w.starts_with('"') || w.starts_with('\'')) && w.ends_with(&w[..1]);
            if quoted {
                w[1..w.len() - 1].to_string()
            } else {
                w.to_string()
            }
        })
        .collect()
}

/// One single-letter option of a command.
#[derive(Debug, Clone, Copy)]
pub struct OptSpec {
    pub name: char,
    pub takes_arg: bool,
}

pub const fn flag(name: char) -> OptSpec {
    OptSpec { name, takes_arg: false }
}

pub const fn with_arg(name: char) -> OptSpec {
    OptSpec { name, takes_arg: true }
}

/// A commons-cli `ParseException`; displayed as zkCli prints it (`cause.toString()`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptError {
    #[error("org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: {0}")]
    Unrecognized(String),
    #[error("org.apache.commons.cli.MissingArgumentException: Missing argument for option: {0}")]
    MissingArgument(char),
    /// A second option of an `OptionGroup` (`OptionGroup.setSelected`).
    #[error("org.apache.commons.cli.AlreadySelectedException: The option '{option}' was specified but an option from this group has already been selected: '{selected}'")]
    AlreadySelected { option: char, selected: char },
    /// A required `OptionGroup` with none of its options; the text is the group's `toString`.
    #[error("org.apache.commons.cli.MissingOptionException: Missing required option: {0}")]
    MissingGroup(String),
}

/// An `OptionGroup`: at most one of its options may be given; `required` needs one.
#[derive(Debug, Clone, Copy)]
pub struct Group<'a> {
    /// Each option with its description, in the order they were added to the group.
    pub options: &'a [(char, &'a str)],
    pub required: bool,
}

impl Group<'_> {
    /// `OptionGroup.toString`: `[-n num soft quota, -b bytes soft quota]`.
    fn describe(&self) -> String {
        let items: Vec<String> = self.options.iter().map(|(c, d)| format!("-{c} {d}")).collect();
        format!("[{}]", items.join(", "))
    }
}

/// The result of `DefaultParser.parse`: options in order of appearance and the other words.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    pub args: Vec<String>,
    opts: Vec<(char, Option<String>)>,
}

impl Parsed {
    pub fn has(&self, name: char) -> bool {
        self.opts.iter().any(|(n, _)| *n == name)
    }

    /// `CommandLine.getOptionValue`: the first value given for the option.
    pub fn value(&self, name: char) -> Option<&str> {
        self.opts.iter().filter(|(n, _)| *n == name).find_map(|(_, v)| v.as_deref())
    }
}

/// commons-cli's `Util.stripLeadingAndTrailingQuotes`.
fn strip_double_quotes(s: &str) -> String {
    if s.len() > 1 && s.starts_with('"') && s.ends_with('"') && !s[1..s.len() - 1].contains('"') {
        s[1..s.len() - 1].to_string()
    } else {
        s.to_string()
    }
}

/// Java's `Double.parseDouble` accepts it (commons-cli lets `-1` through as an option value).
fn is_java_double(s: &str) -> bool {
    let t = s.trim_matches(|c: char| c <= ' ');
    let unsigned = t.strip_prefix(['-', '+']).unwrap_or(t);
    if unsigned == "NaN" || unsigned == "Infinity" {
        return true;
    }
    if unsigned.is_empty() || !unsigned.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return false;
    }
    let body = unsigned.strip_suffix(['f', 'F', 'd', 'D']).unwrap_or(unsigned);
    !body.ends_with(['e', 'E']) && body.parse::<f64>().is_ok()
}

struct Parser<'a> {
    specs: &'a [OptSpec],
    out: Parsed,
    /// The option still waiting for its value (index into `out.opts`).
    pending: Option<usize>,
    group: Option<Group<'a>>,
    /// The group's option given so far.
    selected: Option<char>,
}

impl Parser<'_> {
    fn spec(&self, c: char) -> Option<OptSpec> {
        self.specs.iter().copied().find(|s| s.name == c)
    }

    fn is_short_option(&self, token: &str) -> bool {
        let Some(rest) = token.strip_prefix('-') else { return false };
        if rest.is_empty() {
            return false;
        }
        let name = rest.split('=').next().unwrap_or("");
        name.chars().next().is_some_and(|c| self.spec(c).is_some())
    }

    fn check_required(&self) -> Result<(), OptError> {
        match self.pending {
            Some(i) => Err(OptError::MissingArgument(self.out.opts[i].0)),
            None => Ok(()),
        }
    }

    fn handle_option(&mut self, spec: OptSpec) -> Result<(), OptError> {
        self.check_required()?;
        if self.group.is_some_and(|g| g.options.iter().any(|(c, _)| *c == spec.name)) {
            match self.selected {
                Some(sel) if sel != spec.name => {
                    return Err(OptError::AlreadySelected { option: spec.name, selected: sel })
                }
                _ => self.selected = Some(spec.name),
            }
        }
        self.out.opts.push((spec.name, None));
        self.pending = spec.takes_arg.then(|| self.out.opts.len() - 1);
        Ok(())
    }

    fn set_pending_value(&mut self, value: String) {
        if let Some(i) = self.pending.take() {
            self.out.opts[i].1 = Some(value);
        }
    }

    fn unknown(&mut self, token: &str) -> Result<(), OptError> {
        if token.starts_with('-') && token.chars().count() > 1 {
            return Err(OptError::Unrecognized(token.to_string()));
        }
        self.out.args.push(token.to_string());
        Ok(())
    }

    /// `handleShortAndLongOption` for a parser that has no long options.
    fn short(&mut self, token: &str) -> Result<(), OptError> {
        let t = &token[1..];
        let mut chars = t.chars();
        if let (Some(c), None) = (chars.next(), chars.next()) {
            return match self.spec(c) {
                Some(spec) => self.handle_option(spec),
                None => self.unknown(token),
            };
        }
        if let Some(eq) = t.find('=') {
            let (name, value) = (&t[..eq], &t[eq + 1..]);
            let mut nc = name.chars();
            return match (nc.next(), nc.next()) {
                (Some(c), None) => match self.spec(c) {
                    Some(spec) if spec.takes_arg => {
                        self.handle_option(spec)?;
                        self.set_pending_value(value.to_string());
                        Ok(())
                    }
                    _ => self.unknown(token),
                },
                _ => self.unknown(token),
            };
        }
        // -sw, -v3: concatenated options, the rest of the word is the value of one that takes it
        for (i, c) in t.char_indices() {
            let Some(spec) = self.spec(c) else { return self.unknown(token) };
            self.handle_option(spec)?;
            let rest = &t[i + c.len_utf8()..];
            if self.pending.is_some() && !rest.is_empty() {
                self.set_pending_value(rest.to_string());
                break;
            }
        }
        Ok(())
    }
}

/// `new DefaultParser().parse(options, words)`; `words` include the command name, which
/// becomes `args[0]` as in zkCli.
pub fn parse(specs: &[OptSpec], words: &[String]) -> Result<Parsed, OptError> {
    parse_with_group(specs, None, words)
}

/// `parse` with an `OptionGroup` among the options (`checkRequiredOptions` runs last).
pub fn parse_with_group<'a>(
    specs: &'a [OptSpec],
    group: Option<Group<'a>>,
    words: &[String],
) -> Result<Parsed, OptError> {
    let mut p = Parser { specs, out: Parsed::default(), pending: None, group, selected: None };
    let mut verbatim = false;
    for token in words {
        if verbatim {
            p.out.args.push(token.clone());
        } else if token == "--" {
            verbatim = true;
        } else if p.pending.is_some() && (!p.is_short_option(token) || is_java_double(token)) {
            p.set_pending_value(strip_double_quotes(token));
        } else if token.starts_with("--") {
            p.unknown(token)?;
        } else if token.starts_with('-') && token != "-" {
            p.short(token)?;
        } else {
            p.unknown(token)?;
        }
    }
    p.check_required()?;
    if let Some(g) = p.group.filter(|g| g.required && p.selected.is_none()) {
        return Err(OptError::MissingGroup(g.describe()));
    }
    Ok(p.out)
}

/// Java's `Integer.parseInt`; `Err` is the `NumberFormatException` message.
pub fn java_int(s: &str) -> Result<i32, String> {
    java_long(s).ok().and_then(|v| i32::try_from(v).ok()).ok_or_else(|| format!("For input string: \"{s}\""))
}

/// Java's `Long.parseLong` (ASCII digits, optional sign).
pub fn java_long(s: &str) -> Result<i64, String> {
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("For input string: \"{s}\""));
    }
    s.parse::<i64>().map_err(|_| format!("For input string: \"{s}\""))
}

/// Java's `Integer.decode` (what `redo` uses): decimal, `0x`/`#` hex, leading-zero octal.
pub fn java_decode(s: &str) -> Result<i32, String> {
    let err = || {
        if s.is_empty() {
            "Zero length string".to_string()
        } else {
            format!("For input string: \"{s}\"")
        }
    };
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (radix, digits) = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        (16, h)
    } else if let Some(h) = body.strip_prefix('#') {
        (16, h)
    } else if body.len() > 1 && body.starts_with('0') {
        (8, &body[1..])
    } else {
        (10, body)
    };
    if digits.is_empty() || digits.starts_with(['-', '+']) {
        return Err(err());
    }
    let magnitude = i64::from_str_radix(digits, radix).map_err(|_| err())?;
    let v = if neg { -magnitude } else { magnitude };
    i32::try_from(v).map_err(|_| err())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(line: &str) -> Vec<String> {
        words(line)
    }

    fn sv(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn words_follow_zkclis_regex() {
        assert_eq!(w("create /a \"hello world\""), sv(&["create", "/a", "hello world"]));
        assert_eq!(w("  get   /e1  "), sv(&["get", "/e1"]));
        assert_eq!(w("create /q 'single quoted'"), sv(&["create", "/q", "single quoted"]));
        assert_eq!(w("create /v \"unterminated"), sv(&["create", "/v", "unterminated"]));
        assert_eq!(w("create /w x\"y"), sv(&["create", "/w", "x\"y"]));
        assert_eq!(w("set /e6 \"\""), sv(&["set", "/e6", ""]));
        assert_eq!(w("   "), sv(&[" "]));
        assert!(w("\"").is_empty());
        assert!(w("").is_empty());
    }

    const SET: &[OptSpec] = &[flag('s'), with_arg('v')];

    #[test]
    fn options_follow_default_parser() {
        let p = parse(SET, &sv(&["set", "-sv", "2", "/e1", "y"])).unwrap();
        assert!(p.has('s'));
        assert_eq!(p.value('v'), Some("2"));
        assert_eq!(p.args, sv(&["set", "/e1", "y"]));
        assert_eq!(parse(SET, &sv(&["set", "-v2", "/a", "x"])).unwrap().value('v'), Some("2"));
        assert_eq!(parse(SET, &sv(&["set", "-v=3", "/a", "x"])).unwrap().value('v'), Some("3"));
        assert_eq!(parse(SET, &sv(&["set", "-v", "-1", "/a", "x"])).unwrap().value('v'), Some("-1"));
        assert_eq!(parse(SET, &sv(&["set", "-v"])), Err(OptError::MissingArgument('v')));
        assert_eq!(parse(SET, &sv(&["set", "-v", "-s"])), Err(OptError::MissingArgument('v')));
        assert_eq!(parse(SET, &sv(&["get", "--s", "/e1"])), Err(OptError::Unrecognized("--s".into())));
        assert_eq!(parse(SET, &sv(&["ls", "-x", "/e1"])), Err(OptError::Unrecognized("-x".into())));
        assert_eq!(parse(SET, &sv(&["ls", "-sx"])), Err(OptError::Unrecognized("-sx".into())));
        let dd = parse(SET, &sv(&["create", "--", "-s", "x"])).unwrap();
        assert_eq!(dd.args, sv(&["create", "-s", "x"]));
        assert!(!dd.has('s'));
        assert_eq!(parse(SET, &sv(&["x", "-"])).unwrap().args, sv(&["x", "-"]));
        assert_eq!(
            OptError::Unrecognized("-x".into()).to_string(),
            "org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: -x"
        );
    }

    #[test]
    fn java_numbers() {
        assert_eq!(java_int("12"), Ok(12));
        assert_eq!(java_int("-1"), Ok(-1));
        assert_eq!(java_int("+7"), Ok(7));
        assert_eq!(java_int("x").unwrap_err(), "For input string: \"x\"");
        assert_eq!(java_int("99999999999").unwrap_err(), "For input string: \"99999999999\"");
        assert_eq!(java_int("").unwrap_err(), "For input string: \"\"");
        assert!(java_long("1099511627775").is_ok());
        assert_eq!(java_decode("0x10"), Ok(16));
        assert_eq!(java_decode("010"), Ok(8));
        assert_eq!(java_decode("3"), Ok(3));
        assert!(java_decode("a").is_err());
        assert!(is_java_double("-1"));
        assert!(is_java_double("-1.5e3"));
        assert!(!is_java_double("-s"));
    }
}
