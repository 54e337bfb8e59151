//! `Votes` on its own: when a promise stops running.

use std::time::Duration;

use super::Votes;
use crate::message::{NodeId, Term};
use crate::time::Instant;

/// A promise runs up to its end, not at it: at the instant a follower lease
/// runs out the member may vote again, as a hold ends at its instant too
/// (`Votes::held`).
#[test]
fn a_promise_runs_until_its_end_and_not_at_it() {
    let mut votes = Votes::default();
    let now = Instant::now();
    let until = now + Duration::from_secs(1);
    votes.promise_to(now, NodeId(3), Term(2), until);
    assert!(votes.any_promise_runs(until - Duration::from_nanos(1)));
    assert!(!votes.any_promise_runs(until), "it still runs at its end");
    votes.hold(until);
    assert!(votes.held(until - Duration::from_nanos(1)) && !votes.held(until));
}

/// A claim deferred for process 2 is dropped when 2 leaves, not when another
/// member does, and forgotten once a vote was cast.
#[test]
fn a_deferred_claim_goes_with_its_claimant_or_a_vote() {
    let mut votes = Votes::default();
    votes.defer(NodeId(2), Term(4), 0);
    assert!(
        !votes.drop_deferred_of(NodeId(3)),
        "3 had no claim deferred"
    );
    assert!(votes.has_deferred());
    assert!(votes.drop_deferred_of(NodeId(2)));
    assert!(!votes.has_deferred());
    votes.defer(NodeId(2), Term(4), 0);
    votes.clear_deferred();
    assert!(!votes.has_deferred());
}

/// A leadership that ended under a resign delay owes its `Resign` until it
/// is sent.
#[test]
fn a_resign_is_owed_until_taken() {
    let mut votes = Votes::default();
    assert!(!votes.owes_resign());
    votes.owe_resign(Term(3), NodeId(3));
    assert!(votes.owes_resign());
    assert_eq!(votes.take_owed_resign(), Some((Term(3), NodeId(3))));
    assert!(!votes.owes_resign());
}

/// A restored state's vote replaces the node's own only if it is of a newer
/// term: a vote of the same term for another member would be a second vote
/// in that term (G3, G11).
#[test]
fn a_restored_vote_of_the_same_term_does_not_replace_the_one_cast() {
    let mut votes = Votes::default();
    votes.cast(Term(5), NodeId(1));
    votes.restore(Some((Term(5), NodeId(2))), false, false);
    assert_eq!(votes.vote(), Some((Term(5), NodeId(1))));
    votes.restore(Some((Term(6), NodeId(2))), false, false);
    assert_eq!(votes.vote(), Some((Term(6), NodeId(2))));
}
