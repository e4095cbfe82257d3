//! `zkr takeover --config <zoo.cfg of one zkr observer>`: the operator's command (see the module
//! above for the whole procedure). Exit 0 once a member of the new ensemble leads; 1 when it
//! refuses (every reason printed) or the ensemble does not form in time; 2 on a bad config.

use super::http::request;
use super::{members_param, observers, participants_answering, Plan};
use crate::config::{Config, ServeArgs};
use crate::raft::members::{join_host_port, Ensemble};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct TakeoverArgs {
    /// The zoo.cfg of one zkr observer (its `server.N` lines name ZooKeeper's participants and
    /// the observers).
    #[arg(long)]
    pub config: std::path::PathBuf,
    /// The observers' AdminServer port (default: admin.serverPort of that zoo.cfg).
    #[arg(long)]
    pub admin_port: Option<u16>,
    /// Leave out these observers (their myids, comma-separated): ones that are gone for good.
    /// Whatever they applied and the others did not is lost.
    #[arg(long, value_delimiter = ',')]
    pub without: Vec<u64>,
    /// Check and print the plan, change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// How long to wait for the new ensemble to elect a leader.
    #[arg(long, default_value_t = 60)]
    pub wait_secs: u64,
    /// The observer's JAAS file, when its zoo.cfg turns quorum SASL on (as `zkr serve
    /// --jaas-config`; without it, `-Djava.security.auth.login.config=` in SERVER_JVMFLAGS).
    #[arg(long)]
    pub jaas_config: Option<std::path::PathBuf>,
    /// A stopped ZooKeeper participant's data: its dataDir (or dataLogDir, or a copy of its
    /// version-2 directory) as `DIR` with a `myid` file, or `N=DIR`. Repeat it, or separate
    /// with commas: every participant, or all but a minority. The takeover refuses if ZooKeeper
    /// may have committed a txn that no observer holds.
    #[arg(long, value_delimiter = ',', value_parser = super::zk_logs::parse_source)]
    pub zookeeper_data: Vec<super::zk_logs::Source>,
    /// Take over without reading ZooKeeper's logs: a write ZooKeeper acknowledged in its last
    /// moments and never sent to the observers would be lost.
    #[arg(long, conflicts_with = "zookeeper_data")]
    pub skip_zookeeper_logs: bool,
}

const TIMEOUT: Duration = Duration::from_secs(5);

/// One observer as it answered.
#[derive(Debug)]
struct Seen {
    id: u64,
    zxid: i64,
}

pub fn run(args: TakeoverArgs) -> i32 {
    let started = Instant::now();
    let serve =
        ServeArgs { config: Some(args.config.clone()), jaas_config: args.jaas_config.clone(), ..ServeArgs::default() };
    let cfg = match Config::from_args(&serve) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("zkr takeover: {e}");
            return 2;
        }
    };
    let Some(ens) = cfg.ensemble.clone().filter(|_| cfg.zab_observer) else {
        eprintln!(
            "zkr takeover: {} is not a zkr observer's zoo.cfg (peerType=observer, zkr.ensembleProtocol=zab)",
            args.config.display()
        );
        return 2;
    };
    if args.zookeeper_data.is_empty() && !args.skip_zookeeper_logs {
        eprintln!(
            "zkr takeover: give the stopped ZooKeeper participants' data with --zookeeper-data (every \
             participant's, or all but a minority): a write ZooKeeper acknowledged in its last moments may have \
             reached no observer, and only their logs tell. --skip-zookeeper-logs takes over without that check"
        );
        return 2;
    }
    if let Some(s) = args.zookeeper_data.iter().find(|s| !ens.voters().any(|v| v == s.sid)) {
        eprintln!(
            "zkr takeover: --zookeeper-data names server.{} ({}), which is no ZooKeeper participant of {}",
            s.sid,
            s.dir.display(),
            args.config.display()
        );
        return 2;
    }
    let admin_port = args.admin_port.unwrap_or(cfg.admin_port);
    // An observer notices a stopped leader within syncLimit ticks (at once when its connection
    // is reset): until then it still says it follows, and the check is repeated.
    let notice = Duration::from_millis(cfg.tick_time_ms as u64 * u64::from(ens.sync_limit.max(1)));
    let planned = loop {
        match plan(&ens, admin_port, &args.without) {
            Err(Refusal::Following(_)) if started.elapsed() < notice => std::thread::sleep(Duration::from_millis(20)),
            p => break p,
        }
    };
    match planned {
        Err(why) => {
            eprintln!("zkr takeover: refused: {why}");
            1
        }
        Ok((plan, seen)) => {
            for s in &seen {
                let role = if s.id == plan.seed { "seed (the most advanced)" } else { "member" };
                println!("server.{}: zxid 0x{:x}, {role}", s.id, s.zxid);
            }
            if !args.zookeeper_data.is_empty() {
                let seed = seen.iter().find(|s| s.id == plan.seed).map_or(0, |s| s.zxid);
                match committed_by_zookeeper(&ens, &args.zookeeper_data, seed) {
                    Ok(text) => println!("{text}"),
                    Err(why) => {
                        eprintln!("zkr takeover: refused: {why}");
                        return 1;
                    }
                }
            }
            if args.dry_run {
                println!("dry run: nothing changed");
                return 0;
            }
            if let Err(why) = carry_out(&ens, admin_port, &plan) {
                eprintln!("zkr takeover: {why}");
                return 1;
            }
            println!(
                "every observer accepted after {} ms; waiting for the zkr ensemble",
                started.elapsed().as_millis()
            );
            match wait_for_leader(&ens, cfg.port, &plan, Duration::from_secs(args.wait_secs)) {
                Some(leader) => {
                    println!(
                        "the zkr ensemble serves: server.{leader} leads, {} members, {} ms after the command started",
                        plan.members.len(),
                        started.elapsed().as_millis()
                    );
                    0
                }
                None => {
                    eprintln!("zkr takeover: no member of the new ensemble leads after {} s", args.wait_secs);
                    1
                }
            }
        }
    }
}

/// Whether the seed holds every txn ZooKeeper may have committed, as the participants' logs
/// tell (`zk_logs`). Ok: what was found; Err: why the takeover would lose a write.
fn committed_by_zookeeper(ens: &Ensemble, sources: &[super::zk_logs::Source], seed: i64) -> Result<String, String> {
    let logged = super::zk_logs::read(sources)?;
    let bound = super::zk_logs::committed_bound(ens.voters().count(), &logged)?;
    let each = logged.iter().map(|(sid, z)| format!("server.{sid} 0x{z:x}")).collect::<Vec<_>>().join(", ");
    if seed < bound {
        return Err(format!(
            "ZooKeeper's logs ({each}) hold txns up to 0x{bound:x} that it may have acknowledged, and the most \
             advanced observer applied only 0x{seed:x}: taking over would lose them. Start the ZooKeeper \
             participants again so that the observers catch up, then stop the followers first and the leader \
             last, and run zkr takeover again"
        ));
    }
    Ok(format!("ZooKeeper's logs: {each}; it committed at most up to 0x{bound:x}, which the seed holds"))
}

fn admin_addr(ens: &Ensemble, id: u64, port: u16) -> String {
    let host = ens.members.get(&id).map_or("127.0.0.1", |s| s.host.as_str());
    join_host_port(host, port)
}

/// Why the plan cannot be made.
#[derive(Debug)]
enum Refusal {
    /// Observers still follow a leader (and nothing else is wrong): they may not have noticed yet.
    Following(String),
    Other(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Following(s) | Refusal::Other(s) => f.write_str(s),
        }
    }
}

/// Checks everything that can be checked from here and picks the seed.
fn plan(ens: &Ensemble, admin_port: u16, without: &[u64]) -> Result<(Plan, Vec<Seen>), Refusal> {
    let answering = participants_answering(ens);
    if !answering.is_empty() {
        return Err(Refusal::Other(format!(
            "ZooKeeper participants still answer: {}. Stop every ZooKeeper participant first",
            answering.join(", ")
        )));
    }
    let members: BTreeSet<u64> = observers(ens).into_iter().filter(|id| !without.contains(id)).collect();
    if members.is_empty() {
        return Err(Refusal::Other("no observer left to take over".into()));
    }
    let mut seen = Vec::new();
    let mut problems = Vec::new();
    let mut following = Vec::new();
    for id in &members {
        let addr = admin_addr(ens, *id, admin_port);
        match request(&addr, "GET", "/zkr/takeover", TIMEOUT) {
            Ok((200, body)) => match serde_json::from_str::<serde_json::Value>(&body) {
                Ok(v) if v["following"].as_bool() == Some(true) => following.push(format!(
                    "server.{id} still follows ZooKeeper's leader server.{}",
                    v["leader"].as_i64().unwrap_or(-1)
                )),
                Ok(v) => match v["zxid"].as_i64() {
                    Some(zxid) => seen.push(Seen { id: *id, zxid }),
                    None => problems.push(format!("server.{id} at {addr} answered without a zxid: {body}")),
                },
                Err(e) => problems.push(format!("server.{id} at {addr} answered {body:?}: {e}")),
            },
            Ok((code, body)) => problems.push(format!(
                "server.{id} at {addr} is no zkr observer (HTTP {code} for /zkr/takeover: {})",
                body.trim()
            )),
            Err(e) => problems.push(format!(
                "server.{id}: {e}; it may hold txns the others lack: start it, or leave it out with --without {id}"
            )),
        }
    }
    if !problems.is_empty() {
        problems.extend(following);
        return Err(Refusal::Other(problems.join("; ")));
    }
    if !following.is_empty() {
        return Err(Refusal::Following(following.join("; ")));
    }
    // The most advanced observer; the lowest myid among equals.
    let seed = seen.iter().max_by_key(|s| (s.zxid, std::cmp::Reverse(s.id))).map(|s| s.id).unwrap_or_default();
    Ok((Plan { seed, members }, seen))
}

/// Every observer checks the plan first, then every one accepts it (the seed last).
fn carry_out(ens: &Ensemble, admin_port: u16, plan: &Plan) -> Result<(), String> {
    let query = format!("seed={}&members={}", plan.seed, members_param(&plan.members));
    let mut order: Vec<u64> = plan.members.iter().copied().filter(|m| *m != plan.seed).collect();
    order.push(plan.seed);
    for check in [true, false] {
        for id in &order {
            let addr = admin_addr(ens, *id, admin_port);
            let path = if check { format!("/zkr/takeover?{query}&check=1") } else { format!("/zkr/takeover?{query}") };
            match request(&addr, "POST", &path, TIMEOUT) {
                Ok((200, _)) => {}
                Ok((_, body)) => {
                    let why = serde_json::from_str::<serde_json::Value>(&body)
                        .ok()
                        .and_then(|v| v["error"].as_str().map(str::to_owned))
                        .unwrap_or(body);
                    let state = if check { "refused: nothing changed" } else { "stopped half-way" };
                    return Err(format!("{state}: server.{id} refused the plan: {why}"));
                }
                Err(e) => {
                    let state = if check { "refused: nothing changed" } else { "stopped half-way" };
                    return Err(format!("{state}: server.{id}: {e}"));
                }
            }
        }
    }
    Ok(())
}

/// The member that says `Mode: leader` on its client port, once one does.
/// A member's client port is the one its `server.N` line names, else zoo.cfg's `clientPort`.
fn wait_for_leader(ens: &Ensemble, client_port: u16, plan: &Plan, within: Duration) -> Option<u64> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        for id in &plan.members {
            let Some(spec) = ens.members.get(id) else { continue };
            let addr = match &spec.client {
                Some((h, p)) => client_host(ens, *id, h, *p),
                None => join_host_port(&spec.host, client_port),
            };
            if srvr_mode(&addr).as_deref() == Some("leader") {
                return Some(*id);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// A wildcard client address is reached at the member's host.
fn client_host(ens: &Ensemble, id: u64, host: &str, port: u16) -> String {
    let host = if host == "0.0.0.0" || host == "::" || host.is_empty() {
        ens.members.get(&id).map_or("127.0.0.1", |s| s.host.as_str())
    } else {
        host
    };
    join_host_port(host, port)
}

fn srvr_mode(addr: &str) -> Option<String> {
    crate::client::four_letter::ask_blocking(addr, "srvr", Duration::from_millis(300))
        .as_deref()
        .and_then(crate::client::four_letter::mode)
}
