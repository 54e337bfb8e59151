//! Model checks of the driver's concurrency with loom: every interleaving of the
//! driver, the receiver thread, the application's threads and the shutdown.
//!
//! Run with (only this test, in release mode, it explores many executions):
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" cargo test -p bully-std --release --test loom
//! ```
//!
//! Under `--cfg loom` the crate's `sync` module swaps std's mutexes, condition
//! variables, atomics and threads for loom's (and its channel for one built on
//! them), so these run the real driver loop, `Handle`, `LeaderWatch` and
//! `Events`. Loom has no clock and no `recv_timeout`: the driver's deadline
//! "passes" when it finds its channel empty, a bounded number of times per
//! execution (`model_timer_expiries`), and its clock jumps to the deadline. The
//! transport here is a queue of messages that are already on their way.
//!
//! Each model prints how many interleavings it explored (`-- --nocapture`) and
//! how often each outcome it is about occurred, and fails if one never did.
#![cfg(loom)]

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bully_core::{
    Config, Event, FencingToken, Leader, Message, MessageKind, Node, NodeId, Role, Term, Transmit,
};
use bully_std::{Builder, DriverError, Events, RecvError, Transport};
use std::sync::Mutex;

/// A transport whose inbound messages are already queued, and which records what
/// the driver sends. An empty receive yields, as a real `recv` would block for
/// its timeout, so loom lets the other threads run.
///
/// Its mutexes are std's on purpose: each is used by one model thread at a time
/// (the receiver thread reads `inbound`; the driver writes `sent`, read after the
/// join), so making them loom's would only multiply the interleavings.
struct Wire {
    inbound: Mutex<VecDeque<(NodeId, Message)>>,
    sent: Mutex<Vec<Transmit>>,
}

impl Wire {
    fn new(inbound: impl IntoIterator<Item = (NodeId, Message)>) -> std::sync::Arc<Wire> {
        std::sync::Arc::new(Wire {
            inbound: Mutex::new(inbound.into_iter().collect()),
            sent: Mutex::new(Vec::new()),
        })
    }

    fn sent(&self) -> Vec<Transmit> {
        self.sent.lock().unwrap().clone()
    }
}

impl Transport for Wire {
    fn send(&self, to: NodeId, message: &Message) -> io::Result<()> {
        self.sent.lock().unwrap().push(Transmit {
            to,
            message: message.clone(),
        });
        Ok(())
    }

    fn recv(&self, _timeout: Duration) -> io::Result<Option<(NodeId, Message)>> {
        let next = self.inbound.lock().unwrap().pop_front();
        if next.is_none() {
            loom::thread::yield_now();
        }
        Ok(next)
    }
}

fn node(id: u64, members: &[u64]) -> Node {
    Node::new(
        NodeId(id),
        members.iter().map(|&m| NodeId(m)),
        // It elects as soon as it starts: the models count timer expiries from
        // there (the staggered start would add one to every model).
        Config::default().with_staggered_start(false),
    )
    .unwrap()
}

fn coordinator(term: u64) -> Message {
    Message::Coordinator {
        term: Term(term),
        round: 0,
    }
}

/// Every event left in a subscription, until the driver's close.
fn drain(events: &Events) -> Vec<Event> {
    let mut all = Vec::new();
    loop {
        match events.recv() {
            Ok(event) => all.push(event),
            Err(RecvError::Closed) => return all,
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
}

/// The leader a node has after these events, as its events tell it.
fn leader_after(events: &[Event]) -> Option<Leader> {
    events.iter().fold(None, |leader, event| match *event {
        Event::LeaderElected { leader, term } => Some(Leader { id: leader, term }),
        Event::LeaderLost { .. } | Event::SteppedDown { .. } => None,
        _ => leader,
    })
}

fn count(events: &[Event], kind: fn(&Event) -> bool) -> u64 {
    events.iter().filter(|event| kind(event)).count() as u64
}

/// Counts the executions loom explores, across the whole test binary.
static EXECUTIONS: AtomicUsize = AtomicUsize::new(0);

/// Runs `f` under loom with at most `bound` forced thread switches per execution
/// (`None`: exhaustive; `LOOM_MAX_PREEMPTIONS` overrides). Bounds of 2 or 3 are
/// the usual practice (bugs that need more are rare); the models with an extra
/// application thread need one, or the receiver thread's polling makes the
/// search take hours.
fn model(name: &str, bound: Option<usize>, f: impl Fn() + Sync + Send + 'static) {
    let before = EXECUTIONS.load(Ordering::Relaxed);
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = builder.preemption_bound.or(bound);
    let bound = builder.preemption_bound;
    builder.check(move || {
        EXECUTIONS.fetch_add(1, Ordering::Relaxed);
        f();
    });
    let explored = EXECUTIONS.load(Ordering::Relaxed) - before;
    let bound = bound.map_or("none".to_string(), |b| b.to_string());
    println!("loom: {name}: {explored} interleavings explored (preemption bound: {bound})");
}

/// How often an outcome happened across a model's executions (or reads), to show
/// that the interleavings the test is about were explored: the checks are not
/// vacuous. (Publishing the leader after the events instead of before fails
/// `leader_publication_is_never_stale_after_its_event` within seconds.)
#[derive(Default)]
struct Outcomes(Vec<(&'static str, AtomicUsize)>);

impl Outcomes {
    fn new(names: &[&'static str]) -> Outcomes {
        Outcomes(names.iter().map(|&n| (n, AtomicUsize::new(0))).collect())
    }

    fn saw(&self, name: &str) {
        let (_, count) = self.0.iter().find(|(n, _)| *n == name).unwrap();
        count.fetch_add(1, Ordering::Relaxed);
    }

    fn assert_all_seen(&self) {
        for (name, count) in &self.0 {
            let count = count.load(Ordering::Relaxed);
            println!("  {count:>7}  {name}");
            assert!(count > 0, "no execution where {name}");
        }
    }
}

/// Node 2 of {1, 2, 3} boots and calls an election; node 3's Coordinator is on
/// its way; its answer timer may expire first (then it leads, and yields to 3
/// when the Coordinator comes); and the application shuts it down at any point
/// of that. In every interleaving: the shutdown joins both threads, the events
/// read after it are exactly the ones the node counted (none lost, the last one
/// included), the final leader agrees with them and with the watch, and if the
/// node was leading when told to stop, it resigned to both peers.
#[test]
fn shutdown_races_a_message_and_a_timer_expiry() {
    static OUTCOMES: std::sync::LazyLock<Outcomes> = std::sync::LazyLock::new(|| {
        Outcomes::new(&[
            "the shutdown came before the message was processed",
            "node 3 was accepted as leader",
            "the answer timer expired and node 2 led",
            "node 2 was leading at the shutdown and resigned",
        ])
    });
    model("shutdown vs message vs timer", None, || {
        let wire = Wire::new([(NodeId(3), coordinator(1))]);
        let handle = Builder::new()
            .model_timer_expiries(1)
            .spawn(node(2, &[1, 2, 3]), wire.clone())
            .unwrap();
        let events = handle.events();
        let watch = handle.leader_watch();

        let status = handle.shutdown().expect("both threads join");

        let events = drain(&events);
        assert_ne!(status.role, Role::Leader, "a stopped node does not lead");
        assert_eq!(
            count(&events, |e| matches!(e, Event::ElectionStarted { .. })),
            status.node.elections_started
        );
        assert_eq!(
            count(&events, |e| matches!(e, Event::LeaderElected { .. })),
            status.node.leaders_seen
        );
        assert_eq!(
            count(&events, |e| matches!(e, Event::BecameLeader { .. })),
            status.node.times_leader
        );
        assert_eq!(leader_after(&events), status.leader);
        assert_eq!(watch.get(), status.leader, "the watch has the last word");
        assert!(watch.is_stopped());
        assert_eq!(
            watch.wait_for_leader(Duration::from_secs(1)).is_err(),
            status.leader.is_none()
        );

        let sent = wire.sent();
        let resigns = status.node.sent[MessageKind::Resign];
        if resigns > 0 {
            // Only the shutdown resigns here, and it is the node's last word.
            assert_eq!(resigns, 2);
            assert!(matches!(events.last(), Some(Event::SteppedDown { .. })));
            assert!(
                sent[sent.len() - 2..]
                    .iter()
                    .all(|t| matches!(t.message, Message::Resign { .. }))
            );
        }
        assert_eq!(sent.len() as u64, status.node.sent.total());

        if status.node.received.total() == 0 {
            OUTCOMES.saw("the shutdown came before the message was processed");
        }
        if status.leader.is_some_and(|l| l.id == NodeId(3)) {
            OUTCOMES.saw("node 3 was accepted as leader");
        }
        if status.node.times_leader > 0 {
            OUTCOMES.saw("the answer timer expired and node 2 led");
        }
        if resigns > 0 {
            OUTCOMES.saw("node 2 was leading at the shutdown and resigned");
        }
    });
    OUTCOMES.assert_all_seen();
}

/// Node 1 of {1, 2} boots; node 2's Coordinator is on its way and node 1's answer
/// timer may expire first (node 1 leads briefly, then yields to 2). A reader
/// thread follows the events and reads the watch after each one; the
/// application shuts the node down concurrently. Every value the reader saw is a
/// state the events passed through (never torn), at or after the event it had
/// just received (never stale).
#[test]
fn leader_publication_is_never_stale_after_its_event() {
    static OUTCOMES: std::sync::LazyLock<Outcomes> = std::sync::LazyLock::new(|| {
        Outcomes::new(&[
            "reads: exactly the state after the event just received",
            "reads: a state newer than the event just received",
            "node 1 led, then yielded to node 2",
        ])
    });
    model("leader publication vs reader", Some(3), || {
        let wire = Wire::new([(NodeId(2), coordinator(1))]);
        let handle = Builder::new()
            .model_timer_expiries(1)
            .spawn(node(1, &[1, 2]), wire)
            .unwrap();
        let events = handle.events();
        let watch = handle.leader_watch();

        let reader = loom::thread::spawn(move || {
            let mut seen = Vec::new();
            let mut observations = Vec::new();
            loop {
                match events.recv() {
                    Ok(event) => {
                        seen.push(event);
                        observations.push((seen.len(), watch.get()));
                    }
                    Err(RecvError::Closed) => return (seen, observations),
                    Err(other) => panic!("unexpected {other:?}"),
                }
            }
        });

        let status = handle.shutdown().expect("both threads join");
        let (events, observations) = reader.join().unwrap();

        assert_eq!(leader_after(&events), status.leader);
        for (read, value) in observations {
            // Some state after `read` events (`read..=len`) had this value.
            let possible: Vec<_> = (read..=events.len())
                .map(|n| leader_after(&events[..n]))
                .collect();
            assert!(
                possible.contains(&value),
                "after event {read} of {events:?} the watch said {value:?}"
            );
            if value == possible[0] {
                OUTCOMES.saw("reads: exactly the state after the event just received");
            } else {
                OUTCOMES.saw("reads: a state newer than the event just received");
            }
        }
        // Tokens only ever went up here: the check above is not vacuous.
        let tokens: Vec<FencingToken> = events
            .iter()
            .filter_map(|e| match *e {
                Event::LeaderElected { leader, term } => Some(FencingToken { term, leader }),
                _ => None,
            })
            .collect();
        assert!(tokens.windows(2).all(|w| w[0] < w[1]));
        if tokens.len() == 2 {
            OUTCOMES.saw("node 1 led, then yielded to node 2");
        }
    });
    OUTCOMES.assert_all_seen();
}

/// A thread blocked in `wait_for_leader` (loom's waits have no timeout, so only a
/// notification wakes it) is woken either by a leader or by the shutdown, never
/// left hanging: node 1 of {1, 2} hears nothing and may or may not get to elect
/// itself before it is shut down (and steps down).
#[test]
fn a_waiter_is_woken_by_a_leader_or_by_the_shutdown() {
    static OUTCOMES: std::sync::LazyLock<Outcomes> = std::sync::LazyLock::new(|| {
        Outcomes::new(&["woken by the leader", "woken by the shutdown"])
    });
    model("wait_for_leader vs shutdown", Some(3), || {
        let wire = Wire::new([]);
        let handle = Builder::new()
            .model_timer_expiries(1)
            .spawn(node(1, &[1, 2]), wire)
            .unwrap();
        let watch = handle.leader_watch();
        let waiter = loom::thread::spawn(move || watch.wait_for_leader(Duration::from_secs(60)));

        let status = handle.shutdown().expect("both threads join");

        match waiter.join().unwrap() {
            Ok(leader) => {
                assert_eq!(leader.id, NodeId(1));
                OUTCOMES.saw("woken by the leader");
            }
            Err(error) => {
                OUTCOMES.saw("woken by the shutdown");
                // It may have led briefly, and stepped down at the shutdown, before
                // the waiter ran: the watch is a latest-value cell.
                assert_eq!(error, DriverError::Stopped);
                assert_eq!(status.leader, None);
            }
        }
    });
    OUTCOMES.assert_all_seen();
}

/// Node 1 of {1, 2} hears nothing, so its answer timer makes it leader. A worker
/// thread holds the `Permit` and blocks on its end while the application
/// steps the node down. In every interleaving: the flag is raised before
/// `step_down` returns (so code that stepped down knows the work was told), the
/// worker is woken (never left blocked), and no leadership is open afterwards.
#[test]
fn the_leadership_signal_races_a_step_down() {
    static OUTCOMES: std::sync::LazyLock<Outcomes> = std::sync::LazyLock::new(|| {
        Outcomes::new(&[
            "the worker saw its leadership current, then ended",
            "the worker started after the step-down: already ended",
        ])
    });
    model("leadership signal vs step-down", Some(3), || {
        let wire = Wire::new([]);
        let handle = Builder::new()
            .model_timer_expiries(1)
            .spawn(node(1, &[1, 2]), wire)
            .unwrap();
        let leadership = handle
            .permit(Duration::MAX)
            .expect("1 leads once its answer timer expires");
        assert_eq!(leadership.token().leader, NodeId(1));

        let worker = {
            let leadership = leadership.clone();
            loom::thread::spawn(move || {
                let current_at_start = leadership.is_current();
                let ended = leadership.wait_ended(Duration::MAX);
                (current_at_start, ended, leadership.is_current())
            })
        };

        assert_eq!(handle.step_down(), Ok(true));
        assert!(
            !leadership.is_current(),
            "step_down returned with the work not told"
        );
        assert_eq!(
            handle.permit(Duration::ZERO).unwrap_err(),
            DriverError::Timeout,
            "a leadership is open after the step-down"
        );

        let (current_at_start, ended, current_at_end) = worker.join().unwrap();
        assert!(ended, "the worker's wait returned without the end");
        assert!(!current_at_end);
        if current_at_start {
            OUTCOMES.saw("the worker saw its leadership current, then ended");
        } else {
            OUTCOMES.saw("the worker started after the step-down: already ended");
        }
        handle.shutdown().expect("both threads join");
    });
    OUTCOMES.assert_all_seen();
}

/// The flag raised at the end of the node's permit, with nothing else changing:
/// node 1 of {1} with a majority quorum leads after its claim, and a lease
/// margin longer than the time to its first heartbeat makes the permit's end
/// the node's next deadline. The
/// leader stays the same, so only the leadership's own notification can wake a
/// worker blocked on its end: in every interleaving it does (a lost wakeup would
/// leave the worker, and this model, deadlocked).
#[test]
fn the_permits_end_wakes_a_blocked_worker_with_no_other_change() {
    static OUTCOMES: std::sync::LazyLock<Outcomes> = std::sync::LazyLock::new(|| {
        Outcomes::new(&[
            "the worker blocked, and the permit's end woke it",
            "the permit had ended before the worker looked",
        ])
    });
    model("permit's end vs blocked worker", Some(2), || {
        let config = Config::default().with_quorum(bully_core::Quorum::Majority);
        let margin = config.leader_lease() - config.heartbeat_interval() / 2;
        let config = config.with_lease_margin(margin);
        let node = Node::new(NodeId(1), [NodeId(1)], config).unwrap();
        let handle = Builder::new()
            .model_timer_expiries(2)
            .spawn(node, Wire::new([]))
            .unwrap();
        // The claim's expiry makes 1 leader, and it stays leader: its lease (and the
        // second expiry) would end only after a heartbeat.
        handle
            .leader_watch()
            .wait_for(Duration::MAX, |leader| leader.is_some())
            .unwrap();
        match handle.permit(Duration::ZERO) {
            Ok(leadership) => {
                let worker = loom::thread::spawn(move || {
                    let blocked = leadership.is_current();
                    (blocked, leadership.wait_ended(Duration::MAX))
                });
                let (blocked, ended) = worker.join().unwrap();
                assert!(ended);
                if blocked {
                    OUTCOMES.saw("the worker blocked, and the permit's end woke it");
                } else {
                    OUTCOMES.saw("the permit had ended before the worker looked");
                }
            }
            Err(error) => {
                assert_eq!(error, DriverError::Timeout);
                OUTCOMES.saw("the permit had ended before the worker looked");
            }
        }
        // Still the leader: the flag was the permit's end, not a step-down's.
        assert_eq!(handle.leader().map(|l| l.id), Some(NodeId(1)));
        handle.shutdown().expect("both threads join");
    });
    OUTCOMES.assert_all_seen();
}
