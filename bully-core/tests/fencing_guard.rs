//! The storage side of fencing: a `FencingGuard` next to a resource refuses the
//! writes of a deposed leader and keeps those of the leader that replaced it,
//! also after the guard restarts from the token it persisted.

use bully_core::{Fenced, FencingGuard, FencingToken, NodeId, Term};

fn token(term: u64, leader: u64) -> FencingToken {
    FencingToken {
        term: Term(term),
        leader: NodeId(leader),
    }
}

#[test]
fn a_fresh_guard_has_seen_nothing_and_takes_the_first_token_it_is_shown() {
    let mut guard = FencingGuard::new();
    assert_eq!(guard.highest(), None);
    assert_eq!(guard.check(token(3, 5)), Ok(()));
    assert_eq!(guard.highest(), Some(token(3, 5)));
}

#[test]
fn five_cut_off_after_four_took_over_has_its_late_write_refused() {
    let mut guard = FencingGuard::new();
    // 5 leads in term 3 and writes; 4 is elected in term 4 and writes.
    assert_eq!(guard.check(token(3, 5)), Ok(()));
    assert_eq!(guard.check(token(4, 4)), Ok(()));
    assert_eq!(
        guard.highest(),
        Some(token(4, 4)),
        "the newer token is kept"
    );
    // 5's write of term 3 arrives late: refused, naming both tokens.
    assert_eq!(
        guard.check(token(3, 5)),
        Err(Fenced {
            presented: token(3, 5),
            highest: token(4, 4),
        })
    );
    // The refusal does not move the guard back: 4 goes on writing.
    assert_eq!(guard.highest(), Some(token(4, 4)));
    assert_eq!(guard.check(token(4, 4)), Ok(()));
}

#[test]
fn the_sitting_leader_writes_again_and_again_under_one_token() {
    let mut guard = FencingGuard::new();
    for write in 0..3 {
        assert_eq!(guard.check(token(7, 2)), Ok(()), "write {write}");
    }
    assert_eq!(guard.highest(), Some(token(7, 2)));
}

#[test]
fn within_one_term_the_lower_leader_is_the_older_one() {
    // Without a quorum two sides of a partition may both lead term 6; the token
    // orders them by id, and the guard keeps to the higher once it saw it.
    let mut guard = FencingGuard::new();
    assert_eq!(guard.check(token(6, 3)), Ok(()));
    assert_eq!(guard.check(token(6, 5)), Ok(()));
    let refused = guard.check(token(6, 3)).unwrap_err();
    assert_eq!(refused.presented, token(6, 3));
    assert_eq!(refused.highest, token(6, 5));
}

#[test]
fn a_newer_leader_is_always_let_in_whatever_its_id() {
    let mut guard = FencingGuard::new();
    assert_eq!(guard.check(token(2, 9)), Ok(()));
    // A later term with a lower id is newer: 1 replaced 9.
    assert_eq!(guard.check(token(3, 1)), Ok(()));
    assert_eq!(guard.highest(), Some(token(3, 1)));
    assert!(guard.check(token(2, 9)).is_err(), "9 was deposed");
}

#[test]
fn a_guard_resumed_from_its_persisted_token_still_refuses_the_deposed_leader() {
    let mut before = FencingGuard::new();
    before.check(token(3, 5)).unwrap();
    before.check(token(4, 4)).unwrap();
    let persisted = before.highest().expect("a token was seen");
    // The storage process restarts and resumes from disk.
    let mut after = FencingGuard::resume(persisted);
    assert_eq!(after.highest(), Some(token(4, 4)));
    assert_eq!(
        after.check(token(3, 5)),
        Err(Fenced {
            presented: token(3, 5),
            highest: token(4, 4),
        })
    );
    assert_eq!(after.check(token(4, 4)), Ok(()));
    assert_eq!(after.check(token(5, 5)), Ok(()), "5 elected again later");
    assert_eq!(after.highest(), Some(token(5, 5)));
}
