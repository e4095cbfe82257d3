//! A connection's outbound queue: a bounded many-producer, one-consumer channel whose storage
//! grows with what is queued and is given back when it drains. tokio's bounded mpsc allocates a
//! block of 32 slots when it is made (32 × 128-byte `Outbound` = 4 KiB per connection), which was
//! a third of an idle session's memory; a registry's sessions are mostly idle (issue 25). The
//! API is the subset of tokio's that the server uses, with tokio's error types.

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::sync::mpsc::error::{SendError, TryRecvError, TrySendError};
use tokio::sync::Notify;

/// Storage is released when the queue drains: an idle connection holds none (four slots kept
/// after a ping's pong were 512 bytes per session); allocating again costs less than a syscall.
const KEEP_SLOTS: usize = 0;

struct Chan<T> {
    state: Mutex<State<T>>,
    /// Something was queued, or the last sender went.
    data: Notify,
    /// Something was taken, or the receiver went.
    space: Notify,
    bound: usize,
}

struct State<T> {
    items: VecDeque<T>,
    senders: usize,
    receiver: bool,
}

/// A bounded channel of at most `bound` messages.
pub fn channel<T>(bound: usize) -> (Sender<T>, Receiver<T>) {
    let chan = Arc::new(Chan {
        state: Mutex::new(State { items: VecDeque::new(), senders: 1, receiver: true }),
        data: Notify::new(),
        space: Notify::new(),
        bound: bound.max(1),
    });
    (Sender { chan: chan.clone() }, Receiver { chan })
}

pub struct Sender<T> {
    chan: Arc<Chan<T>>,
}

impl<T> std::fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.chan.state.lock();
        f.debug_struct("Sender").field("queued", &s.items.len()).field("bound", &self.chan.bound).finish()
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Sender<T> {
        self.chan.state.lock().senders += 1;
        Sender { chan: self.chan.clone() }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let last = {
            let mut s = self.chan.state.lock();
            s.senders -= 1;
            s.senders == 0
        };
        if last {
            self.chan.data.notify_one();
        }
    }
}

impl<T> Sender<T> {
    /// Queues `v` unless the queue is full or the receiver is gone.
    pub fn try_send(&self, v: T) -> Result<(), TrySendError<T>> {
        {
            let mut s = self.chan.state.lock();
            if !s.receiver {
                return Err(TrySendError::Closed(v));
            }
            if s.items.len() >= self.chan.bound {
                return Err(TrySendError::Full(v));
            }
            s.items.push_back(v);
        }
        self.chan.data.notify_one();
        Ok(())
    }

    /// Queues `v`, waiting for room.
    pub async fn send(&self, mut v: T) -> Result<(), SendError<T>> {
        loop {
            let room = self.chan.space.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            match self.try_send(v) {
                Ok(()) => return Ok(()),
                Err(TrySendError::Closed(x)) => return Err(SendError(x)),
                Err(TrySendError::Full(x)) => {
                    v = x;
                    room.await;
                }
            }
        }
    }
}

pub struct Receiver<T> {
    chan: Arc<Chan<T>>,
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let items = {
            let mut s = self.chan.state.lock();
            s.receiver = false;
            std::mem::take(&mut s.items)
        };
        drop(items);
        self.chan.space.notify_waiters();
    }
}

impl<T> Receiver<T> {
    /// The next message; None once it is empty and every sender is gone.
    pub async fn recv(&mut self) -> Option<T> {
        let chan = &*self.chan;
        loop {
            let queued = chan.data.notified();
            tokio::pin!(queued);
            queued.as_mut().enable();
            match chan.take() {
                Ok(v) => return Some(v),
                Err(TryRecvError::Disconnected) => return None,
                Err(TryRecvError::Empty) => queued.await,
            }
        }
    }

    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        self.chan.take()
    }
}

impl<T> Chan<T> {
    fn take(&self) -> Result<T, TryRecvError> {
        let v = {
            let mut s = self.state.lock();
            match s.items.pop_front() {
                Some(v) => {
                    if s.items.is_empty() && s.items.capacity() > KEEP_SLOTS {
                        s.items = VecDeque::new();
                    }
                    v
                }
                None if s.senders == 0 => return Err(TryRecvError::Disconnected),
                None => return Err(TryRecvError::Empty),
            }
        };
        self.space.notify_one();
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn bounded_ordered_and_closes_like_tokios() {
        let (tx, mut rx) = channel::<u32>(2);
        tx.try_send(1).unwrap();
        tx.try_send(2).unwrap();
        assert!(matches!(tx.try_send(3), Err(TrySendError::Full(3))));
        // A waiting send completes once the receiver takes one.
        let t2 = tx.clone();
        let waiting = tokio::spawn(async move { t2.send(3).await.is_ok() });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished());
        assert_eq!(rx.recv().await, Some(1));
        assert!(waiting.await.unwrap());
        assert_eq!(rx.try_recv(), Ok(2));
        assert_eq!(rx.recv().await, Some(3));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        // recv wakes on a send from another task.
        let t3 = tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            t3.try_send(4).unwrap();
        });
        assert_eq!(rx.recv().await, Some(4));
        drop(tx);
        assert_eq!(rx.recv().await, None, "every sender gone");
        let (tx, rx) = channel::<u32>(1);
        drop(rx);
        assert!(matches!(tx.try_send(5), Err(TrySendError::Closed(5))));
        assert!(tx.send(6).await.is_err());
    }

    /// A burst's storage is given back once the queue drains; nothing is allocated before use.
    #[test]
    fn storage_follows_the_queue() {
        let (tx, mut rx) = channel::<u64>(1000);
        assert_eq!(rx.chan.state.lock().items.capacity(), 0);
        for i in 0..500 {
            tx.try_send(i).unwrap();
        }
        for i in 0..500 {
            assert_eq!(rx.try_recv(), Ok(i));
        }
        assert_eq!(rx.chan.state.lock().items.capacity(), KEEP_SLOTS, "a drained queue holds no storage");
    }

    /// A send blocked on a full queue fails once the receiver goes.
    #[tokio::test]
    async fn a_blocked_send_ends_when_the_receiver_goes() {
        let (tx, rx) = channel::<u32>(1);
        tx.try_send(1).unwrap();
        let blocked = tokio::spawn(async move { tx.send(2).await.is_err() });
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(rx);
        assert!(tokio::time::timeout(Duration::from_secs(5), blocked).await.unwrap().unwrap());
    }
}
