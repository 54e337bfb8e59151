//! The running node as the endpoint sees it: the driver's handle, and what the
//! run loop publishes about the term and the command.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bully_core::NodeId;
use bully_tokio::{DriverError, DriverStats, Handle};

use crate::status::{ChildStatus, MemberStatus, Status};
use crate::token::format_token;

/// Shared by the run loop, the persist callback and the endpoint.
#[derive(Debug)]
pub struct View {
    /// The driver.
    pub handle: Handle,
    members: Vec<(NodeId, SocketAddr)>,
    term: Arc<AtomicU64>,
    child: Mutex<ChildStatus>,
    /// The end of the current back-off, if this node abstains.
    backoff_until: Mutex<Option<Instant>>,
}

impl View {
    /// A view of the node behind `handle`; `term` is the cell the persist
    /// callback raises ([`View::note_term`]).
    pub fn new(handle: Handle, members: Vec<(NodeId, SocketAddr)>, term: Arc<AtomicU64>) -> View {
        View {
            handle,
            members,
            term,
            child: Mutex::new(ChildStatus::default()),
            backoff_until: Mutex::new(None),
        }
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
        let leader = *self.handle.leader().borrow();
        let working = self
            .handle
            .current_leadership()
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
                .members
                .iter()
                .filter(|&&(member, _)| member != id)
                .map(|&(member, address)| MemberStatus {
                    id: member.0,
                    address: address.to_string(),
                    last_heard_ms: heard
                        .get(&member)
                        .map(|age| u64::try_from(age.as_millis()).unwrap_or(u64::MAX)),
                })
                .collect(),
            child: self.child(),
        })
    }
}
