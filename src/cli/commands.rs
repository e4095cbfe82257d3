//! zkCli's command vocabulary: names and usage strings, and the parsing of one command's words
//! into a typed `Command` with zkCli's option rules, deprecation notes and usage errors.
//!
//! Parsing prints only what zkCli prints while parsing (deprecation notes, `ls -?` help); it
//! never talks to the server (see `exec`).

use super::cmdline::{self, flag, with_arg, OptSpec, Parsed};
use super::error::CliError;
use super::term::Term;
use crate::proto::WatcherType;

/// Every command zkCli knows with its option string, sorted as zkCli's usage lists them.
pub const USAGE: &[(&str, &str)] = &[
    (
        "addWatch",
        "[-m mode] path # optional mode is one of [PERSISTENT, PERSISTENT_RECURSIVE] - default is PERSISTENT_RECURSIVE",
    ),
    ("addauth", "scheme auth"),
    ("close", ""),
    ("config", "[-c] [-w] [-s]"),
    ("connect", "host:port"),
    ("create", "[-s] [-e] [-c] [-t ttl] path [data] [acl]"),
    ("delete", "[-v version] path"),
    ("deleteall", "path [-b batch size]"),
    ("delquota", "[-n|-b|-N|-B] path"),
    ("get", "[-s] [-w] path"),
    ("getAcl", "[-s] path"),
    ("getAllChildrenNumber", "path"),
    ("getEphemerals", "path"),
    ("history", ""),
    ("listquota", "path"),
    ("ls", "[-s] [-w] [-R] path"),
    ("printwatches", "on|off"),
    ("quit", ""),
    (
        "reconfig",
        "[-s] [-v version] [[-file path] | [-members serverID=host:port1:port2;port3[,...]*]] | \
         [-add serverId=host:port1:port2;port3[,...]]* [-remove serverId[,...]*]",
    ),
    ("redo", "cmdno"),
    ("removewatches", "path [-c|-d|-a] [-l]"),
    ("set", "[-s] [-v version] path data"),
    ("setAcl", "[-s] [-v version] [-R] path acl"),
    ("setquota", "-n|-b|-N|-B val path"),
    ("stat", "[-w] path"),
    ("sync", "path"),
    ("version", ""),
    ("whoami", ""),
];

pub fn is_known(name: &str) -> bool {
    USAGE.iter().any(|(n, _)| *n == name)
}

/// `CliCommand.getUsageStr()`: the name, a space, the option string.
pub fn usage_of(name: &str) -> String {
    let opts = USAGE.iter().find(|(n, _)| *n == name).map_or("", |(_, o)| o);
    format!("{name} {opts}")
}

/// `ZooKeeperMain.usage()`, printed to stderr for an unknown or empty command.
pub fn usage() -> String {
    let mut s = String::from("ZooKeeper -server host:port -client-configuration properties-file cmd args\n");
    for (name, opts) in USAGE {
        s.push_str(&format!("\t{name} {opts}\n"));
    }
    s
}

/// `AddWatchMode`; zkCli 3.8 keeps the last `-m` for later `addWatch` commands without one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddWatchMode {
    Persistent,
    PersistentRecursive,
}

impl AddWatchMode {
    /// The mode number of `AddWatchRequest`.
    pub fn wire(self) -> i32 {
        match self {
            AddWatchMode::Persistent => 0,
            AddWatchMode::PersistentRecursive => 1,
        }
    }
}

/// A parsed server command (the shell's own commands are handled in `shell`). Numbers stay
/// text until execution, where zkCli parses them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Ls {
        path: Option<String>,
        watch: bool,
        stat: bool,
        recursive: bool,
    },
    Get {
        path: String,
        watch: bool,
        stat: bool,
    },
    Stat {
        path: String,
        watch: bool,
    },
    Create(Create),
    Set {
        path: String,
        data: String,
        stat: bool,
        version: Option<String>,
    },
    Delete {
        path: String,
        version: Option<String>,
    },
    DeleteAll {
        path: String,
        batch: Option<String>,
    },
    GetAcl {
        path: String,
        stat: bool,
    },
    SetAcl {
        path: String,
        acl: String,
        stat: bool,
        version: Option<String>,
        recursive: bool,
    },
    Sync {
        path: String,
    },
    AddAuth {
        scheme: String,
        auth: Option<String>,
    },
    WhoAmI,
    GetAllChildrenNumber {
        path: Option<String>,
    },
    GetEphemerals {
        path: Option<String>,
    },
    AddWatch {
        path: String,
        mode: AddWatchMode,
    },
    RemoveWatches {
        path: String,
        kind: WatcherType,
        local: bool,
    },
    Config {
        client: bool,
        watch: bool,
        stat: bool,
    },
    Version,
    Close,
    /// `setquota -n|-b|-N|-B val path`: the option letter and its value (parsed at execution).
    SetQuota {
        path: String,
        limit: char,
        value: String,
    },
    ListQuota {
        path: String,
    },
    /// `delquota [-n|-b|-N|-B] path`: without an option the whole quota goes.
    DelQuota {
        path: String,
        limit: Option<char>,
    },
    /// Known to zkCli but not implemented by `zkr cli` (reconfig).
    Unsupported(String),
}

/// The option group of `setquota` and `delquota`, in the order zkCli adds the options.
const QUOTA_GROUP: &[(char, &str)] =
    &[('n', "num soft quota"), ('b', "bytes soft quota"), ('N', "num hard quota"), ('B', "bytes hard quota")];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Create {
    pub path: String,
    pub data: Option<String>,
    pub acl: Option<String>,
    pub ephemeral: bool,
    pub sequential: bool,
    pub container: bool,
    pub ttl: Option<String>,
}

fn opts(specs: &[OptSpec], words: &[String]) -> Result<Parsed, CliError> {
    cmdline::parse(specs, words).map_err(|e| CliError::Parse(e.to_string()))
}

/// The `cmd path [watch]` form of 3.4: zkCli overwrites the third word with `-w` and parses
/// again (even when that word was an option, which then changes the meaning; kept as is).
fn watch_compat(
    specs: &[OptSpec],
    words: &[String],
    p: Parsed,
    term: &mut Term,
    note: &str,
) -> Result<Parsed, CliError> {
    if p.args.len() <= 2 {
        return Ok(p);
    }
    let mut rewritten = words.to_vec();
    rewritten[2] = "-w".to_string();
    term.errln(note);
    opts(specs, &rewritten)
}

fn need(p: &Parsed, n: usize, name: &str) -> Result<(), CliError> {
    if p.args.len() < n {
        return Err(CliError::Parse(usage_of(name)));
    }
    Ok(())
}

fn arg(p: &Parsed, i: usize) -> Option<String> {
    p.args.get(i).cloned()
}

const LS: &[OptSpec] = &[flag('?'), flag('s'), flag('w'), flag('R')];
const LS_HELP: &str = "usage: ls [options] path\n -?   help\n -R   recurse\n -s   stat\n -w   watch\n";

/// Parses the words of a known command (`words[0]` is its name). `mode` is zkCli's remembered
/// `addWatch -m`.
pub fn parse(words: &[String], mode: &mut AddWatchMode, term: &mut Term) -> Result<Command, CliError> {
    let name = words.first().map(String::as_str).unwrap_or("");
    let path1 = |p: &Parsed| arg(p, 1).unwrap_or_default();
    Ok(match name {
        "ls" | "get" | "stat" => read_command(name, words, term)?,
        "create" => {
            let p = opts(&[flag('e'), flag('s'), flag('c'), with_arg('t')], words)?;
            need(&p, 2, name)?;
            Command::Create(Create {
                path: path1(&p),
                data: arg(&p, 2),
                acl: arg(&p, 3),
                ephemeral: p.has('e'),
                sequential: p.has('s'),
                container: p.has('c'),
                ttl: p.has('t').then(|| p.value('t').unwrap_or_default().to_string()),
            })
        }
        "set" => {
            let p = opts(&[flag('s'), with_arg('v')], words)?;
            need(&p, 3, name)?;
            Command::Set {
                path: path1(&p),
                data: arg(&p, 2).unwrap_or_default(),
                stat: p.has('s'),
                version: p.value('v').map(str::to_string),
            }
        }
        "delete" => {
            let p = opts(&[with_arg('v')], words)?;
            need(&p, 2, name)?;
            if p.args.len() > 2 {
                term.errln(
                    "'delete path [version]' has been deprecated. Please use 'delete [-v version] path' instead.",
                );
            }
            Command::Delete { path: path1(&p), version: p.value('v').map(str::to_string) }
        }
        "deleteall" => {
            let p = opts(&[with_arg('b')], words)?;
            need(&p, 2, name)?;
            Command::DeleteAll { path: path1(&p), batch: p.value('b').map(str::to_string) }
        }
        "getAcl" => {
            let p = opts(&[flag('s')], words)?;
            need(&p, 2, name)?;
            Command::GetAcl { path: path1(&p), stat: p.has('s') }
        }
        "setAcl" => {
            let p = opts(&[flag('s'), with_arg('v'), flag('R')], words)?;
            need(&p, 3, name)?;
            Command::SetAcl {
                path: path1(&p),
                acl: arg(&p, 2).unwrap_or_default(),
                stat: p.has('s'),
                version: p.value('v').map(str::to_string),
                recursive: p.has('R'),
            }
        }
        "sync" => {
            let p = opts(&[], words)?;
            need(&p, 2, name)?;
            Command::Sync { path: path1(&p) }
        }
        "addauth" => {
            let p = opts(&[], words)?;
            need(&p, 2, name)?;
            Command::AddAuth { scheme: path1(&p), auth: arg(&p, 2) }
        }
        "whoami" => Command::WhoAmI,
        "close" => Command::Close,
        "getAllChildrenNumber" => Command::GetAllChildrenNumber { path: arg(&opts(&[], words)?, 1) },
        "getEphemerals" => Command::GetEphemerals { path: arg(&opts(&[], words)?, 1) },
        "addWatch" | "removewatches" => watch_command(name, words, mode)?,
        "config" => {
            let p = opts(&[flag('s'), flag('w'), flag('c')], words)?;
            Command::Config { client: p.has('c'), watch: p.has('w'), stat: p.has('s') }
        }
        "setquota" | "listquota" | "delquota" => quota_command(name, words)?,
        "version" => {
            let p = opts(&[], words)?;
            if p.args.len() > 1 {
                return Err(CliError::Parse(usage_of(name)));
            }
            Command::Version
        }
        other => Command::Unsupported(other.to_string()),
    })
}

/// `ls`, `get`, `stat`: the reads, with zkCli's deprecated trailing `watch` argument.
fn read_command(name: &str, words: &[String], term: &mut Term) -> Result<Command, CliError> {
    let path1 = |p: &Parsed| arg(p, 1).unwrap_or_default();
    Ok(match name {
        "ls" => {
            let p = opts(LS, words)?;
            if p.has('?') {
                term.out(LS_HELP);
            }
            let p = watch_compat(
                LS,
                words,
                p,
                term,
                "'ls path [watch]' has been deprecated. Please use 'ls [-w] path' instead.",
            )?;
            Command::Ls { path: arg(&p, 1), watch: p.has('w'), stat: p.has('s'), recursive: p.has('R') }
        }
        "get" => {
            const S: &[OptSpec] = &[flag('s'), flag('w')];
            let p = opts(S, words)?;
            need(&p, 2, name)?;
            let p = watch_compat(
                S,
                words,
                p,
                term,
                "'get path [watch]' has been deprecated. Please use 'get [-s] [-w] path' instead.",
            )?;
            Command::Get { path: path1(&p), watch: p.has('w'), stat: p.has('s') }
        }
        "stat" => {
            const S: &[OptSpec] = &[flag('w')];
            let p = opts(S, words)?;
            need(&p, 2, name)?;
            let p = watch_compat(
                S,
                words,
                p,
                term,
                "'stat path [watch]' has been deprecated. Please use 'stat [-w] path' instead.",
            )?;
            Command::Stat { path: path1(&p), watch: p.has('w') }
        }
        _ => return Err(CliError::Parse(usage_of(name))),
    })
}

/// `addWatch` (remembering its mode, as zkCli does) and `removewatches`.
fn watch_command(name: &str, words: &[String], mode: &mut AddWatchMode) -> Result<Command, CliError> {
    let path1 = |p: &Parsed| arg(p, 1).unwrap_or_default();
    Ok(match name {
        "addWatch" => {
            let p = opts(&[with_arg('m')], words)?;
            if p.args.len() != 2 {
                return Err(CliError::Parse(usage_of(name)));
            }
            if p.has('m') {
                *mode = match p.value('m').unwrap_or_default().to_uppercase().as_str() {
                    "PERSISTENT" => AddWatchMode::Persistent,
                    "PERSISTENT_RECURSIVE" => AddWatchMode::PersistentRecursive,
                    _ => return Err(CliError::Parse(usage_of(name))),
                };
            }
            Command::AddWatch { path: path1(&p), mode: *mode }
        }
        "removewatches" => {
            let p = opts(&[flag('c'), flag('d'), flag('a'), flag('l')], words)?;
            need(&p, 2, name)?;
            let kind = if p.has('c') {
                WatcherType::Children
            } else if p.has('d') {
                WatcherType::Data
            } else {
                WatcherType::Any
            };
            Command::RemoveWatches { path: path1(&p), kind, local: p.has('l') }
        }
        _ => return Err(CliError::Parse(usage_of(name))),
    })
}

/// `setquota`, `listquota`, `delquota`.
fn quota_command(name: &str, words: &[String]) -> Result<Command, CliError> {
    let path1 = |p: &Parsed| arg(p, 1).unwrap_or_default();
    Ok(match name {
        "setquota" => {
            const S: &[OptSpec] = &[with_arg('n'), with_arg('b'), with_arg('N'), with_arg('B')];
            let group = cmdline::Group { options: QUOTA_GROUP, required: true };
            let p = cmdline::parse_with_group(S, Some(group), words).map_err(|e| CliError::Parse(e.to_string()))?;
            need(&p, 2, name)?;
            let limit = QUOTA_GROUP.iter().map(|(c, _)| *c).find(|c| p.has(*c)).unwrap_or('n');
            Command::SetQuota { path: path1(&p), limit, value: p.value(limit).unwrap_or_default().to_string() }
        }
        "listquota" => {
            let p = opts(&[], words)?;
            need(&p, 2, name)?;
            Command::ListQuota { path: path1(&p) }
        }
        "delquota" => {
            const S: &[OptSpec] = &[flag('n'), flag('b'), flag('N'), flag('B')];
            let group = cmdline::Group { options: QUOTA_GROUP, required: false };
            let p = cmdline::parse_with_group(S, Some(group), words).map_err(|e| CliError::Parse(e.to_string()))?;
            need(&p, 2, name)?;
            Command::DelQuota { path: path1(&p), limit: QUOTA_GROUP.iter().map(|(c, _)| *c).find(|c| p.has(*c)) }
        }
        _ => return Err(CliError::Parse(usage_of(name))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(line: &str, mode: &mut AddWatchMode) -> (Result<Command, CliError>, String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let words = cmdline::words(line);
        let r = parse(&words, mode, &mut Term::new(&mut out, &mut err));
        (r, String::from_utf8_lossy(&out).into_owned(), String::from_utf8_lossy(&err).into_owned())
    }

    #[test]
    fn deprecated_forms_and_usage() {
        let mut m = AddWatchMode::PersistentRecursive;
        let (r, _, e) = run("ls /e1 extra", &mut m);
        assert_eq!(r, Ok(Command::Ls { path: Some("/e1".into()), watch: true, stat: false, recursive: false }));
        assert_eq!(e, "'ls path [watch]' has been deprecated. Please use 'ls [-w] path' instead.\n");
        let (r, _, _) = run("ls -s /e1 extra", &mut m);
        assert_eq!(r, Ok(Command::Ls { path: Some("extra".into()), watch: true, stat: true, recursive: false }));
        let (r, o, _) = run("ls -? /e1", &mut m);
        assert!(o.starts_with("usage: ls [options] path\n"));
        assert!(r.is_ok());
        assert_eq!(run("get", &mut m).0, Err(CliError::Parse("get [-s] [-w] path".into())));
        assert_eq!(
            run("set -v", &mut m).0.unwrap_err().to_string(),
            "org.apache.commons.cli.MissingArgumentException: Missing argument for option: v"
        );
        assert_eq!(run("version x", &mut m).0, Err(CliError::Parse("version ".into())));
    }

    #[test]
    fn add_watch_mode_is_sticky_as_in_zkcli_38() {
        let mut m = AddWatchMode::PersistentRecursive;
        assert!(matches!(
            run("addWatch -m persistent /a", &mut m).0,
            Ok(Command::AddWatch { mode: AddWatchMode::Persistent, .. })
        ));
        assert!(matches!(run("addWatch /b", &mut m).0, Ok(Command::AddWatch { mode: AddWatchMode::Persistent, .. })));
        assert!(run("addWatch -m foo /b", &mut m).0.is_err());
        assert!(run("addWatch /a /b", &mut m).0.is_err());
    }

    #[test]
    fn quota_options_follow_commons_cli_option_groups() {
        let mut m = AddWatchMode::PersistentRecursive;
        assert_eq!(
            run("setquota -N 4 /a", &mut m).0,
            Ok(Command::SetQuota { path: "/a".into(), limit: 'N', value: "4".into() })
        );
        assert_eq!(
            run("setquota /a", &mut m).0.unwrap_err().to_string(),
            "org.apache.commons.cli.MissingOptionException: Missing required option: \
             [-n num soft quota, -b bytes soft quota, -N num hard quota, -B bytes hard quota]"
        );
        assert_eq!(
            run("setquota -n 1 -b 2 /a", &mut m).0.unwrap_err().to_string(),
            "org.apache.commons.cli.AlreadySelectedException: The option 'b' was specified but an option \
             from this group has already been selected: 'n'"
        );
        assert_eq!(run("setquota -n /a", &mut m).0, Err(CliError::Parse("setquota -n|-b|-N|-B val path".into())));
        assert_eq!(run("delquota /a", &mut m).0, Ok(Command::DelQuota { path: "/a".into(), limit: None }));
        assert_eq!(run("delquota -B /a", &mut m).0, Ok(Command::DelQuota { path: "/a".into(), limit: Some('B') }));
        assert_eq!(run("delquota", &mut m).0, Err(CliError::Parse("delquota [-n|-b|-N|-B] path".into())));
        assert_eq!(run("listquota", &mut m).0, Err(CliError::Parse("listquota path".into())));
    }

    #[test]
    fn usage_lists_every_command_sorted_like_java() {
        let names: Vec<&str> = USAGE.iter().map(|(n, _)| *n).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        assert!(usage().contains("\tclose \n"));
    }
}
