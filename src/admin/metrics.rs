//! `/metrics` in Prometheus text format (0.0.4).
//!
//! Names follow ZooKeeper's PrometheusMetricsProvider where it has the metric (it exports the
//! `mntr` figures unprefixed: `znode_count`, `watch_count`, `num_alive_connections`,
//! `packets_received`, and the summaries `readlatency`, `updatelatency`, `fsynctime` in ms).
//! What ZooKeeper has no metric for is prefixed `zkr_`: the per-op request latency histogram and
//! the sizes of the snapshot and log directories.
//!
//! Every other `mntr` figure is exported too, under the name ZooKeeper's provider gives it (a
//! scalar as itself, `avg_/min_/max_/cnt_/sum_X` as the summary `X` with `X_count`, `X_sum` and a
//! 0.5 quantile), so a dashboard built on ZooKeeper's names finds every series it asks for;
//! figures of events zkr does not have are 0, as `mntr` shows them. `process_*` are the
//! standard process series (simpleclient's `StandardExports`, which ZooKeeper exports with
//! `metricsProvider.exportJvmInfo`); zkr has no `jvm_*` series.

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

/// The scalars ZooKeeper's provider types as gauges; its other scalars are counters.
const ZK_GAUGES: &[&str] = &[
    "uptime",
    "num_alive_connections",
    "max_client_response_size",
    "outstanding_requests",
    "avg_latency",
    "non_mtls_local_conn_count",
    "outstanding_tls_handshake",
    "global_sessions",
    "open_file_descriptor_count",
    "min_client_response_size",
    "local_sessions",
    "approximate_data_size",
    "watch_count",
    "ephemerals_count",
    "last_client_response_size",
    "connection_drop_probability",
    "non_mtls_remote_conn_count",
    "packets_received",
    "max_latency",
    "auth_failed_count",
    "znode_count",
    "packets_sent",
    "min_latency",
    "max_file_descriptor_count",
    "quorum_size",
    "learners",
    "synced_followers",
    "synced_non_voting_followers",
    "synced_observers",
    "pending_syncs",
    "leader_uptime",
    "last_proposal_size",
    "min_proposal_size",
    "max_proposal_size",
];

/// The prefixes `mntr` gives the parts of a summary.
const SUMMARY_PARTS: &[&str] = &["avg_", "min_", "max_", "cnt_", "sum_", "p50_", "p95_", "p99_", "p999_"];

/// Summaries rendered from their own samples above (not from the `mntr` figures).
const OWN_SUMMARIES: &[&str] = &["readlatency", "updatelatency", "fsynctime"];

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    }
}

/// The `mntr` figures not exported above, under ZooKeeper's Prometheus names.
fn rest_of_mntr(out: &mut String, mntr: &[(&str, Value)], done: &[&str]) {
    // A summary is a base name with a `cnt_` figure (`max_latency` is a scalar of its own).
    let bases: Vec<&str> = mntr.iter().filter_map(|(k, _)| k.strip_prefix("cnt_")).collect();
    let mut summaries: Vec<&str> = Vec::new();
    for (k, v) in mntr {
        if let Some(base) = SUMMARY_PARTS.iter().find_map(|p| k.strip_prefix(p)).filter(|b| bases.contains(b)) {
            if !summaries.contains(&base) && !OWN_SUMMARIES.contains(&base) {
                summaries.push(base);
            }
            continue;
        }
        let Some(x) = number(v) else { continue };
        if done.contains(k) {
            continue;
        }
        let kind = if ZK_GAUGES.contains(k) { "gauge" } else { "counter" };
        let _ = writeln!(
            out,
            "# HELP {k} {k} (as mntr reports it)
# TYPE {k} {kind}
{k} {x}"
        );
    }
    let get = |k: String| mntr.iter().find(|(n, _)| *n == k).and_then(|(_, v)| number(v));
    for base in summaries {
        let count = get(format!("cnt_{base}")).unwrap_or(0.0);
        let sum = get(format!("sum_{base}")).unwrap_or(0.0);
        let _ = writeln!(
            out,
            "# HELP {base} {base} (as mntr reports it)
# TYPE {base} summary"
        );
        // ZooKeeper's summaries report NaN quantiles until they have a value.
        match get(format!("p50_{base}")) {
            _ if count == 0.0 => {
                let _ = writeln!(out, "{base}{{quantile=\"0.5\"}} NaN");
            }
            Some(p50) => {
                let _ = writeln!(out, "{base}{{quantile=\"0.5\"}} {p50}");
            }
            None => {}
        }
        let _ = writeln!(out, "{base}_count {count}\n{base}_sum {sum}");
    }
}

/// simpleclient's `StandardExports` from /proc/self: CPU seconds, start time, open and maximum
/// file descriptors, virtual and resident memory. Nothing where /proc is not there.
fn process(out: &mut String, mntr: &[(&str, Value)]) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return };
    // The fields after the command name, which is in parentheses and may hold spaces.
    let Some(fields) = stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect::<Vec<_>>()) else {
        return;
    };
    let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<f64>().ok());
    // clock ticks per second and page size: the values every Linux build zkr runs on uses.
    const TICKS: f64 = 100.0;
    const PAGE: f64 = 4096.0;
    let boot = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("btime ").and_then(|v| v.trim().parse::<f64>().ok())));
    let get = |k: &str| mntr.iter().find(|(n, _)| *n == k).and_then(|(_, v)| number(v));
    let series = [
        (
            "process_cpu_seconds_total",
            "counter",
            "Total user and system CPU time spent in seconds.",
            field(14).zip(field(15)).map(|(u, s)| (u + s) / TICKS),
        ),
        (
            "process_start_time_seconds",
            "gauge",
            "Start time of the process since unix epoch in seconds.",
            field(22).zip(boot).map(|(start, boot)| boot + start / TICKS),
        ),
        ("process_open_fds", "gauge", "Number of open file descriptors.", get("open_file_descriptor_count")),
        ("process_max_fds", "gauge", "Maximum number of open file descriptors.", get("max_file_descriptor_count")),
        ("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", field(23)),
        ("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", field(24).map(|p| p * PAGE)),
    ];
    for (name, kind, help, value) in series {
        if let Some(v) = value {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}");
        }
    }
}

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
    summary(
        &mut out,
        "readlatency",
        "Read request latency, ms",
        &s.read_latency.stats,
        Some(&s.read_latency.sample),
        None,
    );
    summary(
        &mut out,
        "updatelatency",
        "Write request latency, ms",
        &s.update_latency.stats,
        Some(&s.update_latency.sample),
        None,
    );
    // fsync times are kept in histogram buckets, not a sample: the median is the upper bound of
    // the bucket it falls in (NaN before the first fsync, as ZooKeeper's summaries start).
    let median = bucket_median_ms(&s.fsync_hist);
    summary(&mut out, "fsynctime", "Transaction log fsync time, ms", &s.fsync, None, Some(median));

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
    let done: Vec<&str> = GAUGES.iter().chain(COUNTERS).map(|(n, _)| *n).collect();
    rest_of_mntr(&mut out, &mntr, &done);
    process(&mut out, &mntr);
    out
}

/// A summary without quantiles (count and sum), which is what zkr measures.
/// A summary; with a sample, the quantiles ZooKeeper's Prometheus provider gives its ADVANCED
/// summaries (0.5, 0.9, 0.99), taken from the same 4096-value sample `mntr` uses.
fn summary(out: &mut String, name: &str, help: &str, m: &MinAvgMax, sample: Option<&Reservoir>, median: Option<f64>) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} summary");
    if let Some(v) = median {
        let _ = writeln!(out, "{name}{{quantile=\"0.5\"}} {v}");
    }
    if let Some(r) = sample {
        const QS: [f64; 3] = [0.5, 0.9, 0.99];
        for (q, v) in QS.iter().zip(r.quantiles(&QS)) {
            let _ = writeln!(out, "{name}{{quantile=\"{q}\"}} {v}");
        }
    }
    let _ = writeln!(out, "{name}_count {}\n{name}_sum {}", m.count(), m.total());
}

/// The upper bound, in ms, of the histogram bucket holding the median; NaN when empty.
fn bucket_median_ms(h: &Histogram) -> f64 {
    let count = h.count();
    if count == 0 {
        return f64::NAN;
    }
    LATENCY_BUCKETS
        .iter()
        .zip(h.cumulative())
        .find(|(_, n)| *n * 2 >= count)
        .map_or(f64::INFINITY, |(le, _)| le * 1000.0)
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
