//! Unit tests of the drivers' shared code, with exact values: the permit's ends
//! to the nanosecond, the counters, and the order in which a change reaches the
//! node and the transport.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;
use crate::time::Instant;
use crate::{
    CommandError, Config, DurableState, FencingToken, Message, Node, NodeId, Quorum, Role, Term,
};

/// The default config's lease, to the nanosecond (the heartbeat interval and
/// the answer timeout, less the clock-drift allowance).
const LEASE: Duration = Duration::from_nanos(479_040_959);
/// A quarter of it, rounded down.
const MARGIN: Duration = Duration::from_nanos(119_760_239);
const HEARTBEAT: Duration = Duration::from_millis(100);
/// When a lone member with a quorum, started at `t0`, has elected itself.
const ELECTED: Duration = Duration::from_millis(480);

fn token(term: u64, leader: u64) -> FencingToken {
    FencingToken {
        term: Term(term),
        leader: NodeId(leader),
    }
}

/// A lone member under a majority quorum, started at `t0` and elected: at
/// `t0 + ELECTED`, with a lease to `t0 + ELECTED + LEASE`.
fn lone_leader(t0: Instant) -> Node {
    let config = Config::default().with_quorum(Quorum::Majority);
    let mut node = Node::new(NodeId(1), [NodeId(1)], config).unwrap();
    node.start(t0);
    assert_eq!(node.poll_timeout(), Some(t0 + ELECTED));
    node.handle_timeout(t0 + ELECTED);
    node
}

#[test]
fn the_default_margin_is_a_quarter_of_the_lease() {
    let config = Config::default().with_quorum(Quorum::Majority);
    assert_eq!(config.leader_lease(), LEASE);
    let node = Node::new(NodeId(1), [NodeId(1)], config).unwrap();
    assert_eq!(Permission::for_node(&node, None).margin(), MARGIN);
    let chosen = Duration::from_millis(50);
    assert_eq!(Permission::for_node(&node, Some(chosen)).margin(), chosen);
}

#[test]
fn the_settings_default_to_the_configs_margin_and_1024_events_and_hold_at_least_one() {
    let settings = Settings::default();
    assert_eq!(
        (settings.lease_margin, settings.event_capacity),
        (None, 1024)
    );
    let chosen = settings
        .with_lease_margin(Duration::from_millis(70))
        .with_event_capacity(0);
    assert_eq!(chosen.lease_margin, Some(Duration::from_millis(70)));
    assert_eq!(
        chosen.event_capacity, 1,
        "a channel of none could hold nothing"
    );
}

#[test]
fn a_permit_opens_is_renewed_lapses_and_reopens_as_a_new_leadership() {
    let t0 = Instant::now();
    let mut node = lone_leader(t0);
    let mut permission = Permission::for_node(&node, None);
    let first = t0 + ELECTED + LEASE - MARGIN;
    assert_eq!(
        node.may_work_until(t0 + ELECTED, MARGIN),
        Some(WorkPermit {
            token: token(1, 1),
            until: Some(first),
        })
    );
    assert_eq!(
        permission.update(&node, t0 + ELECTED),
        PermitChange::Replace(Some(WorkPermit {
            token: token(1, 1),
            until: Some(first),
        }))
    );
    assert_eq!(permission.guard(), Some(first));
    assert_eq!(permission.update(&node, t0 + ELECTED), PermitChange::Same);

    // The next heartbeat renews the lease by one heartbeat interval.
    let beat = t0 + ELECTED + HEARTBEAT;
    assert_eq!(node.poll_timeout(), Some(beat));
    node.handle_timeout(beat);
    let renewed = first + HEARTBEAT;
    assert_eq!(
        permission.update(&node, beat),
        PermitChange::Renew(Some(renewed))
    );
    assert_eq!(permission.guard(), Some(renewed));

    // At its end the permit lapses, though the node still leads.
    assert_eq!(
        permission.update(&node, renewed),
        PermitChange::Replace(None)
    );
    assert_eq!(permission.current(), None);
    assert_eq!(permission.guard(), None);
    assert_eq!(node.role(), Role::Leader);

    // A late renewal opens a new leadership under the same token, never the
    // lapsed one again.
    node.handle_timeout(renewed);
    assert_eq!(
        permission.update(&node, renewed),
        PermitChange::Replace(Some(WorkPermit {
            token: token(1, 1),
            until: Some(renewed + LEASE - MARGIN),
        }))
    );
}

#[test]
fn without_a_quorum_a_permit_has_no_end_and_lapses_with_the_leadership() {
    let t0 = Instant::now();
    let mut node = Node::new(NodeId(1), [NodeId(1)], Config::default()).unwrap();
    let mut permission = Permission::for_node(&node, None);
    assert_eq!(
        permission.update(&node, t0),
        PermitChange::Same,
        "not started"
    );
    node.start(t0);
    assert_eq!(
        permission.update(&node, t0),
        PermitChange::Replace(Some(WorkPermit {
            token: token(1, 1),
            until: None,
        }))
    );
    assert_eq!(permission.guard(), None);
    assert!(node.step_down(t0));
    assert_eq!(permission.update(&node, t0), PermitChange::Replace(None));
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

    #[cfg(feature = "wire")]
    fn set_auth(&mut self, _auth: crate::wire::Auth) -> Result<(), String> {
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
    #[cfg(feature = "wire")]
    {
        let auth = crate::wire::Auth::None;
        assert!(apply(&mut node, &mut table, now, Change::SetAuth(Box::new(auth))).is_ok());
        assert_eq!(table.log.last().map(String::as_str), Some("auth"));
    }
}

#[test]
fn the_core_counts_its_inputs_and_sends_and_who_was_heard() {
    let t0 = Instant::now();
    let node = Node::new(NodeId(1), [NodeId(1), NodeId(2)], Config::default()).unwrap();
    let mut core = DriverCore::new(node, None, None);
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
fn the_deadline_is_the_earlier_of_the_timer_and_the_guard() {
    let t0 = Instant::now();
    // A margin this wide ends the permit before the next heartbeat.
    let wide = LEASE - Duration::from_millis(50);
    let mut core = DriverCore::new(lone_leader(t0), Some(wide), None);
    assert_eq!(
        core.deadline(),
        Some(t0 + ELECTED + HEARTBEAT),
        "no permit yet: the timer"
    );
    let mut change = PermitChange::Same;
    core.before_send(t0 + ELECTED, |published| change = published);
    let guard = t0 + ELECTED + Duration::from_millis(50);
    assert!(matches!(change, PermitChange::Replace(Some(permit)) if permit.until == Some(guard)));
    assert_eq!(core.deadline(), Some(guard));
    assert_eq!(core.update_permit(guard), PermitChange::Replace(None));
    assert_eq!(core.deadline(), Some(t0 + ELECTED + HEARTBEAT));
    // A duration past the clock's range is no abstention (and no panic); a
    // real one makes the leader step down.
    assert!(!core.abstain_for(guard, Duration::MAX));
    assert_eq!(core.node().role(), Role::Leader);
    assert!(core.abstain_for(guard, Duration::from_secs(1)));
}
