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
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,openraft=warn"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder.json().flatten_event(true).with_current_span(false).init(),
        LogFormat::Text => builder.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).init(),
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
    /// Convert a ZooKeeper data directory (snapshots + transaction logs) into a zkr data directory.
    ImportZookeeper {
        /// ZooKeeper's dataDir (the one holding version-2/).
        #[arg(long)]
        zk_data_dir: std::path::PathBuf,
        /// ZooKeeper's dataLogDir, if its logs are kept apart from dataDir.
        #[arg(long)]
        zk_data_log_dir: Option<std::path::PathBuf>,
        /// The zkr data directory to create (must be empty).
        #[arg(long)]
        data_dir: std::path::PathBuf,
    },
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
        Command::ImportZookeeper { zk_data_dir, zk_data_log_dir, data_dir } => {
            match zkr::import::import(&zk_data_dir, zk_data_log_dir.as_deref(), &data_dir) {
                Ok(i) => {
                    println!(
                        "imported zxid 0x{:x}: {} znodes, {} sessions (snapshot {}, {} txns from {} log files) into {}",
                        i.zxid,
                        i.znodes,
                        i.sessions,
                        i.snapshot.map_or("none".to_string(), |p| p.display().to_string()),
                        i.txns,
                        i.logs,
                        i.written.display()
                    );
                    Ok(())
                }
                Err(e) => {
                    eprintln!("zkr: import failed: {e}");
                    std::process::exit(1);
                }
            }
        }
        Command::Serve(args) => {
            let cfg = match Config::from_args(&args) {
                Ok(c) => c,
                Err(e) => {
                    tracing::error!("{e}");
                    eprintln!("zkr: {e}");
                    std::process::exit(2);
                }
            };
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            rt.block_on(async move {
                let server = match zkr::server::Server::start(cfg).await {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::error!("{e}");
                        eprintln!("zkr: {e}");
                        std::process::exit(1);
                    }
                };
                shutdown_signal(&server).await;
                tracing::info!("shutting down");
                server.shutdown().await;
                tracing::info!("stopped");
                anyhow::Ok(())
            })
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
