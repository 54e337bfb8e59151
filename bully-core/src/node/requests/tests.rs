//! `Requests` on its own: which acknowledgements name a request sent, what
//! counts as the lease moving, and what a member that left takes back.

use std::time::Duration;

use super::Requests;
use crate::message::Term;
use crate::time::Instant;

const LEASE: Duration = Duration::from_secs(1);

#[test]
fn an_acknowledgement_names_a_request_only_if_it_was_sent_in_its_term() {
    let mut requests = Requests::default();
    let now = Instant::now();
    assert_eq!(requests.open(now, Term(3)), (0, true));
    assert_eq!(requests.open(now, Term(3)), (1, false));
    assert!(requests.was_sent(Term(3), 0));
    assert!(requests.was_sent(Term(3), 1));
    assert!(
        !requests.was_sent(Term(3), 2),
        "the next request was not sent yet"
    );
    assert!(!requests.was_sent(Term(2), 0), "another term's");
}

#[test]
fn without_a_quorum_a_new_leadership_counts_its_rounds_from_1_again() {
    let mut requests = Requests::default();
    let counted: Vec<u64> = (0..3).map(|_| requests.count_unacknowledged()).collect();
    assert_eq!(counted, [1, 2, 3]);
    requests.restart_count();
    assert_eq!(requests.count_unacknowledged(), 1);
}

#[test]
fn a_quorum_for_a_request_already_backing_the_lease_does_not_move_it() {
    let mut requests = Requests::default();
    let now = Instant::now();
    requests.open(now, Term(1));
    assert!(
        requests.count_ack(0, 0, 1, LEASE),
        "the first quorum moves it"
    );
    assert_eq!(requests.lease_until(), Some(now + LEASE));
    assert!(
        !requests.count_ack(0, 0, 1, LEASE),
        "a second acknowledgement of the same request ends the lease where it was"
    );
    requests.end_lease();
    assert_eq!(requests.lease_until(), None, "an ended lease backs nothing");
}

#[test]
fn a_member_that_left_takes_back_its_acknowledgements_up_to_its_latest_only() {
    let mut requests = Requests::default();
    let now = Instant::now();
    for round in 0..3u32 {
        requests.open(now + Duration::from_millis(u64::from(round)), Term(1));
    }
    // One member acknowledged requests 0 and 1, another 0 to 2.
    requests.count_ack(0, 1, 2, LEASE);
    requests.count_ack(0, 2, 2, LEASE);
    assert!(requests.has(0, 2) && requests.has(1, 2) && requests.has(2, 1));
    // The first leaves: 0 and 1 lose its acknowledgement, 2 keeps the other's.
    requests.uncount(1);
    assert!(
        !requests.has(0, 2),
        "request 0 still counts the member that left"
    );
    assert!(
        !requests.has(1, 2),
        "request 1 still counts the member that left"
    );
    assert!(
        requests.has(2, 1),
        "request 2 lost an acknowledgement it never had"
    );
}
