//! Open-loop pacing on a dedicated OS thread. tokio's timer has 1 ms granularity, so a session
//! task sleeping until its next request's due time sends it up to a millisecond late, and that
//! lateness would be counted as server latency. The pacer thread sleeps with the kernel's
//! high-resolution timer (timer slack set by `--pace-slack-us`) and sends each request itself when due.

use std::time::{Duration, Instant};

/// A fixed-rate schedule: request `n` is due at `t0 + n / rate`, for session `n % sessions`
/// (round robin, so each session's own requests are evenly spaced and staggered).
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    pub t0: Instant,
    pub rate: f64,
    pub sessions: usize,
}

impl Schedule {
    pub fn due(&self, n: u64) -> Instant {
        self.t0 + Duration::from_nanos((n as f64 * 1e9 / self.rate) as u64)
    }

    pub fn session(&self, n: u64) -> usize {
        (n % self.sessions.max(1) as u64) as usize
    }
}

/// Sets this thread's timer slack (the kernel may end a sleep up to this much late to merge
/// wake-ups; default 50 µs) through /proc (no unsafe code in this crate); best effort. Returns
/// whether it was set.
pub fn timer_slack(slack: Duration) -> bool {
    let Ok(me) = std::fs::read_link("/proc/thread-self") else { return false };
    let Some(tid) = me.file_name() else { return false };
    let ns = slack.as_nanos().max(1).to_string();
    std::fs::write(format!("/proc/{}/timerslack_ns", tid.to_string_lossy()), ns).is_ok()
}

/// Gives this thread the lowest real-time priority (SCHED_FIFO 1) with `chrt`, so on a loaded
/// machine the sends are not delayed behind other processes' time slices. It sleeps between
/// sends, so it never holds a core. Best effort; returns whether it was set.
pub fn realtime() -> bool {
    let Ok(me) = std::fs::read_link("/proc/thread-self") else { return false };
    let Some(tid) = me.file_name() else { return false };
    std::process::Command::new("chrt")
        .args(["-f", "-p", "1", &tid.to_string_lossy()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Calls `send(n, due)` for each request n = 0, 1, … due before `end`, each at its due
/// time (or as soon after as the thread runs), in order. Returns how many were sent.
pub fn run(s: Schedule, end: Instant, mut send: impl FnMut(u64, Instant)) -> u64 {
    let mut n = 0u64;
    loop {
        let due = s.due(n);
        if due >= end {
            return n;
        }
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
            continue;
        }
        send(n, due);
        n += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_is_evenly_spaced_round_robin() {
        let t0 = Instant::now();
        let s = Schedule { t0, rate: 4000.0, sessions: 3 };
        assert_eq!(s.due(0), t0);
        assert_eq!(s.due(4000), t0 + Duration::from_secs(1));
        assert_eq!(s.due(1) - s.due(0), Duration::from_micros(250));
        assert_eq!((0..7).map(|n| s.session(n)).collect::<Vec<_>>(), vec![0, 1, 2, 0, 1, 2, 0]);
    }

    #[test]
    fn run_sends_each_due_request_once_in_order_and_never_early() {
        assert!(timer_slack(Duration::from_micros(1)), "timer slack not settable through /proc/<tid>/timerslack_ns");
        let t0 = Instant::now() + Duration::from_millis(2);
        let s = Schedule { t0, rate: 10_000.0, sessions: 4 };
        let end = t0 + Duration::from_millis(20);
        let mut seen = Vec::new();
        let sent = run(s, end, |n, due| {
            assert!(Instant::now() >= due, "request {n} sent before it was due");
            assert_eq!(due, s.due(n));
            seen.push(n);
        });
        assert_eq!(sent, 200);
        assert_eq!(seen, (0..200).collect::<Vec<_>>());
    }
}
