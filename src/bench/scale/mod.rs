//! `scale`: a Dubbo registry at the size it lives at (issue 25). S sessions spread over the
//! members: providers, each registering one ephemeral URL node (300–1,500 bytes, URL-encoded as
//! Dubbo writes them) in each of the services its application exports, and consumers, each
//! watching the providers directories of a few services (getChildren2 with a watch, re-listed on
//! every event, as Dubbo's ZookeeperRegistry does). Every session pings at a third of its timeout.
//!
//! Phases, each measured per member from /proc (`--server-pid`, in `--server`'s order):
//! 1. connect: providers register, consumers connect, consumers set their watches (times, and
//!    RSS after each step, for bytes per session and per watch);
//! 2. steady: pings only, CPU and RSS per member;
//! 3. rolling release: a share of the providers leave (closeSession) and come back with new
//!    registrations, spread over a window; each node change is timed from its request to the
//!    last watching consumer's listing that shows it;
//! 4. storm (`--kill-member`): that member is SIGKILLed; time until every one of its sessions is
//!    re-attached elsewhere, sessions expired, the survivors' CPU and ping latency meanwhile;
//! 5. restart (`--restart-cmd`): the command starts the member again; time until its `srvr`
//!    says leader or follower.
//!
//! Sessions are not closed at the end: the script throws the ensemble away.

mod coordinator;
mod session;
mod track;
mod worker;

use super::client::{self, Conn};
use super::{provider_url, BenchError, Target};
use rand::SeedableRng;
use std::time::Duration;

#[derive(Debug, Clone, clap::Args)]
pub struct ScaleArgs {
    #[command(flatten)]
    pub target: Target,
    /// Sessions in all: the providers, and consumers for the rest.
    #[arg(long, default_value_t = 20_000)]
    pub sessions: usize,
    /// Services (interfaces), one providers directory each.
    #[arg(long, default_value_t = 1_000)]
    pub services: usize,
    /// Providers of each service.
    #[arg(long, default_value_t = 10)]
    pub providers_per_service: usize,
    /// Services one provider application exports (its session registers a node in each).
    #[arg(long, default_value_t = 10)]
    pub services_per_provider: usize,
    /// Services each consumer watches.
    #[arg(long, default_value_t = 10)]
    pub watches_per_consumer: usize,
    /// Provider node names are between these lengths, bytes.
    #[arg(long, default_value_t = 300)]
    pub min_name_bytes: usize,
    #[arg(long, default_value_t = 1_500)]
    pub max_name_bytes: usize,
    /// Session timeout asked for, ms (pings go at a third of it).
    #[arg(long, default_value_t = 30_000)]
    pub timeout_ms: i32,
    /// Handshakes in flight while connecting.
    #[arg(long, default_value_t = 500)]
    pub opening: usize,
    /// Seconds of the steady window (pings only).
    #[arg(long, default_value_t = 30.0)]
    pub steady_secs: f64,
    /// Share of providers in the rolling release (0: no release).
    #[arg(long, default_value_t = 0.10)]
    pub release_share: f64,
    /// Window over which they leave, seconds.
    #[arg(long, default_value_t = 60.0)]
    pub release_secs: f64,
    /// How long a released provider stays away, ms.
    #[arg(long, default_value_t = 3_000)]
    pub down_ms: u64,
    /// The member (index into --server, from 0) to SIGKILL after the release; none by default.
    #[arg(long)]
    pub kill_member: Option<usize>,
    /// A shell command that starts the killed member again (it should exec the server).
    #[arg(long)]
    pub restart_cmd: Option<String>,
    /// Longest wait for the storm and for the restart, seconds.
    #[arg(long, default_value_t = 300.0)]
    pub limit_secs: f64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Sessions per loader process (a process holds one file per session, and the open-file
    /// limit may be low): the coordinator starts ceil(sessions / this) workers.
    #[arg(long, default_value_t = 15_000)]
    pub per_worker: usize,
    /// Internal: this process is worker I of --workers N, driven over stdin by the coordinator.
    #[arg(long, hide = true)]
    pub worker: Option<usize>,
    #[arg(long, hide = true, default_value_t = 1)]
    pub workers: usize,
}

/// Who watches and registers what.
pub struct Topology {
    spp: usize,
    pps: usize,
    pub providers: usize,
    pub consumers: usize,
    pub wpc: usize,
    /// Consumer c's services at c*wpc..(c+1)*wpc, and its slot among each service's watchers.
    consumer_services: Vec<usize>,
    slots: Vec<u32>,
    watchers: Vec<u32>,
    min_name: usize,
    max_name: usize,
}

impl Topology {
    fn new(a: &ScaleArgs) -> Result<Topology, BenchError> {
        let bad = |m: &str| Err(BenchError::Protocol(format!("zkr bench scale: {m}")));
        let (spp, pps) = (a.services_per_provider.max(1), a.providers_per_service.max(1));
        if a.services == 0 || !a.services.is_multiple_of(spp) {
            return bad("--services must be a positive multiple of --services-per-provider");
        }
        let providers = a.services / spp * pps;
        if a.sessions <= providers {
            return bad(&format!("{providers} provider sessions leave no room for consumers in --sessions"));
        }
        let consumers = a.sessions - providers;
        let wpc = a.watches_per_consumer.min(a.services);
        let mut rng = rand::rngs::StdRng::seed_from_u64(a.seed);
        let mut consumer_services = Vec::with_capacity(consumers * wpc);
        let mut slots = Vec::with_capacity(consumers * wpc);
        let mut watchers = vec![0u32; a.services];
        for _ in 0..consumers {
            for s in rand::seq::index::sample(&mut rng, a.services, wpc) {
                consumer_services.push(s);
                slots.push(watchers[s]);
                watchers[s] += 1;
            }
        }
        let (min_name, max_name) = (a.min_name_bytes.min(a.max_name_bytes), a.max_name_bytes.max(a.min_name_bytes));
        Ok(Topology { spp, pps, providers, consumers, wpc, consumer_services, slots, watchers, min_name, max_name })
    }

    pub fn iface(s: usize) -> String {
        format!("org.apache.dubbo.scale.Service{s:04}")
    }

    pub fn dir(s: usize) -> String {
        format!("/dubbo/{}/providers", Topology::iface(s))
    }

    /// The services provider `p`'s application exports.
    pub fn provider_services(&self, p: usize) -> Vec<usize> {
        let app = p / self.pps;
        (app * self.spp..(app + 1) * self.spp).collect()
    }

    /// Provider `p`'s node in service `s` in its `gen`th registration.
    pub fn node_name(&self, s: usize, p: usize, gen: u64) -> String {
        let mut h = (s as u64) << 40 ^ (p as u64) << 8 ^ gen;
        h = (h ^ (h >> 31)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let len = self.min_name + (h % (self.max_name - self.min_name + 1) as u64) as usize;
        provider_url(&Topology::iface(s), p as u64 + 1, (p as u64) << 16 | gen, len)
    }

    pub fn consumer_services(&self, c: usize) -> &[usize] {
        &self.consumer_services[c * self.wpc..(c + 1) * self.wpc]
    }

    pub fn slot(&self, c: usize, i: usize) -> usize {
        self.slots[c * self.wpc + i] as usize
    }

    pub fn services(&self) -> usize {
        self.watchers.len()
    }

    pub fn watchers(&self, s: usize) -> usize {
        self.watchers[s] as usize
    }

    /// The id of the change the `i`th released provider makes to its `j`th service.
    pub fn change_id(&self, i: usize, j: usize, present: bool) -> u32 {
        ((i * self.spp + j) * 2 + present as usize) as u32
    }
}

/// The rolling release, the same in every worker: which providers leave, when, for how long.
pub struct Release {
    pub chosen: Vec<usize>,
    pub every: Duration,
    pub down: Duration,
}

impl Release {
    pub fn plan(a: &ScaleArgs, topo: &Topology) -> Release {
        let mut rng = rand::rngs::StdRng::seed_from_u64(a.seed ^ 0x5eed);
        // A share of 0 skips the release (the cost curve measures connect and steady state only).
        let n = match a.release_share {
            s if s <= 0.0 => 0,
            s => ((topo.providers as f64 * s).round() as usize).clamp(1, topo.providers),
        };
        let chosen = rand::seq::index::sample(&mut rng, topo.providers, n).into_vec();
        Release {
            every: Duration::from_secs_f64(a.release_secs / n.max(1) as f64),
            down: Duration::from_millis(a.down_ms),
            chosen,
        }
    }
}

/// Creates /dubbo, each service's directory and its providers directory, pipelined.
async fn create_dirs(server: &str, services: usize) -> Result<(), BenchError> {
    let mut paths = vec!["/dubbo".to_owned()];
    for s in 0..services {
        paths.push(format!("/dubbo/{}", Topology::iface(s)));
        paths.push(Topology::dir(s));
    }
    let mut c = Conn::open(server, 30_000).await?;
    for chunk in paths.chunks(256) {
        let mut b = bytes::BytesMut::new();
        for (i, p) in chunk.iter().enumerate() {
            let req = client::create(i as i32 + 1, p.clone(), bytes::Bytes::new(), 0, crate::proto::OpCode::Create);
            crate::codec::write_frame(&mut b, |o| req.write(o));
        }
        c.send_raw(&b).await?;
        for p in chunk {
            let err = c.next_reply().await?.header.err;
            if err != 0 && err != crate::proto::ErrorCode::NodeExists.code() {
                return Err(BenchError::Protocol(format!("create {p}: error {err}")));
            }
        }
    }
    let _ = c.call(&client::close_session(i32::MAX - 1)).await;
    Ok(())
}

pub async fn run(a: ScaleArgs) -> Result<(), BenchError> {
    match a.worker {
        Some(i) => worker::run(a, i).await,
        None => coordinator::run(a).await,
    }
}
