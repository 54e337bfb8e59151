//! Reading a scenario somebody brings (a link, pasted text, a file): every field
//! checked against the page's limits before anything runs, and every problem
//! named in plain words with its place ("action 3: there is no process 70 ...").
//!
//! The text is parsed to a JSON value first and read field by field, rather than
//! deserialized into the types directly, so that the messages can say what a
//! student needs to hear instead of the parser's ("invalid value: integer `-5`,
//! expected u64 at line 1 column 7").
//!
//! [`Scenario::from_json`] is defined here, beside the reading it does, so that
//! the scenario's types need nothing from this file.

use serde_json::{Map, Value};

use crate::clock::{MAX_TIME_TM, MAX_TIME_US, MESSAGE_DELAY_US};
use crate::error::WebError;
use crate::limits::{MAX_ACTIONS, MAX_MEMBERS, MAX_SCENARIO_BYTES, MAX_SEED};
use crate::scenario::{
    Action, AlgorithmChoice, PreemptionChoice, QuorumChoice, SCENARIO_VERSION, Scenario, Settings,
    Timed,
};

const ACTIONS: &str =
    "start_all, elect, notice, crash, recover, cut_one_way, cut_both, isolate or heal";

impl Scenario {
    /// Reads a scenario from JSON: its shape, its ranges (the page's limits on N,
    /// times, rates and ids) and the order of its actions, each problem in plain
    /// words.
    pub fn from_json(json: &str) -> Result<Scenario, WebError> {
        scenario(json)
    }
}

/// Reads and checks a scenario.
pub(crate) fn scenario(text: &str) -> Result<Scenario, WebError> {
    if text.len() > MAX_SCENARIO_BYTES {
        return Err(WebError::scenario(
            "",
            format!(
                "the text is {} bytes long; a scenario is at most {MAX_SCENARIO_BYTES} bytes (1 MiB)",
                text.len()
            ),
        ));
    }
    if text.trim().is_empty() {
        return Err(WebError::Empty);
    }
    let value: Value = serde_json::from_str(text).map_err(not_json)?;
    let root = object(&value, "")?;
    only(root, "", &["version", "settings", "actions", "now_us"])?;
    let version = match root.get("version") {
        None => 1,
        Some(v) => whole(v, "version", 0, u64::MAX)?,
    };
    if version != SCENARIO_VERSION {
        return Err(WebError::scenario(
            "version",
            format!(
                "this is a scenario of version {version}; this page reads version {SCENARIO_VERSION} \
                 (a newer page may have written it)"
            ),
        ));
    }
    let settings = settings(required(root, "settings", "")?)?;
    let now_us = time(required(root, "now_us", "")?, "now_us")?;
    let list = required(root, "actions", "")?
        .as_array()
        .ok_or_else(|| WebError::scenario("actions", "must be a list ([...]) of actions"))?;
    if list.len() > MAX_ACTIONS {
        return Err(WebError::scenario(
            "actions",
            format!(
                "there are {} actions; this page replays at most {MAX_ACTIONS}",
                list.len()
            ),
        ));
    }
    let mut actions: Vec<Timed> = Vec::with_capacity(list.len());
    for (index, value) in list.iter().enumerate() {
        let place = format!("action {}", index + 1);
        let timed = action(value, &place, settings.n)?;
        // Times are told in T_M, message times (the longest a message takes).
        if let Some(before) = actions.last() {
            if timed.at_us < before.at_us {
                return Err(WebError::scenario(
                    place,
                    format!(
                        "it happens at {} T_M, before action {} at {} T_M: actions go in time order",
                        in_delays(timed.at_us),
                        index,
                        in_delays(before.at_us)
                    ),
                ));
            }
            if let (Some(now), Some(then)) = (timed.steps, before.steps) {
                if now < then {
                    return Err(WebError::scenario(
                        place,
                        format!(
                            "its \"steps\" ({now}) is below action {index}'s ({then}): steps never go back"
                        ),
                    ));
                }
            }
        }
        actions.push(timed);
    }
    Ok(Scenario {
        version,
        settings,
        actions,
        now_us,
    })
}

/// Reads the `settings` object.
pub(crate) fn settings(value: &Value) -> Result<Settings, WebError> {
    let place = "settings";
    let map = object(value, place)?;
    only(
        map,
        place,
        &[
            "n",
            "algorithm",
            "quorum",
            "preemption",
            "seed",
            "loss_percent",
        ],
    )?;
    let n = match required(map, "n", place)? {
        Value::Number(_) => {
            let n = whole(&map["n"], "settings.n", 0, u64::MAX)?;
            if !(2..=MAX_MEMBERS).contains(&n) {
                return Err(WebError::Members(n));
            }
            n
        }
        other => {
            return Err(WebError::scenario(
                "settings.n",
                format!(
                    "N must be a whole number from 2 to {MAX_MEMBERS}, not {}",
                    shown(other)
                ),
            ));
        }
    };
    let algorithm = match map.get("algorithm") {
        None => AlgorithmChoice::Classic,
        Some(v) => match v.as_str() {
            Some("classic") => AlgorithmChoice::Classic,
            Some("modified") => AlgorithmChoice::Modified,
            Some("ring") => AlgorithmChoice::Ring,
            _ => return Err(choice("settings.algorithm", v, "classic, modified or ring")),
        },
    };
    let quorum = match map.get("quorum") {
        None => QuorumChoice::None,
        Some(v) => match v.as_str() {
            Some("none") => QuorumChoice::None,
            Some("majority") => QuorumChoice::Majority,
            _ => return Err(choice("settings.quorum", v, "none or majority")),
        },
    };
    let preemption = match map.get("preemption") {
        None => PreemptionChoice::Always,
        Some(v) => match v.as_str() {
            Some("always") => PreemptionChoice::Always,
            Some("never") => PreemptionChoice::Never,
            _ => return Err(choice("settings.preemption", v, "always or never")),
        },
    };
    let seed = match map.get("seed") {
        None => 0,
        Some(v) => whole(v, "settings.seed", 0, MAX_SEED)?,
    };
    let loss_percent = match map.get("loss_percent") {
        None => 0,
        Some(v) => whole(v, "settings.loss_percent", 0, 100)?,
    };
    Ok(Settings {
        n,
        algorithm,
        quorum,
        preemption,
        seed,
        loss_percent,
    })
}

fn action(value: &Value, place: &str, n: u64) -> Result<Timed, WebError> {
    let map = object(value, place)?;
    let at_us = time(required(map, "at_us", place)?, &format!("{place}, at_us"))?;
    let steps = match map.get("steps") {
        None | Some(Value::Null) => None,
        Some(v) => Some(whole(v, &format!("{place}, steps"), 0, u64::MAX)?),
    };
    let kind = required(map, "do", place)?;
    let id = |field: &str| -> Result<u64, WebError> {
        let place = format!("{place}, {field}");
        let id = whole(required(map, field, &place)?, &place, 0, u64::MAX)?;
        if (1..=n).contains(&id) {
            Ok(id)
        } else {
            Err(WebError::scenario(
                place,
                format!("there is no process {id}: this cluster has processes 1 to {n}"),
            ))
        }
    };
    let fields: &[&str];
    let action = match kind.as_str() {
        Some("start_all") => {
            fields = &[];
            Action::StartAll
        }
        Some("heal") => {
            fields = &[];
            Action::Heal
        }
        Some("elect") => {
            fields = &["node"];
            Action::Elect { node: id("node")? }
        }
        Some("notice") => {
            fields = &["node"];
            Action::Notice { node: id("node")? }
        }
        Some("crash") => {
            fields = &["node"];
            Action::Crash { node: id("node")? }
        }
        Some("recover") => {
            fields = &["node"];
            Action::Recover { node: id("node")? }
        }
        Some("cut_one_way") => {
            fields = &["from", "to"];
            let (from, to) = (id("from")?, id("to")?);
            distinct(place, from, to)?;
            Action::CutOneWay { from, to }
        }
        Some("cut_both") => {
            fields = &["a", "b"];
            let (a, b) = (id("a")?, id("b")?);
            distinct(place, a, b)?;
            Action::CutBoth { a, b }
        }
        Some("isolate") => {
            fields = &["group"];
            let list = required(map, "group", place)?.as_array().ok_or_else(|| {
                WebError::scenario(
                    format!("{place}, group"),
                    "must be a list of process numbers, e.g. [8, 9, 10]",
                )
            })?;
            let mut group = Vec::with_capacity(list.len());
            for (index, member) in list.iter().enumerate() {
                let where_ = format!("{place}, group member {}", index + 1);
                let id = whole(member, &where_, 0, u64::MAX)?;
                if !(1..=n).contains(&id) {
                    return Err(WebError::scenario(
                        where_,
                        format!("there is no process {id}: this cluster has processes 1 to {n}"),
                    ));
                }
                if group.contains(&id) {
                    return Err(WebError::scenario(
                        where_,
                        format!("process {id} is listed twice"),
                    ));
                }
                group.push(id);
            }
            if group.is_empty() || group.len() as u64 >= n {
                return Err(WebError::scenario(
                    format!("{place}, group"),
                    format!("a group to isolate needs some processes but not all {n}"),
                ));
            }
            Action::Isolate { group }
        }
        _ => return Err(choice(&format!("{place}, do"), kind, ACTIONS)),
    };
    let mut allowed = vec!["at_us", "steps", "do"];
    allowed.extend_from_slice(fields);
    only(map, place, &allowed)?;
    Ok(Timed {
        at_us,
        steps,
        action,
    })
}

fn distinct(place: &str, a: u64, b: u64) -> Result<(), WebError> {
    if a == b {
        Err(WebError::scenario(
            place,
            format!("a link joins two different processes, not {a} and {b}"),
        ))
    } else {
        Ok(())
    }
}

/// The parser's complaint about text that is not JSON at all, in words.
fn not_json(error: serde_json::Error) -> WebError {
    use serde_json::error::Category;
    let at = format!("line {}, column {}", error.line(), error.column());
    let problem = match error.classify() {
        Category::Eof => format!(
            "the text stops in the middle ({at}), as a link or file cut off does: copy all of it"
        ),
        _ => format!(
            "this is not a scenario: it is not JSON (something is out of place at {at}); \
             a scenario starts with {{\"version\""
        ),
    };
    WebError::scenario("", problem)
}

fn object<'a>(value: &'a Value, place: &str) -> Result<&'a Map<String, Value>, WebError> {
    value.as_object().ok_or_else(|| {
        WebError::scenario(
            place,
            if place.is_empty() {
                format!(
                    "this is not a scenario: a scenario is an object ({{...}}), not {}",
                    shown(value)
                )
            } else {
                format!("must be an object ({{...}}), not {}", shown(value))
            },
        )
    })
}

fn required<'a>(
    map: &'a Map<String, Value>,
    field: &str,
    place: &str,
) -> Result<&'a Value, WebError> {
    map.get(field).ok_or_else(|| {
        WebError::scenario(
            place.to_owned(),
            format!("\"{field}\" is missing (the scenario may be cut off)"),
        )
    })
}

fn only(map: &Map<String, Value>, place: &str, allowed: &[&str]) -> Result<(), WebError> {
    match map.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(key) => Err(WebError::scenario(
            place.to_owned(),
            format!("\"{key}\" is not one of the fields {}", allowed.join(", ")),
        )),
        None => Ok(()),
    }
}

/// A whole number in `low..=high`; `1e10` counts as whole.
fn whole(value: &Value, place: &str, low: u64, high: u64) -> Result<u64, WebError> {
    let number = match value {
        Value::Number(number) => number,
        other => {
            return Err(WebError::scenario(
                place,
                format!("must be a whole number, not {}", shown(other)),
            ));
        }
    };
    let whole = match (number.as_u64(), number.as_f64()) {
        (Some(whole), _) => Some(whole),
        // 2^64 as a double: past every range below.
        (None, Some(x)) if x >= 0.0 && x.fract() == 0.0 && x < 18_446_744_073_709_551_616.0 => {
            Some(x as u64)
        }
        _ => None,
    };
    match whole {
        Some(whole) if (low..=high).contains(&whole) => Ok(whole),
        Some(whole) => Err(WebError::scenario(
            place,
            format!("{whole} is out of range: choose {low} to {high}"),
        )),
        None if number.as_f64().is_some_and(|x| x < 0.0) => Err(WebError::scenario(
            place,
            format!("{number} is below zero: choose {low} to {high}"),
        )),
        None => Err(WebError::scenario(
            place,
            format!("{number} is not a whole number: choose {low} to {high}"),
        )),
    }
}

/// A simulated time in microseconds within the page's clock.
fn time(value: &Value, place: &str) -> Result<u64, WebError> {
    let us = whole(value, place, 0, u64::MAX)?;
    if us > MAX_TIME_US {
        return Err(WebError::scenario(
            place,
            format!(
                "{us} µs is {} T_M; the page's clock stops at {MAX_TIME_TM} T_M ({MAX_TIME_US} µs)",
                in_delays(us)
            ),
        ));
    }
    Ok(us)
}

fn choice(place: &str, value: &Value, choices: &str) -> WebError {
    WebError::scenario(place, format!("{} is not one of {choices}", shown(value)))
}

/// A value as the message quotes it, cut short.
fn shown(value: &Value) -> String {
    let text = match value {
        Value::Null => "null (nothing)".to_owned(),
        Value::Object(_) => "an object".to_owned(),
        Value::Array(_) => "a list".to_owned(),
        other => other.to_string(),
    };
    if text.chars().count() > 40 {
        format!("{}...", text.chars().take(40).collect::<String>())
    } else {
        text
    }
}

/// Microseconds as message times, for messages.
fn in_delays(us: u64) -> String {
    let delays = us as f64 / MESSAGE_DELAY_US as f64;
    if delays.fract() == 0.0 {
        format!("{delays:.0}")
    } else {
        format!("{delays:.2}")
    }
}
