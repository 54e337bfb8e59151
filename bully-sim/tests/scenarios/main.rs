//! bully-sim's scenario tests, one test binary: a module per story, from the
//! sources' examples to the property and quorum sweeps, with what they share in
//! `support`. One binary links once; the stories were a binary each, and CI
//! paid a link for every one. Run one story with its module as the filter,
//! `cargo test -p bully-sim --test scenarios quorum::`.

mod support;

mod abstain;
mod announcement;
mod bully_algorithm_dance;
mod clock_drift;
mod cold_start;
mod determinism;
mod drift_answer_timeout;
mod drift_livelock;
mod hand_over;
mod hostile;
mod lecture_notes;
mod lifecycle;
mod lossy_detection;
mod lossy_lease;
mod never_fenced_member;
mod partial;
mod preemption;
mod properties;
mod quorum;
mod regressions;
mod removed_member;
mod resign_delay;
mod sim_in_flight;
mod soundarabai_paper;
mod succession;
mod take_back;
mod term_growth;
mod two_leaders_found_outside;
mod unique_terms;
