//! The synchronisation types the crate uses: std's, or loom's under `--cfg loom`.
//!
//! Everything that two of the crate's threads share (the input channel, the leader
//! cell, the event queues, the stop flag, the threads themselves) goes through
//! this module, so that `RUSTFLAGS="--cfg loom"` model-checks the real code.
//! The transports are not switched: they are I/O, outside the model.

#[cfg(loom)]
pub(crate) use loom::{
    sync::{
        Arc, Condvar, Mutex, MutexGuard,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    thread,
};
#[cfg(not(loom))]
pub(crate) use std::{
    sync::{
        Arc, Condvar, Mutex, MutexGuard,
        atomic::{AtomicBool, AtomicU64, Ordering},
        mpsc,
    },
    thread,
};

/// Locks `mutex`, ignoring poisoning: every critical section in this crate leaves
/// its data consistent before anything in it can panic.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Waits on `condvar` for at most `timeout` (loom ignores the timeout: its
/// condition variables only wake on a notification).
pub(crate) fn wait_timeout<'a, T>(
    condvar: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: std::time::Duration,
) -> MutexGuard<'a, T> {
    condvar
        .wait_timeout(guard, timeout)
        .map(|(guard, _)| guard)
        .unwrap_or_else(|poisoned| poisoned.into_inner().0)
}

/// Waits on `condvar` (notified under `mutex`) until `ready` returns a value, at
/// most `timeout` (`Duration::MAX`: for as long as it takes); `None` if the time
/// ran out first. `ready` is asked at once, then after every wake-up.
pub(crate) fn wait_until<T, R>(
    mutex: &Mutex<T>,
    condvar: &Condvar,
    timeout: std::time::Duration,
    mut ready: impl FnMut(&mut T) -> Option<R>,
) -> Option<R> {
    let deadline = std::time::Instant::now().checked_add(timeout);
    let mut guard = lock(mutex);
    loop {
        if let Some(value) = ready(&mut guard) {
            return Some(value);
        }
        let left = match deadline {
            Some(deadline) => deadline.saturating_duration_since(std::time::Instant::now()),
            None => std::time::Duration::MAX,
        };
        if left.is_zero() {
            return None;
        }
        guard = wait_timeout(condvar, guard, left);
    }
}

/// Backs off after a transport error, so that a broken socket does not spin.
pub(crate) fn back_off(duration: std::time::Duration) {
    #[cfg(loom)]
    {
        let _ = duration;
        thread::yield_now();
    }
    #[cfg(not(loom))]
    thread::sleep(duration);
}

/// std's channel, rebuilt on loom's mutex and condition variable for the model.
///
/// Loom's own `mpsc` is not enough: its `try_recv` on an empty channel is not a
/// recorded operation, so loom never tries the order where the driver finds the
/// channel empty (a deadline passes) before a send. Here every operation takes
/// the channel's mutex, so both orders are explored.
#[cfg(loom)]
pub(crate) mod mpsc {
    use std::collections::VecDeque;
    use std::fmt;

    pub(crate) use std::sync::mpsc::{RecvError, SendError, TryRecvError};

    use super::{Arc, Condvar, Mutex, lock};

    struct Channel<T> {
        state: Mutex<State<T>>,
        ready: Condvar,
    }

    struct State<T> {
        queue: VecDeque<T>,
        senders: usize,
        receiver: bool,
    }

    /// `std::sync::mpsc::channel`.
    pub(crate) fn channel<T>() -> (Sender<T>, Receiver<T>) {
        let channel = Arc::new(Channel {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                senders: 1,
                receiver: true,
            }),
            ready: Condvar::new(),
        });
        (Sender(channel.clone()), Receiver(channel))
    }

    /// `std::sync::mpsc::Sender`.
    pub(crate) struct Sender<T>(Arc<Channel<T>>);

    impl<T> Sender<T> {
        pub(crate) fn send(&self, value: T) -> Result<(), SendError<T>> {
            let mut state = lock(&self.0.state);
            if !state.receiver {
                return Err(SendError(value));
            }
            state.queue.push_back(value);
            drop(state);
            self.0.ready.notify_one();
            Ok(())
        }
    }

    impl<T> Clone for Sender<T> {
        fn clone(&self) -> Self {
            lock(&self.0.state).senders += 1;
            Sender(self.0.clone())
        }
    }

    impl<T> Drop for Sender<T> {
        fn drop(&mut self) {
            let mut state = lock(&self.0.state);
            state.senders -= 1;
            if state.senders == 0 {
                drop(state);
                self.0.ready.notify_all();
            }
        }
    }

    impl<T> fmt::Debug for Sender<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("Sender { .. }")
        }
    }

    /// `std::sync::mpsc::Receiver`.
    pub(crate) struct Receiver<T>(Arc<Channel<T>>);

    impl<T> Receiver<T> {
        pub(crate) fn recv(&self) -> Result<T, RecvError> {
            let mut state = lock(&self.0.state);
            loop {
                if let Some(value) = state.queue.pop_front() {
                    return Ok(value);
                }
                if state.senders == 0 {
                    return Err(RecvError);
                }
                state = self
                    .0
                    .ready
                    .wait(state)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
        }

        pub(crate) fn try_recv(&self) -> Result<T, TryRecvError> {
            let mut state = lock(&self.0.state);
            match state.queue.pop_front() {
                Some(value) => Ok(value),
                None if state.senders == 0 => Err(TryRecvError::Disconnected),
                None => Err(TryRecvError::Empty),
            }
        }
    }

    impl<T> Drop for Receiver<T> {
        fn drop(&mut self) {
            let mut state = lock(&self.0.state);
            state.receiver = false;
            let left = std::mem::take(&mut state.queue);
            drop(state);
            // Dropped outside the lock: they may hold senders of other channels.
            drop(left);
        }
    }

    impl<T> fmt::Debug for Receiver<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("Receiver { .. }")
        }
    }
}
