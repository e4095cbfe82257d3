//! A loader worker: it holds every session k with k mod workers == its index and answers the
//! coordinator's one-line commands on stdin with one line on stdout (`ok …` or `err …`). Every
//! worker derives the same topology and release plan from the arguments, so only counts, times
//! and samples cross the pipe.

use super::session::{self, Role, Shared};
use super::track::{wall_us, Counters, Tracker};
use super::{BenchError, Release, ScaleArgs, Topology};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{oneshot, watch, Semaphore};

struct Worker {
    sh: Arc<Shared>,
    me: usize,
    workers: usize,
    opening: usize,
    sessions: usize,
    release: Release,
    /// Leave signals of this worker's providers that are in the release plan.
    leaves: HashMap<usize, oneshot::Sender<()>>,
    go: watch::Sender<bool>,
    watched: Vec<oneshot::Receiver<()>>,
}

impl Worker {
    fn mine(&self, k: usize) -> bool {
        k % self.workers == self.me
    }

    /// Starts `roles` with at most `opening` handshakes (and registrations) in flight; how many
    /// never became ready.
    async fn open_all(&self, roles: Vec<(usize, Role)>) -> u64 {
        let gate = Arc::new(Semaphore::new(self.opening.max(1)));
        let mut waits = Vec::with_capacity(roles.len());
        for (k, role) in roles {
            let Ok(permit) = gate.clone().acquire_owned().await else { break };
            let (tx, rx) = oneshot::channel();
            tokio::spawn(session::run(self.sh.clone(), k, role, tx));
            waits.push(tokio::spawn(async move {
                let ok = rx.await.is_ok();
                drop(permit);
                ok
            }));
        }
        let mut failed = 0;
        for w in waits {
            if !w.await.unwrap_or(false) {
                failed += 1;
            }
        }
        failed
    }

    async fn providers(&mut self) -> String {
        let place: HashMap<usize, usize> = self.release.chosen.iter().enumerate().map(|(i, p)| (*p, i)).collect();
        let mut roles = Vec::new();
        let (me, n) = (self.me, self.workers);
        for p in (0..self.sh.topo.providers).filter(|p| p % n == me) {
            let release = place.get(&p).copied();
            let leave = release.map(|_| {
                let (tx, rx) = oneshot::channel();
                self.leaves.insert(p, tx);
                rx
            });
            roles.push((p, Role::Provider { p, gen: 0, release, leave }));
        }
        format!("ok failed={}", self.open_all(roles).await)
    }

    async fn consumers(&mut self) -> String {
        let first = self.sh.topo.providers;
        let mut roles = Vec::new();
        let (me, n) = (self.me, self.workers);
        for k in (first..first + self.sh.topo.consumers).filter(|k| k % n == me) {
            let (tx, rx) = oneshot::channel();
            self.watched.push(rx);
            roles.push((k, Role::Consumer { c: k - first, go: self.go.subscribe(), watched: Some(tx) }));
        }
        format!("ok failed={}", self.open_all(roles).await)
    }

    async fn watch(&mut self) -> String {
        let _ = self.go.send(true);
        let mut failed = 0;
        for w in std::mem::take(&mut self.watched) {
            if w.await.is_err() {
                failed += 1;
            }
        }
        format!("ok failed={failed}")
    }

    /// Registers every planned change, then runs this worker's part of the release from
    /// `start_us` on: its providers leave on time and come back as new registrations.
    fn release(&mut self, start_us: i64) -> String {
        let topo = &self.sh.topo;
        let mut local = vec![0usize; topo.services()];
        for c in 0..topo.consumers {
            if self.mine(topo.providers + c) {
                for s in topo.consumer_services(c) {
                    local[*s] += 1;
                }
            }
        }
        for (i, p) in self.release.chosen.iter().enumerate() {
            for (j, s) in topo.provider_services(*p).into_iter().enumerate() {
                for present in [false, true] {
                    let name = topo.node_name(s, *p, present as u64);
                    let id = topo.change_id(i, j, present);
                    self.sh.tracker.expect(id, s, name, present, topo.watchers(s), local[s]);
                }
            }
        }
        let start = Instant::now() + Duration::from_micros(start_us.saturating_sub(wall_us()).max(0) as u64);
        let (every, down) = (self.release.every, self.release.down);
        for (i, p) in self.release.chosen.clone().into_iter().enumerate() {
            let Some(leave) = self.leaves.remove(&p) else { continue };
            let (sh, k) = (self.sh.clone(), self.sessions + i);
            tokio::spawn(async move {
                tokio::time::sleep_until((start + every * i as u32).into()).await;
                let _ = leave.send(());
                tokio::time::sleep(down).await;
                let (tx, _rx) = oneshot::channel();
                session::run(sh, k, Role::Provider { p, gen: 1, release: Some(i), leave: None }, tx).await;
            });
        }
        "ok".to_owned()
    }

    fn changes(&self) -> String {
        let opt = |v: Option<i64>| v.map_or("-".to_owned(), |x| x.to_string());
        let mut out = "ok".to_owned();
        for r in self.sh.tracker.report() {
            out.push_str(&format!(" {}:{}:{}:{}", r.id, opt(r.made_us), opt(r.done_us), r.unseen as u8));
        }
        out
    }

    fn samples(lat: super::super::stats::Latencies) -> String {
        let mut out = "ok".to_owned();
        for us in lat.raw() {
            out.push_str(&format!(" {us}"));
        }
        out
    }

    async fn command(&mut self, line: &str) -> Option<String> {
        let mut w = line.split_whitespace();
        let num = |x: Option<&str>| x.and_then(|v| v.parse::<i64>().ok());
        let c = &self.sh.counters;
        Some(match w.next()? {
            "providers" => self.providers().await,
            "consumers" => self.consumers().await,
            "watch" => self.watch().await,
            "phase" => {
                c.set_phase(num(w.next()).unwrap_or(0) as usize);
                "ok".to_owned()
            }
            "pings" => Worker::samples(c.take_pings(num(w.next()).unwrap_or(0) as usize)),
            "reconnects" => Worker::samples(std::mem::take(&mut *c.reconnects.lock())),
            "handshakes" => Worker::samples(std::mem::take(&mut *c.handshakes.lock())),
            "release" => self.release(num(w.next()).unwrap_or_else(wall_us)),
            "unseen" => format!("ok {}", self.sh.tracker.unseen()),
            "changes" => self.changes(),
            "count" => {
                let m = num(w.next()).unwrap_or(0) as usize;
                let on = c.on_member.get(m).map_or(0, |x| x.load(Ordering::SeqCst));
                format!("ok {on} {}", c.lost.load(Ordering::SeqCst))
            }
            "totals" => format!(
                "ok {} {} {} {}",
                c.expired.load(Ordering::SeqCst),
                c.errors.load(Ordering::SeqCst),
                self.sh.tracker.relists.load(Ordering::Relaxed),
                c.first_error().unwrap_or_default().replace('\n', " ")
            ),
            "quit" => return None,
            other => format!("err unknown command {other}"),
        })
    }
}

pub async fn run(a: ScaleArgs, me: usize) -> Result<(), BenchError> {
    let hosts: Vec<String> =
        a.target.server.split(',').map(|h| h.trim().to_owned()).filter(|h| !h.is_empty()).collect();
    let topo = Topology::new(&a)?;
    let release = Release::plan(&a, &topo);
    let sh = Arc::new(Shared {
        counters: Counters::new(hosts.len()),
        tracker: Tracker::new(a.services),
        hosts,
        timeout_ms: a.timeout_ms,
        topo,
        stop: tokio_util::sync::CancellationToken::new(),
    });
    let (go, _) = watch::channel(false);
    let mut w = Worker {
        sh: sh.clone(),
        me,
        workers: a.workers.max(1),
        opening: a.opening.div_ceil(a.workers.max(1)),
        sessions: a.sessions,
        release,
        leaves: HashMap::new(),
        go,
        watched: Vec::new(),
    };
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut out = tokio::io::stdout();
    while let Some(line) = lines.next_line().await? {
        let Some(reply) = w.command(&line).await else { break };
        out.write_all(reply.as_bytes()).await?;
        out.write_all(b"\n").await?;
        out.flush().await?;
    }
    sh.stop.cancel();
    Ok(())
}
