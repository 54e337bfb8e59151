//! SIGTERM and SIGINT, caught from the start.

use bully_tokio::CancellationToken;
use tokio::signal::unix::{SignalKind, signal};

/// SIGTERM and SIGINT, as one cancellation. Install it first thing (before the
/// configuration is read): a signal that comes before it would kill the agent
/// with status 143, one that comes after only asks it to leave, with status 0.
pub struct Signals {
    cancelled: CancellationToken,
}

impl Signals {
    /// Starts listening for SIGTERM and SIGINT (inside a tokio runtime).
    pub fn new() -> std::io::Result<Signals> {
        let mut terminate = signal(SignalKind::terminate())?;
        let mut interrupt = signal(SignalKind::interrupt())?;
        let cancelled = CancellationToken::new();
        let trigger = cancelled.clone();
        tokio::spawn(async move {
            let name = tokio::select! {
                _ = terminate.recv() => "SIGTERM",
                _ = interrupt.recv() => "SIGINT",
            };
            tracing::info!(signal = name, "leaving");
            trigger.cancel();
        });
        Ok(Signals { cancelled })
    }

    pub(super) fn watch(&self) -> CancellationToken {
        self.cancelled.clone()
    }
}
