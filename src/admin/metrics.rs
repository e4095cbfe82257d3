//! `/metrics` in Prometheus text format (0.0.4).
//!
//! Names follow ZooKeeper's PrometheusMetricsProvider where it has the metric (it exports the
//! `mntr` figures unprefixed: `znode_count`, `watch_count`, `num_alive_connections`,
//! `packets_received`, and the summaries `readlatency`, `updatelatency`, `fsynctime` in ms).
//! What ZooKeeper has no metric for is prefixed `zkr_`: the per-op request latency histogram and
//! the sizes of the snapshot and log directories.

use crate::server::ops::{Ops, Value};
use crate::server::stats::{op_label, Histogram, MinAvgMax, Reservoir, LATENCY_BUCKETS};
use std::fmt::Write as _;

/// mntr figures exported as gauges, with their help text.
const GAUGES: &[(&str, &str)] = &[
    ("znode_count", "Number of znodes"),
    ("watch_count", "Number of watches (data and child)"),
    ("ephemerals_count", "Number of ephemeral znodes"),
    ("approximate_data_size", "Bytes of znode data"),
    ("num_alive_connections", "Open client connections"),
    ("outstanding_requests", "Requests read and not yet answered"),
    ("global_sessions", "Sessions"),
    ("avg_latency", "Average request latency since the last reset, ms"),
    ("min_latency", "Minimum request latency since the last reset, ms"),
    ("max_latency", "Maximum request latency since the last reset, ms"),
    ("uptime", "Milliseconds since the server started"),
    ("open_file_descriptor_count", "Open file descriptors"),
    ("max_file_descriptor_count", "File descriptor limit"),
];

const COUNTERS: &[(&str, &str)] = &[
    ("packets_received", "Packets received from clients"),
    ("packets_sent", "Packets sent to clients"),
    ("bytes_received_count", "Bytes received from clients"),
    ("auth_failed_count", "Failed authentications"),
];

pub async fn render(ops: &Ops) -> String {
    let core = ops.core_stats().await;
    let mntr = ops.monitor(&core);
    let get = |k: &str| -> f64 {
        match mntr.iter().find(|(n, _)| *n == k).map(|(_, v)| v) {
            Some(Value::Int(i)) => *i as f64,
            Some(Value::Float(f)) => *f,
            _ => 0.0,
        }
    };
    let mut out = String::with_capacity(16 * 1024);
    for (name, help) in GAUGES {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {}", get(name));
    }
    for (name, help) in COUNTERS {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}", get(name));
    }
    let s = &ops.stats;
    summary(&mut out, "readlatency", "Read request latency, ms", &s.read_latency.stats, Some(&s.read_latency.sample));
    summary(
        &mut out,
        "updatelatency",
        "Write request latency, ms",
        &s.update_latency.stats,
        Some(&s.update_latency.sample),
    );
    summary(&mut out, "fsynctime", "Transaction log fsync time, ms", &s.fsync, None);

    let name = "zkr_request_latency_seconds";
    let _ = writeln!(out, "# HELP {name} Request latency from read to reply, by op code");
    let _ = writeln!(out, "# TYPE {name} histogram");
    for (op, h) in &s.by_op {
        histogram(&mut out, name, &format!("op=\"{}\"", op_label(*op)), h);
    }
    let name = "zkr_fsync_seconds";
    let _ = writeln!(out, "# HELP {name} Transaction log fsync time");
    let _ = writeln!(out, "# TYPE {name} histogram");
    histogram(&mut out, name, "", &s.fsync_hist);

    let (data_size, log_size) = ops.dir_sizes();
    let _ = writeln!(
        out,
        "# HELP zkr_log_dir_size_bytes Bytes in the transaction log directory\n# TYPE zkr_log_dir_size_bytes gauge\nzkr_log_dir_size_bytes {log_size}"
    );
    let _ = writeln!(
        out,
        "# HELP zkr_snapshot_dir_size_bytes Bytes in the snapshot directory\n# TYPE zkr_snapshot_dir_size_bytes gauge\nzkr_snapshot_dir_size_bytes {data_size}"
    );
    let _ = writeln!(
        out,
        "# HELP zkr_last_zxid The last applied zxid\n# TYPE zkr_last_zxid gauge\nzkr_last_zxid {}",
        core.last_zxid
    );
    out
}

/// A summary without quantiles (count and sum), which is what zkr measures.
/// A summary; with a sample, the quantiles ZooKeeper's Prometheus provider gives its ADVANCED
/// summaries (0.5, 0.9, 0.99), taken from the same 4096-value sample `mntr` uses.
fn summary(out: &mut String, name: &str, help: &str, m: &MinAvgMax, sample: Option<&Reservoir>) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} summary");
    if let Some(r) = sample {
        const QS: [f64; 3] = [0.5, 0.9, 0.99];
        for (q, v) in QS.iter().zip(r.quantiles(&QS)) {
            let _ = writeln!(out, "{name}{{quantile=\"{q}\"}} {v}");
        }
    }
    let _ = writeln!(out, "{name}_count {}\n{name}_sum {}", m.count(), m.total());
}

fn histogram(out: &mut String, name: &str, labels: &str, h: &Histogram) {
    let sep = if labels.is_empty() { "" } else { "," };
    for (le, n) in LATENCY_BUCKETS.iter().zip(h.cumulative()) {
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{le}\"}} {n}");
    }
    let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}", h.count());
    let braces = if labels.is_empty() { String::new() } else { format!("{{{labels}}}") };
    let _ = writeln!(out, "{name}_count{braces} {}", h.count());
    let _ = writeln!(out, "{name}_sum{braces} {}", h.sum_secs());
}
