//! `zkr cli`: a client that behaves like ZooKeeper 3.8's `zkCli.sh` (same commands, same
//! output line for line, same exit status), written on zkr's own protocol module.
//!
//! ```text
//!  args ──► mode: one command │ lines from a pipe │ terminal (rustyline: history, completion)
//!                    │
//!                    ▼
//!  shell (history, redo, connect, quit) ─► cmdline (words, options) ─► commands (typed) ─► exec
//!                                                                                           │
//!  stdout ◄── "WATCHER::" events ◄── conn task (socket, xids, pings, watch table) ◄─────────┘
//! ```
//!
//! Owns nothing of the server: it only speaks the wire protocol through `crate::proto` and
//! `crate::codec`. Prints no log lines (zkCli's INFO/WARN noise has no equivalent here).
//!
//! It speaks the protocol through the client library (`crate::client`: the session handle
//! `conn::Client`, its connection task, chroots and the client's watch table), which `zkr dubbo`
//! uses too; `connect_config` (zkCli's connect string) is shared with it as well.

mod acl;
mod cmdline;
mod commands;
mod complete;
mod error;
mod exec;
pub mod format;
mod quota;
mod shell;
mod term;

pub(crate) use shell::connect_config;
use shell::{Flow, Printer, Shell};
use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;
use term::Term;

/// `zkr cli -server host:port[,host:port...][/chroot] [-timeout ms] [-r] [-waitforconnection]
/// [command args...]`, with zkCli.sh's own option syntax (single dashes).
#[derive(clap::Args, Debug, Clone)]
pub struct CliArgs {
    /// zkCli.sh arguments: -server host:port (default localhost:2181), -timeout ms (30000),
    /// -r (read-only), -waitforconnection, then an optional command to run instead of a shell.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<String>,
}

/// `ZooKeeperMain.MyCommandOptions.parseOptions`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Options {
    server: String,
    timeout: String,
    read_only: bool,
    wait_for_connection: bool,
    client_configuration: Option<String>,
    command: Option<Vec<String>>,
}

fn parse_options(args: &[String], err: &mut dyn Write) -> Options {
    let mut o = Options {
        server: "localhost:2181".into(),
        timeout: "30000".into(),
        read_only: false,
        wait_for_connection: false,
        client_configuration: None,
        command: None,
    };
    let mut it = args.iter();
    while let Some(opt) = it.next() {
        let value = match opt.as_str() {
            "-server" | "-timeout" | "-client-configuration" => match it.next() {
                Some(v) => Some(v.clone()),
                None => {
                    let _ = writeln!(err, "Error: no argument found for option {opt}");
                    return o;
                }
            },
            _ => None,
        };
        match (opt.as_str(), value) {
            ("-server", Some(v)) => o.server = v,
            ("-timeout", Some(v)) => o.timeout = v,
            ("-client-configuration", Some(v)) => o.client_configuration = Some(v),
            ("-r", _) => o.read_only = true,
            ("-waitforconnection", _) => o.wait_for_connection = true,
            _ => {}
        }
        if !opt.starts_with('-') {
            let mut cmd = vec![opt.clone()];
            cmd.extend(it.cloned());
            o.command = Some(cmd);
            return o;
        }
    }
    o
}

/// Writes one event block to stdout (pipes, one-shot commands).
fn stdout_printer() -> Printer {
    Arc::new(|text: &str| {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    })
}

/// Runs `zkr cli`; returns the process exit status.
pub fn run(args: CliArgs) -> i32 {
    let (mut stdout, mut stderr) = (std::io::stdout(), std::io::stderr());
    let opts = parse_options(&args.args, &mut stderr);
    let timeout = match cmdline::java_int(&opts.timeout) {
        Ok(t) => t,
        Err(m) => {
            let _ = writeln!(stdout, "Connecting to {}", opts.server);
            let _ = writeln!(stderr, "Exception in thread \"main\" java.lang.NumberFormatException: {m}");
            return 1;
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            let _ = writeln!(stderr, "zkr cli: cannot start the runtime: {e}");
            return 1;
        }
    };
    if let Some(file) = &opts.client_configuration {
        let _ = writeln!(stderr, "zkr cli: -client-configuration is not supported, {file} is ignored");
    }
    let interactive = opts.command.is_none() && std::io::stdin().is_terminal();
    let mut editor = None;
    let printer = if interactive {
        match interactive_editor() {
            Some((ed, printer)) => {
                editor = Some(ed);
                printer
            }
            None => stdout_printer(),
        }
    } else {
        stdout_printer()
    };
    let mut shell = Shell::new(rt, timeout, opts.read_only, printer);
    let _ = writeln!(stdout, "Connecting to {}", opts.server);
    let one_shot = opts.command.is_some();
    if let Err(e) = shell.connect(&opts.server, one_shot) {
        let _ = writeln!(stderr, "{e}");
        return 1;
    }
    if opts.wait_for_connection && !shell.wait_connected() {
        shell.finish_quietly();
        let _ = writeln!(
            stderr,
            "Exception in thread \"main\" java.io.IOException: \
             org.apache.zookeeper.KeeperException$ConnectionLossException: KeeperErrorCode = ConnectionLoss"
        );
        return 1;
    }
    if let Some(words) = &opts.command {
        let flow = shell.process(words, &mut Term::new(&mut stdout, &mut stderr));
        let code = match flow {
            Flow::Exit(code) => code,
            Flow::Continue => shell.exit_code(),
        };
        shell.finish_quietly();
        return code;
    }
    let _ = writeln!(stdout, "Welcome to ZooKeeper!");
    let _ = writeln!(stdout, "JLine support is {}", if editor.is_some() { "enabled" } else { "disabled" });
    shell.wait_first_attempt();
    match editor {
        Some(mut ed) => {
            ed.set_helper(Some(complete::ZkHelper { slot: shell.slot(), rt: shell.handle() }));
            interactive_loop(&mut shell, &mut ed)
        }
        None => piped_loop(&mut shell),
    }
}

type Editor = rustyline::Editor<complete::ZkHelper, rustyline::history::DefaultHistory>;

/// A line editor on the terminal and a printer that keeps events from garbling its prompt.
fn interactive_editor() -> Option<(Editor, Printer)> {
    // List the candidates as JLine does (rather than cycling through them).
    let config = rustyline::Config::builder().completion_type(rustyline::CompletionType::List).build();
    let mut ed = Editor::with_config(config).ok()?;
    let printer: Printer = match ed.create_external_printer() {
        Ok(p) => {
            let p = parking_lot::Mutex::new(p);
            Arc::new(move |text: &str| {
                use rustyline::ExternalPrinter;
                let _ = p.lock().print(text.to_string());
            })
        }
        Err(_) => stdout_printer(),
    };
    Some((ed, printer))
}

fn interactive_loop(shell: &mut Shell, ed: &mut Editor) -> i32 {
    loop {
        match ed.readline(&shell.prompt()) {
            Ok(line) => {
                if !line.trim().is_empty() {
                    let _ = ed.add_history_entry(line.as_str());
                }
                let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
                if let Flow::Exit(code) = shell.execute_line(&line, &mut Term::new(&mut out, &mut err)) {
                    return code;
                }
            }
            Err(rustyline::error::ReadlineError::Interrupted) => {
                // Ctrl-C ends zkCli (the JVM's SIGINT exit status).
                shell.finish_quietly();
                return 130;
            }
            Err(_) => {
                shell.finish_quietly();
                return shell.exit_code();
            }
        }
    }
}

fn piped_loop(shell: &mut Shell) -> i32 {
    let stdin = std::io::stdin();
    let mut reader = stdin.lock();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        // BufferedReader.readLine: the line without "\n", "\r\n" or "\r".
        while matches!(buf.last(), Some(b'\n') | Some(b'\r')) {
            buf.pop();
        }
        let line = String::from_utf8_lossy(&buf).into_owned();
        let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
        if let Flow::Exit(code) = shell.execute_line(&line, &mut Term::new(&mut out, &mut err)) {
            return code;
        }
    }
    shell.finish_quietly();
    shell.exit_code()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sv(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_like_zkcli() {
        let mut err = Vec::new();
        let o = parse_options(&sv(&["-server", "h:1", "-timeout", "5000", "-r", "ls", "-s", "/"]), &mut err);
        assert_eq!(o.server, "h:1");
        assert_eq!(o.timeout, "5000");
        assert!(o.read_only);
        assert_eq!(o.command, Some(sv(&["ls", "-s", "/"])));
        let d = parse_options(&sv(&["-x"]), &mut err);
        assert_eq!(d.server, "localhost:2181");
        assert_eq!(d.command, None);
        parse_options(&sv(&["-server"]), &mut err);
        assert_eq!(String::from_utf8_lossy(&err), "Error: no argument found for option -server\n");
    }
}
