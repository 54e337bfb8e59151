//! Unit tests of the drivers' shared code, with exact values: the permit handed
//! on first and its end as a deadline, the counters, and the order in which a
//! change reaches the node and the transport.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bully_core::Instant;
use bully_core::{
    CommandError, Config, DurableState, FencingToken, Message, Node, NodeId, Permit, PermitChange,
    Quorum, Role, Term,
};
use bully_driver::*;

/// The default config's lease, to the nanosecond (the heartbeat interval and
/// the answer timeout, less the clock-drift allowance).
const LEASE: Duration = Duration::from_nanos(479_040_959);
const HEARTBEAT: Duration = Duration::from_millis(100);
/// When a lone member with a quorum, started at `t0`, has elected itself.
const ELECTED: Duration = Duration::from_millis(480);

fn token(term: u64, leader: u64) -> FencingToken {
    FencingToken {
        term: Term(term),
        leader: NodeId(leader),
    }
}

/// A lone member with `config` (a quorum), started and elected: at its start
/// plus `ELECTED`, with a lease to `LEASE` later.
fn lone_leader(config: Config) -> Node {
    let t0 = Instant::now();
    let mut node = Node::new(NodeId(1), [NodeId(1)], config).unwrap();
    node.start(t0);
    assert_eq!(node.poll_timeout(), Some(t0 + ELECTED));
    node.handle_timeout(t0 + ELECTED);
    assert_eq!(node.lease_until(), Some(t0 + ELECTED + LEASE));
    node
}

/// When the lone leader of `core` started: its lease began `ELECTED` later.
fn t0_of(core: &DriverCore) -> Instant {
    core.node().lease_until().unwrap() - LEASE - ELECTED
}

#[test]
fn the_settings_default_to_1024_events_and_hold_at_least_one() {
    assert_eq!(Settings::default().event_capacity, 1024);
    assert_eq!(
        Settings::default().with_event_capacity(0).event_capacity,
        1,
        "a channel of none could hold nothing"
    );
}

#[test]
fn the_persister_hands_over_each_new_state_once_and_not_the_first() {
    let t0 = Instant::now();
    let saved = Arc::new(Mutex::new(Vec::new()));
    let log = saved.clone();
    let mut node = Node::new(NodeId(1), [NodeId(1)], Config::default()).unwrap();
    let mut persister = Persister::new(
        &node,
        Some(Box::new(move |state| log.lock().unwrap().push(state))),
    );
    assert!(
        !persister.before_send(&node),
        "the state the node was made with"
    );
    node.start(t0);
    assert!(persister.before_send(&node));
    assert!(!persister.before_send(&node), "unchanged");
    // Without a quorum a node keeps its term, not its vote.
    let elected = DurableState {
        term: Term(1),
        vote: None,
        first_boot: false,
    };
    assert_eq!(*saved.lock().unwrap(), [elected]);

    let mut unkept = Persister::new(&node, None);
    assert!(node.step_down(t0));
    node.start_election(t0 + ELECTED);
    assert!(!unkept.before_send(&node), "nothing to hand it to");
}

/// A transport's peer table that logs what it is asked, and refuses one member.
#[derive(Default)]
struct Table {
    log: Vec<String>,
    refuse: Option<NodeId>,
}

impl Peers for Table {
    type Error = String;

    fn add_peer(&mut self, member: NodeId, address: SocketAddr) -> Result<(), String> {
        if self.refuse == Some(member) {
            return Err(format!("refused {member}"));
        }
        self.log.push(format!("add {member} {address}"));
        Ok(())
    }

    fn remove_peer(&mut self, member: NodeId) -> Result<(), String> {
        self.log.push(format!("remove {member}"));
        Ok(())
    }

    fn set_peer_address(&mut self, member: NodeId, address: SocketAddr) -> Result<(), String> {
        self.log.push(format!("address {member} {address}"));
        Ok(())
    }

    fn set_auth(&mut self, _auth: bully_core::wire::Auth) -> Result<(), String> {
        self.log.push("auth".to_owned());
        Ok(())
    }
}

fn ids(node: &Node) -> Vec<u64> {
    node.members().iter().map(|id| id.0).collect()
}

#[test]
fn a_change_reaches_the_node_and_the_transport_in_the_safe_order_or_not_at_all() {
    let now = Instant::now();
    let address: SocketAddr = "127.0.0.1:7004".parse().unwrap();
    let mut node = Node::new(
        NodeId(1),
        [NodeId(1), NodeId(2), NodeId(3)],
        Config::default(),
    )
    .unwrap();
    let mut table = Table {
        refuse: Some(NodeId(5)),
        ..Table::default()
    };
    let add = |member| Change::AddMember {
        member: NodeId(member),
        address,
    };

    let refused = apply(&mut node, &mut table, now, add(2));
    assert!(matches!(
        refused,
        Err(ChangeError::Node(CommandError::AlreadyMember(NodeId(2))))
    ));
    let refused = apply(&mut node, &mut table, now, add(5));
    assert!(matches!(refused, Err(ChangeError::Transport(ref e)) if e == "refused 5"));
    assert_eq!(
        ids(&node),
        [1, 2, 3],
        "the transport refused: the node is not told"
    );
    assert!(apply(&mut node, &mut table, now, add(4)).is_ok());
    assert_eq!(ids(&node), [1, 2, 3, 4]);

    let refused = apply(&mut node, &mut table, now, Change::RemoveMember(NodeId(9)));
    assert!(matches!(
        refused,
        Err(ChangeError::Node(CommandError::UnknownMember(NodeId(9))))
    ));
    let refused = apply(&mut node, &mut table, now, Change::RemoveMember(NodeId(1)));
    assert!(matches!(
        refused,
        Err(ChangeError::Node(CommandError::SelfReference(NodeId(1))))
    ));
    assert!(apply(&mut node, &mut table, now, Change::RemoveMember(NodeId(4))).is_ok());
    assert_eq!(ids(&node), [1, 2, 3]);

    let moved = |member| Change::SetMemberAddress {
        member: NodeId(member),
        address,
    };
    let refused = apply(&mut node, &mut table, now, moved(1));
    assert!(matches!(
        refused,
        Err(ChangeError::Node(CommandError::SelfReference(NodeId(1))))
    ));
    let refused = apply(&mut node, &mut table, now, moved(4));
    assert!(matches!(
        refused,
        Err(ChangeError::Node(CommandError::UnknownMember(NodeId(4))))
    ));
    assert!(apply(&mut node, &mut table, now, moved(2)).is_ok());

    assert_eq!(
        table.log,
        [
            "add 4 127.0.0.1:7004",
            "remove 4",
            "address 2 127.0.0.1:7004"
        ],
        "only the changes the node accepts reach the transport"
    );
    {
        let auth = bully_core::wire::Auth::None;
        assert!(apply(&mut node, &mut table, now, Change::SetAuth(Box::new(auth))).is_ok());
        assert_eq!(table.log.last().map(String::as_str), Some("auth"));
    }
}

#[test]
fn the_core_counts_its_inputs_and_sends_and_who_was_heard() {
    let t0 = Instant::now();
    let node = Node::new(NodeId(1), [NodeId(1), NodeId(2)], Config::default()).unwrap();
    let mut core = DriverCore::new(node, None);
    core.start(t0);
    core.woke();
    core.woke();
    core.handle_message(
        t0,
        NodeId(2),
        Message::Coordinator {
            term: Term(1),
            round: 0,
        },
    );
    core.handle_message(
        t0,
        NodeId(9),
        Message::Coordinator {
            term: Term(2),
            round: 0,
        },
    );
    core.sent(true);
    core.sent(true);
    core.sent(false);
    assert!(!core.handle_timeout(t0), "no timer is due at the start");
    let due = core.node().poll_timeout().unwrap();
    assert!(core.handle_timeout(due));

    let stats = core.stats();
    assert_eq!(stats.wakeups, 2);
    assert_eq!(
        stats.messages_received, 2,
        "a stranger's message counts as received"
    );
    assert_eq!(stats.timeouts, 1);
    assert_eq!((stats.messages_sent, stats.send_errors), (2, 1));
    assert_eq!(stats.node, *core.node().stats());
    assert_eq!(
        (stats.role, stats.term),
        (core.node().role(), core.node().term())
    );
    assert_eq!(stats.leader, core.node().leader());
    // 2 went silent after its Coordinator: 1 elected itself.
    assert_eq!(stats.leader.map(|leader| leader.token()), Some(token(2, 1)));

    let heard = core.last_heard(t0 + Duration::from_millis(250));
    assert_eq!(
        heard.into_iter().collect::<Vec<_>>(),
        [(NodeId(2), Duration::from_millis(250))]
    );
}

#[test]
fn the_core_hands_on_the_nodes_permit_first_and_wakes_for_its_end() {
    // A margin this wide ends the permit before the next heartbeat.
    let wide = LEASE - Duration::from_millis(50);
    let config = Config::default()
        .with_quorum(Quorum::Majority)
        .with_lease_margin(wide);
    let mut core = DriverCore::new(lone_leader(config), None);
    let beat = t0_of(&core) + ELECTED + HEARTBEAT;
    assert_eq!(
        core.poll_timeout(),
        Some(beat),
        "no permit told yet: the timer"
    );
    let mut published = Vec::new();
    core.before_send(|change| published.push(change));
    let end = t0_of(&core) + ELECTED + Duration::from_millis(50);
    let permit = Permit {
        token: token(1, 1),
        until: Some(end),
    };
    assert_eq!(published, [PermitChange::Started(permit)]);
    assert_eq!(
        core.poll_timeout(),
        Some(end),
        "the permit's end comes first"
    );
    assert!(
        !core.handle_timeout(end - Duration::from_nanos(1)),
        "not due"
    );
    assert!(core.handle_timeout(end));
    assert_eq!(core.stats().timeouts, 0, "no timer of the protocol fired");
    published.clear();
    core.before_send(|change| published.push(change));
    assert_eq!(published, [PermitChange::Ended(permit)]);
    assert_eq!(core.poll_timeout(), Some(beat));
    assert!(core.handle_timeout(beat));
    assert_eq!(core.stats().timeouts, 1);
    // A duration past the clock's range is no abstention (and no panic); a
    // real one makes the leader step down.
    assert!(!core.abstain_for(beat, Duration::MAX));
    assert_eq!(core.node().role(), Role::Leader);
    assert!(core.abstain_for(beat, Duration::from_secs(1)));
}
