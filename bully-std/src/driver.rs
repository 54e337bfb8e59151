//! The driver thread: owns the `Node` (inside a [`DriverCore`]), waits on one
//! channel of [`Input`]s with the node's deadline as the timeout, and publishes
//! what the node says; and the receiver thread that feeds it.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bully_core::wire::Auth;
use bully_core::{CommandError, Event, Message, NodeId};
use bully_driver::{Change, DriverCore, DriverStats, Peers};

use crate::error::ChangeError;
use crate::events::Hub;
use crate::sync::{Arc, AtomicBool, AtomicU64, Ordering, back_off, mpsc};
use crate::transport::Transport;
use crate::watch::Publisher;

/// Everything that reaches the driver, through one channel, in one order: what
/// peers sent (from the receiver thread) and what the handle asks. Timer expiry is
/// the channel's receive timing out, so nothing can slip between a message, a
/// command and a deadline.
#[derive(Debug)]
pub(crate) enum Input {
    /// A member sent `message`.
    Message { from: NodeId, message: Message },
    /// `Handle::step_down`: the answer is whether the node was leader.
    StepDown { reply: mpsc::Sender<bool> },
    /// `Handle::work_stopped`.
    WorkStopped { reply: mpsc::Sender<()> },
    /// `Handle::abstain_for`: the answer is whether the node stepped down.
    AbstainFor {
        duration: Duration,
        reply: mpsc::Sender<bool>,
    },
    /// `Handle::hand_over`.
    HandOver {
        to: Option<NodeId>,
        abstain: Duration,
        reply: mpsc::Sender<Result<bool, CommandError>>,
    },
    /// `Handle::suspect`.
    Suspect {
        member: NodeId,
        reply: mpsc::Sender<Result<(), CommandError>>,
    },
    /// `Handle::stats`.
    Stats { reply: mpsc::Sender<DriverStats> },
    /// `Handle::last_heard`.
    LastHeard {
        reply: mpsc::Sender<BTreeMap<NodeId, Duration>>,
    },
    /// `Handle::add_member`, `remove_member`, `set_member_address`, `set_auth`.
    Change {
        change: Change,
        reply: mpsc::Sender<Result<(), ChangeError>>,
    },
    /// Step down if leading, send what that says, and stop.
    Shutdown,
    /// Stop at once, telling no one: to the others, a crash.
    Abort,
}

/// Where the driver waits, and its clock.
pub(crate) trait Inbox {
    /// The current time.
    fn now(&self) -> Instant;

    /// The next input, or `None` once `deadline` has passed with none. A closed
    /// channel reads as `Input::Shutdown`.
    fn recv_until(&mut self, deadline: Option<Instant>) -> Option<Input>;
}

/// The real inbox: `recv_timeout(deadline - now)` on the input channel, and the
/// system clock.
#[cfg(not(loom))]
pub(crate) struct ChannelInbox {
    pub(crate) inputs: mpsc::Receiver<Input>,
}

#[cfg(not(loom))]
impl Inbox for ChannelInbox {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn recv_until(&mut self, deadline: Option<Instant>) -> Option<Input> {
        let Some(deadline) = deadline else {
            return Some(self.inputs.recv().unwrap_or(Input::Shutdown));
        };
        let timeout = deadline.saturating_duration_since(Instant::now());
        match self.inputs.recv_timeout(timeout) {
            Ok(input) => Some(input),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => Some(Input::Shutdown),
        }
    }
}

/// The inbox under loom, which has neither real time nor `recv_timeout`: a deadline
/// "passes" when the driver finds the channel empty, at most `expiries` times per
/// model run (then it blocks for input), and the clock jumps to the deadline. Loom
/// explores every order of an expiry against the other threads' sends.
#[cfg(loom)]
pub(crate) struct ModelInbox {
    pub(crate) inputs: mpsc::Receiver<Input>,
    pub(crate) now: Instant,
    pub(crate) expiries: usize,
}

#[cfg(loom)]
impl Inbox for ModelInbox {
    fn now(&self) -> Instant {
        self.now
    }

    fn recv_until(&mut self, deadline: Option<Instant>) -> Option<Input> {
        if let Some(deadline) = deadline.filter(|_| self.expiries > 0) {
            return match self.inputs.try_recv() {
                Ok(input) => Some(input),
                Err(std::sync::mpsc::TryRecvError::Disconnected) => Some(Input::Shutdown),
                Err(std::sync::mpsc::TryRecvError::Empty) => {
                    self.expiries -= 1;
                    self.now = self.now.max(deadline);
                    None
                }
            };
        }
        Some(self.inputs.recv().unwrap_or(Input::Shutdown))
    }
}

/// The inbox `spawn` gives the driver.
#[cfg(not(loom))]
pub(crate) type DriverInbox = ChannelInbox;
/// The inbox `spawn` gives the driver.
#[cfg(loom)]
pub(crate) type DriverInbox = ModelInbox;

/// The driver thread's state: the node and what the driver keeps beside it, and
/// where its outputs go.
pub(crate) struct Driver<T> {
    pub(crate) core: DriverCore,
    pub(crate) transport: Arc<T>,
    pub(crate) leader: Publisher,
    pub(crate) hub: Arc<Hub>,
    pub(crate) recv_errors: Arc<AtomicU64>,
    /// The events of the current input, reused.
    pub(crate) batch: Vec<Event>,
}

/// The transport as the table of peers a [`Change`] reaches.
struct TransportPeers<'a, T>(&'a T);

impl<T: Transport> Peers for TransportPeers<'_, T> {
    type Error = io::Error;

    fn add_peer(&mut self, member: NodeId, address: SocketAddr) -> io::Result<()> {
        self.0.add_peer(member, address)
    }

    fn remove_peer(&mut self, member: NodeId) -> io::Result<()> {
        self.0.remove_peer(member)
    }

    fn set_peer_address(&mut self, member: NodeId, address: SocketAddr) -> io::Result<()> {
        self.0.set_peer_address(member, address)
    }

    fn set_auth(&mut self, auth: Auth) -> io::Result<()> {
        self.0.set_auth(auth)
    }
}

impl<T: Transport> Driver<T> {
    /// Starts the node and runs it until `Input::Shutdown` or `Input::Abort`;
    /// returns its final counters, and the inbox, so that the channel outlives the
    /// receiver thread (which may still send into it: that must not fail, and
    /// under loom a message sent into a dropped channel counts as leaked).
    pub(crate) fn run<I: Inbox>(mut self, mut inbox: I) -> (DriverStats, I) {
        // Whatever happens below, even a panic, subscribers are told nothing more
        // is coming (and dropping `self.leader` does the same for the watch).
        let _close = CloseOnDrop(self.hub.clone());
        self.core.start(inbox.now());
        self.flush();
        let mut armed = None;
        loop {
            let deadline = self.core.poll_timeout();
            if deadline != armed {
                if deadline.is_some() {
                    self.core.stats_mut().timer_resets += 1;
                }
                armed = deadline;
            }
            let input = inbox.recv_until(deadline);
            let now = inbox.now();
            self.core.woke();
            let mut reply = None;
            match input {
                None => {}
                Some(Input::Message { from, message }) => {
                    self.core.handle_message(now, from, message);
                }
                Some(Input::StepDown { reply: to }) => {
                    let stepped_down = self.core.node_mut().step_down(now);
                    reply = Some(Reply::StepDown(to, stepped_down));
                }
                Some(Input::WorkStopped { reply: to }) => {
                    self.core.node_mut().work_stopped(now);
                    reply = Some(Reply::WorkStopped(to));
                }
                Some(Input::AbstainFor {
                    duration,
                    reply: to,
                }) => {
                    let stepped_down = self.core.abstain_for(now, duration);
                    reply = Some(Reply::StepDown(to, stepped_down));
                }
                Some(Input::HandOver {
                    to: member,
                    abstain,
                    reply: to,
                }) => {
                    let result = self.core.hand_over(now, member, abstain);
                    reply = Some(Reply::HandOver(to, result));
                }
                Some(Input::Suspect { member, reply: to }) => {
                    let result = self.core.node_mut().suspect(now, member);
                    reply = Some(Reply::Suspect(to, result));
                }
                Some(Input::Stats { reply: to }) => reply = Some(Reply::Stats(to)),
                Some(Input::LastHeard { reply: to }) => reply = Some(Reply::LastHeard(to)),
                Some(Input::Change { change, reply: to }) => {
                    let peers = &mut TransportPeers(&*self.transport);
                    reply = Some(Reply::Change(to, self.core.change(now, peers, change)));
                }
                Some(Input::Shutdown) => {
                    // Graceful: a leader tells the others (Resign) so they elect at
                    // once instead of waiting out the leader timeout; with a
                    // resign delay, only if its work was said to have stopped
                    // (`Handle::work_stopped`).
                    self.core.node_mut().step_down(now);
                    self.flush();
                    return (self.stats(), inbox);
                }
                Some(Input::Abort) => return (self.stats(), inbox),
            }
            // Timers are due by the clock, not only when the wait timed out: a
            // steady stream of messages must not starve them.
            self.core.handle_timeout(now);
            self.flush();
            // Reply last, so that a caller of `step_down` sees its effect published.
            match reply {
                None => {}
                Some(Reply::StepDown(to, stepped_down)) => {
                    let _ = to.send(stepped_down);
                }
                Some(Reply::WorkStopped(to)) => {
                    let _ = to.send(());
                }
                Some(Reply::HandOver(to, result)) => {
                    let _ = to.send(result);
                }
                Some(Reply::Suspect(to, result)) => {
                    let _ = to.send(result);
                }
                Some(Reply::Stats(to)) => {
                    let _ = to.send(self.stats());
                }
                Some(Reply::LastHeard(to)) => {
                    let _ = to.send(self.core.last_heard(now));
                }
                Some(Reply::Change(to, result)) => {
                    let _ = to.send(result);
                }
            }
        }
    }

    /// The rule: the node's permit first (work that must stop is told before
    /// anything else happens), durable state (before any message that depends on
    /// it), then transmits, then events (the leader before them), then the
    /// timeout, which the loop reads.
    fn flush(&mut self) {
        let leader = &mut self.leader;
        self.core
            .before_send(|change| leader.publish_permit(change));
        while let Some(transmit) = self.core.poll_transmit() {
            let sent = self.transport.send(transmit.to, &transmit.message);
            self.core.sent(sent.is_ok());
        }
        while let Some(event) = self.core.poll_event() {
            self.batch.push(event);
        }
        // Publish the leader first: a reader that got an event never reads an
        // older leader than that event's.
        self.leader.publish(self.core.leader());
        self.hub.publish(&self.batch);
        self.batch.clear();
    }

    fn stats(&self) -> DriverStats {
        let mut stats = self.core.stats();
        stats.recv_errors = self.recv_errors.load(Ordering::Relaxed);
        stats.transport_dropped = self.transport.dropped();
        stats.wire = self.transport.wire_stats();
        stats
    }
}

/// A reply owed to the handle once the input's outputs are flushed.
enum Reply {
    StepDown(mpsc::Sender<bool>, bool),
    WorkStopped(mpsc::Sender<()>),
    HandOver(
        mpsc::Sender<Result<bool, CommandError>>,
        Result<bool, CommandError>,
    ),
    Suspect(
        mpsc::Sender<Result<(), CommandError>>,
        Result<(), CommandError>,
    ),
    Stats(mpsc::Sender<DriverStats>),
    LastHeard(mpsc::Sender<BTreeMap<NodeId, Duration>>),
    Change(
        mpsc::Sender<Result<(), ChangeError>>,
        Result<(), ChangeError>,
    ),
}

struct CloseOnDrop(Arc<Hub>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// The receiver thread: forwards what the transport receives into the driver's
/// channel, and checks for shutdown between receives.
pub(crate) fn receive<T: Transport>(
    transport: Arc<T>,
    inputs: mpsc::Sender<Input>,
    stop: Arc<AtomicBool>,
    recv_errors: Arc<AtomicU64>,
    poll_interval: Duration,
) {
    while !stop.load(Ordering::Acquire) {
        match transport.recv(poll_interval) {
            Ok(Some((from, message))) => {
                if inputs.send(Input::Message { from, message }).is_err() {
                    // The driver is gone.
                    return;
                }
            }
            Ok(None) => {}
            Err(_) => {
                recv_errors.fetch_add(1, Ordering::Relaxed);
                back_off(poll_interval);
            }
        }
    }
}
