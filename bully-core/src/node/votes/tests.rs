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
