//! `zkr takeover --config <zoo.cfg of one zkr observer>`: the operator's command (see the module
//! above for the whole procedure). Exit 0 once a member of the new ensemble leads; 1 when it
//! refuses (every reason printed) or the ensemble does not form in time; 2 on a bad config or
//! missing credentials.
//!
//! It speaks to the observers' AdminServers as they are served (HTTPS with the `ssl.quorum.*`
//! stores of the same zoo.cfg when `admin.forceHttps`/`admin.portUnification` is set) and sends
//! ZooKeeper's admin authentication with every request that changes state (`--auth`).

use super::guard::LogProof;
use super::http::AdminClient;
use super::probe::{self, Answer};
use super::{admin_addr, members_param, observers, Plan};
use crate::config::{ClientAuth, Config, ServeArgs};
use crate::raft::members::{join_host_port, Ensemble};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct TakeoverArgs {
    /// The zoo.cfg of one zkr observer (its `server.N` lines name ZooKeeper's participants and
    /// the observers; its `admin.*` and `ssl.quorum.*` lines say how their AdminServers serve).
    #[arg(long)]
    pub config: std::path::PathBuf,
    /// The observers' AdminServer port (default: admin.serverPort of that zoo.cfg).
    #[arg(long)]
    pub admin_port: Option<u16>,
    /// ZooKeeper's admin authentication, sent as `Authorization: <scheme> <data>`:
    /// `digest:USER:PASSWORD` (the super user of DigestAuthenticationProvider.superDigest, or a
    /// user `/`'s ACL grants ALL), `x509` (the key store's certificate, over HTTPS with
    /// admin.needClientAuth=true; the default then) or `ip`. Also from ZKR_ADMIN_AUTH.
    #[arg(long, conflicts_with = "auth_file")]
    pub auth: Option<String>,
    /// A file whose first line is what `--auth` takes (keeps a password out of `ps`).
    #[arg(long)]
    pub auth_file: Option<std::path::PathBuf>,
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
    /// with commas: every participant, or all but a minority. What they logged goes to every
    /// observer, which refuses if ZooKeeper may have committed a txn that the seed lacks.
    #[arg(long, value_delimiter = ',', value_parser = super::zk_logs::parse_source)]
    pub zookeeper_data: Vec<super::zk_logs::Source>,
}

const TIMEOUT: Duration = Duration::from_secs(10);

/// One observer as it answered.
#[derive(Debug)]
struct Seen {
    id: u64,
    zxid: i64,
}

/// What the run needs once the arguments are checked.
struct Run {
    cfg: Config,
    ens: Ensemble,
    admin_port: u16,
    client: AdminClient,
}

pub fn run(args: TakeoverArgs) -> i32 {
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("zkr takeover: {e}");
            return 2;
        }
    };
    let run = match rt.block_on(async { prepare(&args) }) {
        Ok(r) => r,
        Err(why) => {
            eprintln!("zkr takeover: {why}");
            return 2;
        }
    };
    rt.block_on(take_over(&args, &run))
}

/// The config, the credentials and the client; Err: why the command cannot run (exit 2).
fn prepare(args: &TakeoverArgs) -> Result<Run, String> {
    let serve =
        ServeArgs { config: Some(args.config.clone()), jaas_config: args.jaas_config.clone(), ..ServeArgs::default() };
    let cfg = Config::from_args(&serve).map_err(|e| e.to_string())?;
    let Some(ens) = cfg.ensemble.clone().filter(|_| cfg.zab_observer) else {
        return Err(format!(
            "{} is not a zkr observer's zoo.cfg (peerType=observer, zkr.ensembleProtocol=zab)",
            args.config.display()
        ));
    };
    if args.zookeeper_data.is_empty() {
        return Err("give the stopped ZooKeeper participants' data with --zookeeper-data (every participant's, or \
                    all but a minority): a write ZooKeeper acknowledged in its last moments may have reached no \
                    observer, only their logs tell, and every observer refuses a takeover without them"
            .into());
    }
    if let Some(s) = args.zookeeper_data.iter().find(|s| !ens.voters().any(|v| v == s.sid)) {
        return Err(format!(
            "--zookeeper-data names server.{} ({}), which is no ZooKeeper participant of {}",
            s.sid,
            s.dir.display(),
            args.config.display()
        ));
    }
    let tls = match &cfg.admin_tls {
        Some(a) => Some(crate::security::quorum_tls::QuorumTls::load(a.tls.clone()).map_err(|e| e.to_string())?),
        None => None,
    };
    let authorization = authorization(args, &cfg)?;
    let admin_port = args.admin_port.unwrap_or(cfg.admin_port);
    let client = AdminClient::new(tls, Some(authorization), TIMEOUT);
    Ok(Run { cfg, ens, admin_port, client })
}

/// The `Authorization` header's value from `--auth`, `--auth-file` or ZKR_ADMIN_AUTH
/// (`scheme[:data]` becomes `scheme data`); x509 when none is given and the AdminServers ask
/// for client certificates.
fn authorization(args: &TakeoverArgs, cfg: &Config) -> Result<String, String> {
    let given = match (&args.auth, &args.auth_file) {
        (Some(a), _) => Some(a.clone()),
        (None, Some(f)) => {
            let text = std::fs::read_to_string(f).map_err(|e| format!("--auth-file {}: {e}", f.display()))?;
            Some(text.lines().next().unwrap_or_default().trim().to_owned())
        }
        (None, None) => std::env::var("ZKR_ADMIN_AUTH").ok(),
    };
    let needs_cert = cfg.admin_tls.as_ref().is_some_and(|a| a.tls.stores.client_auth == ClientAuth::Need);
    let given = match given {
        Some(g) => g,
        None if needs_cert => "x509".to_owned(),
        None => {
            return Err("the observers' AdminServers take a takeover only with ZooKeeper's admin authentication: \
                        --auth digest:USER:PASSWORD (the super user of DigestAuthenticationProvider.superDigest, or \
                        a user that /'s ACL grants ALL), --auth x509 (over HTTPS, admin.needClientAuth=true) or \
                        --auth ip (an address /'s ACL grants ALL)"
                .into())
        }
    };
    match given.split_once(':') {
        Some(("digest", data)) if data.contains(':') => Ok(format!("digest {data}")),
        None if matches!(given.as_str(), "x509" | "ip") => Ok(given),
        _ => Err(format!("--auth {given:?}: give digest:USER:PASSWORD, x509 or ip")),
    }
}

async fn take_over(args: &TakeoverArgs, run: &Run) -> i32 {
    let started = Instant::now();
    let (cfg, ens) = (&run.cfg, &run.ens);
    // An observer notices a stopped leader within syncLimit ticks (at once when its connection
    // is reset): until then it still says it follows, and the check is repeated.
    let notice = crate::raft::timing::Timing::of(cfg, ens).stale_after;
    let planned = loop {
        match plan(run, &args.without).await {
            Err(Refusal::Following(_)) if started.elapsed() < notice => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            p => break p,
        }
    };
    let (plan, seen) = match planned {
        Err(why) => {
            eprintln!("zkr takeover: refused: {why}");
            return 1;
        }
        Ok(p) => p,
    };
    for s in &seen {
        let role = if s.id == plan.seed { "seed (the most advanced)" } else { "member" };
        println!("server.{}: zxid 0x{:x}, {role}", s.id, s.zxid);
    }
    let seed = seen.iter().find(|s| s.id == plan.seed).map_or(0, |s| s.zxid);
    let proof = match committed_by_zookeeper(ens, &args.zookeeper_data, seed) {
        Ok((text, proof)) => {
            println!("{text}");
            proof
        }
        Err(why) => {
            eprintln!("zkr takeover: refused: {why}");
            return 1;
        }
    };
    if args.dry_run {
        println!("dry run: nothing changed");
        return 0;
    }
    if let Err(why) = carry_out(run, &plan, &proof).await {
        eprintln!("zkr takeover: {why}");
        return 1;
    }
    println!("every observer accepted after {} ms; waiting for the zkr ensemble", started.elapsed().as_millis());
    let (ens, port, within) = (ens.clone(), cfg.port, Duration::from_secs(args.wait_secs));
    let waited = tokio::task::spawn_blocking(move || wait_for_leader(&ens, port, &plan, within)).await;
    match waited.ok().flatten() {
        Some((leader, members)) => {
            println!(
                "the zkr ensemble serves: server.{leader} leads, {members} members, {} ms after the command started",
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

/// Whether the seed holds every txn ZooKeeper may have committed, as the participants' logs
/// tell (`zk_logs`). Ok: what was found, and the proof every observer checks again; Err: why
/// the takeover would lose a write.
fn committed_by_zookeeper(
    ens: &Ensemble,
    sources: &[super::zk_logs::Source],
    seed: i64,
) -> Result<(String, LogProof), String> {
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
    let text = format!("ZooKeeper's logs: {each}; it committed at most up to 0x{bound:x}, which the seed holds");
    Ok((text, LogProof { logged }))
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

/// Checks everything that can be checked from here and picks the seed. A participant that
/// gives no answer is left to the observers (they know when they last heard from ZooKeeper).
async fn plan(run: &Run, without: &[u64]) -> Result<(Plan, Vec<Seen>), Refusal> {
    let probed = run.ens.clone();
    let found = tokio::task::spawn_blocking(move || probe::probe(&probed)).await.unwrap_or_default();
    let answering = probe::with_answer(&found, Answer::Answering);
    if !answering.is_empty() {
        return Err(Refusal::Other(format!(
            "ZooKeeper participants still answer: {}. Stop every ZooKeeper participant first",
            answering.join(", ")
        )));
    }
    let members: BTreeSet<u64> = observers(&run.ens).into_iter().filter(|id| !without.contains(id)).collect();
    if members.is_empty() {
        return Err(Refusal::Other("no observer left to take over".into()));
    }
    let mut seen = Vec::new();
    let mut problems = Vec::new();
    let mut following = Vec::new();
    for id in &members {
        let addr = admin_addr(&run.ens, *id, run.admin_port);
        match run.client.request(&addr, "GET", "/zkr/takeover", None).await {
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
    for p in found.iter().filter(|p| p.answer == Answer::Unreachable) {
        println!("{}: no answer (unreachable from here; the observers decide whether it is stopped)", p.describe());
    }
    // The most advanced observer; the lowest myid among equals.
    let seed = seen.iter().max_by_key(|s| (s.zxid, std::cmp::Reverse(s.id))).map(|s| s.id).unwrap_or_default();
    Ok((Plan { seed, members }, seen))
}

/// Every observer checks the plan first, then every one accepts it (the seed last). Each POST
/// carries the credentials and the log proof.
async fn carry_out(run: &Run, plan: &Plan, proof: &LogProof) -> Result<(), String> {
    let query = format!("seed={}&members={}", plan.seed, members_param(&plan.members));
    let body = proof.to_body();
    let mut order: Vec<u64> = plan.members.iter().copied().filter(|m| *m != plan.seed).collect();
    order.push(plan.seed);
    for check in [true, false] {
        for id in &order {
            let addr = admin_addr(&run.ens, *id, run.admin_port);
            let path = if check { format!("/zkr/takeover?{query}&check=1") } else { format!("/zkr/takeover?{query}") };
            let state = if check { "refused: nothing changed" } else { "stopped half-way" };
            match run.client.request(&addr, "POST", &path, Some(&body)).await {
                Ok((200, _)) => {}
                Ok((code, body)) => {
                    let why = serde_json::from_str::<serde_json::Value>(&body)
                        .ok()
                        .and_then(|v| v["error"].as_str().map(str::to_owned))
                        .unwrap_or(body);
                    return Err(format!("{state}: server.{id} refused the plan (HTTP {code}): {why}"));
                }
                Err(e) => return Err(format!("{state}: server.{id}: {e}")),
            }
        }
    }
    Ok(())
}

/// The member that says `Mode: leader` on its client port once one does, and how many
/// members serve. A member's client port is the one its `server.N` line names, else zoo.cfg's
/// `clientPort`.
fn wait_for_leader(ens: &Ensemble, client_port: u16, plan: &Plan, within: Duration) -> Option<(u64, usize)> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        for id in &plan.members {
            let Some(spec) = ens.members.get(id) else { continue };
            let addr = match &spec.client {
                Some((h, p)) => client_host(ens, *id, h, *p),
                None => join_host_port(&spec.host, client_port),
            };
            if srvr_mode(&addr).as_deref() == Some("leader") {
                return Some((*id, plan.members.len()));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(auth: Option<&str>) -> TakeoverArgs {
        TakeoverArgs {
            config: "zoo.cfg".into(),
            admin_port: None,
            auth: auth.map(str::to_owned),
            auth_file: None,
            without: Vec::new(),
            dry_run: false,
            wait_secs: 1,
            jaas_config: None,
            zookeeper_data: Vec::new(),
        }
    }

    #[test]
    fn credentials_become_zookeepers_authorization_header() {
        let cfg = Config::default();
        assert_eq!(authorization(&args(Some("digest:super:s3 cret")), &cfg), Ok("digest super:s3 cret".into()));
        assert_eq!(authorization(&args(Some("x509")), &cfg), Ok("x509".into()));
        assert_eq!(authorization(&args(Some("ip")), &cfg), Ok("ip".into()));
        assert!(authorization(&args(Some("digest:nopassword")), &cfg).is_err());
        assert!(authorization(&args(Some("sasl:bob")), &cfg).is_err());
    }
}
