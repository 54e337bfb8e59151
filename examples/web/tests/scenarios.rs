//! Scenarios people bring (a link, pasted text, a file): each bad one is refused
//! before anything runs with a sentence naming the place and the problem, a good
//! one replays in slices to exactly the state a one-go replay reaches, and the
//! versioned file format round-trips.

use bully_web::{
    Action, AlgorithmChoice, Fields, MAX_SCENARIO_BYTES, MAX_TIME_US, MESSAGE_DELAY_US,
    SCENARIO_VERSION, Scenario, Session, Settings, WebError,
};

fn refused(text: &str) -> String {
    match Scenario::from_json(text) {
        Ok(scenario) => panic!("loaded {text}: {scenario:?}"),
        Err(error) => error.to_string(),
    }
}

fn with_settings(settings: &str) -> String {
    format!(r#"{{"version":1,"settings":{settings},"actions":[],"now_us":0}}"#)
}

fn with_actions(actions: &str, now_us: u64) -> String {
    format!(
        r#"{{"version":1,"settings":{{"n":10,"algorithm":"classic"}},"actions":{actions},"now_us":{now_us}}}"#
    )
}

#[test]
fn a_link_that_is_not_a_scenario_says_so_in_plain_words() {
    let cut_off = &with_actions("[]", 0)[..40];
    let said = refused(cut_off);
    assert!(said.contains("stops in the middle"), "{said}");
    let said = refused("garbage");
    assert!(
        said.contains("not JSON") && said.contains("line 1, column 1"),
        "{said}"
    );
    assert_eq!(refused("  "), WebError::Empty.to_string());
    let said = refused("[1, 2]");
    assert!(said.contains("a scenario is an object"), "{said}");
    let said = refused(r#"{"version":1}"#);
    assert!(said.contains("\"settings\" is missing"), "{said}");
    let huge = " ".repeat(MAX_SCENARIO_BYTES + 1);
    assert!(refused(&huge).contains("at most 1048576 bytes"));
}

#[test]
fn settings_out_of_the_pages_range_are_named_with_the_range() {
    for (settings, expected) in [
        (
            r#"{"n":1000}"#,
            "N = 1000: this page draws 2 to 64 processes",
        ),
        (r#"{"n":1}"#, "N = 1: this page draws 2 to 64 processes"),
        (r#"{"n":-5}"#, "settings.n: -5 is below zero"),
        (r#"{"n":2.5}"#, "settings.n: 2.5 is not a whole number"),
        (
            r#"{"n":"ten"}"#,
            "N must be a whole number from 2 to 64, not \"ten\"",
        ),
        (
            r#"{"n":10,"algorithm":"paxos"}"#,
            "\"paxos\" is not one of classic, modified or ring",
        ),
        (
            r#"{"n":10,"loss_percent":101}"#,
            "settings.loss_percent: 101 is out of range: choose 0 to 100",
        ),
        (
            r#"{"n":10,"seed":9007199254740992}"#,
            "settings.seed: 9007199254740992 is out of range",
        ),
        (
            r#"{"n":10,"colour":"red"}"#,
            "\"colour\" is not one of the fields",
        ),
    ] {
        let said = refused(&with_settings(settings));
        assert!(said.contains(expected), "{settings}: {said}");
    }
}

#[test]
fn times_past_the_pages_clock_are_refused_before_anything_runs() {
    // 1e10 µs froze the page for 6 to 11 s before it had a limit. T_M: one
    // message time, the longest a message takes (20 ms).
    let said = refused(&with_actions("[]", 10_000_000_000));
    assert!(
        said.contains("now_us: 10000000000 µs is 500000 T_M; the page's clock stops at 20000 T_M"),
        "{said}"
    );
    let said = refused(&with_actions("[]", 0).replace("\"now_us\":0", "\"now_us\":1e10"));
    assert!(said.contains("500000 T_M"), "{said}");
    let said = refused(&with_actions(r#"[{"at_us":1e12,"do":"heal"}]"#, 0));
    assert!(said.starts_with("action 1, at_us"), "{said}");
    // The limit itself loads.
    assert!(Scenario::from_json(&with_actions("[]", MAX_TIME_US)).is_ok());
}

#[test]
fn actions_naming_processes_that_do_not_exist_or_going_back_in_time_are_named() {
    for (actions, expected) in [
        (
            r#"[{"at_us":0,"do":"crash","node":70}]"#,
            "action 1, node: there is no process 70: this cluster has processes 1 to 10",
        ),
        (r#"[{"at_us":0,"do":"crash"}]"#, "\"node\" is missing"),
        (
            r#"[{"at_us":0,"do":"explode","node":3}]"#,
            "\"explode\" is not one of start_all, elect",
        ),
        (
            r#"[{"at_us":0,"do":"cut_both","a":3,"b":3}]"#,
            "a link joins two different processes",
        ),
        (
            r#"[{"at_us":0,"do":"isolate","group":[1,2,3,4,5,6,7,8,9,10]}]"#,
            "some processes but not all 10",
        ),
        (
            r#"[{"at_us":0,"do":"isolate","group":[4,4]}]"#,
            "process 4 is listed twice",
        ),
        (
            r#"[{"at_us":0,"do":"crash","node":3,"extra":1}]"#,
            "\"extra\" is not one of the fields",
        ),
        (
            r#"[{"at_us":40000,"do":"heal"},{"at_us":20000,"do":"heal"}]"#,
            "action 2: it happens at 1 T_M, before action 1 at 2 T_M",
        ),
        (
            r#"[{"at_us":0,"steps":5,"do":"heal"},{"at_us":0,"steps":2,"do":"heal"}]"#,
            "steps never go back",
        ),
    ] {
        let said = refused(&with_actions(actions, 0));
        assert!(said.contains(expected), "{actions}: {said}");
    }
}

#[test]
fn a_newer_version_is_refused_and_a_link_from_before_versions_reads_as_version_1() {
    let said = refused(&with_actions("[]", 0).replace("\"version\":1", "\"version\":2"));
    assert!(said.contains("this page reads version 1"), "{said}");
    let old = r#"{"settings":{"n":10,"algorithm":"classic","quorum":"none","preemption":"always","seed":0,"loss_percent":0},"actions":[{"at_us":0,"steps":0,"do":"elect","node":4}],"now_us":60000}"#;
    let scenario = Scenario::from_json(old).unwrap();
    assert_eq!(scenario.version, SCENARIO_VERSION);
}

#[test]
fn the_file_format_round_trips_and_starts_with_its_version() {
    let mut session = Session::new(Settings {
        n: 7,
        algorithm: AlgorithmChoice::Modified,
        seed: 9_007_199_254_740_991,
        loss_percent: 10,
        ..Settings::default()
    })
    .unwrap();
    session.act(Action::Elect { node: 2 }).unwrap();
    session.step_message().unwrap();
    session.act(Action::Isolate { group: vec![6, 7] }).unwrap();
    session.run_to_end().unwrap();
    let file = session.scenario().to_pretty_json();
    assert!(
        file.starts_with("{\n  \"version\": 1,\n  \"settings\": {"),
        "{file}"
    );
    let loaded = Session::from_scenario(&Scenario::from_json(&file).unwrap()).unwrap();
    assert_eq!(loaded.frame(), session.frame());
    assert_eq!(loaded.scenario(), session.scenario());
}

#[test]
fn a_long_scenario_replays_in_slices_of_a_bounded_number_of_events_to_the_same_state() {
    // 64 processes boot and then 2,000 message times of heartbeats: some 70,000 events.
    let mut session = Session::new(Settings {
        n: 64,
        loss_percent: 5,
        ..Settings::default()
    })
    .unwrap();
    session.act(Action::StartAll).unwrap();
    session.advance(1_000 * MESSAGE_DELAY_US).unwrap();
    session.act(Action::Crash { node: 64 }).unwrap();
    session.advance(1_000 * MESSAGE_DELAY_US).unwrap();
    let scenario = session.scenario();
    let events = session.simulation().trace().len();

    let mut loading = Session::loading(&scenario).unwrap();
    let budget = 2_000;
    let mut slices = 0;
    let mut last = 0.0;
    while !loading.catch_up(budget).unwrap() {
        slices += 1;
        let progress = loading.loaded();
        assert!(progress >= last && progress < 1.0, "{progress}");
        last = progress;
        assert!(slices < 1_000, "the replay ends");
    }
    assert!(
        slices >= 5,
        "{events} trace records in {slices} slices of {budget} events"
    );
    assert_eq!(loading.loaded(), 1.0);
    assert_eq!(loading.frame(), session.frame());
    assert_eq!(loading.trace_json_lines(), session.trace_json_lines());
}

#[test]
fn the_pages_clock_stops_at_its_limit_with_a_word() {
    let mut session = Session::new(Settings::default()).unwrap();
    session.act(Action::Elect { node: 10 }).unwrap();
    assert_eq!(
        session.advance(MAX_TIME_US + 1),
        Err(WebError::TimeLimit),
        "runs to the limit and says so"
    );
    assert_eq!(session.now_us(), MAX_TIME_US);
    assert_eq!(session.advance(1), Err(WebError::TimeLimit));
    assert_eq!(session.now_us(), MAX_TIME_US);
    assert!(WebError::TimeLimit.to_string().contains("20000 T_M"));
    assert_eq!(session.delay_us(), MESSAGE_DELAY_US);
}

#[test]
fn the_fields_say_which_one_is_wrong_and_what_to_type() {
    let fields = |n: &str, seed: &str, loss: &str| Fields {
        n: n.into(),
        algorithm: "classic".into(),
        quorum: "none".into(),
        preemption: "always".into(),
        seed: seed.into(),
        loss: loss.into(),
    };
    assert_eq!(
        fields("10", "0", "0").settings().unwrap(),
        Settings::default()
    );
    let errors = fields("1000", "abc", "-5").settings().unwrap_err();
    let said: Vec<(&str, &str)> = errors
        .iter()
        .map(|e| (e.field, e.message.as_str()))
        .collect();
    assert_eq!(
        said,
        [
            ("n", "N = 1000: choose 2 to 64"),
            (
                "seed",
                "seed: \"abc\" is not a whole number: type 0 to 9007199254740991"
            ),
            ("loss", "loss % = -5 is below zero: choose 0 to 100"),
        ]
    );
    let errors = fields("", "0", "0").settings().unwrap_err();
    assert_eq!(
        errors[0].message,
        "N is empty: type a whole number from 2 to 64"
    );
}

#[test]
fn the_initiators_box_names_what_is_wrong() {
    use bully_web::fields::initiators;
    assert_eq!(initiators("4", 10), Ok(vec![4]));
    assert_eq!(initiators(" 1, 3 3 ", 10), Ok(vec![1, 3]));
    let said = initiators("", 10).unwrap_err().to_string();
    assert_eq!(
        said,
        "initiators: type the processes that call the election, e.g. 4 or 1, 3"
    );
    let said = initiators("4, x", 10).unwrap_err().to_string();
    assert!(said.contains("\"x\" is not a process number"), "{said}");
    let said = initiators("11", 10).unwrap_err().to_string();
    assert!(said.contains("there is no process 11"), "{said}");
}

#[test]
fn the_example_in_the_format_documentation_loads_and_crowns_9() {
    let doc = include_str!("../SCENARIO-FORMAT.md");
    let start = doc.find("```json\n").expect("an example") + "```json\n".len();
    let end = start + doc[start..].find("```").unwrap();
    let scenario = Scenario::from_json(&doc[start..end]).unwrap();
    let session = Session::from_scenario(&scenario).unwrap();
    let frame = session.frame();
    assert_eq!((frame.agreed, frame.election_messages), (Some(9), 43));
    assert_eq!(frame.now_us, 150_000);
}
