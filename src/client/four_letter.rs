//! Four-letter words asked as a client (`srvr`, `mntr`, `ruok`...): send the word, read until
//! the server closes, as ZooKeeper answers one word per connection and then closes it.

use std::time::Duration;

/// The answer to `word` from `addr`, or `None` if the server cannot be reached or answer within
/// `within` (used by async callers: the load generator).
pub async fn ask(addr: &str, word: &str, within: Duration) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let go = async {
        let mut s = tokio::net::TcpStream::connect(addr).await.ok()?;
        s.write_all(word.as_bytes()).await.ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).await.ok()?;
        Some(out)
    };
    tokio::time::timeout(within, go).await.ok().flatten()
}

/// `ask` for a caller without a runtime (`zkr takeover`): `within` bounds the connect and each read.
pub fn ask_blocking(addr: &str, word: &str, within: Duration) -> Option<String> {
    use std::io::{Read, Write};
    use std::net::ToSocketAddrs;
    let a = addr.to_socket_addrs().ok()?.next()?;
    let mut s = std::net::TcpStream::connect_timeout(&a, within).ok()?;
    s.set_read_timeout(Some(within)).ok()?;
    s.write_all(word.as_bytes()).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

/// The `Mode:` line of a `srvr` answer: standalone, leader, follower or observer.
pub fn mode(srvr: &str) -> Option<String> {
    srvr.lines().find_map(|l| l.strip_prefix("Mode: ").map(str::to_owned))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_is_read_from_the_srvr_answer() {
        let srvr = "Zookeeper version: 3.9.2\nLatency min/avg/max: 0/0.0/0\nMode: follower\nNode count: 5\n";
        assert_eq!(mode(srvr).as_deref(), Some("follower"));
        assert_eq!(mode("This ZooKeeper instance is not currently serving requests\n"), None);
    }

    #[tokio::test]
    async fn a_word_is_answered_by_a_server_that_then_closes() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = l.local_addr().expect("addr").to_string();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.expect("accept");
            let mut w = [0u8; 4];
            s.read_exact(&mut w).await.expect("word");
            assert_eq!(&w, b"srvr");
            s.write_all(b"Mode: leader\n").await.expect("answer");
        });
        let got = ask(&addr, "srvr", Duration::from_secs(3)).await;
        assert_eq!(got.as_deref().and_then(mode).as_deref(), Some("leader"));
        let a2 = addr.clone();
        let blocking = tokio::task::spawn_blocking(move || ask_blocking(&a2, "srvr", Duration::from_millis(300)));
        assert_eq!(blocking.await.expect("join"), None, "nobody listens any more");
    }
}
