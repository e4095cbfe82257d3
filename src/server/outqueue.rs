//! The byte bound of a connection's outbound queue. The queue itself is a bounded channel of
//! messages; this counter, shared by whoever queues (the core's deliveries, the connection's own
//! ping answers) and the writer that takes them, bounds the bytes those messages will put on the
//! wire, so a client that stops reading can pin at most `max_outbound_bytes` of replies.
//!
//! It only counts; what to do over the bound (close the connection) is the caller's business.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[derive(Debug, Clone)]
pub struct QueuedBytes {
    n: Arc<AtomicUsize>,
    limit: usize,
}

impl QueuedBytes {
    pub fn new(limit: usize) -> QueuedBytes {
        QueuedBytes { n: Arc::new(AtomicUsize::new(0)), limit }
    }

    /// Counts `len` more bytes queued. `Err(total)` if that takes the queue past its bound while
    /// something was already queued: one message larger than the bound still goes out alone.
    pub fn add(&self, len: usize) -> Result<(), usize> {
        let before = self.n.fetch_add(len, Ordering::AcqRel);
        if before > 0 && before + len > self.limit {
            Err(before + len)
        } else {
            Ok(())
        }
    }

    /// The writer took a message of `len` bytes off the queue.
    pub fn taken(&self, len: usize) {
        self.n.fetch_sub(len, Ordering::AcqRel);
    }

    pub fn get(&self) -> usize {
        self.n.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_admits_one_large_message_alone_and_refuses_growth_past_it() {
        let q = QueuedBytes::new(100);
        assert_eq!(q.add(500), Ok(()), "a single message over the bound goes out alone");
        assert_eq!(q.add(1), Err(501));
        q.taken(501);
        assert_eq!(q.add(60), Ok(()));
        assert_eq!(q.add(40), Ok(()));
        assert_eq!(q.add(1), Err(101));
        q.taken(101);
        assert_eq!(q.get(), 0);
    }
}
