//! The running node as the endpoint sees it: the driver's handle, and what the
//! run loop publishes about the term and the command.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

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
    /// The last leader other than this node that this node accepted.
    previous_leader: Arc<Mutex<Option<NodeId>>>,
}

impl View {
    /// A view of the node behind `handle`; `term` is the cell the persist
    /// callback raises ([`View::note_term`]).
    pub fn new(handle: Handle, members: Vec<(NodeId, SocketAddr)>, term: Arc<AtomicU64>) -> View {
        let previous_leader = Arc::new(Mutex::new(None));
        let mut leaders = handle.leader();
        let id = handle.id();
        let track = previous_leader.clone();
        // Ends when the driver does (the watch closes).
        tokio::spawn(async move {
            while leaders.changed().await.is_ok() {
                let leader = *leaders.borrow_and_update();
                if let Some(leader) = leader.filter(|leader| leader.id != id) {
                    *track.lock().unwrap_or_else(|poison| poison.into_inner()) = Some(leader.id);
                }
            }
        });
        View {
            handle,
            members,
            term,
            child: Mutex::new(ChildStatus::default()),
            previous_leader,
        }
    }

    /// The last leader other than this node that this node accepted.
    pub fn previous_leader(&self) -> Option<NodeId> {
        *self
            .previous_leader
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
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

    /// The command's status.
    pub fn child(&self) -> ChildStatus {
        self.child
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .clone()
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
