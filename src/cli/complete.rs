//! Tab completion for the interactive shell, as zkCli's `JLineZNodeCompleter` does it: a word
//! starting with `/` completes to the children of its parent znode, any other word to a
//! command name.
//!
//! Reads the tree with plain getChildren calls (no watches); never blocks for long.

use super::commands::USAGE;
use super::shell::ClientSlot;
use crate::client::conn::Call;
use crate::proto::{OpCode, RequestBody, Response};
use rustyline::completion::Completer;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Helper};
use std::time::Duration;

/// How long a completion may wait for the server.
const COMPLETION_TIMEOUT: Duration = Duration::from_secs(2);

pub struct ZkHelper {
    pub slot: ClientSlot,
    pub rt: tokio::runtime::Handle,
}

/// The word being completed: everything after the last space (zkCli splits on single spaces).
fn last_word(buffer: &str) -> &str {
    if buffer.ends_with(' ') {
        return "";
    }
    buffer.rsplit(' ').next().unwrap_or("")
}

/// Command names starting with `word`, and where the replacement starts.
pub fn complete_command(buffer: &str) -> (usize, Vec<String>) {
    let word = last_word(buffer);
    let names = USAGE.iter().map(|(n, _)| n.to_string()).filter(|n| n.starts_with(word)).collect();
    (buffer.rfind(' ').map_or(0, |i| i + 1), names)
}

impl ZkHelper {
    fn children(&self, dir: &str) -> Option<Vec<String>> {
        let client = self.slot.lock().clone()?;
        if !client.state().is_alive() {
            return None;
        }
        let body = RequestBody::PathWatch { path: client.chroot().to_server(dir), watch: false };
        let reply = self
            .rt
            .block_on(async {
                tokio::time::timeout(COMPLETION_TIMEOUT, client.call(Call::new(OpCode::GetChildren, body))).await
            })
            .ok()?;
        match reply.body {
            Response::Children(c) if reply.err == 0 => Some(c.iter().map(|s| s.to_string()).collect()),
            _ => None,
        }
    }

    fn complete_znode(&self, buffer: &str, word: &str) -> (usize, Vec<String>) {
        let idx = word.rfind('/').map_or(0, |i| i + 1);
        let prefix = &word[idx..];
        let dir = if idx == 1 { "/" } else { &word[..idx.saturating_sub(1)] };
        let mut found: Vec<String> =
            self.children(dir).unwrap_or_default().into_iter().filter(|c| c.starts_with(prefix)).collect();
        found.sort();
        let start = if found.is_empty() { buffer.len() } else { buffer.rfind('/').map_or(0, |i| i + 1) };
        (start, found)
    }
}

impl Completer for ZkHelper {
    type Candidate = String;

    fn complete(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> rustyline::Result<(usize, Vec<String>)> {
        let buffer = line.get(..pos).unwrap_or(line);
        let word = last_word(buffer);
        Ok(if word.starts_with('/') { self.complete_znode(buffer, word) } else { complete_command(buffer) })
    }
}

impl Hinter for ZkHelper {
    type Hint = String;
}
impl Highlighter for ZkHelper {}
impl Validator for ZkHelper {}
impl Helper for ZkHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_complete_from_the_last_word() {
        let (start, names) = complete_command("getA");
        assert_eq!(start, 0);
        assert_eq!(names, vec!["getAcl", "getAllChildrenNumber"]);
        assert_eq!(complete_command("ls /a cre"), (6, vec!["create".to_string()]));
        assert_eq!(last_word("ls "), "");
    }
}
