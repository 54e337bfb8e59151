//! [`node`](super::node)'s watch on the permit to work (`Node::poll_permit`): the
//! changes come in order (one permit open at a time, started before it is
//! renewed or ended, renewed and ended under its own token), a permit whose end
//! came is ended before anything else and never renewed, every permit the node
//! grants ends the larger of the lease margin and the resign delay before the
//! lease (with a quorum; without one it has no end), and what was told is what
//! `Node::permit` says.

use bully_core::{Instant, Node, Permit, PermitChange, Quorum, Role};

/// The permit as the node told it, to check the next changes against.
#[derive(Debug, Default)]
pub(super) struct PermitWatch {
    open: Option<Permit>,
}

impl PermitWatch {
    /// Whether the open permit's end has come by `now`: the node's deadline
    /// may then be due with no timer expired.
    pub(super) fn end_due(&self, now: Instant) -> bool {
        self.open
            .and_then(|permit| permit.until)
            .is_some_and(|until| until <= now)
    }

    /// Drains the node's permit changes after an input taken at `now` (`None`:
    /// an input without an instant) and checks them.
    pub(super) fn check(&mut self, node: &mut Node, now: Option<Instant>) {
        let lapsed = now.is_some_and(|now| self.end_due(now));
        let mut first = true;
        while let Some(change) = node.poll_permit() {
            if first && lapsed {
                assert_eq!(
                    Some(change),
                    self.open.map(PermitChange::Ended),
                    "permit: a permit whose end came by the input is ended first"
                );
            }
            first = false;
            match change {
                PermitChange::Started(permit) => {
                    assert_eq!(
                        self.open, None,
                        "permit: {change:?} while {:?} is open",
                        self.open
                    );
                    self.check_granted(node, permit);
                    self.open = Some(permit);
                }
                PermitChange::Renewed(permit) => {
                    let open = self.open.expect("permit: renewed with none open");
                    assert_eq!(
                        permit.token, open.token,
                        "permit: renewed under another token"
                    );
                    assert_ne!(permit.until, open.until, "permit: renewed to the same end");
                    self.check_granted(node, permit);
                    self.open = Some(permit);
                }
                PermitChange::Ended(permit) => {
                    assert_eq!(Some(permit), self.open, "permit: ended a permit not open");
                    self.open = None;
                }
            }
        }
        if let (Some(until), Some(now)) = (self.open.and_then(|permit| permit.until), now) {
            assert!(
                until > now,
                "permit: an open permit whose end came: {until:?} <= {now:?}"
            );
        }
        assert_eq!(
            self.open,
            node.permit(),
            "permit: what was told is the node's permit"
        );
        if let Some(until) = self.open.and_then(|permit| permit.until) {
            assert!(
                node.poll_timeout().is_some_and(|next| next <= until),
                "permit: the node's deadline {:?} passes its permit's end {until:?}",
                node.poll_timeout()
            );
        }
    }

    /// A permit the node grants: its own leadership's, and with a quorum
    /// ending the larger of the margin and the resign delay before the lease.
    fn check_granted(&self, node: &Node, permit: Permit) {
        assert_eq!(
            node.role(),
            Role::Leader,
            "permit: {permit:?} while not leading"
        );
        assert_eq!(
            node.leader().map(|leader| leader.token()),
            Some(permit.token),
            "permit: under the node's own leadership"
        );
        let config = node.config();
        if config.quorum() == Quorum::None {
            assert_eq!(
                permit.until, None,
                "permit: without a quorum a permit has no end"
            );
            return;
        }
        let margin = config.lease_margin().max(config.resign_delay());
        let lease = node
            .lease_until()
            .expect("permit: a permit under a quorum has a lease");
        assert_eq!(
            permit.until,
            lease.checked_sub(margin),
            "permit: G9: the margin before the lease"
        );
    }
}

#[cfg(test)]
mod tests {
    //! The watch fails on a node whose changes break its rules; here, a
    //! watch that believes a permit is open that the node never told.

    use super::*;
    use bully_core::{Config, FencingToken, NodeId, Term};

    #[test]
    #[should_panic(expected = "permit: what was told is the node's permit")]
    fn a_permit_the_node_never_told_fails() {
        let mut node = Node::new(NodeId(1), [NodeId(1), NodeId(2)], Config::default()).unwrap();
        let mut watch = PermitWatch {
            open: Some(Permit {
                token: FencingToken {
                    term: Term(1),
                    leader: NodeId(1),
                },
                until: None,
            }),
        };
        watch.check(&mut node, None);
    }

    #[test]
    fn a_lone_leaders_permit_starts_and_ends_in_order() {
        let mut node = Node::new(NodeId(1), [NodeId(1)], Config::default()).unwrap();
        let mut watch = PermitWatch::default();
        let now = Instant::now();
        node.start(now);
        watch.check(&mut node, Some(now));
        assert!(watch.open.is_some());
        node.step_down(now);
        watch.check(&mut node, Some(now));
        assert_eq!(watch.open, None);
    }
}
