//! Garbage on the wire (issue #5 item 8): thousands of random and truncated frames, oversize and
//! negative lengths, an HTTP request, a TLS ClientHello on the plain port and half-closed sockets,
//! sent to a `zkr serve` process while a well-behaved client (the `zookeeper-client` crate) keeps
//! working. The client must see no error, and afterwards the server must be back to its baseline.
//!
//! Baseline = the zkr process measured after the well-behaved client has connected and run a
//! few operations, before any garbage: open file descriptors (/proc/<pid>/fd), threads
//! (/proc/<pid>/status Threads), resident memory (VmRSS) and mntr's zk_num_alive_connections.
//! "Back to baseline" = equal connections and descriptors, at most 2 extra threads (tokio's
//! blocking pool may keep one briefly) and at most 48 MB more RSS (the allocator keeps freed
//! pages; a leak of thousands of connections' buffers would be far more). The seed is printed and
//! can be replayed with ZKR_GARBAGE_SEED.

use crate::common;

use common::new_session;
use common::zkr_proc::ZkrProc;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use zookeeper_client as zk;

const CONNECTIONS: usize = 3000;
const PARALLEL: usize = 32;

/// The first bytes a TLS 1.2/1.3 client sends: a handshake record holding a ClientHello.
fn client_hello(rng: &mut StdRng) -> Vec<u8> {
    let mut hello = vec![0x03, 0x03];
    hello.extend((0..32).map(|_| rng.gen::<u8>()));
    hello.extend([0x00, 0x00, 0x04, 0x13, 0x01, 0xc0, 0x2f, 0x01, 0x00]);
    hello.extend([0x00, 0x08, 0x00, 0x2b, 0x00, 0x04, 0x03, 0x04, 0x03, 0x03]); // supported_versions
    let mut hs = vec![0x01, 0x00, (hello.len() >> 8) as u8, hello.len() as u8];
    hs.extend(hello);
    let mut rec = vec![0x16, 0x03, 0x01, (hs.len() >> 8) as u8, hs.len() as u8];
    rec.extend(hs);
    rec
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut f = (body.len() as i32).to_be_bytes().to_vec();
    f.extend_from_slice(body);
    f
}

fn handshake_frame() -> Vec<u8> {
    let mut b = Vec::new();
    new_session(10_000).write(&mut b);
    frame(&b)
}

/// One hostile connection of kind `kind`; returns once the server has closed it or it was
/// dropped. Errors are expected and ignored: only the server's state afterwards matters.
async fn hostile(addr: &str, kind: u32, rng: &mut StdRng) {
    let Ok(mut s) = TcpStream::connect(addr).await else { return };
    let mut bytes = Vec::new();
    let mut half_close = false;
    match kind {
        // Pure noise, any length.
        0 => bytes.extend((0..rng.gen_range(0..3000)).map(|_| rng.gen::<u8>())),
        // A plausible length and random body before the handshake.
        1 => bytes.extend(frame(&(0..rng.gen_range(0..200)).map(|_| rng.gen::<u8>()).collect::<Vec<_>>())),
        // Oversize and negative lengths.
        2 => bytes.extend(rng.gen_range(0x10_0000..i32::MAX).to_be_bytes()),
        3 => bytes.extend(rng.gen_range(i32::MIN..0).to_be_bytes()),
        // HTTP, and TLS to the plain port.
        4 => bytes.extend(b"GET /commands/stat HTTP/1.1\r\nHost: localhost\r\n\r\n"),
        5 => bytes.extend(client_hello(rng)),
        // A valid handshake, then random request frames (random op codes and bodies).
        6 | 7 => {
            bytes.extend(handshake_frame());
            for _ in 0..rng.gen_range(1..20) {
                let mut body = vec![0, 0, 0, rng.gen_range(1..100)];
                body.extend(rng.gen_range(-20i32..120).to_be_bytes());
                body.extend((0..rng.gen_range(0..64)).map(|_| rng.gen::<u8>()));
                bytes.extend(frame(&body));
            }
        }
        // A valid handshake, then a frame cut short and a half-close.
        8 => {
            bytes.extend(handshake_frame());
            let f = frame(&[0, 0, 0, 9, 0, 0, 0, 4, 0, 0, 0, 20, b'/', b'a']);
            bytes.extend(&f[..rng.gen_range(1..f.len())]);
            half_close = true;
        }
        // A truncated handshake, then a half-close.
        9 => {
            let f = handshake_frame();
            bytes.extend(&f[..rng.gen_range(0..f.len())]);
            half_close = true;
        }
        // A handshake cut mid-frame and the socket simply dropped.
        _ => {
            let f = handshake_frame();
            bytes.extend(&f[..rng.gen_range(1..f.len())]);
        }
    }
    let _ = s.write_all(&bytes).await;
    if half_close {
        let _ = s.shutdown().await;
        // The server must close its side too once it has seen our FIN.
        let mut sink = [0u8; 4096];
        let _ = tokio::time::timeout(Duration::from_secs(20), async {
            while let Ok(n) = s.read(&mut sink).await {
                if n == 0 {
                    break;
                }
            }
        })
        .await;
    } else if rng.gen_bool(0.5) {
        // Sometimes wait for the server to hang up, sometimes leave first.
        let mut sink = [0u8; 4096];
        let _ = tokio::time::timeout(Duration::from_millis(200), s.read(&mut sink)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_harms_nobody_and_leaves_nothing_behind() {
    let seed: u64 = std::env::var("ZKR_GARBAGE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_2026);
    eprintln!("garbage seed {seed} (ZKR_GARBAGE_SEED)");
    let zkr =
        ZkrProc::start(&["--max-client-cnxns", "0", "--force-sync", "false", "--handshake-timeout-ms", "3000"], "info");

    // The well-behaved client, and its steady workload.
    let good = zk::Client::connector().session_timeout(Duration::from_secs(10)).connect(&zkr.addr).await.unwrap();
    let opts = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    good.create("/good", b"0", &opts).await.unwrap();
    for i in 0..50 {
        good.set_data("/good", format!("{i}").as_bytes(), None).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (fds0, threads0, rss0, alive0) = (zkr.fds(), zkr.threads(), zkr.rss_kb(), zkr.alive_connections());
    eprintln!("baseline: fds {fds0}, threads {threads0}, rss {rss0} KiB, alive {alive0}");

    let stop = Arc::new(AtomicBool::new(false));
    let done_ops = Arc::new(AtomicUsize::new(0));
    let worker = {
        let (stop, done_ops) = (stop.clone(), done_ops.clone());
        tokio::spawn(async move {
            let (mut version, mut n) = (50, 0u64);
            while !stop.load(Ordering::Acquire) {
                n += 1;
                let data = n.to_string();
                let stat = good.set_data("/good", data.as_bytes(), Some(version)).await.expect("setData");
                version = stat.version;
                let (got, _) = good.get_data("/good").await.expect("getData");
                assert_eq!(got, data.as_bytes());
                let path = format!("/good/e{n}");
                good.create(&path, b"", &opts).await.expect("create");
                good.delete(&path, None).await.expect("delete");
                done_ops.fetch_add(4, Ordering::Relaxed);
            }
            good
        })
    };

    // The storm: CONNECTIONS hostile connections, PARALLEL at a time, every kind in turn.
    let started = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for t in 0..PARALLEL {
        let (addr, next) = (zkr.addr.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut rng = StdRng::seed_from_u64(seed ^ (t as u64) << 32);
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= CONNECTIONS {
                    break;
                }
                hostile(&addr, (i % 11) as u32, &mut rng).await;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let ops_during = done_ops.load(Ordering::Relaxed);
    eprintln!(
        "{CONNECTIONS} hostile connections in {:?}; the good client did {ops_during} ops meanwhile",
        started.elapsed()
    );
    stop.store(true, Ordering::Release);
    let good = worker.await.expect("the well-behaved client saw an error");
    assert!(ops_during > 0, "the well-behaved client made no progress during the storm");
    assert!(zkr.log().contains("exceeds the maximum"), "oversize lengths were not refused as such");

    // Back to baseline (polling: sockets in the handshake deadline close within 3 s).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (fds, threads, rss, alive) = (zkr.fds(), zkr.threads(), zkr.rss_kb(), zkr.alive_connections());
        let ok = alive == alive0 && fds == fds0 && threads <= threads0 + 2 && rss <= rss0 + 48 * 1024;
        if ok {
            eprintln!("after: fds {fds}, threads {threads}, rss {rss} KiB, alive {alive}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not back to baseline: fds {fds} (was {fds0}), threads {threads} (was {threads0}), \
             rss {rss} KiB (was {rss0}), alive connections {alive} (was {alive0})"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // And the good client still works.
    good.set_data("/good", b"end", None).await.unwrap();
}
