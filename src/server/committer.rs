//! Group commit: the thread that makes txns durable and only then releases what the core
//! produced (replies and notifications) to the connections.
//!
//! The core hands over one `Batch` per turn: the log records it appended and every outbound
//! message of that turn, in order. This thread runs `storage::group_commit` over them: it takes
//! all batches waiting, appends their records, calls fdatasync once for all of them, then
//! delivers their messages in order. Nothing
//! a client sees can depend on a txn that is not yet on disk, and concurrent writers share one
//! fsync. Reads queued behind a pending write wait for it too, which keeps per-session FIFO.
//! A turn with no log records while nothing is waiting here is delivered by the core itself
//! (`CommitQueue::submit`): no earlier output can be overtaken, and reads and pings skip a thread
//! hop.

use super::outbound::{deliver_all, Delivery, Durable};
use super::stats::ServerStats;
use super::view::Views;
use crate::storage::group_commit::{self, GroupWriter};
use crate::storage::wal::Wal;
use crate::txn::Zxid;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::Arc;

/// Batches waiting for the committer before the core blocks (backpressure).
const QUEUE: usize = 1024;

/// What one turn of the core produced.
#[derive(Default)]
pub struct Batch {
    /// Framed log records (`wal::frame`), possibly empty.
    pub records: Vec<u8>,
    pub first_zxid: Zxid,
    /// The tree's zxid after the turn (the last record's, when there are records).
    pub last_zxid: Zxid,
    pub out: Vec<Delivery>,
}

/// The core's end of the committer: batches go through the log thread unless they can be
/// delivered at once without overtaking anything.
pub struct CommitQueue {
    tx: SyncSender<Batch>,
    /// Batches handed over whose messages are not yet delivered.
    in_flight: Arc<AtomicUsize>,
    views: Arc<Views>,
}

impl CommitQueue {
    /// Hands over one turn's output. A turn that logged nothing is delivered here and now when
    /// no earlier batch is still waiting for its fsync; otherwise it queues behind them.
    pub fn submit(&self, batch: Batch) -> Result<(), Batch> {
        // Only this thread increments, so zero stays zero until the send below.
        if batch.records.is_empty() && self.in_flight.load(Ordering::Acquire) == 0 {
            deliver_all(&*self.views, batch.last_zxid, batch.out);
            return Ok(());
        }
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.tx.send(batch).map_err(|e| {
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
            e.0
        })
    }
}

pub fn spawn(
    wal: Wal,
    durable: Durable,
    stats: Arc<ServerStats>,
    views: Arc<Views>,
) -> std::io::Result<(CommitQueue, std::thread::JoinHandle<()>)> {
    let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
    let in_flight = Arc::new(AtomicUsize::new(0));
    let counter = in_flight.clone();
    let handle = std::thread::Builder::new().name("zkr-log".into()).spawn({
        let views = views.clone();
        move || run(wal, rx, durable, counter, stats, views)
    })?;
    Ok((CommitQueue { tx, in_flight, views }, handle))
}

fn run(
    wal: Wal,
    rx: Receiver<Batch>,
    durable: Durable,
    in_flight: Arc<AtomicUsize>,
    stats: Arc<ServerStats>,
    views: Arc<Views>,
) {
    let mut w = Committer { wal, durable, in_flight, stats, views, written: None };
    group_commit::run(&rx, &mut w);
    if let Err(e) = w.wal.sync() {
        fatal(e);
    }
}

/// The standalone log's side of group commit: a job is one turn of the core.
struct Committer {
    wal: Wal,
    durable: Durable,
    in_flight: Arc<AtomicUsize>,
    stats: Arc<ServerStats>,
    views: Arc<Views>,
    /// The last zxid appended and not yet synced.
    written: Option<Zxid>,
}

impl GroupWriter for Committer {
    type Job = Batch;

    fn write(&mut self, b: &mut Batch) -> bool {
        if b.records.is_empty() {
            return false;
        }
        if let Err(e) = self.wal.append(&b.records, b.first_zxid) {
            fatal(e);
        }
        self.written = Some(b.last_zxid);
        true
    }

    fn sync(&mut self) {
        let started = std::time::Instant::now();
        if let Err(e) = self.wal.sync() {
            fatal(e);
        }
        self.stats.fsync_done(started.elapsed().as_micros() as u64);
        if let Some(z) = self.written.take() {
            self.durable.store(z, Ordering::Release);
        }
    }

    fn complete(&mut self, b: Batch) {
        deliver_all(&*self.views, b.last_zxid, b.out);
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A log that cannot be written cannot acknowledge anything: stop rather than lie.
fn fatal(e: crate::storage::StorageError) -> ! {
    tracing::error!("cannot write the transaction log, stopping: {e}");
    eprintln!("zkr: cannot write the transaction log, stopping: {e}");
    std::process::exit(70);
}
