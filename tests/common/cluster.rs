//! Ensembles in one process for integration tests: members on loopback ports, a cluster that
//! starts, stops and restarts them, and a real client (the `zookeeper-client` crate).

use std::collections::BTreeMap;
use std::time::Duration;
use zkr::config::Config;
use zkr::raft::members::{Ensemble, ServerSpec};
use zkr::server::core::replicated::Role;
use zkr::server::Server;
use zookeeper_client as zk;

/// A free port below the kernel's ephemeral range (32768 up): a port the kernel handed out
/// and we released could be taken by another test's outgoing connection before the member
/// binds it; ports from this range are only ever handed out here.
pub fn free_port() -> u16 {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let offset = (std::process::id() % 400) * 40;
    loop {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let port = (12_000 + (offset + n) % 20_000) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// Configs for an ensemble of `n` on loopback, each with its own data directory.
pub fn ensemble_configs(n: u64) -> Vec<Config> {
    let members: BTreeMap<u64, ServerSpec> = (1..=n)
        .map(|id| {
            let p = free_port();
            (id, ServerSpec { host: "127.0.0.1".into(), peer_port: p, election_port: p, observer: false, client: None })
        })
        .collect();
    (1..=n)
        .map(|id| Config {
            server_id: id as u8,
            four_letter_words: vec!["*".into()],
            ensemble: Some(Ensemble {
                my_id: id,
                members: members.clone(),
                init_limit: 10,
                sync_limit: 5,
                reconfig_enabled: false,
                dynamic_file: None,
                config_file: None,
            }),
            ..super::test_config()
        })
        .collect()
}

pub struct Cluster {
    pub cfgs: Vec<Config>,
    pub servers: Vec<Option<Server>>,
}

impl Cluster {
    pub async fn start(n: u64) -> Cluster {
        Cluster::start_with(ensemble_configs(n)).await
    }

    pub async fn start_with(cfgs: Vec<Config>) -> Cluster {
        let mut servers = Vec::new();
        for c in &cfgs {
            servers.push(Some(super::start_with(c.clone()).await.0));
        }
        let cl = Cluster { cfgs, servers };
        cl.leader().await;
        cl
    }

    pub fn addr(&self, i: usize) -> String {
        self.servers[i].as_ref().expect("member is running").local_addr().to_string()
    }

    pub fn role(&self, i: usize) -> Option<Role> {
        self.servers[i].as_ref().and_then(|s| s.member()).map(|m| m.status.role.lock().0)
    }

    /// The index of the leader, once there is one and every running member follows it.
    pub async fn leader(&self) -> usize {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let roles: Vec<Option<Role>> = (0..self.servers.len()).map(|i| self.role(i)).collect();
            let leaders: Vec<usize> = (0..roles.len()).filter(|i| roles[*i] == Some(Role::Leader)).collect();
            // Voters settle as leader or followers; observers are waited for by their tests.
            let settled = roles
                .iter()
                .enumerate()
                .all(|(i, r)| self.is_observer(i) || matches!(r, None | Some(Role::Leader) | Some(Role::Follower)));
            if leaders.len() == 1 && settled {
                return leaders[0];
            }
            assert!(tokio::time::Instant::now() < deadline, "no leader: {roles:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn is_observer(&self, i: usize) -> bool {
        let me = i as u64 + 1;
        self.cfgs[i].ensemble.as_ref().and_then(|e| e.members.get(&me)).is_some_and(|s| s.observer)
    }

    pub fn follower(&self, leader: usize) -> usize {
        (0..self.servers.len())
            .find(|i| *i != leader && self.servers[*i].is_some() && !self.is_observer(*i))
            .expect("a follower")
    }

    pub async fn stop(&mut self, i: usize) {
        if let Some(s) = self.servers[i].take() {
            s.shutdown().await;
        }
    }

    pub async fn restart(&mut self, i: usize) {
        self.stop(i).await;
        self.servers[i] = Some(super::start_with(self.cfgs[i].clone()).await.0);
    }

    pub async fn shutdown(mut self) {
        for i in 0..self.servers.len() {
            self.stop(i).await;
        }
    }

    pub fn connect_string(&self) -> String {
        (0..self.servers.len())
            .filter(|i| self.servers[*i].is_some())
            .map(|i| self.addr(i))
            .collect::<Vec<_>>()
            .join(",")
    }
}

pub async fn client(addr: &str) -> zk::Client {
    zk::Client::connector().session_timeout(Duration::from_secs(6)).connect(addr).await.expect("client connects")
}

pub fn persistent() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

pub fn ephemeral() -> zk::CreateOptions<'static> {
    zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all())
}

pub async fn four_letter(addr: &str, word: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect for a four-letter word");
    s.write_all(word.as_bytes()).await.unwrap();
    let mut out = String::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_string(&mut out)).await;
    out
}

pub fn mntr_value(mntr: &str, key: &str) -> Option<String> {
    mntr.lines().find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('\t')).map(str::to_owned))
}

/// Waits until every running member reports the same zxid and tree digest; returns the digest.
pub async fn converged(cl: &Cluster) -> String {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let mut seen = Vec::new();
        for i in (0..cl.servers.len()).filter(|i| cl.servers[*i].is_some()) {
            let m = four_letter(&cl.addr(i), "mntr").await;
            seen.push((mntr_value(&m, "zk_digest_zxid"), mntr_value(&m, "zk_digest")));
        }
        if seen.iter().all(|s| s.0.is_some() && *s == seen[0]) {
            return seen[0].1.clone().unwrap_or_default();
        }
        assert!(tokio::time::Instant::now() < deadline, "members did not converge: {seen:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Record offsets and lengths of a Raft log segment ("ZKRL" | version, then length | crc |
/// payload records, then zeros).
pub fn segment_records(path: &std::path::Path) -> Vec<(u64, u64)> {
    let b = std::fs::read(path).unwrap();
    // Format version 2 records end with a 4-byte end mark (`storage::segment`).
    let trailer = if b[4..8] == [0, 0, 0, 1] { 0 } else { 4 };
    let mut out = Vec::new();
    let mut off = 8usize;
    while off + 8 <= b.len() {
        let len = u32::from_be_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]]) as usize;
        if len == 0 {
            break;
        }
        out.push((off as u64, (8 + len + trailer) as u64));
        off += 8 + len + trailer;
    }
    out
}

pub fn newest_file(dir: &std::path::Path, prefix: &str) -> std::path::PathBuf {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.starts_with(prefix) && !n.ends_with(".meta") && !n.ends_with(".tmp")
        })
        .collect();
    files.sort();
    files.pop().unwrap_or_else(|| panic!("no {prefix}* in {}", dir.display()))
}

pub fn files_in(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |rd| rd.count())
}

pub async fn start_all(cfgs: &[Config]) -> Vec<zkr::server::Server> {
    let mut servers = Vec::new();
    for c in cfgs {
        servers.push(super::start_with(c.clone()).await.0);
    }
    servers
}

pub fn role(s: &zkr::server::Server) -> Option<Role> {
    s.member().map(|m| m.status.role.lock().0)
}

/// Members 1 and 2 (indexes 0 and 1) elect a leader and serve writes; member 3 never hears from
/// a leader in `wait` (it stays Looking), and a client on member 1 or 2 is not affected.
pub async fn third_member_stays_out(servers: &[zkr::server::Server], wait: Duration) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let roles: Vec<_> = servers.iter().map(role).collect();
        let pair = [roles[0], roles[1]];
        if pair.contains(&Some(Role::Leader)) && pair.contains(&Some(Role::Follower)) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "members 1 and 2 did not form a quorum: {roles:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let c = zk::Client::connector()
        .session_timeout(Duration::from_secs(6))
        .connect(&servers[0].local_addr().to_string())
        .await
        .expect("client on member 1");
    c.create("/written", b"x", &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())).await.unwrap();
    let until = tokio::time::Instant::now() + wait;
    while tokio::time::Instant::now() < until {
        assert_eq!(role(&servers[2]), Some(Role::Looking), "member 3 joined the ensemble");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A write through member 1 is read through member 3 after a sync, and the members converge.
pub async fn one_ensemble_to_a_client(cl: &Cluster, path: &str) {
    let a = zk::Client::connector().session_timeout(Duration::from_secs(6)).connect(&cl.addr(0)).await.unwrap();
    let b = zk::Client::connector().session_timeout(Duration::from_secs(6)).connect(&cl.addr(2)).await.unwrap();
    a.create(path, b"v1", &persistent()).await.unwrap();
    b.sync(path).await.unwrap();
    assert_eq!(b.get_data(path).await.unwrap().0, b"v1");
    converged(cl).await;
}

/// A peer that opens member 1's peer port in plaintext and sends a hello and a seed probe gets
/// no answer (a member that took the connection would answer the probe, whoever asks); nor does
/// one that sends a beat on a beat connection (the control lane is held to the same handshake).
pub async fn plain_peer_unanswered(cl: &Cluster, who: &str) {
    use zkr::raft::wire::{read_frame, write_frame, Beat, BeatAnswer, Hello, Kind, RpcRequest, RpcResponse};
    let peer = cl.cfgs[0].ensemble.as_ref().unwrap().me().unwrap().peer_addr();
    let mut s = tokio::net::TcpStream::connect(&peer).await.unwrap();
    write_frame(&mut s, &Hello { from: 2, kind: Kind::Rpc }).await.unwrap();
    let _ = write_frame(&mut s, &RpcRequest::SeedProbe).await;
    let answer = tokio::time::timeout(Duration::from_secs(10), read_frame::<_, RpcResponse>(&mut s)).await;
    assert!(matches!(answer, Ok(Err(_))), "{who} got {answer:?}");
    let mut s = tokio::net::TcpStream::connect(&peer).await.unwrap();
    write_frame(&mut s, &Hello { from: 2, kind: Kind::Beat }).await.unwrap();
    let _ = write_frame(&mut s, &Beat { vote: Default::default() }).await;
    let answer = tokio::time::timeout(Duration::from_secs(10), read_frame::<_, BeatAnswer>(&mut s)).await;
    assert!(matches!(answer, Ok(Err(_))), "{who} got a beat answered: {answer:?}");
}

/// The leader's beats (`raft::member::beats`) reach every other member and are answered: each
/// answered one sent within the last second. They travel on connections of their own, opened
/// with the same TLS and SASL handshake as every peer connection.
pub async fn beats_answered(cl: &Cluster) {
    let l = cl.leader().await;
    let status = &cl.servers[l].as_ref().and_then(|s| s.member()).expect("the leader is a member").status;
    let others: Vec<u64> =
        (0..cl.servers.len()).filter(|i| *i != l && cl.servers[*i].is_some()).map(|i| i as u64 + 1).collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let now = zkr::session::mono_ms();
        let fresh: Vec<bool> = {
            let beats = status.beats.lock();
            others.iter().map(|m| beats.last_answered(*m).is_some_and(|t| now.saturating_sub(t) < 1000)).collect()
        };
        if fresh.iter().all(|f| *f) {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "members {others:?} answered no recent beat: {fresh:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
