//! `zkr dubbo`: a read-only view of a Dubbo registry kept in any ZooKeeper-protocol server
//! (zkr or ZooKeeper): services, providers and consumers decoded from their URL-encoded node
//! names, services with no providers, application instances under `/services`, the config
//! centre; as text tables, as `--json`, or as a live web page.
//!
//! ```text
//!  args ─► command ─► model (reads through zk.rs = zkr cli's session) ─► text tables │ JSON
//!                                                                    └─► web.rs: /dubbo page + /dubbo/api/*
//! ```
//! Never writes to the server.

pub mod model;
pub mod text;
pub mod url;
pub mod web;
pub mod zk;

use model::{Category, Roots};
use serde::Serialize;
use std::io::Write;
use zk::{Zk, ZkError};

const USAGE: &str = "\
usage: zkr dubbo [-server host:port] [-root /dubbo] [-services-root /services] COMMAND [--json]
commands:
  services              services (interface, group, version) with provider/consumer counts,
                        the services with no providers, and the application instances
  providers INTERFACE   the providers of INTERFACE: address, application, group, version,
                        methods, weight, timestamp, session
  consumers INTERFACE   the consumers of INTERFACE
  instances [APP]       application instances under /services (Dubbo 3 application-level discovery)
  config                the config centre (/dubbo/config), override/route rules, metadata
  web --listen ADDR     serve the read-only page at http://ADDR/dubbo (live refresh)
A group or version printed as \"-\" is not set (Dubbo's default: no group, no version); a
provider without a weight parameter has Dubbo's default weight 100; times are UTC; SESSION is
the node's ephemeralOwner (\"-\" for a persistent node).";

/// `zkr dubbo [options] command [args] [--json]`, options in zkCli's single-dash style.
#[derive(clap::Args, Debug, Clone)]
pub struct DubboArgs {
    /// -server host:port (default localhost:2181), -root /dubbo, -services-root /services, then
    /// services | providers IFACE | consumers IFACE | instances [APP] | config | web --listen ADDR,
    /// and --json for machine-readable output.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Command {
    Services,
    Providers(String),
    Consumers(String),
    Instances(Option<String>),
    Config,
    Web { listen: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Options {
    server: String,
    roots: Roots,
    json: bool,
    command: Command,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut server = "localhost:2181".to_string();
    let mut roots = Roots::default();
    let mut json = false;
    let mut listen = None;
    let mut words = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().cloned().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "-server" | "--server" => server = value(a)?,
            "-root" | "--root" => roots.dubbo = value(a)?,
            "-services-root" | "--services-root" => roots.services = value(a)?,
            "--listen" | "-listen" => listen = Some(value(a)?),
            "--json" | "-json" => json = true,
            "-h" | "--help" | "help" => return Err(String::new()),
            s if s.starts_with('-') => return Err(format!("unknown option {s}")),
            _ => words.push(a.clone()),
        }
    }
    for root in [&roots.dubbo, &roots.services] {
        if !root.starts_with('/') || (root.len() > 1 && root.ends_with('/')) {
            return Err(format!("{root:?} is not an absolute path"));
        }
    }
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let command = match (words.as_slice(), listen) {
        (["web"], Some(listen)) => Command::Web { listen },
        (["web"], None) => return Err("web needs --listen ADDR".into()),
        (_, Some(_)) => return Err("--listen belongs to web".into()),
        (["services"], _) => Command::Services,
        (["providers", iface], _) => Command::Providers(iface.to_string()),
        (["consumers", iface], _) => Command::Consumers(iface.to_string()),
        (["instances"], _) => Command::Instances(None),
        (["instances", app], _) => Command::Instances(Some(app.to_string())),
        (["config"], _) => Command::Config,
        ([], _) => return Err("no command given".into()),
        (other, _) => return Err(format!("unknown command {:?}", other.join(" "))),
    };
    Ok(Options { server, roots, json, command })
}

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
enum DubboError {
    #[error("{0}")]
    Zk(#[from] ZkError),
    #[error("no service {interface} under {root}")]
    NoService { interface: String, root: String },
    #[error("{0}")]
    Web(String),
}

fn to_json<T: Serialize>(v: &T) -> String {
    serde_json::to_string_pretty(v).map(|s| s + "\n").unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}\n"))
}

async fn execute(o: &Options) -> Result<String, DubboError> {
    let zk = Zk::connect(&o.server)?;
    let out = render(&zk, o).await;
    zk.close().await;
    out
}

async fn render(zk: &Zk, o: &Options) -> Result<String, DubboError> {
    Ok(match &o.command {
        Command::Services => {
            let v = model::overview(zk, &o.roots).await?;
            if o.json {
                to_json(&v)
            } else {
                text::services(&v)
            }
        }
        Command::Providers(iface) | Command::Consumers(iface) => {
            let (cat, what) = match o.command {
                Command::Providers(_) => (Category::Providers, "providers"),
                _ => (Category::Consumers, "consumers"),
            };
            let regs = model::registrations(zk, &o.roots, iface, cat)
                .await?
                .ok_or_else(|| DubboError::NoService { interface: iface.clone(), root: o.roots.dubbo.clone() })?;
            if o.json {
                to_json(&model::Listing::new(iface, cat, regs))
            } else {
                text::registrations(iface, what, &regs, cat == Category::Providers)
            }
        }
        Command::Instances(app) => {
            let v = model::instances(zk, &o.roots, app.as_deref()).await?;
            if o.json {
                to_json(&v)
            } else {
                text::instances(&v)
            }
        }
        Command::Config => {
            let v = model::config(zk, &o.roots).await?;
            if o.json {
                to_json(&v)
            } else {
                text::config(&v)
            }
        }
        Command::Web { .. } => String::new(),
    })
}

/// Serves the page until interrupted.
async fn serve_web(server: &str, listen: &str) -> Result<(), DubboError> {
    let zk_addr = tokio::net::lookup_host(server)
        .await
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| DubboError::Web(format!("cannot resolve server {server:?}")))?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| DubboError::Web(format!("cannot listen on {listen}: {e}")))?;
    let local = listener.local_addr().map_err(|e| DubboError::Web(e.to_string()))?;
    println!("serving the Dubbo view of {zk_addr} at http://{local}/dubbo");
    let _ = std::io::stdout().flush();
    axum::serve(listener, web::router(zk_addr))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|e| DubboError::Web(e.to_string()))
}

/// Runs `zkr dubbo`; returns the exit status.
pub fn run(args: DubboArgs) -> i32 {
    let o = match parse(&args.args) {
        Ok(o) => o,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return 0;
        }
        Err(e) => {
            eprintln!("zkr dubbo: {e}\n{USAGE}");
            return 2;
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("zkr dubbo: cannot start the runtime: {e}");
            return 1;
        }
    };
    let result = rt.block_on(async {
        match &o.command {
            Command::Web { listen } => serve_web(&o.server, listen).await.map(|_| String::new()),
            _ => execute(&o).await,
        }
    });
    match result {
        Ok(out) => {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(out.as_bytes());
            let _ = stdout.flush();
            0
        }
        Err(DubboError::Zk(e)) => {
            eprintln!("zkr dubbo: reading from {}: {e}", o.server);
            1
        }
        Err(e) => {
            eprintln!("zkr dubbo: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sv(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_commands() {
        let o = parse(&sv(&["-server", "h:1", "providers", "a.B", "--json"])).unwrap();
        assert_eq!((o.server.as_str(), o.json), ("h:1", true));
        assert_eq!(o.command, Command::Providers("a.B".into()));
        let o = parse(&sv(&["web", "--listen", "127.0.0.1:0", "-root", "/x"])).unwrap();
        assert_eq!(o.command, Command::Web { listen: "127.0.0.1:0".into() });
        assert_eq!(o.roots.dubbo, "/x");
        assert_eq!(parse(&sv(&["instances"])).unwrap().command, Command::Instances(None));
        assert!(parse(&sv(&["providers"])).unwrap_err().contains("unknown command"));
        assert!(parse(&sv(&["web"])).unwrap_err().contains("--listen"));
        assert!(parse(&sv(&["-root", "dubbo", "services"])).unwrap_err().contains("absolute"));
        assert!(parse(&sv(&["-server"])).unwrap_err().contains("needs a value"));
        assert_eq!(parse(&sv(&["--help"])).unwrap_err(), "");
    }
}
