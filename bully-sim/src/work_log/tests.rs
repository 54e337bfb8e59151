//! Unit tests of the W1 check on a work log: an overlap, a token going back, a
//! run with too few leaderships, and the log's own records.

use std::time::Duration;

use bully_core::{FencingToken, NodeId, Term};

use super::{Interval, W1Violation, WorkLog, check_w1, closest_hand_over, overlapping};

fn token(term: u64, leader: u64) -> FencingToken {
    FencingToken {
        term: Term(term),
        leader: NodeId(leader),
    }
}

fn job(host: u64, term: u64, start: u64, end: Option<u64>) -> Interval {
    let ms = Duration::from_millis;
    Interval {
        host: NodeId(host),
        token: token(term, host),
        start: ms(start),
        end: end.map(ms),
    }
}

#[test]
fn the_w1_check_sees_an_overlap_a_token_going_back_and_a_run_without_work() {
    // 5 works until 100 ms, 4 from 100 ms: touching is not overlapping.
    let handed_over = [job(5, 1, 0, Some(100)), job(4, 2, 100, None)];
    assert_eq!(check_w1(&handed_over, 2), Ok(()));
    assert_eq!(
        closest_hand_over(&handed_over, |id| id == NodeId(5), |id| id == NodeId(4)),
        Some(Duration::ZERO)
    );
    // 5 still works at 101 ms, and an unfinished job overlaps everything after.
    let late = [job(5, 1, 0, Some(101)), job(4, 2, 100, None)];
    assert_eq!(
        check_w1(&late, 2),
        Err(W1Violation::Overlap(vec![(late[0], late[1])]))
    );
    let unfinished = [job(5, 1, 0, None), job(4, 2, 500, Some(600))];
    assert_eq!(overlapping(&unfinished), [(unfinished[0], unfinished[1])]);
    // Two jobs of one leadership may overlap: a restart within it.
    let restarted = [job(5, 1, 0, Some(50)), job(5, 1, 40, None)];
    assert_eq!(check_w1(&restarted, 1), Ok(()));
    // A later job under an older token.
    let back = [job(4, 2, 0, Some(10)), job(5, 1, 20, Some(30))];
    assert_eq!(
        check_w1(&back, 1),
        Err(W1Violation::TokenWentBack(vec![(back[0], back[1])]))
    );
    assert_eq!(
        check_w1(&restarted, 2),
        Err(W1Violation::TooFewLeaderships {
            worked: 1,
            expected: 2
        })
    );
}

#[test]
fn the_work_log_records_starts_and_ends_and_who_started_since() {
    let log = WorkLog::new();
    let ms = Duration::from_millis;
    let first = log.start(NodeId(5), token(1, 5), ms(10));
    let shared = log.clone();
    shared.end(first, ms(90));
    let second = log.start(NodeId(4), token(2, 4), ms(100));
    assert_eq!((first, second), (0, 1));
    assert_eq!(
        log.intervals(),
        [job(5, 1, 10, Some(90)), job(4, 2, 100, None)]
    );
    assert_eq!(
        log.started_since(|id| id != NodeId(5), ms(0)),
        Some(NodeId(4))
    );
    assert_eq!(log.started_since(|id| id == NodeId(5), ms(11)), None);
}
