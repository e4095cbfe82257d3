//! `zkr bench`: a load generator that speaks the ZooKeeper protocol itself, so the same load can
//! be pointed at zkr and at ZooKeeper. Workloads: `read`, `write`, `mixed`, `churn` (a Dubbo
//! registry under provider churn), `sessions` (a session storm) and `fill` (many Dubbo-like
//! provider nodes). Each prints one `bench=<workload> key=value …` line on stdout, which
//! `scripts/bench-side-by-side.sh` collects.

pub mod churn;
pub mod client;
pub mod fill;
pub mod floor;
pub mod pacer;
pub mod rw;
pub mod scale;
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
    /// host:port of the server; an ensemble's members as `a:p,b:p,c:p` spread the sessions over
    /// them (session k goes to member k mod n).
    #[arg(long, default_value = "127.0.0.1:2181")]
    pub server: String,
    /// The server's process id (an ensemble's: one per member, comma separated): their CPU time
    /// and RSS over the measured window are reported, summed (read from /proc, so the loader's
    /// own cost is not counted).
    #[arg(long, value_delimiter = ',')]
    pub server_pid: Vec<u32>,
}

impl Target {
    /// The member session `k` talks to.
    pub fn host(&self, k: usize) -> &str {
        let hosts: Vec<&str> = self.server.split(',').map(str::trim).filter(|h| !h.is_empty()).collect();
        match hosts.len() {
            0 => self.server.as_str(),
            n => hosts[k % n],
        }
    }

    /// The server's (or members') CPU and RSS now.
    pub fn sample(&self) -> Option<stats::ProcSample> {
        stats::sample_all(&self.server_pid)
    }
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
    /// A Dubbo registry at scale: many sessions, providers, watching consumers, a rolling
    /// release, a member killed (reconnect storm) and restarted (issue 25).
    Scale(scale::ScaleArgs),
    /// Create COUNT persistent nodes with Dubbo-like names under /bench/svc/providers.
    Fill(fill::FillArgs),
    /// Not a workload: a server that only replays pre-encoded replies, the loopback floor
    /// another workload's server CPU per op is compared with (see `floor`).
    FloorServe(floor::FloorArgs),
}

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("protocol: {0}")]
    Protocol(String),
}

/// Method names of a realistic service interface; the list in a provider URL is grown from these.
const METHODS: [&str; 24] = [
    "sayHello",
    "sayHelloAsync",
    "getUser",
    "getUserById",
    "listUsers",
    "createUser",
    "updateUser",
    "deleteUser",
    "findOrdersByUser",
    "placeOrder",
    "cancelOrder",
    "queryOrderStatus",
    "getInventory",
    "reserveStock",
    "releaseStock",
    "calculatePrice",
    "applyCoupon",
    "listCoupons",
    "getAddressBook",
    "updateAddress",
    "sendNotification",
    "subscribeTopic",
    "unsubscribeTopic",
    "healthCheck",
];

/// A Dubbo provider name of `len` bytes (or the shortest realistic one if `len` is smaller): a
/// URL-encoded Dubbo 3 provider URL with the parameters Dubbo writes, in its (sorted) order.
/// Each provider has its own IP, port, pid and timestamp; the method list (the same for every
/// provider, as for providers of one interface) grows, and its last name is cut, to reach `len`.
pub fn provider_name(i: u64, len: usize) -> String {
    provider_url("com.demo.OrderService", i, i, len)
}

/// A provider URL of interface `iface` for provider `i` (its address, port and pid) registered at
/// moment `stamp` (its timestamp parameter: a restarted provider registers a new name), `len`
/// bytes long as in `provider_name`.
pub fn provider_url(iface: &str, i: u64, stamp: u64, len: usize) -> String {
    let head = format!(
        "dubbo%3A%2F%2F10.{}.{}.{}%3A{}%2F{iface}%3Fanyhost%3Dtrue%26application%3Dorder-provider\
         %26deprecated%3Dfalse%26dubbo%3D2.0.2%26dynamic%3Dtrue%26generic%3Dfalse\
         %26interface%3D{iface}%26methods%3D",
        (i >> 16) & 255,
        (i >> 8) & 255,
        i & 255,
        20880 + (i % 97),
    );
    let tail = format!(
        "%26pid%3D{}%26release%3D3.2.10%26revision%3D1.4.2\
         %26side%3Dprovider%26timeout%3D3000%26timestamp%3D{}",
        1000 + (i * 7) % 64_000,
        1_732_918_461_337u64 + stamp.wrapping_mul(7_919) % 86_400_000,
    );
    let room = len.saturating_sub(head.len() + tail.len()).max(METHODS[0].len());
    let mut methods = String::new();
    for m in METHODS.iter().cycle() {
        if methods.len() >= room {
            break;
        }
        if !methods.is_empty() {
            methods.push_str("%2C");
        }
        methods.push_str(m);
    }
    methods.truncate(room);
    // A cut through (or right after) a `%2C` separator would leave a broken escape or an empty
    // method: the last method name grows by as many letters instead.
    for sep in ["%2C", "%2", "%"] {
        if methods.ends_with(sep) {
            methods.truncate(methods.len() - sep.len());
            methods.push_str(&"Batch"[..sep.len()]);
            break;
        }
    }
    format!("{head}{methods}{tail}")
}

pub async fn run(args: BenchArgs) -> Result<(), BenchError> {
    match args.workload {
        Workload::Read(a) => rw::run(a, rw::Mix::Read).await,
        Workload::Write(a) => rw::run(a, rw::Mix::Write).await,
        Workload::Mixed(a) => rw::run(a, rw::Mix::Mixed).await,
        Workload::Churn(a) => churn::run(a).await,
        Workload::Sessions(a) => sessions::run(a).await,
        Workload::Scale(a) => scale::run(a).await,
        Workload::Fill(a) => fill::run(a).await,
        Workload::FloorServe(a) => floor::run(a).await,
    }
}

#[cfg(test)]
mod tests {
    /// Names are exactly the asked length (when it exceeds the minimum), distinct per provider,
    /// and free of filler: no run of one repeated character.
    #[test]
    fn provider_names_are_realistic_and_exact() {
        for len in [400, 401, 402, 403, 404, 777, 1500] {
            let a = super::provider_name(1, len);
            assert_eq!(a.len(), len, "{a}");
            assert_ne!(a, super::provider_name(2, len));
            assert!(!a.as_bytes().windows(6).any(|w| w.iter().all(|&c| c == w[0])), "{a}");
            assert!(
                !a.contains("%2C%26") && !a.contains("%2%") && !a.contains("%%") && a.contains("%26timestamp%3D"),
                "{a}"
            );
        }
        let short = super::provider_name(3, 10);
        assert!(short.starts_with("dubbo%3A%2F%2F10.0.0.3%3A") && short.contains("methods%3DsayHello%26"));
    }
}
