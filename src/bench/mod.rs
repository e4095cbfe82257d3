//! `zkr bench`: a load generator that speaks the ZooKeeper protocol itself, so the same load can
//! be pointed at zkr and at ZooKeeper. Workloads: `read`, `write`, `mixed`, `churn` (a Dubbo
//! registry under provider churn), `sessions` (a session storm) and `fill` (many Dubbo-like
//! provider nodes). Each prints one `bench=<workload> key=value …` line on stdout, which
//! `scripts/bench-side-by-side.sh` collects.

pub mod churn;
pub mod client;
pub mod fill;
pub mod pacer;
pub mod rw;
pub mod scan;
pub mod sessions;
pub mod stats;

#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub workload: Workload,
}

/// The server under test.
#[derive(Debug, Clone, clap::Args)]
pub struct Target {
    /// host:port of the server.
    #[arg(long, default_value = "127.0.0.1:2181")]
    pub server: String,
    /// The server's process id: its CPU time and RSS over the measured window are reported
    /// (read from /proc, so the loader's own cost is not counted).
    #[arg(long)]
    pub server_pid: Option<u32>,
}

#[derive(Debug, clap::Subcommand)]
pub enum Workload {
    /// getData, exists and getChildren2 (of a 1,000-child directory) in turn.
    Read(rw::RwArgs),
    /// create and setData in turn.
    Write(rw::RwArgs),
    /// 90% the reads of `read`, 10% setData.
    Mixed(rw::RwArgs),
    /// Dubbo providers leaving (gracefully and by expiry) and joining, consumers re-listing.
    Churn(churn::ChurnArgs),
    /// Many sessions held open and pinging; the server's CPU and RSS.
    Sessions(sessions::SessionsArgs),
    /// Create COUNT persistent nodes with Dubbo-like names under /bench/svc/providers.
    Fill(fill::FillArgs),
}

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("protocol: {0}")]
    Protocol(String),
}

/// A Dubbo provider name: a URL-encoded provider URL padded to `len` bytes.
pub fn provider_name(i: u64, len: usize) -> String {
    let mut s = format!(
        "dubbo%3A%2F%2F10.{}.{}.{}%3A20880%2Forg.apache.dubbo.demo.DemoService%3Fanyhost%3Dtrue%26application%3Ddemo-provider%26dubbo%3D2.0.2%26interface%3Dorg.apache.dubbo.demo.DemoService%26methods%3DsayHello%26pid%3D{i}%26side%3Dprovider%26timestamp%3D1700000000000%26x%3D",
        (i >> 16) & 255,
        (i >> 8) & 255,
        i & 255
    );
    while s.len() < len {
        s.push('x');
    }
    s
}

pub async fn run(args: BenchArgs) -> Result<(), BenchError> {
    match args.workload {
        Workload::Read(a) => rw::run(a, rw::Mix::Read).await,
        Workload::Write(a) => rw::run(a, rw::Mix::Write).await,
        Workload::Mixed(a) => rw::run(a, rw::Mix::Mixed).await,
        Workload::Churn(a) => churn::run(a).await,
        Workload::Sessions(a) => sessions::run(a).await,
        Workload::Fill(a) => fill::run(a).await,
    }
}
