//! zkCli's main loop (`ZooKeeperMain`): one line at a time, its history and `redo`,
//! `printwatches`, `connect`, `quit`, the "Not connected" rule, and the exit status (that of
//! the last command, as zkCli 3.8 leaves it).
//!
//! Owns the current session and the shell's state; reading lines (terminal or pipe) is left to
//! the caller in `mod.rs`.

use super::cmdline::{java_decode, java_int, words};
use super::commands::{self, AddWatchMode};
use super::error::CliError;
use super::exec::Exec;
use super::term::Term;
use crate::client::conn::{Client, ConnectConfig, EventSink, States};
use crate::client::path::Chroot;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// What the caller does after a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Exit(i32),
}

/// Writes one block of event text (stdout, or around the line editor's prompt).
pub type Printer = Arc<dyn Fn(&str) + Send + Sync>;

/// The session the completer and the prompt look at; replaced by `connect`.
pub type ClientSlot = Arc<Mutex<Option<Arc<Client>>>>;

/// `ConnectStringParser`: `host[:port][,host[:port]...][/chroot]`, port 2181 by default.
/// `Err` is the text of the Java exception zkCli dies with.
pub fn connect_config(server: &str, session_timeout_ms: i32, read_only: bool) -> Result<ConnectConfig, String> {
    let illegal = |m: String| format!("java.lang.IllegalArgumentException: {m}");
    let (hosts_part, chroot) = match server.find('/') {
        Some(i) => (&server[..i], Some(&server[i..])),
        None => (server, None),
    };
    let chroot = Chroot::new(chroot).map_err(illegal)?;
    let mut hosts = Vec::new();
    for h in hosts_part.split(',').map(str::trim).filter(|h| !h.is_empty()) {
        let (host, port) = match (h.strip_prefix('['), h.rfind(':')) {
            (Some(v6), _) => match v6.split_once(']') {
                Some((addr, rest)) => (format!("[{addr}]"), rest.strip_prefix(':').filter(|p| !p.is_empty())),
                None => (h.to_string(), None),
            },
            (None, Some(i)) => (h[..i].to_string(), Some(&h[i + 1..]).filter(|p| !p.is_empty())),
            (None, None) => (h.to_string(), None),
        };
        let port = match port {
            Some(p) => java_int(p).map_err(|m| format!("java.lang.NumberFormatException: {m}"))?,
            None => 2181,
        };
        if !(0..=65535).contains(&port) {
            return Err(illegal(format!("port out of range:{port}")));
        }
        hosts.push(format!("{host}:{port}"));
    }
    if hosts.is_empty() {
        return Err(illegal("A HostProvider may not be empty!".into()));
    }
    Ok(ConnectConfig { hosts, chroot, session_timeout_ms, read_only })
}

pub struct Shell {
    rt: tokio::runtime::Runtime,
    slot: ClientSlot,
    sink: EventSink,
    /// `printwatches on|off`.
    print_watches: Arc<AtomicBool>,
    /// Set once the shell is ending without `quit`: zkCli prints nothing more then.
    muted: Arc<AtomicBool>,
    host: String,
    session_timeout_ms: i32,
    read_only: bool,
    history: HashMap<i32, String>,
    count: i32,
    exit_code: i32,
    add_watch_mode: AddWatchMode,
    /// The words of the previous line: zkCli runs them again for a line with no words.
    last_words: Option<Vec<String>>,
}

impl Shell {
    /// `printer` writes one event block; it is called from the connection task.
    pub fn new(rt: tokio::runtime::Runtime, session_timeout_ms: i32, read_only: bool, printer: Printer) -> Shell {
        let print_watches = Arc::new(AtomicBool::new(true));
        let muted = Arc::new(AtomicBool::new(false));
        let (pw, mu) = (print_watches.clone(), muted.clone());
        let sink: EventSink = Arc::new(move |state, event_type, path| {
            if pw.load(Ordering::SeqCst) && !mu.load(Ordering::SeqCst) {
                // MyWatcher: printMessage("WATCHER::") then printMessage(event), each "\n" + text.
                printer(&format!("\nWATCHER::\n\n{}\n", super::format::watched_event(state, event_type, path)));
            }
        });
        Shell {
            rt,
            slot: Arc::new(Mutex::new(None)),
            sink,
            print_watches,
            muted,
            host: String::new(),
            session_timeout_ms,
            read_only,
            history: HashMap::new(),
            count: 0,
            exit_code: 0,
            add_watch_mode: AddWatchMode::PersistentRecursive,
            last_words: None,
        }
    }

    pub fn slot(&self) -> ClientSlot {
        self.slot.clone()
    }

    pub fn handle(&self) -> tokio::runtime::Handle {
        self.rt.handle().clone()
    }

    fn client(&self) -> Option<Arc<Client>> {
        self.slot.lock().clone()
    }

    /// `connectToZK`: closes a live session, then starts a new one (not yet connected).
    pub fn connect(&mut self, server: &str, lazy: bool) -> Result<(), CliError> {
        if let Some(old) = self.client() {
            self.rt.block_on(old.close());
        }
        self.host = server.to_string();
        let cfg = connect_config(server, self.session_timeout_ms, self.read_only).map_err(CliError::Uncaught)?;
        let client = Client::start(self.rt.handle(), cfg, self.sink.clone(), lazy);
        *self.slot.lock() = Some(Arc::new(client));
        Ok(())
    }

    /// Waits for the first connection attempt (so its event is printed before any output).
    pub fn wait_first_attempt(&self) {
        if let Some(c) = self.client() {
            self.rt.block_on(c.first_attempt());
        }
    }

    /// `-waitforconnection`: true once connected within the session timeout.
    pub fn wait_connected(&self) -> bool {
        let Some(c) = self.client() else { return false };
        let limit = std::time::Duration::from_millis(self.session_timeout_ms.max(0) as u64);
        let until = std::time::Instant::now() + limit;
        while std::time::Instant::now() < until {
            if matches!(c.state(), States::Connected | States::ConnectedReadOnly) {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        false
    }

    pub fn prompt(&self) -> String {
        let state = self.client().map_or(States::NotConnected, |c| c.state());
        format!("[zk: {}({}) {}] ", self.host, state.java_name(), self.count)
    }

    pub fn exit_code(&self) -> i32 {
        self.exit_code
    }

    /// Ends without `quit`: nothing more is printed, the session is closed quietly.
    pub fn finish_quietly(&mut self) {
        self.muted.store(true, Ordering::SeqCst);
        if let Some(c) = self.client() {
            self.rt.block_on(c.close());
        }
    }

    /// `executeLine`: one line read from the terminal or a pipe.
    pub fn execute_line(&mut self, line: &str, term: &mut Term) -> Flow {
        if line.is_empty() {
            return Flow::Continue;
        }
        let mut w = words(line);
        if w.is_empty() {
            w = self.last_words.clone().unwrap_or_default();
        }
        self.last_words = Some(w.clone());
        self.history.insert(self.count, line.to_string());
        let flow = self.process(&w, term);
        self.count += 1;
        flow
    }

    /// `processCmd`: runs the words and records the exit status.
    pub fn process(&mut self, w: &[String], term: &mut Term) -> Flow {
        match self.process_zk(w, term) {
            Ok(flow) => {
                self.exit_code = 0;
                flow
            }
            Err(e) => {
                self.exit_code = e.exit_code();
                term.errln(&e.to_string());
                match e {
                    CliError::Uncaught(_) => Flow::Exit(1),
                    _ => Flow::Continue,
                }
            }
        }
    }

    fn process_zk(&mut self, w: &[String], term: &mut Term) -> Result<Flow, CliError> {
        let Some(cmd) = w.first() else {
            term.err(&commands::usage());
            return Err(CliError::NoCommand);
        };
        if !commands::is_known(cmd) {
            term.err(&commands::usage());
            return Err(CliError::NotFound(cmd.clone()));
        }
        match cmd.as_str() {
            "quit" => {
                if let Some(c) = self.client() {
                    self.rt.block_on(c.close());
                }
                return Ok(Flow::Exit(self.exit_code));
            }
            "redo" if w.len() >= 2 => {
                let i = java_decode(&w[1]).map_err(CliError::number)?;
                if self.count <= i || i < 0 {
                    return Err(CliError::Malformed("Command index out of range".into()));
                }
                let line = self.history.get(&i).cloned().unwrap_or_default();
                let mut again = words(&line);
                if again.is_empty() {
                    again = w.to_vec();
                }
                if again.first().map(String::as_str) == Some("redo") {
                    return Err(CliError::Malformed("No redoing redos".into()));
                }
                self.history.insert(self.count, line);
                if let Flow::Exit(code) = self.process(&again, term) {
                    return Ok(Flow::Exit(code));
                }
            }
            "history" => {
                for i in (self.count - 10).max(0)..=self.count {
                    let line = self.history.get(&i).map_or("null", String::as_str);
                    term.outln(&format!("{i} - {line}"));
                }
            }
            "printwatches" => match w.get(1) {
                None => {
                    let on = self.print_watches.load(Ordering::SeqCst);
                    term.outln(&format!("printwatches is {}", if on { "on" } else { "off" }));
                }
                Some(v) => self.print_watches.store(v == "on", Ordering::SeqCst),
            },
            "connect" => {
                let server = w.get(1).cloned().unwrap_or_else(|| self.host.clone());
                // zkCli then checks the new session's state: "Not connected" if its thread has
                // not started yet (a race in zkCli); here the new session is always connecting.
                self.connect(&server, false)?;
            }
            _ => {}
        }
        let Some(client) = self.client().filter(|c| c.state().is_alive()) else {
            term.outln("Not connected");
            return Ok(Flow::Continue);
        };
        if matches!(cmd.as_str(), "redo" | "history" | "printwatches" | "connect") {
            return Ok(Flow::Continue);
        }
        let command = commands::parse(w, &mut self.add_watch_mode, term)?;
        let handle = self.rt.handle().clone();
        Exec { client: &client, rt: &handle, term }.run(command)?;
        Ok(Flow::Continue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_strings() {
        let c = connect_config("127.0.0.1:2181,b/app", 30000, false).unwrap();
        assert_eq!(c.hosts, vec!["127.0.0.1:2181", "b:2181"]);
        assert_eq!(c.chroot.to_server("/x"), "/app/x");
        assert_eq!(connect_config("[::1]:5", 1, false).unwrap().hosts, vec!["[::1]:5"]);
        assert_eq!(connect_config("h:", 1, false).unwrap().hosts, vec!["h:2181"]);
        assert_eq!(
            connect_config("host:port", 1, false).unwrap_err(),
            "java.lang.NumberFormatException: For input string: \"port\""
        );
        assert!(connect_config("h:70000", 1, false).unwrap_err().ends_with("port out of range:70000"));
        assert!(connect_config("/app", 1, false).is_err());
        assert!(connect_config("h:1/a/", 1, false).is_err());
    }
}
