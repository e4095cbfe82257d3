//! What a workload reports: exact latency percentiles (every sample kept, sorted once), the
//! server's CPU time and RSS read from /proc/<pid> (so the loader's own cost is never counted),
//! and the one-line `key=value` summary the side-by-side script parses.

use std::fmt::Write as _;
use std::time::Duration;

/// Latency samples in microseconds.
#[derive(Default, Clone)]
pub struct Latencies {
    us: Vec<u32>,
}

impl Latencies {
    pub fn record(&mut self, d: Duration) {
        self.us.push(d.as_micros().min(u32::MAX as u128) as u32);
    }

    /// Records a sample already in microseconds (as another process reported it).
    pub fn record_us(&mut self, us: u32) {
        self.us.push(us);
    }

    /// The samples, in microseconds.
    pub fn raw(&self) -> &[u32] {
        &self.us
    }

    pub fn merge(&mut self, other: Latencies) {
        self.us.extend(other.us);
    }

    pub fn len(&self) -> usize {
        self.us.len()
    }

    pub fn is_empty(&self) -> bool {
        self.us.is_empty()
    }

    /// (p50, p99, max) in microseconds; zeros when empty.
    pub fn summary(&mut self) -> (u32, u32, u32) {
        if self.us.is_empty() {
            return (0, 0, 0);
        }
        self.us.sort_unstable();
        let at = |q: f64| self.us[((self.us.len() as f64 * q).ceil() as usize).clamp(1, self.us.len()) - 1];
        (at(0.50), at(0.99), self.us[self.us.len() - 1])
    }

    /// p99.9 in microseconds (call after `summary`, which sorts); 0 when empty.
    pub fn p999(&self) -> u32 {
        if self.us.is_empty() {
            return 0;
        }
        self.us[((self.us.len() as f64 * 0.999).ceil() as usize).clamp(1, self.us.len()) - 1]
    }
}

/// CPU ticks (utime + stime) and RSS of a process, from /proc.
#[derive(Debug, Clone, Copy)]
pub struct ProcSample {
    pub cpu_ticks: u64,
    pub rss_kb: u64,
    pub at: std::time::Instant,
}

/// Clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on Linux).
const USER_HZ: f64 = 100.0;

pub fn sample(pid: u32) -> Option<ProcSample> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state); utime is field 14, stime field 15.
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss_kb = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())?;
    Some(ProcSample { cpu_ticks: utime + stime, rss_kb, at: std::time::Instant::now() })
}

/// The summed sample of several processes (an ensemble's members); `None` if any is missing.
pub fn sample_all(pids: &[u32]) -> Option<ProcSample> {
    let mut all = pids.iter().map(|p| sample(*p));
    let first = all.next()??;
    all.try_fold(first, |acc, s| {
        let s = s?;
        Some(ProcSample { cpu_ticks: acc.cpu_ticks + s.cpu_ticks, rss_kb: acc.rss_kb + s.rss_kb, at: s.at })
    })
}

/// Server CPU use between two samples, in percent of one core.
pub fn cpu_pct(a: &ProcSample, b: &ProcSample) -> f64 {
    let secs = b.at.duration_since(a.at).as_secs_f64().max(1e-3);
    (b.cpu_ticks.saturating_sub(a.cpu_ticks)) as f64 / USER_HZ / secs * 100.0
}

/// The `key=value` summary line, in insertion order.
pub struct Summary {
    line: String,
}

impl Summary {
    pub fn new(workload: &str) -> Summary {
        Summary { line: format!("bench={workload}") }
    }

    pub fn kv(&mut self, k: &str, v: impl std::fmt::Display) -> &mut Summary {
        let _ = write!(self.line, " {k}={v}");
        self
    }

    pub fn f(&mut self, k: &str, v: f64) -> &mut Summary {
        let _ = write!(self.line, " {k}={v:.1}");
        self
    }

    /// p50/p99/max of `lat` as `<prefix>_p50_us` …
    pub fn lat(&mut self, prefix: &str, lat: &mut Latencies) -> &mut Summary {
        let (p50, p99, max) = lat.summary();
        let p999 = lat.p999();
        let _ = write!(
            self.line,
            " {prefix}_p50_us={p50} {prefix}_p99_us={p99} {prefix}_p999_us={p999} {prefix}_max_us={max}"
        );
        self
    }

    /// Server CPU and RSS over a window, when the server's pid is known.
    pub fn server(&mut self, before: Option<ProcSample>, after: Option<ProcSample>) -> &mut Summary {
        if let (Some(a), Some(b)) = (before, after) {
            self.f("server_cpu_pct", cpu_pct(&a, &b));
            self.kv("server_rss_kb", b.rss_kb);
        }
        self
    }

    /// The server's CPU time per operation over the window (summed over an ensemble's members):
    /// unlike elapsed-time throughput on a shared machine, it does not depend on what else runs.
    pub fn server_per_op(&mut self, before: Option<ProcSample>, after: Option<ProcSample>, ops: u64) -> &mut Summary {
        if let (Some(a), Some(b)) = (before, after) {
            if ops > 0 {
                let cpu_secs = b.cpu_ticks.saturating_sub(a.cpu_ticks) as f64 / USER_HZ;
                self.f("server_cpu_us_per_op", cpu_secs * 1e6 / ops as f64);
            }
        }
        self
    }

    pub fn print(&self) {
        println!("{}", self.line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_exact() {
        let mut l = Latencies::default();
        for i in 1..=100u64 {
            l.record(Duration::from_micros(i));
        }
        assert_eq!(l.summary(), (50, 99, 100));
        assert_eq!(Latencies::default().summary(), (0, 0, 0));
    }

    #[test]
    fn reads_own_process() {
        let s = sample(std::process::id()).expect("own /proc entry");
        assert!(s.rss_kb > 0);
    }
}
