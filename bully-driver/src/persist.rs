//! The persist-before-send rule: [`Persister`] hands the node's
//! [`DurableState`] to the application whenever it changed, and the driver calls
//! it before it sends anything the new state promises.

use std::fmt;

use bully_core::{DurableState, Node};

/// What a driver's `spawn_persisting` calls with the node's durable state.
pub type Persist = Box<dyn FnMut(DurableState) + Send>;

/// Calls the application's [`Persist`] with each new [`DurableState`], once.
///
/// A term or a vote that a transmit carries must be on disk before the transmit
/// leaves: a node that restarts from an older state could otherwise promise
/// twice. So the driver calls [`before_send`](Persister::before_send) after
/// every input and before it drains `poll_transmit`.
pub struct Persister {
    persist: Option<Persist>,
    /// The state last handed to `persist`, or the node's at creation: that one
    /// is not handed over, as the application created the node with it.
    persisted: DurableState,
}

impl fmt::Debug for Persister {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Persister")
            .field("persisting", &self.persist.is_some())
            .field("persisted", &self.persisted)
            .finish()
    }
}

impl Persister {
    /// Persists `node`'s state changes with `persist` (none: nothing is kept).
    pub fn new(node: &Node, persist: Option<Persist>) -> Persister {
        Persister {
            persist,
            persisted: node.durable_state(),
        }
    }

    /// Hands `node`'s durable state to `persist` if it changed since last time;
    /// returns whether it did.
    pub fn before_send(&mut self, node: &Node) -> bool {
        let Some(persist) = &mut self.persist else {
            return false;
        };
        let state = node.durable_state();
        if state == self.persisted {
            return false;
        }
        persist(state);
        self.persisted = state;
        true
    }
}
