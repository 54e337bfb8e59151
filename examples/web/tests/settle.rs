//! "Run to the end" and "Step" as a class uses them: after isolating a group the
//! run goes on until each part has settled (two leaders without a quorum, the
//! split brain Bully allows, labelled as such; one with a majority quorum), and
//! a step after the end does not move the clock.

use bully_web::{Action, QuorumChoice, Session, Settings};

fn settled_cluster(quorum: QuorumChoice) -> Session {
    let mut session = Session::new(Settings {
        quorum,
        ..Settings::default()
    })
    .unwrap();
    session.act(Action::StartAll).unwrap();
    assert!(session.run_to_end().unwrap());
    assert_eq!(session.frame().agreed, Some(10));
    session
}

#[test]
fn isolating_8_9_10_without_a_quorum_runs_on_until_1_to_7_crown_7_the_expected_split_brain() {
    let mut session = settled_cluster(QuorumChoice::None);
    let before = session.now_us();
    session
        .act(Action::Isolate {
            group: vec![8, 9, 10],
        })
        .unwrap();
    assert!(
        !session.is_settled(),
        "1 to 7 follow a leader they cannot reach"
    );
    assert!(session.run_to_end().unwrap());
    let frame = session.frame();
    let leader_timeout = 25 * frame.delay_us;
    assert!(
        frame.now_us > before + leader_timeout,
        "ran past the leader timeout"
    );
    assert_eq!(frame.leadership.leaders, [7, 10]);
    assert!(frame.leadership.split_brain);
    assert!(
        frame.leadership.note.contains("split brain"),
        "{}",
        frame.leadership.note
    );
    assert_eq!(frame.violations, 0, "a leader per part breaks no rule");
}

#[test]
fn with_a_majority_quorum_the_same_isolation_leaves_one_leader() {
    let mut session = settled_cluster(QuorumChoice::Majority);
    session
        .act(Action::Isolate {
            group: vec![8, 9, 10],
        })
        .unwrap();
    assert!(session.run_to_end().unwrap());
    let frame = session.frame();
    assert_eq!(frame.leadership.leaders, [7]);
    assert!(!frame.leadership.split_brain);
    assert!(frame.leadership.note.is_empty());
    let followers_of_none: Vec<u64> = frame
        .nodes
        .iter()
        .filter(|node| node.follows.is_none())
        .map(|node| node.id)
        .collect();
    assert_eq!(
        followers_of_none,
        [8, 9, 10],
        "3 of 10 cannot reach a majority"
    );
}

#[test]
fn a_step_after_the_end_does_not_move_the_clock() {
    let mut session = Session::new(Settings::default()).unwrap();
    session.act(Action::Elect { node: 4 }).unwrap();
    while session.step_message().unwrap() {}
    let end = session.now_us();
    assert!(session.is_settled());
    assert!(!session.step_message().unwrap());
    assert!(!session.step_message().unwrap());
    assert_eq!(session.now_us(), end, "no jump to the settle bound");
    assert!(end <= 3 * session.delay_us(), "{end}");
}

#[test]
fn run_to_the_end_of_a_cluster_nobody_started_leaves_the_clock_at_0() {
    let mut session = Session::new(Settings::default()).unwrap();
    assert!(!session.run_to_end().unwrap());
    assert_eq!(session.now_us(), 0);
    assert!(!session.step_message().unwrap());
    assert_eq!(session.now_us(), 0);
}
