//! The scale workload's coordinator: it creates the directories, starts the workers (one loader
//! process per `--per-worker` sessions), steps them through the phases, samples the members from
//! /proc, kills and restarts the member, and prints the summary line.

use super::super::stats::{self, Latencies, ProcSample, Summary};
use super::track::{self, wall_us, Phase, Report};
use super::{create_dirs, BenchError, Release, ScaleArgs, Topology};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

struct Workers {
    procs: Vec<(Child, ChildStdin, Lines<BufReader<ChildStdout>>)>,
}

impl Workers {
    fn start(n: usize) -> Result<Workers, BenchError> {
        let exe = std::env::current_exe()?;
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut procs = Vec::with_capacity(n);
        for i in 0..n {
            let mut child = tokio::process::Command::new(&exe)
                .args(&args)
                .args(["--worker", &i.to_string(), "--workers", &n.to_string()])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .kill_on_drop(true)
                .spawn()?;
            let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                return Err(BenchError::Protocol("worker without pipes".into()));
            };
            procs.push((child, stdin, BufReader::new(stdout).lines()));
        }
        Ok(Workers { procs })
    }

    fn pids(&self) -> Vec<u32> {
        self.procs.iter().filter_map(|(c, _, _)| c.id()).collect()
    }

    /// Sends `cmd` to every worker, then reads each one's answer (the text after `ok`).
    async fn ask(&mut self, cmd: &str) -> Result<Vec<String>, BenchError> {
        for (_, stdin, _) in self.procs.iter_mut() {
            stdin.write_all(format!("{cmd}\n").as_bytes()).await?;
            stdin.flush().await?;
        }
        let mut out = Vec::with_capacity(self.procs.len());
        for (i, (_, _, lines)) in self.procs.iter_mut().enumerate() {
            let line = lines.next_line().await?.ok_or_else(|| BenchError::Protocol(format!("worker {i} ended")))?;
            match line.strip_prefix("ok") {
                Some(rest) => out.push(rest.trim().to_owned()),
                None => return Err(BenchError::Protocol(format!("worker {i}: {cmd}: {line}"))),
            }
        }
        Ok(out)
    }

    /// The sum of `key=N` over the workers' answers to `cmd`.
    async fn sum(&mut self, cmd: &str, key: &str) -> Result<u64, BenchError> {
        let want = format!("{key}=");
        Ok(self
            .ask(cmd)
            .await?
            .iter()
            .filter_map(|r| r.split_whitespace().find_map(|w| w.strip_prefix(&want)?.parse::<u64>().ok()))
            .sum())
    }

    /// Every worker's samples for `cmd`, merged.
    async fn samples(&mut self, cmd: &str) -> Result<Latencies, BenchError> {
        let mut lat = Latencies::default();
        for r in self.ask(cmd).await? {
            for us in r.split_whitespace().filter_map(|v| v.parse::<u32>().ok()) {
                lat.record_us(us);
            }
        }
        Ok(lat)
    }

    async fn phase(&mut self, p: Phase) -> Result<(), BenchError> {
        self.ask(&format!("phase {}", p as usize)).await.map(|_| ())
    }
}

fn sample(pids: &[u32]) -> Vec<Option<ProcSample>> {
    pids.iter().map(|p| stats::sample(*p)).collect()
}

fn rss_sum(s: &[Option<ProcSample>]) -> u64 {
    s.iter().flatten().map(|x| x.rss_kb).sum()
}

/// Per-member CPU (percent of a core) between two samples and the last RSS, as summary keys
/// `m<i>_<what>_cpu_pct` / `_rss_kb` (i: the member's place in --server), and their CPU sum.
fn per_member(s: &mut Summary, what: &str, members: &[usize], a: &[Option<ProcSample>], b: &[Option<ProcSample>]) {
    let mut cpu = 0.0;
    for ((m, x), y) in members.iter().zip(a).zip(b) {
        if let (Some(x), Some(y)) = (x, y) {
            let c = stats::cpu_pct(x, y);
            cpu += c;
            s.f(&format!("m{m}_{what}_cpu_pct"), c).kv(&format!("m{m}_{what}_rss_kb"), y.rss_kb);
        }
    }
    s.f(&format!("{what}_cpu_pct"), cpu);
}

/// The loader's own CPU over a window (its workers'), percent of a core.
fn loader_cpu(a: &[Option<ProcSample>], b: &[Option<ProcSample>]) -> f64 {
    a.iter().zip(b).filter_map(|(x, y)| Some(stats::cpu_pct(x.as_ref()?, y.as_ref()?))).sum()
}

/// `srvr`'s Mode line from `addr`.
async fn mode(addr: &str) -> Option<String> {
    let srvr = crate::client::four_letter::ask(addr, "srvr", Duration::from_secs(3)).await?;
    crate::client::four_letter::mode(&srvr)
}

fn parse_changes(answers: &[String]) -> Vec<Report> {
    let opt = |v: &str| v.parse::<i64>().ok();
    let mut out = Vec::new();
    for a in answers {
        for c in a.split_whitespace() {
            let f: Vec<&str> = c.split(':').collect();
            if let [id, made, done, unseen] = f[..] {
                if let Ok(id) = id.parse() {
                    out.push(Report { id, made_us: opt(made), done_us: opt(done), unseen: unseen == "1" });
                }
            }
        }
    }
    out
}

/// Phase 3: the rolling release, every change timed to its last watching consumer.
async fn release_phase(
    w: &mut Workers,
    s: &mut Summary,
    release: &Release,
    a: &ScaleArgs,
    pids: &[u32],
    members: &[usize],
) -> Result<(), BenchError> {
    w.phase(Phase::Release).await?;
    let (before, loader_before) = (sample(pids), sample(&w.pids()));
    let start = Instant::now();
    w.ask(&format!("release {}", wall_us() + 500_000)).await?;
    let window = Duration::from_millis(500) + release.every * release.chosen.len() as u32 + release.down;
    tokio::time::sleep(window).await;
    let settle = Instant::now() + Duration::from_secs_f64(a.limit_secs);
    loop {
        let left: u64 = w.ask("unseen").await?.iter().filter_map(|x| x.parse::<u64>().ok()).sum();
        if left == 0 || Instant::now() >= settle {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (after, loader_after) = (sample(pids), sample(&w.pids()));
    let (mut changes, unseen) = track::merge(&parse_changes(&w.ask("changes").await?));
    s.kv("released", release.chosen.len()).kv("changes", changes.len()).kv("changes_unseen", unseen);
    s.lat("release", &mut changes).f("release_window_secs", start.elapsed().as_secs_f64());
    per_member(s, "release", members, &before, &after);
    // The loader shares the machine: a release's re-lists can make it, not the server, the limit.
    s.f("release_loader_cpu_pct", loader_cpu(&loader_before, &loader_after));
    Ok(())
}

pub async fn run(a: ScaleArgs) -> Result<(), BenchError> {
    let hosts: Vec<String> =
        a.target.server.split(',').map(|h| h.trim().to_owned()).filter(|h| !h.is_empty()).collect();
    let topo = Topology::new(&a)?;
    let release = Release::plan(&a, &topo);
    let (providers, consumers) = (topo.providers, topo.consumers);
    let watches = consumers * topo.wpc;
    let pids = a.target.server_pid.clone();
    let members: Vec<usize> = (0..pids.len()).collect();
    create_dirs(&hosts[0], a.services).await?;
    let n = a.sessions.div_ceil(a.per_worker.max(1));
    let mut w = Workers::start(n)?;
    let mut s = Summary::new("scale");
    s.kv("sessions", a.sessions)
        .kv("providers", providers)
        .kv("consumers", consumers)
        .kv("services", a.services)
        .kv("provider_nodes", providers * a.services_per_provider)
        .kv("watches", watches)
        .kv("loader_workers", n);
    let rss_base = sample(&pids);

    // 1. Connect: providers register, consumers connect, consumers watch.
    let t0 = Instant::now();
    let mut failed = w.sum("providers", "failed").await?;
    let providers_secs = t0.elapsed().as_secs_f64();
    let rss_providers = sample(&pids);
    let t1 = Instant::now();
    failed += w.sum("consumers", "failed").await?;
    let consumers_secs = t1.elapsed().as_secs_f64();
    let rss_sessions = sample(&pids);
    let t2 = Instant::now();
    failed += w.sum("watch", "failed").await?;
    let watches_secs = t2.elapsed().as_secs_f64();
    let connect_all_secs = t0.elapsed().as_secs_f64();
    let rss_watches = sample(&pids);
    eprintln!(
        "zkr bench scale: {} sessions connected and {watches} watches set in {connect_all_secs:.1} s ({n} loader processes)",
        a.sessions
    );
    s.f("providers_secs", providers_secs)
        .f("consumers_secs", consumers_secs)
        .f("watches_secs", watches_secs)
        .f("connect_all_secs", connect_all_secs)
        .kv("connect_failed", failed);
    let (base, after_p, after_s, after_w) =
        (rss_sum(&rss_base), rss_sum(&rss_providers), rss_sum(&rss_sessions), rss_sum(&rss_watches));
    if after_w > 0 {
        s.kv("rss_base_kb", base)
            .f("rss_bytes_per_provider", after_p.saturating_sub(base) as f64 * 1024.0 / providers as f64)
            .f("rss_bytes_per_session", after_s.saturating_sub(after_p) as f64 * 1024.0 / consumers as f64)
            .f("rss_bytes_per_watch", after_w.saturating_sub(after_s) as f64 * 1024.0 / watches.max(1) as f64);
    }

    // 2. Steady: pings only, after one full ping round.
    w.phase(Phase::Steady).await?;
    tokio::time::sleep(Duration::from_millis((a.timeout_ms / 3).max(100) as u64)).await;
    w.samples(&format!("pings {}", Phase::Steady as usize)).await?;
    let (before, loader_before) = (sample(&pids), sample(&w.pids()));
    tokio::time::sleep(Duration::from_secs_f64(a.steady_secs)).await;
    let (after, loader_after) = (sample(&pids), sample(&w.pids()));
    per_member(&mut s, "steady", &members, &before, &after);
    s.lat("steady_ping", &mut w.samples(&format!("pings {}", Phase::Steady as usize)).await?);
    s.f("steady_loader_cpu_pct", loader_cpu(&loader_before, &loader_after));

    // 3. Rolling release.
    if !release.chosen.is_empty() {
        release_phase(&mut w, &mut s, &release, &a, &pids, &members).await?;
    }

    // 4. Storm: a member killed, its sessions re-attach to the survivors.
    if let Some(kill) = a.kill_member {
        let pid = *pids.get(kill).ok_or_else(|| BenchError::Protocol("--kill-member needs its --server-pid".into()))?;
        let survivors: Vec<usize> = members.iter().copied().filter(|m| *m != kill).collect();
        let survivor_pids: Vec<u32> = survivors.iter().map(|m| pids[*m]).collect();
        w.phase(Phase::Storm).await?;
        w.samples(&format!("pings {}", Phase::Storm as usize)).await?;
        w.samples("reconnects").await?;
        w.samples("handshakes").await?;
        let count = format!("count {kill}");
        let moving: u64 =
            w.ask(&count).await?.iter().filter_map(|x| x.split_whitespace().next()?.parse::<u64>().ok()).sum();
        let before = sample(&survivor_pids);
        let t = Instant::now();
        let killed = std::process::Command::new("kill").arg("-9").arg(pid.to_string()).status()?;
        if !killed.success() {
            return Err(BenchError::Protocol(format!("kill -9 {pid} failed")));
        }
        let limit = t + Duration::from_secs_f64(a.limit_secs);
        let mut left = u64::MAX;
        while left > 0 && Instant::now() < limit {
            tokio::time::sleep(Duration::from_millis(10)).await;
            left = w
                .ask(&count)
                .await?
                .iter()
                .map(|x| x.split_whitespace().filter_map(|v| v.parse::<u64>().ok()).sum::<u64>())
                .sum();
        }
        let storm_secs = t.elapsed().as_secs_f64();
        let after = sample(&survivor_pids);
        s.kv("storm_sessions", moving).f("storm_secs", storm_secs).kv("storm_left", left);
        s.lat("storm_reconnect", &mut w.samples("reconnects").await?);
        s.lat("storm_handshake", &mut w.samples("handshakes").await?);
        s.lat("storm_ping", &mut w.samples(&format!("pings {}", Phase::Storm as usize)).await?);
        per_member(&mut s, "storm", &survivors, &before, &after);
        w.phase(Phase::After).await?;

        // 5. Restart.
        if let Some(cmd) = &a.restart_cmd {
            let t = Instant::now();
            std::process::Command::new("sh")
                .arg("-c")
                .arg(cmd)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()?;
            let limit = t + Duration::from_secs_f64(a.limit_secs);
            let mut serving = false;
            while Instant::now() < limit {
                if matches!(mode(&hosts[kill]).await.as_deref(), Some("leader" | "follower")) {
                    serving = true;
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            s.f("restart_secs", t.elapsed().as_secs_f64()).kv("restart_serving", serving);
        }
    }
    w.phase(Phase::After).await?;
    let (mut expired, mut errors, mut relists) = (0u64, 0u64, 0u64);
    for t in w.ask("totals").await? {
        let mut f = t.splitn(4, ' ');
        let mut next = || f.next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        expired += next();
        errors += next();
        relists += next();
        if let Some(e) = f.next().filter(|e| !e.is_empty()) {
            eprintln!("zkr bench scale: first error in a worker: {e}");
        }
    }
    s.kv("relists", relists).kv("expired", expired).kv("errors", errors);
    s.print();
    let _ = w.ask("quit").await;
    Ok(())
}
