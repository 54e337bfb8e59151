//! [`Handle`]: the application's side of a running driver task.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use bully_core::wire::Auth;
use bully_core::{CommandError, Event, Leader, NodeId};
use bully_driver::{Change, DriverStats};
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use crate::driver::Command;
use crate::error::{ChangeError, DriverError};
use crate::permit::Permit;

/// The application's side of a running node.
///
/// Dropping the handle stops the task as [`shutdown`](Handle::shutdown) does (a
/// leader resigns first), without waiting for it.
///
/// ```
/// use std::time::Duration;
/// use bully_core::{Config, Node, NodeId};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let members = [NodeId(1), NodeId(2)];
/// let network = bully_tokio::MemNetwork::new();
/// let one = bully_tokio::spawn(Node::new(NodeId(1), members, Config::default())?, network.endpoint(NodeId(1)));
/// let two = bully_tokio::spawn(Node::new(NodeId(2), members, Config::default())?, network.endpoint(NodeId(2)));
/// // Who leads, as this node knows it.
/// assert_eq!(one.wait_for_leader(Duration::from_secs(5)).await?.id, NodeId(2));
/// // The leader's permit to work, with its fencing token.
/// let permit = two.permit(Duration::from_secs(5)).await?;
/// assert_eq!(permit.token().leader, NodeId(2));
/// // 2 leaves gracefully (a leader resigns first); 1 is elected in a newer term.
/// two.shutdown().await?;
/// let next = one.permit(Duration::from_secs(5)).await?;
/// assert!(next.token() > permit.token());
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Handle {
    pub(crate) id: NodeId,
    pub(crate) commands: mpsc::Sender<Command>,
    pub(crate) leader: watch::Receiver<Option<Leader>>,
    pub(crate) leadership: watch::Receiver<Option<Permit>>,
    pub(crate) events: broadcast::Receiver<Event>,
    pub(crate) task: JoinHandle<DriverStats>,
}

impl Handle {
    /// The node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The leader this node has accepted, if any (on the leader, itself). `None`
    /// while an election runs, and after the task has stopped.
    pub fn leader(&self) -> Option<Leader> {
        *self.leader.borrow()
    }

    /// The leader as a watch, for waiting on changes: read it with `borrow()`,
    /// wait for the next change with `changed().await`, or for a condition with
    /// `wait_for`. `None` while an election runs, and after the task has stopped.
    pub fn leader_watch(&self) -> watch::Receiver<Option<Leader>> {
        self.leader.clone()
    }

    /// Waits until the node has a leader, at most `timeout`, and returns it.
    ///
    /// Errors with [`DriverError::Timeout`], or [`DriverError::Stopped`] if the
    /// task stops first.
    ///
    /// ```
    /// use std::time::Duration;
    /// use bully_core::{Config, Node, NodeId};
    /// use bully_tokio::MemNetwork;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let node = Node::new(NodeId(1), [NodeId(1)], Config::default())?;
    /// let handle = bully_tokio::spawn(node, MemNetwork::new().endpoint(NodeId(1)));
    /// let leader = handle.wait_for_leader(Duration::from_secs(1)).await?;
    /// assert_eq!(leader.id, NodeId(1));
    /// # Ok(()) }
    /// ```
    pub async fn wait_for_leader(&self, timeout: Duration) -> Result<Leader, DriverError> {
        let mut leader = self.leader.clone();
        let wait = leader.wait_for(Option::is_some);
        match tokio::time::timeout(timeout, wait).await {
            Ok(Ok(leader)) => (*leader).ok_or(DriverError::Stopped),
            Ok(Err(_)) => Err(DriverError::Stopped),
            Err(_) => Err(DriverError::Timeout),
        }
    }

    /// Waits until this node leads, at most `timeout` (`Duration::MAX`: for as
    /// long as it takes), and returns that [`Permit`]: its fencing token, and
    /// the signal that says when work tied to it must stop (see [`Permit`]
    /// for when it fires, with and without a quorum).
    ///
    /// Errors with [`DriverError::Timeout`], or [`DriverError::Stopped`] if the
    /// task stops first.
    ///
    /// ```
    /// use std::time::Duration;
    /// use bully_core::{Config, Node, NodeId, Quorum};
    /// use bully_tokio::MemNetwork;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = Config::default().with_quorum(Quorum::Majority);
    /// let node = Node::new(NodeId(1), [NodeId(1)], config)?;
    /// let handle = bully_tokio::spawn(node, MemNetwork::new().endpoint(NodeId(1)));
    ///
    /// let permit = handle.permit(Duration::from_secs(5)).await?;
    /// assert_eq!(permit.token().leader, NodeId(1));
    /// assert!(permit.is_current());
    /// handle.step_down().await?;
    /// permit.ended().await; // fired by the step-down
    /// assert!(!permit.is_current());
    /// # Ok(()) }
    /// ```
    pub async fn permit(&self, timeout: Duration) -> Result<Permit, DriverError> {
        match tokio::time::timeout(timeout, next_permit(self.leadership.clone())).await {
            Ok(leadership) => leadership,
            Err(_) => Err(DriverError::Timeout),
        }
    }

    /// This node's current [`Permit`], without waiting: `None` unless it
    /// leads and, with a quorum, its lease has more than the margin left.
    pub fn current_permit(&self) -> Option<Permit> {
        self.leadership
            .borrow()
            .as_ref()
            .filter(|leadership| leadership.is_current())
            .cloned()
    }

    /// Runs `work` in each leadership of this node, client-go's loop: waits until
    /// the node leads, runs `work(permit)`, cancels it (drops its future) as
    /// soon as the leadership's signal fires, then waits for the next leadership
    /// and runs `work` again. Work that finishes early is not restarted within the
    /// same permit. Completes when the task stops.
    ///
    /// With a quorum, the work of one leadership is cancelled before any other
    /// member can be elected, so the work of two leaderships never overlaps in
    /// time (given the clock drift bound of the config). Without a quorum the
    /// signal follows this node's belief only, and a partitioned old leader keeps
    /// working while the other side elects: their work overlaps.
    ///
    /// The returned future does not borrow the handle: spawn it, and
    /// [`shutdown`](Handle::shutdown) ends it.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use bully_core::{Config, Node, NodeId, Quorum};
    /// use bully_tokio::MemNetwork;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = Config::default().with_quorum(Quorum::Majority);
    /// let node = Node::new(NodeId(1), [NodeId(1)], config)?;
    /// let handle = bully_tokio::spawn(node, MemNetwork::new().endpoint(NodeId(1)));
    ///
    /// let started = Arc::new(Mutex::new(Vec::new()));
    /// let log = started.clone();
    /// let work = tokio::spawn(handle.run_while_leader(move |permit| {
    ///     log.lock().unwrap().push(permit.token());
    ///     async move {
    ///         // The job, e.g. a loop of writes fenced with permit.token().
    ///         std::future::pending::<()>().await
    ///     }
    /// }));
    /// handle.permit(std::time::Duration::MAX).await?;
    /// tokio::task::yield_now().await;
    /// handle.shutdown().await?; // ends the leadership, then the loop
    /// work.await?;
    /// assert_eq!(started.lock().unwrap().len(), 1);
    /// # Ok(()) }
    /// ```
    pub fn run_while_leader<F, Fut>(&self, mut work: F) -> impl Future<Output = ()> + use<F, Fut>
    where
        F: FnMut(Permit) -> Fut,
        Fut: Future<Output = ()>,
    {
        let leaderships = self.leadership.clone();
        async move {
            while let Ok(leadership) = next_permit(leaderships.clone()).await {
                let ended = leadership.cancellation_token();
                let job = work(leadership);
                tokio::select! {
                    biased;
                    () = ended.cancelled() => {}
                    () = job => ended.cancelled().await,
                }
            }
        }
    }

    /// Adds `member` to the cluster at runtime, reachable at `address`: the
    /// transport learns it first ([`Transport::add_peer`](crate::Transport::add_peer)), then the node
    /// ([`Node::add_member`](bully_core::Node::add_member), whose caveats apply: every member must make the
    /// same change, one at a time, while the cluster is stable).
    ///
    /// ```
    /// use bully_core::{Config, Node, NodeId};
    /// use bully_tokio::MemNetwork;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let network = MemNetwork::new();
    /// let node = Node::new(NodeId(1), [NodeId(1)], Config::default())?;
    /// let handle = bully_tokio::spawn(node, network.endpoint(NodeId(1)));
    /// handle.add_member(NodeId(2), "127.0.0.1:7002".parse()?).await?;
    /// handle.remove_member(NodeId(2)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn add_member(&self, member: NodeId, address: SocketAddr) -> Result<(), ChangeError> {
        self.change(Change::AddMember { member, address }).await
    }

    /// Removes `member` from the cluster at runtime: the node first (it sends the
    /// member nothing more, [`Node::remove_member`](bully_core::Node::remove_member)), then the transport, which
    /// refuses the member's frames from then on ([`Transport::remove_peer`](crate::Transport::remove_peer)).
    /// Nothing changes if the node refuses.
    pub async fn remove_member(&self, member: NodeId) -> Result<(), ChangeError> {
        self.change(Change::RemoveMember(member)).await
    }

    /// Sends to `member`, a member other than this node, at `address` from now
    /// on ([`Transport::set_peer_address`](crate::Transport::set_peer_address)): it moved (a host name that now
    /// resolves elsewhere, a rescheduled pod), or its address was unknown until
    /// now (a transport built without one for it). The node is not told: the
    /// membership, and everything the node knows about the member, stay as
    /// they are.
    ///
    /// ```
    /// use bully_core::{Config, Node, NodeId};
    /// use bully_tokio::MemNetwork;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let network = MemNetwork::new();
    /// let node = Node::new(NodeId(1), [NodeId(1), NodeId(2)], Config::default())?;
    /// let handle = bully_tokio::spawn(node, network.endpoint(NodeId(1)));
    /// handle.set_member_address(NodeId(2), "127.0.0.1:7102".parse()?).await?;
    /// // Not a member: refused.
    /// assert!(handle.set_member_address(NodeId(3), "127.0.0.1:7103".parse()?).await.is_err());
    /// # Ok(()) }
    /// ```
    pub async fn set_member_address(
        &self,
        member: NodeId,
        address: SocketAddr,
    ) -> Result<(), ChangeError> {
        self.change(Change::SetMemberAddress { member, address })
            .await
    }

    /// Replaces the transport's keys without a restart, one step of a rotation
    /// (see [`Auth`] for the three steps): the replay windows and sequence
    /// numbers are kept.
    ///
    /// ```no_run
    /// use bully_core::wire::{Auth, Key, KeyId};
    /// # async fn rotate(handle: &bully_tokio::Handle, old: Key, new: Key) -> Result<(), bully_tokio::ChangeError> {
    /// // Step 1 on every member, then step 2 on every member, then step 3.
    /// handle.set_auth(Auth::Hmac { current: old, previous: Some(new.clone()) }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_auth(&self, auth: Auth) -> Result<(), ChangeError> {
        self.change(Change::SetAuth(Box::new(auth))).await
    }

    /// Every [`Event`] from now on, in order. A subscriber that falls more than
    /// [`Builder::event_capacity`](crate::Builder::event_capacity) events behind
    /// skips the oldest (`RecvError::Lagged`).
    pub fn events(&self) -> broadcast::Receiver<Event> {
        self.events.resubscribe()
    }

    /// Gives up the leadership ([`Node::step_down`](bully_core::Node::step_down)): the others elect at once.
    /// Returns `false` if this node was not the leader.
    pub async fn step_down(&self) -> Result<bool, DriverError> {
        let (reply, answer) = oneshot::channel();
        self.request(Command::StepDown(reply), answer).await
    }

    /// Tells the node that the work of its last leadership has stopped
    /// ([`Node::work_stopped`](bully_core::Node::work_stopped)). With a resign delay
    /// ([`Config::with_resign_delay`](bully_core::Config::with_resign_delay)) a
    /// step-down is told to the members, and a deferred vote cast, only once the
    /// delay ends or this is called: call it when the work has stopped, before
    /// [`shutdown`](Handle::shutdown) too, so that the others take over at once.
    pub async fn work_stopped(&self) -> Result<(), DriverError> {
        let (reply, answer) = oneshot::channel();
        self.request(Command::WorkStopped(reply), answer).await
    }

    /// Makes the node abstain from leading for `duration` from now
    /// ([`Node::abstain_until`](bully_core::Node::abstain_until)): a leader steps down, and until then the node
    /// neither stands nor takes over; afterwards it stands again as the
    /// preemption policy says. A zero `duration` ends an abstention. Returns
    /// whether the node stepped down.
    pub async fn abstain_for(&self, duration: Duration) -> Result<bool, DriverError> {
        let (reply, answer) = oneshot::channel();
        self.request(Command::AbstainFor(duration, reply), answer)
            .await
    }

    /// A planned hand-over ([`Node::hand_over`](bully_core::Node::hand_over)):
    /// a leader steps down, its `Resign` names `to` (or, with `None`, the
    /// next highest member), which elects at once rather than after a leader
    /// timeout, and it abstains for `abstain` so that it does not take the
    /// leadership back. The permit ends first, as for any step-down: work
    /// under [`run_while_leader`](Self::run_while_leader) is cancelled.
    /// `Ok(Ok(false))` when this node does not lead; `Ok(Err(..))` when the
    /// node refuses the member named (itself, a stranger, an observer, one
    /// a live member above it would beat, or one that is not live:
    /// `CommandError::NotLive`), or, with `None`, when no other member that
    /// may lead is live (`CommandError::NoSuccessor`).
    pub async fn hand_over(
        &self,
        to: Option<NodeId>,
        abstain: Duration,
    ) -> Result<Result<bool, CommandError>, DriverError> {
        let (reply, answer) = oneshot::channel();
        self.request(Command::HandOver(to, abstain, reply), answer)
            .await
    }

    /// Tells the node that an external failure detector believes `member` has
    /// failed ([`Node::suspect`](bully_core::Node::suspect)).
    pub async fn suspect(&self, member: NodeId) -> Result<Result<(), CommandError>, DriverError> {
        let (reply, answer) = oneshot::channel();
        self.request(Command::Suspect(member, reply), answer).await
    }

    /// The driver's and the node's counters, and the node's role, term and leader.
    pub async fn stats(&self) -> Result<DriverStats, DriverError> {
        let (reply, answer) = oneshot::channel();
        self.request(Command::Stats(reply), answer).await
    }

    /// How long ago this node last received a message from each member it has
    /// heard from since it started (members never heard from are absent): what a
    /// status page shows as "the members it hears".
    ///
    /// ```
    /// use bully_core::{Config, Node, NodeId};
    /// use bully_tokio::MemNetwork;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let network = MemNetwork::new();
    /// let members = [NodeId(1), NodeId(2)];
    /// let one = bully_tokio::spawn(Node::new(NodeId(1), members, Config::default())?, network.endpoint(NodeId(1)));
    /// let two = bully_tokio::spawn(Node::new(NodeId(2), members, Config::default())?, network.endpoint(NodeId(2)));
    /// one.wait_for_leader(std::time::Duration::from_secs(5)).await?;
    /// let heard = one.last_heard().await?;
    /// assert!(heard.contains_key(&NodeId(2)) && !heard.contains_key(&NodeId(1)));
    /// # drop(two); Ok(()) }
    /// ```
    pub async fn last_heard(&self) -> Result<BTreeMap<NodeId, Duration>, DriverError> {
        let (reply, answer) = oneshot::channel();
        self.request(Command::LastHeard(reply), answer).await
    }

    /// Stops the task gracefully and waits for it: a leader resigns first
    /// (`Message::Resign` to every member, sent before the task ends), so the next
    /// leader is elected at once rather than after the leader timeout. Returns the
    /// final counters.
    pub async fn shutdown(self) -> Result<DriverStats, DriverError> {
        // If the task is gone already, joining it says how it ended.
        let _ = self.commands.send(Command::Shutdown).await;
        join(self.task).await
    }

    /// Stops the task at once, without telling anyone: to the other members this
    /// looks exactly like a crash. Returns when the task, and with it the
    /// transport (its socket), is gone. For tests, demos and benchmarks.
    pub async fn abort(self) {
        self.task.abort();
        let _ = self.task.await;
    }

    /// Whether the task has ended.
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Asks the task to carry out `change`, and waits for its answer.
    async fn change(&self, change: Change) -> Result<(), ChangeError> {
        let (reply, answer) = oneshot::channel();
        self.request(Command::Change(change, reply), answer).await?
    }

    async fn request<R>(
        &self,
        command: Command,
        answer: oneshot::Receiver<R>,
    ) -> Result<R, DriverError> {
        self.commands
            .send(command)
            .await
            .map_err(|_| DriverError::Stopped)?;
        answer.await.map_err(|_| DriverError::Stopped)
    }
}

/// The next current leadership published on `leaderships`.
async fn next_permit(
    mut leaderships: watch::Receiver<Option<Permit>>,
) -> Result<Permit, DriverError> {
    let current = leaderships
        .wait_for(|leadership| leadership.as_ref().is_some_and(Permit::is_current))
        .await
        .map_err(|_| DriverError::Stopped)?;
    current.clone().ok_or(DriverError::Stopped)
}

async fn join(task: JoinHandle<DriverStats>) -> Result<DriverStats, DriverError> {
    match task.await {
        Ok(stats) => Ok(stats),
        Err(error) if error.is_panic() => Err(DriverError::Panicked),
        Err(_) => Err(DriverError::Stopped),
    }
}
