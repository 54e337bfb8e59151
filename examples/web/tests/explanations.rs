//! The numbers the page explains, checked against the simulator for every N and
//! P it offers: in each setting the page calls by name, the count derived there
//! is the count measured, every source's formula that differs comes with a
//! sentence why, and runs no formula describes say so instead of showing one.

use bully_web::{Action, AlgorithmChoice, Explanation, QuorumChoice, Session, Settings};

const ALGORITHMS: [AlgorithmChoice; 3] = [
    AlgorithmChoice::Classic,
    AlgorithmChoice::Modified,
    AlgorithmChoice::Ring,
];

fn session(n: u64, algorithm: AlgorithmChoice) -> Session {
    Session::new(Settings {
        n,
        algorithm,
        ..Settings::default()
    })
    .unwrap()
}

/// The explanation a finished run shows, checked for consistency: a formula
/// the page presents as this run's count is the measured one.
fn checked(session: &Session, what: &str) -> Explanation {
    let frame = session.frame();
    let explained = frame
        .explanation
        .unwrap_or_else(|| panic!("{what}: nothing explained"));
    assert_eq!(explained.measured, frame.election_messages, "{what}");
    if !explained.rows.is_empty() {
        assert!(
            explained.rows.iter().any(|row| row.matches),
            "{what}: no formula gives the measured {}: {explained:#?}",
            explained.measured
        );
        if explained.rows.iter().any(|row| !row.matches) {
            assert!(
                explained.why.is_some(),
                "{what}: a difference without a reason"
            );
        }
        for row in &explained.rows {
            assert_eq!(row.matches, row.value == explained.measured, "{what}");
        }
    }
    explained
}

#[test]
fn one_process_of_a_fresh_cluster_calls_the_election_for_every_n_and_p() {
    for algorithm in ALGORITHMS {
        for n in 2..=64 {
            for p in 1..=n {
                let what = format!("{algorithm:?}, N = {n}, P = {p}");
                let mut run = session(n, algorithm);
                run.act(Action::Elect { node: p }).unwrap();
                assert!(run.run_to_end().unwrap(), "{what}");
                let explained = checked(&run, &what);
                assert!(!explained.rows.is_empty(), "{what}: {explained:#?}");
                assert_eq!(
                    explained.table_1,
                    algorithm != AlgorithmChoice::Ring,
                    "{what}"
                );
            }
        }
    }
}

#[test]
fn soundarabai_equation_1_gives_22_where_figure_6s_count_is_25_and_says_why() {
    let mut run = session(10, AlgorithmChoice::Modified);
    run.act(Action::Elect { node: 4 }).unwrap();
    run.run_to_end().unwrap();
    let explained = checked(&run, "modified, N = 10, P = 4");
    let rows: Vec<(&str, u64, bool)> = explained
        .rows
        .iter()
        .map(|row| (row.formula.as_str(), row.value, row.matches))
        .collect();
    assert_eq!(
        rows,
        [("2(N − P) + N", 22, false), ("3N − P − 1", 25, true)]
    );
    assert!(explained.rows[0].source.contains("Soundarabai et al."));
    assert!(explained.rows[0].source.ends_with("equation (1)"));
    let why = explained.why.unwrap();
    assert!(why.contains("P − 1 = 3 Elections"), "{why}");
    assert!(why.contains("Figure 6"), "{why}");
}

#[test]
fn p_1_at_n_30_and_64_has_no_table_1_row_but_equation_4_and_3n_minus_2() {
    for (n, algorithm, formula, value) in [
        (30, AlgorithmChoice::Classic, "N² − 1", 899),
        (64, AlgorithmChoice::Classic, "N² − 1", 4095),
        (30, AlgorithmChoice::Modified, "3N − P − 1", 88),
        (64, AlgorithmChoice::Modified, "3N − P − 1", 190),
    ] {
        let mut run = session(n, algorithm);
        run.act(Action::Elect { node: 1 }).unwrap();
        run.run_to_end().unwrap();
        let explained = checked(&run, &format!("{algorithm:?} N = {n}"));
        assert!(explained.rows.iter().all(|row| row.matches));
        assert!(
            explained
                .rows
                .iter()
                .any(|row| row.formula == formula && row.value == value)
        );
        assert!(
            !explained
                .rows
                .iter()
                .any(|row| row.source.contains("Table 1"))
        );
        let why = explained.why.unwrap();
        assert!(
            why.contains("Table 1 lists N = 5, 10, 15, 20 and 25"),
            "{why}"
        );
    }
    // With a row: N = 25, Table 1's 624 and 73.
    for (algorithm, value) in [
        (AlgorithmChoice::Classic, 624),
        (AlgorithmChoice::Modified, 73),
    ] {
        let mut run = session(25, algorithm);
        run.act(Action::Elect { node: 1 }).unwrap();
        run.run_to_end().unwrap();
        let last = checked(&run, "N = 25").rows.pop().unwrap();
        assert!(last.source.ends_with("Table 1, row N = 25"));
        assert_eq!((last.value, last.matches), (value, true));
    }
}

#[test]
fn the_ring_is_not_shown_as_table_1s_setting() {
    let mut run = session(10, AlgorithmChoice::Ring);
    run.act(Action::Elect { node: 4 }).unwrap();
    run.run_to_end().unwrap();
    let explained = checked(&run, "ring");
    assert!(!explained.table_1);
    assert!(!explained.title.contains("Table 1"));
    assert_eq!(explained.rows[0].value, 38);
    assert!(
        explained
            .why
            .unwrap()
            .contains("No count is published for the ring")
    );
}

/// The highest process, `n`, leads (it called the election and announced at
/// once), then crashes, and `p` is told to notice (or, `None`, nobody is).
fn crashed(n: u64, algorithm: AlgorithmChoice, p: Option<u64>) -> Session {
    crashed_then(n, algorithm, p.map(|node| Action::Notice { node }))
}

/// The same, and then `then` happens.
fn crashed_then(n: u64, algorithm: AlgorithmChoice, then: Option<Action>) -> Session {
    let mut run = session(n, algorithm);
    run.act(Action::Elect { node: n }).unwrap();
    assert!(run.run_to_end().unwrap());
    run.act(Action::Crash { node: n }).unwrap();
    if let Some(then) = then {
        run.act(then).unwrap();
    }
    assert!(run.run_to_end().unwrap());
    run
}

#[test]
fn the_crashed_coordinator_has_its_own_formula_for_every_n_and_p() {
    let mut described = 0;
    let mut overlapping = 0;
    for algorithm in ALGORITHMS {
        for n in 3..=64 {
            let notices = (1..n).map(|node| Some(Action::Notice { node }));
            let elects = (1..n).map(|node| Some(Action::Elect { node }));
            for then in notices.chain(elects).chain([None]) {
                let what = format!("{algorithm:?}, N = {n}, then {then:?}");
                let run = crashed_then(n, algorithm, then);
                let explained = checked(&run, &what);
                if explained.rows.is_empty() {
                    // Only when processes joined on their own (the ring's long
                    // round outlasts the leader timeout).
                    let why = explained.why.unwrap();
                    assert!(why.contains("joined on"), "{what}: {why}");
                    overlapping += 1;
                } else {
                    assert!(explained.title.contains("coordinator crashed"), "{what}");
                    described += 1;
                }
            }
        }
    }
    println!("{described} runs described by a formula, {overlapping} with overlapping elections");
    assert!(described > overlapping * 4);
}

#[test]
fn ten_processes_the_coordinator_crashed_4_notices_classic_43_modified_23_ring_35() {
    for (algorithm, measured, source_value) in [
        (AlgorithmChoice::Classic, 43, 38),
        (AlgorithmChoice::Modified, 23, 19),
        (AlgorithmChoice::Ring, 35, 35),
    ] {
        let explained = checked(&crashed(10, algorithm, Some(4)), "N = 10, P = 4");
        assert_eq!(explained.measured, measured, "{algorithm:?}");
        assert_eq!(explained.rows[0].value, source_value, "{algorithm:?}");
        let derived = explained.rows.last().unwrap();
        assert!(derived.source.contains("no formula is published"));
        assert!(derived.matches);
    }
}

#[test]
fn ten_processes_the_coordinator_crashed_4_calls_an_election_classic_44_modified_24_ring_35() {
    for (algorithm, measured) in [
        (AlgorithmChoice::Classic, 44),
        (AlgorithmChoice::Modified, 24),
        (AlgorithmChoice::Ring, 35),
    ] {
        let run = crashed_then(10, algorithm, Some(Action::Elect { node: 4 }));
        let explained = checked(&run, "N = 10, 4 calls an election");
        assert_eq!(explained.measured, measured, "{algorithm:?}");
        assert!(explained.setting.contains("without knowing"));
        assert!(explained.rows.last().unwrap().matches);
    }
}

#[test]
fn runs_no_source_counts_say_why() {
    // Two initiators at once.
    let mut run = session(10, AlgorithmChoice::Classic);
    run.act(Action::Elect { node: 2 }).unwrap();
    run.act(Action::Elect { node: 5 }).unwrap();
    run.run_to_end().unwrap();
    let explained = checked(&run, "two initiators");
    assert!(explained.rows.is_empty());
    assert!(explained.why.unwrap().contains("Another action came"));

    // A quorum.
    let mut run = Session::new(Settings {
        quorum: QuorumChoice::Majority,
        ..Settings::default()
    })
    .unwrap();
    run.act(Action::Elect { node: 4 }).unwrap();
    run.run_to_end().unwrap();
    assert!(
        checked(&run, "quorum")
            .why
            .unwrap()
            .contains("quorum is on")
    );

    // Nothing yet.
    assert_eq!(
        session(10, AlgorithmChoice::Classic).frame().explanation,
        None
    );
}
