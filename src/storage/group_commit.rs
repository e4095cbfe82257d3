//! Group commit, the one loop both logs' writer threads run: take every job waiting, write
//! them in order, make them durable with one fsync, and only then complete them in order.
//!
//! Concurrent writers share an fsync, and nothing is completed (acknowledged, delivered,
//! reported flushed) before the fsync that covers it. The standalone log's committer
//! (`server::committer`) and the Raft log store (`raft::log_store`) each say what a job is and
//! what writing, syncing and completing one means; the batching and its order live here.

use std::sync::mpsc::Receiver;

/// One log's writer: what the group-commit loop does with each job of a batch.
pub trait GroupWriter {
    type Job;
    /// Writes the job (not yet durable). True when it appended something the batch's fsync
    /// must cover.
    fn write(&mut self, job: &mut Self::Job) -> bool;
    /// Makes everything written so far durable: once per batch that appended anything.
    fn sync(&mut self);
    /// Completes a job after its batch's fsync (or right after its write when the batch
    /// appended nothing), in the order the jobs arrived.
    fn complete(&mut self, job: Self::Job);
    /// After the batch's last completion: state shared with other threads is updated once
    /// per batch here rather than once per job.
    fn batch_done(&mut self) {}
}

/// Runs batches until every sender is gone.
pub fn run<W: GroupWriter>(rx: &Receiver<W::Job>, w: &mut W) {
    while let Ok(first) = rx.recv() {
        let mut jobs = vec![first];
        jobs.extend(rx.try_iter());
        let mut appended = false;
        for job in &mut jobs {
            appended |= w.write(job);
        }
        if appended {
            w.sync();
        }
        for job in jobs {
            w.complete(job);
        }
        w.batch_done();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records what the loop asked for, in order.
    #[derive(Default)]
    struct Trace(Vec<String>);

    impl GroupWriter for Trace {
        type Job = (u32, bool);
        fn write(&mut self, job: &mut (u32, bool)) -> bool {
            self.0.push(format!("write {}", job.0));
            job.1
        }
        fn sync(&mut self) {
            self.0.push("sync".into());
        }
        fn complete(&mut self, job: (u32, bool)) {
            self.0.push(format!("complete {}", job.0));
        }
        fn batch_done(&mut self) {
            self.0.push("done".into());
        }
    }

    #[test]
    fn a_batch_shares_one_fsync_and_completes_only_after_it_in_order() {
        let (tx, rx) = std::sync::mpsc::channel();
        for j in [(1, true), (2, false), (3, true)] {
            tx.send(j).unwrap();
        }
        drop(tx);
        let mut t = Trace::default();
        run(&rx, &mut t);
        let want = ["write 1", "write 2", "write 3", "sync", "complete 1", "complete 2", "complete 3", "done"];
        assert_eq!(t.0, want);
    }

    #[test]
    fn a_batch_that_appended_nothing_is_not_synced() {
        let (tx, rx) = std::sync::mpsc::channel();
        tx.send((7, false)).unwrap();
        drop(tx);
        let mut t = Trace::default();
        run(&rx, &mut t);
        assert_eq!(t.0, ["write 7", "complete 7", "done"]);
    }

    #[test]
    fn jobs_sent_while_a_batch_is_written_form_the_next_batch() {
        let (tx, rx) = std::sync::mpsc::channel();
        tx.send((1, true)).unwrap();
        struct Late {
            tx: Option<std::sync::mpsc::Sender<(u32, bool)>>,
            trace: Trace,
        }
        impl GroupWriter for Late {
            type Job = (u32, bool);
            fn write(&mut self, job: &mut (u32, bool)) -> bool {
                if let Some(tx) = self.tx.take() {
                    tx.send((2, true)).unwrap();
                }
                self.trace.write(job)
            }
            fn sync(&mut self) {
                self.trace.sync()
            }
            fn complete(&mut self, job: (u32, bool)) {
                self.trace.complete(job)
            }
            fn batch_done(&mut self) {
                self.trace.batch_done()
            }
        }
        let mut w = Late { tx: Some(tx), trace: Trace::default() };
        run(&rx, &mut w);
        let want = ["write 1", "sync", "complete 1", "done", "write 2", "sync", "complete 2", "done"];
        assert_eq!(w.trace.0, want);
    }
}
