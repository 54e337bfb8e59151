//! The permit as the node's own output, with exact values: its ends to the
//! nanosecond, the margin it keeps before the lease, the order of its changes,
//! and its deadline in `poll_timeout`.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use bully_core::{Config, FencingToken, Node, NodeId, Permit, PermitChange, Quorum, Role, Term};
use std::time::Instant;

/// The default config's lease, to the nanosecond (the heartbeat interval and
/// the answer timeout, less the clock-drift allowance).
const LEASE: Duration = Duration::from_nanos(479_040_959);
/// A quarter of it, rounded down.
const MARGIN: Duration = Duration::from_nanos(119_760_239);
const HEARTBEAT: Duration = Duration::from_millis(100);
/// When a lone member with a quorum, started at `t0`, has elected itself.
const ELECTED: Duration = Duration::from_millis(480);

const TOKEN: FencingToken = FencingToken {
    term: Term(1),
    leader: NodeId(1),
};

fn majority() -> Config {
    Config::default().with_quorum(Quorum::Majority)
}

/// A lone member with `config`, started at `t0` and elected: at
/// `t0 + ELECTED`, with a lease to `t0 + ELECTED + LEASE`.
fn lone_leader(config: Config, t0: Instant) -> Node {
    let mut node = Node::new(NodeId(1), [NodeId(1)], config).unwrap();
    node.start(t0);
    assert_eq!(node.poll_timeout(), Some(t0 + ELECTED));
    node.handle_timeout(t0 + ELECTED);
    assert_eq!(node.lease_until(), Some(t0 + ELECTED + LEASE));
    node
}

fn permit(until: Instant) -> Permit {
    Permit {
        token: TOKEN,
        until: Some(until),
    }
}

#[test]
fn the_default_margin_is_a_quarter_of_the_lease_and_a_set_one_replaces_it() {
    let t0 = Instant::now();
    assert_eq!(majority().leader_lease(), LEASE);
    assert_eq!(majority().lease_margin(), MARGIN);
    let node = lone_leader(majority(), t0);
    assert_eq!(node.permit(), Some(permit(t0 + ELECTED + LEASE - MARGIN)));
    let set = Duration::from_millis(50);
    let node = lone_leader(majority().with_lease_margin(set), t0);
    assert_eq!(node.permit(), Some(permit(t0 + ELECTED + LEASE - set)));
}

#[test]
fn a_resign_delay_longer_than_the_margin_ends_the_permit_earlier() {
    let t0 = Instant::now();
    let delay = Duration::from_millis(200);
    let config = majority()
        .with_lease_margin(Duration::from_millis(10))
        .with_resign_delay(delay);
    let node = lone_leader(config, t0);
    assert_eq!(node.permit(), Some(permit(t0 + ELECTED + LEASE - delay)));
}

#[test]
fn a_permit_starts_is_renewed_and_a_late_renewal_starts_a_new_one() {
    let t0 = Instant::now();
    let mut node = lone_leader(majority(), t0);
    let first = t0 + ELECTED + LEASE - MARGIN;
    assert_eq!(
        node.poll_permit(),
        Some(PermitChange::Started(permit(first)))
    );
    assert_eq!(node.poll_permit(), None, "told once");

    // The next heartbeat renews the lease by one heartbeat interval.
    let beat = t0 + ELECTED + HEARTBEAT;
    assert_eq!(node.poll_timeout(), Some(beat), "the timer comes first");
    node.handle_timeout(beat);
    let renewed = first + HEARTBEAT;
    assert_eq!(
        node.poll_permit(),
        Some(PermitChange::Renewed(permit(renewed)))
    );

    // Woken only at the permit's end, the node ends it, though it still
    // leads and the heartbeat due then renews the lease at once (alone, it is
    // its own quorum): too late for this permit, so a new one starts under the
    // same token, never the ended one again.
    node.handle_timeout(renewed);
    assert_eq!(node.role(), Role::Leader);
    assert_eq!(
        node.poll_permit(),
        Some(PermitChange::Ended(permit(renewed)))
    );
    assert_eq!(
        node.poll_permit(),
        Some(PermitChange::Started(permit(renewed + LEASE - MARGIN)))
    );
    assert_eq!(node.poll_permit(), None);
}

#[test]
fn the_permits_end_is_a_deadline_and_handle_timeout_there_ends_it() {
    let t0 = Instant::now();
    // A margin this wide ends the permit before the next heartbeat.
    let wide = LEASE - Duration::from_millis(50);
    let mut node = lone_leader(majority().with_lease_margin(wide), t0);
    let beat = t0 + ELECTED + HEARTBEAT;
    assert_eq!(node.poll_timeout(), Some(beat), "no permit told yet");
    let end = t0 + ELECTED + Duration::from_millis(50);
    assert_eq!(node.poll_permit(), Some(PermitChange::Started(permit(end))));
    assert_eq!(node.poll_timeout(), Some(end));
    assert_eq!(node.expired_timers(end), 0, "no timer of the protocol");
    node.handle_timeout(end);
    assert_eq!(node.poll_permit(), Some(PermitChange::Ended(permit(end))));
    assert_eq!(node.poll_permit(), None, "nothing is live until a renewal");
    assert_eq!(node.poll_timeout(), Some(beat));
    assert_eq!(node.role(), Role::Leader, "the lease still runs");

    // The heartbeat renews the lease; a new permit starts under the token.
    node.handle_timeout(beat);
    let next = beat + Duration::from_millis(50);
    assert_eq!(
        node.poll_permit(),
        Some(PermitChange::Started(permit(next)))
    );
    assert_eq!(node.poll_timeout(), Some(next));
}

#[test]
fn a_permit_that_lapsed_unpolled_is_told_ended_before_the_renewed_one() {
    let t0 = Instant::now();
    let mut node = lone_leader(majority(), t0);
    let first = t0 + ELECTED + LEASE - MARGIN;
    assert_eq!(
        node.poll_permit(),
        Some(PermitChange::Started(permit(first)))
    );
    // A driver late by a nanosecond past the end: its input renews the lease,
    // but the permit it was told had ended before.
    let late = first + Duration::from_nanos(1);
    node.handle_timeout(late);
    assert_eq!(node.poll_permit(), Some(PermitChange::Ended(permit(first))));
    assert!(matches!(
        node.poll_permit(),
        Some(PermitChange::Started(next)) if next.token == TOKEN
    ));
}

#[test]
fn without_a_quorum_the_permit_has_no_end_and_ends_with_the_leadership() {
    let t0 = Instant::now();
    let mut node = Node::new(NodeId(1), [NodeId(1)], Config::default()).unwrap();
    assert_eq!(node.poll_permit(), None, "not started");
    node.start(t0);
    let endless = Permit {
        token: TOKEN,
        until: None,
    };
    assert_eq!(node.poll_permit(), Some(PermitChange::Started(endless)));
    assert_eq!(node.lease_until(), None);
    assert!(node.step_down(t0));
    assert_eq!(node.poll_permit(), Some(PermitChange::Ended(endless)));
    assert_eq!(node.permit(), None);
}

#[test]
fn what_was_polled_of_the_permit_is_no_part_of_the_protocol_state() {
    let t0 = Instant::now();
    let unpolled = lone_leader(majority(), t0);
    let mut polled = unpolled.clone();
    assert!(polled.poll_permit().is_some());
    assert_eq!(polled, unpolled);
    let hash = |node: &Node| {
        let mut hasher = DefaultHasher::new();
        node.hash(&mut hasher);
        hasher.finish()
    };
    assert_eq!(hash(&polled), hash(&unpolled));
}
