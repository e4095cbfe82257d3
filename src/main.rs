//! The `zkr` command line.

use clap::{Parser, Subcommand};
use zkr::config::{Config, ServeArgs};

#[derive(Parser)]
#[command(name = "zkr", version, about = "A ZooKeeper-wire-compatible coordination server")]
struct Cli {
    /// Log line format on stderr: text (default) or json (one JSON object per line).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,openraft=off"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match format {
        LogFormat::Json => {
            let inner = tracing_subscriber::fmt::format().json().flatten_event(true).with_current_span(false);
            builder.event_format(MemberTagged(inner)).init()
        }
        LogFormat::Text => {
            let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
            builder.event_format(MemberTagged(tracing_subscriber::fmt::format().with_ansi(ansi))).init()
        }
    }
}

/// Log lines of an ensemble member name its id and role: `[member 2 follower]` before a text
/// line, `"member":2,"role":"follower"` at the start of a JSON object.
struct MemberTagged<F>(F);

impl<S, N, F> tracing_subscriber::fmt::FormatEvent<S, N> for MemberTagged<F>
where
    F: tracing_subscriber::fmt::FormatEvent<S, N>,
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let Some((id, role)) = zkr::raft::member::log_tag() else {
            return self.0.format_event(ctx, writer, event);
        };
        let mut line = String::new();
        self.0.format_event(ctx, tracing_subscriber::fmt::format::Writer::new(&mut line), event)?;
        match line.strip_prefix('{') {
            Some(rest) => write!(writer, "{{\"member\":{id},\"role\":\"{role}\",{rest}"),
            None => write!(writer, "[member {id} {role}] {line}"),
        }
    }
}

/// Parsed once at startup, so the size of the Serve variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Serve ZooKeeper clients (default: 0.0.0.0:2181, data in ./zkr-data).
    Serve(ServeArgs),
    /// Load generator speaking the ZooKeeper protocol (point it at zkr or at ZooKeeper).
    Bench(zkr::bench::BenchArgs),
    /// A zkCli.sh-compatible client: zkr cli -server host:port [command args...].
    Cli(zkr::cli::CliArgs),
    /// Read-only Dubbo registry view: zkr dubbo -server host:port services|providers I|consumers I|config|web
    /// [--json]; `zkr dubbo help` explains each command.
    Dubbo(zkr::dubbo::DubboArgs),
    /// Cut a corrupt transaction log at its first bad record so that zkr can start: copies of
    /// the damaged segment and every later one go to <log dir>/damaged/, then the command
    /// exits; start `zkr serve` as usual afterwards. Takes the directory flags of serve.
    RepairLog(RepairArgs),
    /// Turn the zkr observers of a stopped ZooKeeper ensemble into a zkr ensemble, seeded from the
    /// most advanced of them (run after every ZooKeeper participant is stopped).
    Takeover(zkr::takeover::tool::TakeoverArgs),
    /// Convert a ZooKeeper data directory (snapshots + transaction logs) into a zkr data directory.
    ImportZookeeper(ImportArgs),
    /// Write a ZooKeeper data directory (a snapshot, the epoch files, optionally myid) from a
    /// stopped standalone zkr's data directory: the way back from zkr to ZooKeeper.
    ExportZookeeper(ExportArgs),
}

/// The flags of `zkr export-zookeeper`.
#[derive(clap::Args)]
struct ExportArgs {
    /// The data directory of the stopped zkr server, standalone, observer or ensemble member (its
    /// --data-dir / zoo.cfg dataDir). Default: --config's dataDir.
    #[arg(long)]
    data_dir: Option<std::path::PathBuf>,
    /// zkr's log directory, if it was not <data-dir>/wal (its --data-log-dir / dataLogDir).
    /// Default: --config's dataLogDir.
    #[arg(long)]
    data_log_dir: Option<std::path::PathBuf>,
    /// The server's zoo.cfg: dataDir and dataLogDir where the flags do not say, and ZooKeeper's
    /// snapshot.compression.method (gz, snappy or empty; anything else is refused).
    #[arg(long)]
    config: Option<std::path::PathBuf>,
    /// The ZooKeeper dataDir to create (must be new or empty); the snapshot goes to version-2/.
    #[arg(long)]
    zk_data_dir: std::path::PathBuf,
    /// Compress the snapshot as ZooKeeper's snapshot.compression.method does: snapshot.<zxid>.gz
    /// or .snappy (ZooKeeper 3.6+ reads either whatever its own setting). Wins over the key (in
    /// --config's zoo.cfg, else -Dzookeeper.snapshot.compression.method= in SERVER_JVMFLAGS or
    /// JVMFLAGS). Default: plain.
    #[arg(long, value_enum)]
    compression: Option<SnapCompression>,
    /// Also write <zk-data-dir>/myid with this server id, for a participant of an ensemble.
    #[arg(long)]
    myid: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum SnapCompression {
    Plain,
    Gz,
    Snappy,
}

/// `zkr export-zookeeper`: exit 0 after an export, 1 if it refused or failed, 2 if its flags or
/// zoo.cfg cannot be used (nothing written).
fn export_zookeeper(args: ExportArgs) -> i32 {
    use zkr::import::files::Compression;
    let from_cfg = match zkr::config::export_config(args.config.as_deref(), &zkr::config::jvm_flags_from_env()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("zkr: export refused, nothing was written: {e}");
            return 2;
        }
    };
    let from_key = match (args.compression, &from_cfg.compression) {
        (None, Some((c, from))) => {
            Some(format!("{}={} from {from}", zkr::config::SNAPSHOT_COMPRESSION_KEY, c.method()))
        }
        _ => None,
    };
    let flags = zkr::export::Flags {
        data_dir: args.data_dir,
        data_log_dir: args.data_log_dir,
        compression: args.compression.map(|c| match c {
            SnapCompression::Plain => Compression::Plain,
            SnapCompression::Gz => Compression::Gzip,
            SnapCompression::Snappy => Compression::Snappy,
        }),
        myid: args.myid,
    };
    let Some((data_dir, opts)) = zkr::export::settings(flags, from_cfg) else {
        eprintln!("zkr: export-zookeeper needs --data-dir, or --config with a zoo.cfg that names dataDir");
        return 2;
    };
    match zkr::export::export(&data_dir, &args.zk_data_dir, &opts) {
        Ok(e) => {
            println!(
                "exported zxid 0x{:x}: {} znodes, {} sessions into {}",
                e.zxid,
                e.znodes,
                e.sessions,
                e.snapshot.display()
            );
            if let Some(line) = from_key {
                println!("{line}");
            }
            if let Some((applied, replayed)) = e.member {
                let at = applied.map_or("none".to_owned(), |l| format!("term {} index {}", l.leader_id.term, l.index));
                println!(
                    "an ensemble member's directory: committed log applied up to {at} ({replayed} entries after its \
                     snapshot); entries after the commit point were not applied. Export the member whose zxid is highest."
                );
            }
            let others = e.sessions - e.zookeeper_passwords;
            if others > 0 {
                println!(
                    "{others} of the sessions were created by zkr with a password ZooKeeper does not derive: \
                     their clients cannot re-attach to ZooKeeper, and their ephemerals stay there until the \
                     session timeout; {} sessions (imported from ZooKeeper, or given ZooKeeper's password with \
                     zkr.zookeeperPasswords=true) can re-attach",
                    e.zookeeper_passwords
                );
            }
            0
        }
        Err(e) => {
            eprintln!("zkr: export failed: {e}");
            1
        }
    }
}

/// The flags of `zkr import-zookeeper`.
#[derive(clap::Args)]
struct ImportArgs {
    /// ZooKeeper's dataDir (the one holding version-2/).
    #[arg(long)]
    zk_data_dir: std::path::PathBuf,
    /// ZooKeeper's dataLogDir, if its logs are kept apart from dataDir.
    #[arg(long)]
    zk_data_log_dir: Option<std::path::PathBuf>,
    /// The zkr data directory to create (must be empty).
    #[arg(long)]
    data_dir: std::path::PathBuf,
    /// Start from this snapshot.<zxid>[.gz|.snappy] (a path, or a file name of the snapshot
    /// directory) instead of the newest one that reads.
    #[arg(long)]
    snapshot: Option<std::path::PathBuf>,
    /// Import what can be read when the snapshot and the logs after it are not one history (a
    /// gap, a damaged record, logs without a snapshot), as ZooKeeper would load it, and list
    /// what was lost; without it the import refuses and changes nothing.
    #[arg(long)]
    accept_data_loss: bool,
}

/// `zkr import-zookeeper`: exit 0 after an import, 1 if it refused or failed.
fn import_zookeeper(args: ImportArgs) -> i32 {
    let opts = zkr::import::Options { snapshot: args.snapshot, accept_loss: args.accept_data_loss };
    match zkr::import::import(&args.zk_data_dir, args.zk_data_log_dir.as_deref(), &args.data_dir, &opts) {
        Ok(i) => {
            let l = &i.loaded;
            for (file, why) in &l.skipped {
                println!("skipped snapshot {}: {why}", file.display());
            }
            for loss in &l.losses {
                println!("lost (--accept-data-loss): {loss}");
            }
            println!(
                "imported zxid 0x{:x}: {} znodes, {} sessions (snapshot {}, {} txns from {} log files) into {}",
                i.zxid,
                i.znodes,
                i.sessions,
                l.snapshot.as_ref().map_or("none".to_string(), |p| p.display().to_string()),
                l.txns,
                l.logs,
                i.written.display()
            );
            0
        }
        Err(e) => {
            eprintln!("zkr: import failed: {e}");
            1
        }
    }
}

/// The flags of `zkr repair-log`: the ones of `zkr serve` that say where the data is, so that a
/// repair reads the same directories (and the same zoo.cfg) as the server it precedes.
#[derive(clap::Args)]
struct RepairArgs {
    /// Data directory (zoo.cfg dataDir).
    #[arg(long)]
    data_dir: Option<std::path::PathBuf>,
    /// Directory of the write-ahead log (zoo.cfg dataLogDir; default <data-dir>/wal).
    #[arg(long)]
    data_log_dir: Option<std::path::PathBuf>,
    /// A ZooKeeper zoo.cfg to read.
    #[arg(long)]
    config: Option<std::path::PathBuf>,
    /// If the newest snapshot fails its checksum, repair the log after an older one.
    #[arg(long)]
    recover_older_snapshot: bool,
}

/// `zkr repair-log`: exit 0 after a repair or when there was nothing to repair, 1 otherwise.
fn repair_log(args: RepairArgs) -> i32 {
    let serve = ServeArgs {
        data_dir: args.data_dir,
        data_log_dir: args.data_log_dir,
        config: args.config,
        recover_older_snapshot: args.recover_older_snapshot,
        ..ServeArgs::default()
    };
    let cfg = match Config::from_args(&serve) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("zkr: {e}");
            return 2;
        }
    };
    match zkr::storage::repair_log(&cfg) {
        Ok(r) if r.cuts.is_empty() => {
            println!("the log has no corrupt record: nothing changed");
            0
        }
        Ok(r) => {
            for (file, offset, reason) in &r.cuts {
                println!("cut {} at offset {offset}: {reason}", file.display());
            }
            for kept in &r.kept {
                println!("kept {}", kept.display());
            }
            println!("records from the cut on are no longer in the log; they are only in the copies above");
            0
        }
        Err(e) => {
            eprintln!("zkr: repair-log failed: {e}");
            1
        }
    }
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    init_logging(cli.log_format);
    match cli.command {
        Command::Cli(args) => std::process::exit(zkr::cli::run(args)),
        Command::Dubbo(args) => std::process::exit(zkr::dubbo::run(args)),
        Command::Bench(args) => {
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            if let Err(e) = rt.block_on(zkr::bench::run(args)) {
                eprintln!("zkr bench: {e}");
                std::process::exit(1);
            }
            Ok(())
        }
        Command::RepairLog(args) => std::process::exit(repair_log(args)),
        Command::Takeover(args) => std::process::exit(zkr::takeover::tool::run(args)),
        Command::ImportZookeeper(args) => std::process::exit(import_zookeeper(args)),
        Command::ExportZookeeper(args) => std::process::exit(export_zookeeper(args)),
        Command::Serve(args) => {
            // The krb5.conf a Kerberized ZooKeeper is given (-Djava.security.krb5.conf) is the one
            // MIT Kerberos reads, unless KRB5_CONFIG says otherwise. Set before any thread starts.
            if std::env::var_os("KRB5_CONFIG").is_none() {
                if let Some(path) = zkr::config::jvm_property("java.security.krb5.conf") {
                    std::env::set_var("KRB5_CONFIG", path);
                }
            }
            let cfg = match Config::from_args(&args) {
                Ok(c) => c,
                Err(e) => {
                    tracing::error!("{e}");
                    eprintln!("zkr: {e}");
                    std::process::exit(2);
                }
            };
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            let kept = cfg.clone();
            let plan = rt.block_on(async move {
                let server = match zkr::server::Server::start(cfg).await {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::error!("{e}");
                        eprintln!("zkr: {e}");
                        std::process::exit(1);
                    }
                };
                let plan = match server.takeover() {
                    Some(slot) => tokio::select! {
                        _ = shutdown_signal(&server) => None,
                        p = slot.accepted() => Some(p),
                    },
                    None => {
                        shutdown_signal(&server).await;
                        None
                    }
                };
                tracing::info!("shutting down");
                server.shutdown().await;
                tracing::info!("stopped");
                plan
            });
            drop(rt);
            if let Some(plan) = plan {
                // An observer of ZooKeeper told to take over: become a zkr ensemble member.
                if let Err(e) = zkr::takeover::convert::prepare(&kept, &plan) {
                    tracing::error!("takeover failed: {e}");
                    eprintln!("zkr: takeover failed: {e}");
                    std::process::exit(1);
                }
                tracing::info!("running again as a member of the zkr ensemble");
                let e = zkr::takeover::convert::exec_again();
                tracing::error!("takeover failed: {e}");
                eprintln!("zkr: takeover failed: {e}");
                std::process::exit(1);
            }
            Ok(())
        }
    }
}

/// Waits for SIGINT or SIGTERM; SIGUSR1 meanwhile asks for a snapshot.
async fn shutdown_signal(server: &zkr::server::Server) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut usr1)) = (signal(SignalKind::terminate()), signal(SignalKind::user_defined1())) else {
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => return,
            _ = term.recv() => return,
            _ = usr1.recv() => {
                tracing::info!("SIGUSR1: taking a snapshot");
                server.snapshot_now().await;
            }
        }
    }
}
