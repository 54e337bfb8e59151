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
        mpsc,
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
