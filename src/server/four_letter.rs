//! Four-letter words on the client port (`echo ruok | nc host 2181`), gated by ZooKeeper's
//! `4lw.commands.whitelist`. ZooKeeper recognises them by the first four bytes of a connection.

use super::conn::ConnCtx;
use super::core::{CoreMsg, CoreStats};
use tokio::io::{AsyncWrite, AsyncWriteExt};

const WORDS: &[&str] = &["ruok", "isro", "srvr", "stat", "mntr"];

/// The version string clients and exporters parse (go-zookeeper's FLWSrvr expects
/// `Zookeeper version: <v>, built on <date>`).
pub const VERSION: &str = concat!("3.9.0-zkr-", env!("CARGO_PKG_VERSION"), ", built on 01/01/2026 00:00 GMT");

pub fn recognise(first: &[u8; 4]) -> Option<&'static str> {
    WORDS.iter().copied().find(|w| w.as_bytes() == first)
}

async fn stats(ctx: &ConnCtx) -> CoreStats {
    let (tx, rx) = tokio::sync::oneshot::channel();
    if ctx.core.send(CoreMsg::Stats(tx)).await.is_err() {
        return CoreStats::default();
    }
    rx.await.unwrap_or_default()
}

pub async fn answer<W: AsyncWrite + Unpin>(word: &str, mut wr: W, ctx: &ConnCtx) {
    let allowed = ctx.cfg.four_letter_words.iter().any(|w| w == "*" || w == word);
    let text = if !allowed {
        format!("{word} is not executed because it is not in the whitelist.\n")
    } else {
        match word {
            "ruok" => "imok".to_owned(),
            "isro" => "rw".to_owned(),
            "mntr" => {
                let s = stats(ctx).await;
                format!(
                    "zk_version\t{VERSION}\nzk_server_state\tstandalone\nzk_znode_count\t{}\nzk_watch_count\t{}\nzk_ephemerals_count\t{}\nzk_approximate_data_size\t{}\nzk_num_alive_connections\t{}\nzk_outstanding_requests\t0\n",
                    s.znodes, s.watches, s.ephemerals, s.data_size, s.connections
                )
            }
            _ => {
                let s = stats(ctx).await;
                format!(
                    "Zookeeper version: {VERSION}\nLatency min/avg/max: 0/0.0/0\nReceived: 0\nSent: 0\nConnections: {}\nOutstanding: 0\nZxid: 0x{:x}\nMode: standalone\nNode count: {}\n",
                    s.connections, s.last_zxid, s.znodes
                )
            }
        }
    };
    let _ = wr.write_all(text.as_bytes()).await;
    let _ = wr.shutdown().await;
}
