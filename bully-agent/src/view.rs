//! The running node as the endpoint sees it: the driver's handle, the other
//! members' addresses, and what the run loop and a reload publish about the
//! term, the command and the configuration.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bully_core::Event;
use bully_tokio::{CancellationToken, DriverError, DriverStats, Handle};
use tokio::sync::broadcast;

use crate::config::{ChildPolicy, NamesPolicy};
use crate::resolve::{Book, Resolve};
use crate::status::{
    ChildStatus, ConfigStatus, HandoverStatus, HealthStatus, MemberStatus, Status,
};
use crate::token::format_token;

/// Shared by the run loop, the persist callback, a reload, the resolver and
/// the endpoint.
#[derive(Debug)]
pub struct View {
    /// The driver.
    pub handle: Handle,
    /// The other members' addresses.
    pub book: Arc<Book>,
    term: Arc<AtomicU64>,
    child: Mutex<ChildStatus>,
    /// The end of the current back-off, if this node abstains.
    backoff_until: Mutex<Option<Instant>>,
    /// The command's treatment, as the last configuration loaded says.
    policy: Mutex<ChildPolicy>,
    /// When names are resolved again, as the last configuration loaded says.
    names: Mutex<NamesPolicy>,
    config: Mutex<ConfigStatus>,
    handover: Mutex<HandoverStatus>,
    /// `None` without a `[health]` table.
    health: Mutex<Option<HealthStatus>>,
}

impl View {
    /// A view of the node behind `handle`; `term` is the cell the persist
    /// callback raises ([`View::note_term`]).
    pub fn new(
        handle: Handle,
        book: Arc<Book>,
        term: Arc<AtomicU64>,
        policy: ChildPolicy,
        names: NamesPolicy,
        config: ConfigStatus,
    ) -> View {
        View {
            handle,
            book,
            term,
            child: Mutex::new(ChildStatus::default()),
            backoff_until: Mutex::new(None),
            policy: Mutex::new(policy),
            names: Mutex::new(names),
            config: Mutex::new(config),
            handover: Mutex::new(HandoverStatus::default()),
            health: Mutex::new(None),
        }
    }

    /// The command's treatment now.
    pub fn policy(&self) -> ChildPolicy {
        *lock(&self.policy)
    }

    /// When names are resolved again now.
    pub fn names(&self) -> NamesPolicy {
        *lock(&self.names)
    }

    /// A reload's new treatment of the command and of names (from the next run
    /// of the command, and the resolver's next turn).
    pub fn set_policies(&self, policy: ChildPolicy, names: NamesPolicy) {
        *lock(&self.policy) = policy;
        *lock(&self.names) = names;
    }

    /// Updates what the endpoint shows of the configuration.
    pub fn update_config(&self, change: impl FnOnce(&mut ConfigStatus)) {
        change(&mut lock(&self.config));
    }

    /// What the endpoint shows of the configuration.
    pub fn config(&self) -> ConfigStatus {
        lock(&self.config).clone()
    }

    /// Updates what the endpoint shows of hand-overs.
    pub fn update_handover(&self, change: impl FnOnce(&mut HandoverStatus)) {
        change(&mut lock(&self.handover));
    }

    /// Updates what the endpoint shows of the job's health checks (and says
    /// from then on that they are configured).
    pub fn update_health(&self, change: impl FnOnce(&mut HealthStatus)) {
        change(lock(&self.health).get_or_insert_with(HealthStatus::default));
    }

    /// A term the node persisted.
    pub fn note_term(term: &AtomicU64, value: u64) {
        term.fetch_max(value, Ordering::Relaxed);
    }

    /// Updates what the endpoint shows of the command.
    pub fn update_child(&self, change: impl FnOnce(&mut ChildStatus)) {
        let mut child = self
            .child
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        change(&mut child);
    }

    /// The command's status, with what is left of a back-off.
    pub fn child(&self) -> ChildStatus {
        let mut child = self
            .child
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .clone();
        child.backoff_ms = self.backoff_left().map(|left| {
            // Rounded up: 0 would read as no back-off.
            u64::try_from(left.as_millis()).unwrap_or(u64::MAX).max(1)
        });
        child
    }

    /// A back-off until `until` began.
    pub fn note_backoff(&self, until: Instant) {
        *self
            .backoff_until
            .lock()
            .unwrap_or_else(|poison| poison.into_inner()) = Some(until);
        self.update_child(|child| child.backoffs += 1);
    }

    /// What is left of the back-off, during one.
    pub fn backoff_left(&self) -> Option<std::time::Duration> {
        let until = (*self
            .backoff_until
            .lock()
            .unwrap_or_else(|poison| poison.into_inner()))?;
        until
            .checked_duration_since(Instant::now())
            .filter(|left| !left.is_zero())
    }

    /// The driver's counters.
    pub async fn stats(&self) -> Result<DriverStats, DriverError> {
        self.handle.stats().await
    }

    /// The whole status.
    pub async fn status(&self) -> Result<Status, DriverError> {
        let id = self.handle.id();
        let heard = self.handle.last_heard().await?;
        let leader = self.handle.leader();
        let working = self
            .handle
            .current_permit()
            .filter(|leadership| leadership.is_current());
        let role = match leader {
            Some(leader) if leader.id == id => "leader",
            Some(_) => "follower",
            None => "candidate",
        };
        let term = leader
            .map_or(0, |leader| leader.term.0)
            .max(self.term.load(Ordering::Relaxed));
        Ok(Status {
            node: id.0,
            role: role.to_owned(),
            leader: leader.map(|leader| leader.id.0),
            term,
            fencing_token: leader
                .filter(|leader| leader.id == id)
                .map(|leader| format_token(leader.token())),
            working: working.is_some(),
            eligible: self.backoff_left().is_none(),
            members: self
                .book
                .lock()
                .await
                .iter()
                .map(|(&member, entry)| MemberStatus {
                    id: member.0,
                    address: entry.address.to_string(),
                    resolved: entry.resolved.map(|address| address.to_string()),
                    pending: entry.pending,
                    last_heard_ms: heard
                        .get(&member)
                        .map(|age| u64::try_from(age.as_millis()).unwrap_or(u64::MAX)),
                })
                .collect(),
            child: self.child(),
            config: self.config(),
            handover: lock(&self.handover).clone(),
            health: lock(&self.health).clone(),
        })
    }
}

/// A mutex whose holder cannot leave it inconsistent (plain values): a
/// panicked holder's value is as good as any.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

/// Keeps the names of `view`'s book resolved until `stop`: see
/// [`crate::resolve`]. The `[names]` policy is read at every turn (a reload may change it).
pub async fn maintain_names(view: Arc<View>, resolver: Arc<dyn Resolve>, stop: CancellationToken) {
    let book = &view.book;
    let mut events = view.handle.events();
    loop {
        let turn = view.names();
        let all = tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(turn.retry) => false,
            () = book.woken() => true,
            event = events.recv() => match event {
                Ok(Event::LeaderLost { .. }) => true,
                Ok(_) => continue,
                // Missed events may have held a lost leader.
                Err(broadcast::error::RecvError::Lagged(_)) => true,
                Err(broadcast::error::RecvError::Closed) => return,
            },
        };
        book.refresh(&view.handle, &resolver, turn, all).await;
    }
}
