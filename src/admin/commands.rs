//! The AdminServer commands and their JSON, key for key and in ZooKeeper's order (recorded from
//! Debian's ZooKeeper 3.8.0 running its Jetty AdminServer: `tests/interop/ops/ref/*.json`).

use crate::server::ops::{ConnView, Ops, Value, VERSION};
use serde_json::{json, Map, Value as Json};
use std::sync::atomic::Ordering;

/// The commands zkr serves, listed by `/commands` (alphabetical, as ZooKeeper lists them).
pub const NAMES: &[&str] = &[
    "configuration",
    "connection_stat_reset",
    "connections",
    "dirs",
    "dump",
    "environment",
    "is_read_only",
    "monitor",
    "restore",
    "ruok",
    "server_stats",
    "snapshot",
    "stat_reset",
    "stats",
    "watch_summary",
    "watches",
    "watches_by_path",
];

/// A command's primary name from any of its aliases (ZooKeeper's `Commands.getCommand`).
fn primary(name: &str) -> Option<&'static str> {
    Some(match name {
        "ruok" => "ruok",
        "server_stats" | "srvr" => "server_stats",
        "stats" | "stat" => "stats",
        "monitor" | "mntr" => "monitor",
        "connections" | "cons" => "connections",
        "configuration" | "conf" | "config" => "configuration",
        "environment" | "env" | "envi" => "environment",
        "dirs" => "dirs",
        "dump" => "dump",
        "watch_summary" | "wchs" => "watch_summary",
        "watches" | "wchc" => "watches",
        "watches_by_path" | "wchp" => "watches_by_path",
        "is_read_only" | "isro" => "is_read_only",
        "stat_reset" | "srst" => "stat_reset",
        "connection_stat_reset" | "crst" => "connection_stat_reset",
        _ => return None,
    })
}

/// Runs one command. An unknown name gets ZooKeeper's answer: HTTP 200 with an error field.
pub async fn run(ops: &Ops, name: &str) -> Json {
    let Some(cmd) = primary(name) else {
        return json!({ "command": name, "error": format!("Unknown command: {name}") });
    };
    let mut m = Map::new();
    match cmd {
        "server_stats" | "stats" => {
            let core = ops.core_stats().await;
            server_stats(ops, &core, &mut m);
            if cmd == "stats" {
                let conns: Vec<Json> =
                    ops.connections().iter().filter(|c| c.session != 0).map(|c| conn(c, false)).collect();
                m.insert("connections".into(), Json::Array(conns));
                m.insert("secure_connections".into(), json!([]));
            }
        }
        "monitor" => {
            let core = ops.core_stats().await;
            for (k, v) in ops.monitor(&core) {
                m.insert(k.to_owned(), value(v));
            }
        }
        "connections" => {
            let conns: Vec<Json> = ops.connections().iter().filter(|c| c.session != 0).map(|c| conn(c, true)).collect();
            m.insert("connections".into(), Json::Array(conns));
            m.insert("secure_connections".into(), json!([]));
        }
        "configuration" => {
            let (data_dir, log_dir) = ops.dirs();
            let c = &ops.cfg;
            m.insert("client_port".into(), json!(c.port));
            m.insert("data_dir".into(), json!(data_dir.display().to_string()));
            m.insert("data_log_dir".into(), json!(log_dir.display().to_string()));
            m.insert("tick_time".into(), json!(c.tick_time_ms));
            m.insert("max_client_cnxns".into(), json!(c.max_client_cnxns));
            m.insert("min_session_timeout".into(), json!(c.min_session_timeout_ms));
            m.insert("max_session_timeout".into(), json!(c.max_session_timeout_ms));
            m.insert("server_id".into(), json!(c.server_id));
            m.insert("client_port_listen_backlog".into(), json!(c.listen_backlog.map_or(-1, i64::from)));
        }
        "environment" => {
            for (k, v) in crate::server::four_letter::environment() {
                m.insert(k.to_owned(), json!(v));
            }
        }
        "dirs" => {
            let (d, l) = ops.dir_sizes();
            m.insert("datadir_size".into(), json!(d));
            m.insert("logdir_size".into(), json!(l));
        }
        "dump" => {
            let i = ops.inspect().await;
            let mut expiry = Map::new();
            for (due, ids) in &i.expiry {
                expiry.insert(due.to_string(), json!(ids));
            }
            let mut eph = Map::new();
            for (sid, paths) in &i.ephemerals {
                eph.insert(sid.to_string(), json!(paths));
            }
            m.insert("expiry_time_to_session_ids".into(), Json::Object(expiry));
            m.insert("session_id_to_ephemeral_paths".into(), Json::Object(eph));
        }
        "watch_summary" => {
            let (watchers, paths, total) = ops.inspect().await.watch_summary;
            m.insert("num_connections".into(), json!(watchers));
            m.insert("num_paths".into(), json!(paths));
            m.insert("num_total_watches".into(), json!(total));
        }
        "watches" => {
            let i = ops.inspect().await;
            let mut w = Map::new();
            for (sid, paths) in &i.watches {
                w.insert(sid.to_string(), json!(paths));
            }
            m.insert("session_id_to_watched_paths".into(), Json::Object(w));
        }
        "watches_by_path" => {
            let i = ops.inspect().await;
            let mut by_path: std::collections::BTreeMap<&str, Vec<i64>> = Default::default();
            for (sid, paths) in &i.watches {
                for p in paths {
                    by_path.entry(p).or_default().push(*sid);
                }
            }
            let w: Map<String, Json> = by_path.into_iter().map(|(p, ids)| (p.to_owned(), json!(ids))).collect();
            m.insert("path_to_session_ids".into(), Json::Object(w));
        }
        "is_read_only" => {
            m.insert("read_only".into(), json!(false));
        }
        "stat_reset" => ops.reset_stats(),
        "connection_stat_reset" => ops.stats.reset_connections(),
        _ => {}
    }
    m.insert("command".into(), json!(cmd));
    m.insert("error".into(), Json::Null);
    Json::Object(m)
}

fn value(v: Value) -> Json {
    match v {
        Value::Int(i) => json!(i),
        Value::Float(f) => json!(f),
        Value::Str(s) => json!(s),
    }
}

/// `ServerStats` as the `server_stats` and `stats` commands show it.
fn server_stats(ops: &Ops, core: &crate::server::core::CoreStats, m: &mut Map<String, Json>) {
    let s = &ops.stats;
    let (data_size, log_size) = ops.dir_sizes();
    // zkr does not track response sizes; -1 is ZooKeeper's "nothing measured".
    let buffers = json!({ "last_buffer_size": -1, "min_buffer_size": -1, "max_buffer_size": -1 });
    let avg = (s.latency.avg() * 10_000.0).round() / 10_000.0;
    let stats = json!({
        "packets_sent": s.packets_sent.load(Ordering::Relaxed),
        "packets_received": s.packets_received.load(Ordering::Relaxed),
        "fsync_threshold_exceed_count": 0,
        "client_response_stats": buffers.clone(),
        "data_dir_size": data_size,
        "log_dir_size": log_size,
        "provider_null": false,
        "server_state": ops.mode(),
        "last_processed_zxid": core.last_zxid,
        "outstanding_requests": s.outstanding.load(Ordering::Relaxed).max(0),
        "avg_latency": avg,
        "max_latency": s.latency.max(),
        "min_latency": s.latency.min(),
        "num_alive_client_connections": s.conns.len(),
        "uptime": ops.uptime_ms(),
        "auth_failed_count": s.auth_failed.load(Ordering::Relaxed),
        "non_mtlsremote_conn_count": 0,
        "non_mtlslocal_conn_count": 0,
    });
    m.insert("version".into(), json!(VERSION));
    m.insert("read_only".into(), json!(false));
    m.insert("server_stats".into(), stats);
    m.insert("client_response".into(), buffers);
    m.insert("node_count".into(), json!(core.znodes));
}

/// `ServerCnxn.getConnectionInfo(brief)`.
fn conn(c: &ConnView, full: bool) -> Json {
    let mut m = Map::new();
    m.insert("remote_socket_address".into(), json!(c.peer.to_string()));
    m.insert("interest_ops".into(), json!(1));
    m.insert("outstanding_requests".into(), json!(c.outstanding));
    m.insert("packets_received".into(), json!(c.received));
    m.insert("packets_sent".into(), json!(c.sent));
    if full {
        m.insert("session_id".into(), json!(c.session));
        m.insert("last_operation".into(), json!(c.last_op));
        m.insert("established".into(), json!(c.established_ms));
        m.insert("session_timeout".into(), json!(c.timeout_ms));
        m.insert("last_cxid".into(), json!(c.last_cxid));
        m.insert("last_zxid".into(), json!(c.last_zxid));
        m.insert("last_response_time".into(), json!(c.last_resp_ms));
        m.insert("last_latency".into(), json!(c.last_latency));
        m.insert("min_latency".into(), json!(c.min_latency));
        m.insert("avg_latency".into(), json!(c.avg_latency));
        m.insert("max_latency".into(), json!(c.max_latency));
    }
    Json::Object(m)
}
