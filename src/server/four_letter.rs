//! Four-letter words on the client port (`echo ruok | nc host 2181`), gated by ZooKeeper's
//! `4lw.commands.whitelist`. ZooKeeper recognises them by the first four bytes of a connection.
//! Every answer follows ZooKeeper 3.8's text line for line (checked against Debian's 3.8.0 by
//! `tests/interop/ops/`), so that zktop, exporters and go-zookeeper's parsers read it.

use super::ops::{java_double, ConnView, Ops, VERSION};
use crate::cli::format::java_date;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use tokio::io::{AsyncWrite, AsyncWriteExt};

const WORDS: &[&str] = &[
    "ruok", "stat", "srvr", "mntr", "cons", "crst", "srst", "wchs", "wchc", "wchp", "dump", "envi", "conf", "isro",
    "dirs",
];

pub fn recognise(first: &[u8; 4]) -> Option<&'static str> {
    WORDS.iter().copied().find(|w| w.as_bytes() == first)
}

pub async fn answer<W: AsyncWrite + Unpin>(word: &str, mut wr: W, ops: &Ops) {
    let text = render(word, ops).await;
    let _ = wr.write_all(text.as_bytes()).await;
    let _ = wr.shutdown().await;
}

/// The answer to one word, whitelist applied.
pub async fn render(word: &str, ops: &Ops) -> String {
    let allowed = ops.cfg.four_letter_words.iter().any(|w| w == "*" || w == word);
    if !allowed {
        return format!("{word} is not executed because it is not in the whitelist.\n");
    }
    if !ops.serving() {
        // A member without a leader has no running ZooKeeperServer: the words that need one say
        // so (FourLetterCommand.ZK_NOT_SERVING); isro says "null".
        match word {
            "ruok" | "envi" | "dirs" => {}
            "isro" => return "null".to_owned(),
            _ => return "This ZooKeeper instance is not currently serving requests\n".to_owned(),
        }
    }
    match word {
        // ruok and isro answer without a newline, as ZooKeeper does.
        "ruok" => "imok".to_owned(),
        // IsroCommand: "ro" while a ReadOnlyZooKeeperServer serves.
        "isro" => if ops.mode() == "read-only" { "ro" } else { "rw" }.to_owned(),
        "srvr" => server_stats(ops, false).await,
        "stat" => server_stats(ops, true).await,
        "mntr" => {
            let core = ops.core_stats().await;
            let mut out = String::new();
            for (k, v) in ops.monitor(&core) {
                let _ = writeln!(out, "zk_{k}\t{}", v.text());
            }
            if let Some(d) = core.digest {
                // zkr's addition on ensemble members: the tree digest at the last applied zxid,
                // equal on every member that applied the same log (ZooKeeper 3.6 keeps the same
                // kind of digest and counts mismatches in zk_digest_mismatches_count).
                let _ = writeln!(out, "zk_digest\t{d}\nzk_digest_zxid\t0x{:x}", core.last_zxid);
            }
            if let Some(gap) = ops.leader_gap_max_ms() {
                // zkr's addition: the longest this member went without an append or heartbeat
                // from its leader since the last srst (issue 43: it stays near one heartbeat).
                let _ = writeln!(out, "zk_leader_gap_max_ms\t{gap}");
            }
            out
        }
        "cons" => {
            let mut out = String::new();
            for c in ops.connections() {
                out.push_str(&cons_line(&c, true));
                out.push('\n');
            }
            out.push('\n');
            out
        }
        "crst" => {
            ops.stats.reset_connections();
            "Connection stats reset.\n".to_owned()
        }
        "srst" => {
            ops.reset_stats();
            "Server stats reset.\n".to_owned()
        }
        "wchs" => {
            let i = ops.inspect().await;
            let (watchers, paths, total) = i.watch_summary;
            format!("{watchers} connections watching {paths} paths\nTotal watches:{total}\n")
        }
        "wchc" => {
            let i = ops.inspect().await;
            let mut out = String::new();
            for (sid, paths) in &i.watches {
                let _ = writeln!(out, "0x{sid:x}");
                for p in paths {
                    let _ = writeln!(out, "\t{p}");
                }
            }
            out.push('\n');
            out
        }
        "wchp" => {
            let i = ops.inspect().await;
            let mut by_path: std::collections::BTreeMap<&str, Vec<i64>> = Default::default();
            for (sid, paths) in &i.watches {
                for p in paths {
                    by_path.entry(p).or_default().push(*sid);
                }
            }
            let mut out = String::new();
            for (p, sids) in by_path {
                let _ = writeln!(out, "{p}");
                for sid in sids {
                    let _ = writeln!(out, "\t0x{sid:x}");
                }
            }
            out.push('\n');
            out
        }
        "dump" => dump(ops).await,
        "envi" => {
            let mut out = "Environment:\n".to_owned();
            for (k, v) in environment() {
                let _ = writeln!(out, "{k}={v}");
            }
            out
        }
        "conf" => {
            let (data_dir, log_dir) = ops.dirs();
            let (data_size, log_size) = ops.dir_sizes();
            let c = &ops.cfg;
            format!(
                "clientPort={}\nsecureClientPort=-1\ndataDir={}\ndataDirSize={data_size}\ndataLogDir={}\ndataLogSize={log_size}\n\
                 tickTime={}\nmaxClientCnxns={}\nminSessionTimeout={}\nmaxSessionTimeout={}\nclientPortListenBacklog={}\nserverId={}\n",
                c.port,
                data_dir.display(),
                log_dir.display(),
                c.tick_time_ms,
                c.max_client_cnxns,
                c.min_session_timeout_ms,
                c.max_session_timeout_ms,
                c.listen_backlog.map_or(-1, i64::from),
                c.server_id
            )
        }
        "dirs" => {
            let (data_size, log_size) = ops.dir_sizes();
            format!("datadir_size: {data_size}\nlogdir_size: {log_size}\n")
        }
        _ => format!("{word} is not executed because it is not in the whitelist.\n"),
    }
}

/// `srvr` (and `stat`, which adds the client list).
async fn server_stats(ops: &Ops, with_clients: bool) -> String {
    let core = ops.core_stats().await;
    let s = &ops.stats;
    let mut out = format!("Zookeeper version: {VERSION}\n");
    if with_clients {
        out.push_str("Clients:\n");
        for c in ops.connections() {
            out.push_str(&cons_line(&c, false));
            out.push('\n');
        }
        out.push('\n');
    }
    let _ = write!(
        out,
        "Latency min/avg/max: {}/{}/{}\nReceived: {}\nSent: {}\nConnections: {}\nOutstanding: {}\nZxid: 0x{:x}\nMode: {}\nNode count: {}\n",
        s.latency.min(),
        java_double(s.latency.avg()),
        s.latency.max(),
        s.packets_received.load(Ordering::Relaxed),
        s.packets_sent.load(Ordering::Relaxed),
        ops.stats.conns.len(),
        s.outstanding.load(Ordering::Relaxed).max(0),
        core.last_zxid,
        ops.mode(),
        core.znodes
    );
    if ops.mode() == "leader" {
        // The leader's extra line (zkr does not measure proposal sizes: -1, ZooKeeper's "none").
        out.push_str("Proposal sizes last/min/max: -1/-1/-1\n");
    }
    out
}

/// `ServerCnxn.dumpConnectionInfo`: ` /ip:port[ops](queued=…,recved=…,sent=…[,sid=…])`; the
/// brief form (`stat`) stops after `sent`, and the session part only appears once there is one.
pub fn cons_line(c: &ConnView, full: bool) -> String {
    let interest = if c.session != 0 { 1 } else { 0 };
    let mut s = format!(" /{}[{interest}](queued={},recved={},sent={}", c.peer, c.outstanding, c.received, c.sent);
    if full && c.session != 0 {
        let _ = write!(s, ",sid=0x{:x},lop={},est={},to={}", c.session, c.last_op, c.established_ms, c.timeout_ms);
        // ZooKeeper prints lcxid only once a client request (cxid >= 0) was answered.
        if c.last_cxid >= 0 {
            let _ = write!(s, ",lcxid=0x{:x}", c.last_cxid);
        }
        let _ = write!(
            s,
            ",lzxid=0x{:x},lresp={},llat={},minlat={},avglat={},maxlat={}",
            c.last_zxid, c.last_resp_ms, c.last_latency, c.min_latency, c.avg_latency, c.max_latency
        );
    }
    s.push(')');
    s
}

/// `dump`: session expiry buckets, ephemerals per session, then connections by expiry.
async fn dump(ops: &Ops) -> String {
    let i = ops.inspect().await;
    let mut out = String::from("SessionTracker dump:\n");
    let total: usize = i.expiry.iter().map(|(_, ids)| ids.len()).sum();
    let _ = writeln!(out, "Session Sets ({})/({total}):", i.expiry.len());
    for (due, ids) in &i.expiry {
        let _ = writeln!(out, "{} expire at {}:", ids.len(), java_date(*due));
        for id in ids {
            let _ = writeln!(out, "\t0x{id:x}");
        }
    }
    out.push_str("ephemeral nodes dump:\n");
    let _ = writeln!(out, "Sessions with Ephemerals ({}):", i.ephemerals.len());
    for (sid, paths) in &i.ephemerals {
        let _ = writeln!(out, "0x{sid:x}:");
        for p in paths {
            let _ = writeln!(out, "\t{p}");
        }
    }
    // Connections expire with their session; one without a session yet within a tick.
    let conns = ops.connections();
    let now = super::stats::wall_ms();
    let tick = i.expiry_interval_ms.max(1) as i64;
    let mut sets: std::collections::BTreeMap<i64, Vec<&ConnView>> = Default::default();
    for c in &conns {
        let due = i.sessions.get(&c.session).map_or((now / tick + 1) * tick, |(_, due)| *due);
        sets.entry(due).or_default().push(c);
    }
    out.push_str("Connections dump:\n");
    let _ = writeln!(out, "Connections Sets ({})/({}):", sets.len(), conns.len());
    for (due, cs) in sets {
        let _ = writeln!(out, "{} expire at {}:", cs.len(), java_date(due));
        for c in cs {
            let _ = writeln!(out, "\tip: /{} sessionId: 0x{:x}", c.peer, c.session);
        }
    }
    out
}

/// `envi`: ZooKeeper's `Environment.list()` keys. zkr is no JVM: the `java.*` keys describe the
/// zkr process instead, so that parsers expecting the keys find them.
pub fn environment() -> Vec<(&'static str, String)> {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_owned()).unwrap_or_default();
    let os_version =
        std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|h| h.trim().to_owned()).unwrap_or_default();
    let exe = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default();
    let user = std::env::var("USER").ok().filter(|u| !u.is_empty()).unwrap_or_else(user_name);
    let home = std::env::var("HOME").unwrap_or_default();
    let cwd = std::env::current_dir().map(|p| p.display().to_string()).unwrap_or_default();
    let (free, total) = memory_mb();
    vec![
        ("zookeeper.version", VERSION.to_owned()),
        ("host.name", host),
        ("java.version", "<NA>".to_owned()),
        ("java.vendor", "zkr".to_owned()),
        ("java.home", "<NA>".to_owned()),
        ("java.class.path", exe),
        ("java.library.path", "<NA>".to_owned()),
        ("java.io.tmpdir", std::env::temp_dir().display().to_string()),
        ("java.compiler", "<NA>".to_owned()),
        ("os.name", if std::env::consts::OS == "linux" { "Linux".to_owned() } else { std::env::consts::OS.to_owned() }),
        (
            "os.arch",
            if std::env::consts::ARCH == "x86_64" { "amd64".to_owned() } else { std::env::consts::ARCH.to_owned() },
        ),
        ("os.version", os_version),
        ("user.name", user),
        ("user.home", home),
        ("user.dir", cwd),
        ("os.memory.free", format!("{free}MB")),
        ("os.memory.max", format!("{total}MB")),
        ("os.memory.total", format!("{total}MB")),
    ]
}

/// The name of this process's user, from /proc/self/status and /etc/passwd.
fn user_name() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let uid = status.lines().find(|l| l.starts_with("Uid:")).and_then(|l| l.split_whitespace().nth(1)).unwrap_or("");
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    passwd
        .lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.len() > 2 && f[2] == uid)
        .map_or_else(|| uid.to_owned(), |f| f[0].to_owned())
}

/// (available, total) memory of the machine in MB, from /proc/meminfo.
fn memory_mb() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(0, |kb| kb / 1024)
    };
    (field("MemAvailable:"), field("MemTotal:"))
}
