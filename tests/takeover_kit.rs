//! What the takeover tests share: zkr observer processes of a ZooKeeper ensemble (each on its
//! own address, so that their AdminServers share one port as on separate hosts; optionally
//! inside a network namespace), their zoo.cfg's security lines, the `zkr takeover` tool, and
//! direct requests to the observers' AdminServers with ZooKeeper's admin authentication.

use crate::zab_observer::{free_port, until_async};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use zkr::takeover::guard::LogProof;
use zkr::takeover::http::AdminClient;

/// The observers' tickTime, ZooKeeper's default: it sets zkr's election timeouts after the
/// takeover, and the observers notice a silent leader after syncLimit (5) ticks.
pub(crate) const TICK_MS: u64 = 2000;
pub(crate) const ZKR: &str = env!("CARGO_BIN_EXE_zkr");
/// The password of the observers' super user (`DigestAuthenticationProvider.superDigest`).
pub(crate) const SUPER_PASSWORD: &str = "admin-s3cret";

/// `--auth` for the super user.
pub(crate) fn super_auth() -> String {
    format!("digest:super:{SUPER_PASSWORD}")
}

/// The `Authorization` header of the super user.
pub(crate) fn super_header() -> String {
    format!("digest super:{SUPER_PASSWORD}")
}

/// One zkr observer process.
pub(crate) struct Observer {
    pub(crate) id: u64,
    pub(crate) ip: String,
    pub(crate) client: u16,
    pub(crate) admin: u16,
    pub(crate) dir: PathBuf,
    pub(crate) child: Child,
}

impl Observer {
    pub(crate) fn addr(&self) -> String {
        format!("{}:{}", self.ip, self.client)
    }

    /// Its AdminServer.
    pub(crate) fn admin_addr(&self) -> String {
        format!("{}:{}", self.ip, self.admin)
    }

    pub(crate) fn config(&self) -> PathBuf {
        self.dir.join("zoo.cfg")
    }

    /// `secure`: zoo.cfg's security lines (and the JAAS file, `--jaas-config`); `netns`: run it
    /// inside that network namespace.
    fn start(
        id: u64,
        ip: &str,
        client: u16,
        admin: u16,
        servers: &str,
        secure: &Secured,
        netns: Option<&str>,
    ) -> Observer {
        let dir = crate::common::temp_dir();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("myid"), format!("{id}\n")).unwrap();
        let text = format!(
            "tickTime={TICK_MS}\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={client}\nclientPortAddress={ip}\n\
             admin.serverAddress={ip}\nadmin.serverPort={admin}\n4lw.commands.whitelist=*\n\
             DigestAuthenticationProvider.superDigest={}\npeerType=observer\nzkr.ensembleProtocol=zab\n{servers}{}",
            dir.display(),
            zkr::tree::acl::digest(&format!("super:{SUPER_PASSWORD}")).unwrap(),
            secure.lines
        );
        std::fs::write(dir.join("zoo.cfg"), text).unwrap();
        let out = std::fs::File::create(dir.join("zkr.out")).unwrap();
        // `ip netns exec` execs zkr: the child's pid is zkr's.
        let mut cmd = match netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns, ZKR]);
                c
            }
            None => Command::new(ZKR),
        };
        cmd.arg("serve").arg("--config").arg(dir.join("zoo.cfg"));
        if let Some(jaas) = &secure.jaas {
            cmd.arg("--jaas-config").arg(jaas);
        }
        let child = cmd
            .env("RUST_LOG", "info")
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .stdin(Stdio::null())
            .spawn()
            .expect("start zkr");
        Observer { id, ip: ip.to_owned(), client, admin, dir, child }
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("zkr.out")).unwrap_or_default()
    }

    fn log_tail(&self) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        } else {
            eprintln!("--- zkr server.{} ({}) ---\n{}", self.id, self.dir.display(), self.log_tail());
        }
    }
}

/// Three observers' addresses (ids 9-11, one AdminServer port) and their `server.N` lines.
pub(crate) struct ObserverPlan {
    pub(crate) ips: [String; 3],
    pub(crate) clients: [u16; 3],
    pub(crate) admin: u16,
    pub(crate) lines: String,
}

impl ObserverPlan {
    /// On 127.0.0.9-11.
    pub(crate) fn new() -> ObserverPlan {
        ObserverPlan::at(["127.0.0.9".into(), "127.0.0.10".into(), "127.0.0.11".into()])
    }

    pub(crate) fn at(ips: [String; 3]) -> ObserverPlan {
        let clients = [free_port(), free_port(), free_port()];
        let mut lines = String::new();
        for (i, ip) in ips.iter().enumerate() {
            lines += &format!("server.{}={ip}:{}:{}:observer;{ip}:{}\n", 9 + i, free_port(), free_port(), clients[i]);
        }
        ObserverPlan { ips, clients, admin: free_port(), lines }
    }
}

/// The three observers started, once each says it observes.
pub(crate) async fn start_observers(plan: &ObserverPlan, servers: &str, secured: &Secured) -> Vec<Observer> {
    start_observers_in(plan, servers, secured, None).await
}

/// The same, each inside its network namespace of `netns`.
pub(crate) async fn start_observers_in(
    plan: &ObserverPlan,
    servers: &str,
    secured: &Secured,
    netns: Option<&[String; 3]>,
) -> Vec<Observer> {
    let obs: Vec<Observer> = (0..3)
        .map(|i| {
            let ns = netns.map(|n| n[i].as_str());
            Observer::start(9 + i as u64, &plan.ips[i], plan.clients[i], plan.admin, servers, secured, ns)
        })
        .collect();
    for o in &obs {
        let a = o.addr();
        until_async("the zkr observer synced", 60, || {
            let a = a.clone();
            async move { mode(&a).await.as_deref() == Some("observer") }
        })
        .await;
    }
    obs
}

/// `srvr`'s Mode of the server at `addr`.
pub(crate) async fn mode(addr: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.ok()?;
    s.write_all(b"srvr").await.ok()?;
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(2), s.read_to_string(&mut out)).await.ok()?.ok()?;
    out.lines().find_map(|l| l.strip_prefix("Mode: ").map(str::to_owned))
}

/// `zkr takeover`, given the ZooKeeper participants' data directories (`zk_data`) and
/// `--auth` (none: the tool picks, or says it needs one).
pub(crate) fn takeover(
    config: &Path,
    jaas: Option<&Path>,
    zk_data: &[PathBuf],
    auth: Option<&str>,
) -> std::process::Output {
    let mut cmd = Command::new(ZKR);
    cmd.arg("takeover").arg("--config").arg(config);
    if let Some(j) = jaas {
        cmd.arg("--jaas-config").arg(j);
    }
    for d in zk_data {
        cmd.arg("--zookeeper-data").arg(d);
    }
    if let Some(a) = auth {
        cmd.arg("--auth").arg(a);
    }
    cmd.env_remove("ZKR_ADMIN_AUTH").output().expect("zkr takeover runs")
}

/// What the participants' logs in `zk_data` hold, as the POST body the tool sends.
pub(crate) fn log_proof(zk_data: &[PathBuf]) -> String {
    let sources: Vec<_> = zk_data
        .iter()
        .map(|d| zkr::takeover::zk_logs::parse_source(&d.to_string_lossy()).expect("a participant's dataDir"))
        .collect();
    LogProof { logged: zkr::takeover::zk_logs::read(&sources).expect("the participants' logs") }.to_body()
}

/// A plain-HTTP request to an AdminServer with the `Authorization` header `auth`.
pub(crate) async fn admin(
    addr: &str,
    method: &str,
    path: &str,
    auth: Option<&str>,
    body: Option<&str>,
) -> (u16, String) {
    let client = AdminClient::new(None, auth.map(str::to_owned), Duration::from_secs(10));
    client.request(addr, method, path, body).await.expect("the AdminServer answers")
}

/// `(status, "error" of the JSON body)`.
pub(crate) fn error_of(answer: &(u16, String)) -> (u16, String) {
    let v: serde_json::Value = serde_json::from_str(&answer.1).unwrap_or_default();
    (answer.0, v["error"].as_str().unwrap_or_default().to_owned())
}

/// Waits until the observer's AdminServer says it follows no leader.
pub(crate) async fn until_not_following(o: &Observer) {
    let a = o.admin_addr();
    until_async("the observer noticed ZooKeeper's leader is gone", 60, || {
        let a = a.clone();
        async move {
            let (code, body) = admin(&a, "GET", "/zkr/takeover", None, None).await;
            code == 200 && body.contains("\"following\":false")
        }
    })
    .await;
}

/// What the ensemble requires of its members.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Secure {
    None,
    /// Quorum TLS and SASL, and the AdminServers on HTTPS only, asking for client certificates;
    /// the members' certificate (`CN=member`) is the x509 super user.
    TlsAndSasl,
}

/// zoo.cfg lines and the JAAS file that secure an ensemble, ZooKeeper's and zkr's alike.
pub(crate) struct Secured {
    pub(crate) lines: String,
    pub(crate) jaas: Option<PathBuf>,
    pub(crate) dir: Option<PathBuf>,
    /// The CA of the members' certificates.
    ca: Option<crate::common::certs::Ca>,
}

/// The AdminServer lines of `Secure::TlsAndSasl` (ZooKeeper's own members have no AdminServer).
pub(crate) const ADMIN_HTTPS: &str =
    "admin.forceHttps=true\nadmin.needClientAuth=true\nX509AuthenticationProvider.superUser=CN=member\n";

impl Secured {
    pub(crate) fn new(secure: Secure) -> Secured {
        if secure == Secure::None {
            return Secured { lines: String::new(), jaas: None, dir: None, ca: None };
        }
        let dir = crate::common::temp_dir();
        let ca = crate::common::certs::Ca::new(&dir, "ca");
        let store = ca.key_store("member", crate::zab_quorum_tls::NAMES);
        let tls = crate::zab_quorum_tls::tls_lines(&store, &ca.trust_store("ca"));
        let jaas = crate::zab_quorum_sasl::jaas(&dir, "s3cret");
        let lines = format!("{}{tls}", crate::zab_quorum_sasl::SASL);
        Secured { lines, jaas: Some(jaas), dir: Some(dir), ca: Some(ca) }
    }

    /// No security, only these zoo.cfg lines for the observers.
    pub(crate) fn with_lines(lines: &str) -> Secured {
        Secured { lines: lines.to_owned(), jaas: None, dir: None, ca: None }
    }

    /// Another key store the members' CA signs, for `CN=<name>`.
    pub(crate) fn key_store(&self, name: &str) -> PathBuf {
        self.ca.as_ref().expect("a secured ensemble").key_store(name, crate::zab_quorum_tls::NAMES)
    }

    /// The JVM's properties for ZooKeeper's members.
    pub(crate) fn props(&self) -> Vec<String> {
        self.jaas.iter().map(|j| format!("-Djava.security.auth.login.config={}", j.display())).collect()
    }

    /// The observers' lines: the ensemble's, and their AdminServers' on HTTPS with `Secure::TlsAndSasl`.
    pub(crate) fn for_observers(&self) -> Secured {
        let admin = if self.dir.is_some() { ADMIN_HTTPS } else { "" };
        Secured { lines: format!("{}{admin}", self.lines), jaas: self.jaas.clone(), dir: None, ca: None }
    }
}

impl Drop for Secured {
    fn drop(&mut self) {
        if let Some(d) = &self.dir {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}
