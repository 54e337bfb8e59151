//! What the agent says and does about trouble after it started: a warning when
//! the quorum is turned off, and a state file it can no longer write, which stops
//! it before it sends what depends on that state.

mod support;

use bully_agent::run::EXIT_STATE_WRITE_FAILED;
use support::lone::LoneAgent;

#[test]
fn turning_the_quorum_off_is_warned_about_at_start() {
    let lone = LoneAgent::new("quorum = \"none\"", "on_exit = \"exit\"");
    let mut agent = lone.start_capturing_stderr("exit 0");
    let (status, stderr) = agent.wait_with_stderr();
    assert_eq!(
        status.code(),
        Some(0),
        "the command's status, under on_exit = exit"
    );
    assert!(
        stderr.contains("WARN")
            && stderr.contains("quorum = \"none\"")
            && stderr.contains("two copies"),
        "{stderr}"
    );
}

#[test]
fn a_state_file_that_can_no_longer_be_written_stops_the_agent() {
    // The command exits once `trigger` exists; the node steps down and, alone,
    // is elected again in the next term: a new term to persist. By then the
    // temporary file the state is written through is a directory, so the write
    // fails (as a full disk would), whoever runs the test.
    let lone = LoneAgent::new("", "on_exit = \"step-down\"");
    let mut agent =
        lone.start_capturing_stderr("echo up; while [ ! -e trigger ]; do sleep 0.05; done; exit 3");
    lone.wait_for("the command running", |status| status.child.running);
    std::fs::create_dir(lone.dir.path().join("data/state.json.tmp")).unwrap();
    let term_before = std::fs::read_to_string(lone.dir.path().join("data/state.json")).unwrap();
    std::fs::write(lone.dir.path().join("trigger"), b"").unwrap();

    let (status, stderr) = agent.wait_with_stderr();
    assert_eq!(status.code(), Some(EXIT_STATE_WRITE_FAILED));
    assert!(
        stderr.contains("error: ") && stderr.contains("state.json.tmp"),
        "{stderr}"
    );
    // The state on disk is the last one written whole.
    let term_after = std::fs::read_to_string(lone.dir.path().join("data/state.json")).unwrap();
    assert_eq!(term_before, term_after);
}
