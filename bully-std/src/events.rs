//! [`Events`]: a subscription to a node's events, bounded, never blocking the driver.

use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

use bully_core::Event;

use crate::sync::{Arc, Condvar, Mutex, lock, wait_until};

/// Why [`Events`] returned no event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecvError {
    /// The reader fell more than the subscription's capacity behind: this many of
    /// the oldest events were discarded to make room. The next call returns the
    /// oldest event that was kept. (Read [`Handle::leader`](crate::Handle::leader)
    /// for the current leader.)
    #[error("the reader fell behind and missed {0} events")]
    Lagged(u64),
    /// The driver has stopped and every event it published has been read.
    #[error("the driver has stopped and no events are left")]
    Closed,
}

/// One subscriber's queue.
#[derive(Debug)]
struct Queue {
    state: Mutex<QueueState>,
    ready: Condvar,
}

#[derive(Debug)]
struct QueueState {
    events: VecDeque<Event>,
    capacity: usize,
    /// Events discarded since the reader last heard of it.
    missed: u64,
    /// The driver will publish nothing more.
    closed: bool,
    /// The [`Events`] was dropped: the driver forgets this queue.
    detached: bool,
}

/// A subscription to one node's [`Event`]s, from [`Handle::events`](crate::Handle::events).
///
/// Each subscription sees every event published after it was made, in order.
/// It holds at most `capacity` unread events ([`Builder::event_capacity`],
/// 1024 by default): the driver never waits for a reader; when a reader is that
/// far behind, the oldest unread event is discarded and the reader is told how
/// many it missed ([`RecvError::Lagged`]), as with a tokio broadcast channel.
/// Leadership events are rare (a handful per failover), so only a reader that
/// stops reading lags.
///
/// When the driver stops, the events already published can still be read; then
/// every call returns [`RecvError::Closed`]. Dropping the subscription
/// unsubscribes.
///
/// [`Builder::event_capacity`]: crate::Builder::event_capacity
pub struct Events {
    queue: Arc<Queue>,
}

impl fmt::Debug for Events {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = lock(&self.queue.state);
        f.debug_struct("Events")
            .field("unread", &state.events.len())
            .field("closed", &state.closed)
            .finish()
    }
}

impl Events {
    /// Blocks until the next event.
    pub fn recv(&self) -> Result<Event, RecvError> {
        let mut state = lock(&self.queue.state);
        loop {
            if let Some(result) = take(&mut state) {
                return result;
            }
            state = self
                .queue
                .ready
                .wait(state)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Blocks at most `timeout` for the next event: `Ok(None)` if none came.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<Option<Event>, RecvError> {
        let queue = &self.queue;
        wait_until(&queue.state, &queue.ready, timeout, take).transpose()
    }

    /// The next event if one is waiting: `Ok(None)` if none is.
    pub fn try_recv(&self) -> Result<Option<Event>, RecvError> {
        take(&mut lock(&self.queue.state)).transpose()
    }
}

/// What a reader gets now, or `None` if it has to wait.
fn take(state: &mut QueueState) -> Option<Result<Event, RecvError>> {
    if state.missed > 0 {
        let missed = std::mem::take(&mut state.missed);
        return Some(Err(RecvError::Lagged(missed)));
    }
    if let Some(event) = state.events.pop_front() {
        return Some(Ok(event));
    }
    state.closed.then_some(Err(RecvError::Closed))
}

impl Drop for Events {
    fn drop(&mut self) {
        lock(&self.queue.state).detached = true;
    }
}

/// The subscriptions of one driver. The driver publishes; handles subscribe.
#[derive(Debug)]
pub(crate) struct Hub {
    state: Mutex<HubState>,
    capacity: usize,
}

#[derive(Debug)]
struct HubState {
    queues: Vec<Arc<Queue>>,
    closed: bool,
}

impl Hub {
    /// A hub whose subscriptions hold at most `capacity` (at least 1) events.
    pub(crate) fn new(capacity: usize) -> Hub {
        Hub {
            state: Mutex::new(HubState {
                queues: Vec::new(),
                closed: false,
            }),
            capacity: capacity.max(1),
        }
    }

    /// A new subscription. On a closed hub it is closed at once, so a subscriber
    /// racing the driver's shutdown never waits forever.
    pub(crate) fn subscribe(&self) -> Events {
        let mut hub = lock(&self.state);
        let queue = Arc::new(Queue {
            state: Mutex::new(QueueState {
                events: VecDeque::new(),
                capacity: self.capacity,
                missed: 0,
                closed: hub.closed,
                detached: false,
            }),
            ready: Condvar::new(),
        });
        if !hub.closed {
            hub.queues.push(queue.clone());
        }
        Events { queue }
    }

    /// Hands `events` to every subscription, and forgets dropped ones.
    pub(crate) fn publish(&self, events: &[Event]) {
        if events.is_empty() {
            return;
        }
        let mut hub = lock(&self.state);
        hub.queues.retain(|queue| {
            let mut state = lock(&queue.state);
            if state.detached {
                return false;
            }
            for &event in events {
                if state.events.len() == state.capacity {
                    state.events.pop_front();
                    state.missed += 1;
                }
                state.events.push_back(event);
            }
            drop(state);
            queue.ready.notify_all();
            true
        });
    }

    /// Publishes nothing more: readers drain what is left, then see `Closed`.
    pub(crate) fn close(&self) {
        let mut hub = lock(&self.state);
        hub.closed = true;
        for queue in hub.queues.drain(..) {
            lock(&queue.state).closed = true;
            queue.ready.notify_all();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use bully_core::Term;

    fn started(term: u64) -> Event {
        Event::ElectionStarted { term: Term(term) }
    }

    #[test]
    fn a_full_queue_drops_the_oldest_and_says_how_many() {
        let hub = Hub::new(2);
        let events = hub.subscribe();
        hub.publish(&[started(1), started(2), started(3)]);
        hub.publish(&[started(4)]);
        assert_eq!(events.try_recv(), Err(RecvError::Lagged(2)));
        assert_eq!(events.try_recv(), Ok(Some(started(3))));
        assert_eq!(events.recv(), Ok(started(4)));
        assert_eq!(events.recv_timeout(Duration::from_millis(5)), Ok(None));
    }

    #[test]
    fn close_lets_readers_drain_then_says_closed_even_to_late_subscribers() {
        let hub = Hub::new(8);
        let events = hub.subscribe();
        let dropped = hub.subscribe();
        drop(dropped);
        hub.publish(&[started(1)]);
        assert_eq!(
            lock(&hub.state).queues.len(),
            1,
            "the dropped one is forgotten"
        );
        hub.close();
        assert_eq!(events.recv(), Ok(started(1)));
        assert_eq!(events.recv(), Err(RecvError::Closed));
        assert_eq!(hub.subscribe().recv(), Err(RecvError::Closed));
    }
}
