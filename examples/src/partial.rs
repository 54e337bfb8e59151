//! `simulate partial`'s report: the partial-partition sweep
//! ([`bully_sim::partial::measure`]: every scenario for every hub placement,
//! algorithm and quorum, over many seeds, summarised per row) rendered as
//! text or CSV.

use std::fmt::Write as _;
use std::time::Duration;

use bully_core::NodeId;
use bully_sim::partial::{PartialRow, Scenario};

use crate::measure;
use crate::report::columns;

/// The header of `simulate partial --format csv`: one line per (scenario, hub
/// placement, algorithm, quorum). Times in milliseconds, empty for "never";
/// availability as a fraction of the window.
pub const PARTIAL_CSV_HEADER: &str = "scenario,placement,hub,algorithm,quorum,seeds,\
stable_ms_median,stable_ms_worst,availability_median,availability_min,term_growth_max,\
election_messages_median,election_messages_max,heal_ms_median,heal_ms_worst,\
expected_leader,seeds_ending_with_expected,overlapping_leaderships,same_term_leaders,violations";

/// The scenario in a sentence, for the text report.
pub fn describe(scenario: Scenario) -> &'static str {
    match scenario {
        Scenario::QuorumLoss => {
            "every link cut except the hub's; the leader 5 reaches only the hub. Only the hub reaches a quorum."
        }
        Scenario::Constrained => {
            "the leader 5 cut off; the other three reach only the hub. Only the hub reaches a quorum."
        }
        Scenario::Chained3 => {
            "three members in a line: the leader 3 reaches only the middle (the hub), which reaches both ends."
        }
        Scenario::Chained5 => {
            "the leader 5 reaches only the hub, the hub reaches all, the other three reach each other."
        }
        Scenario::LeaderIsolated => "the leader 5 cut off from everyone, both ways.",
        Scenario::LeaderSendOnly => "the leader 5 can send but hears nobody.",
        Scenario::LeaderReceiveOnly => "the leader 5 hears everybody but can send to nobody.",
        _ => "",
    }
}

fn millis_text(time: Option<Duration>) -> String {
    time.map_or_else(|| "never".to_owned(), |t| t.as_millis().to_string())
}

fn millis_csv(time: Option<Duration>) -> String {
    time.map_or_else(String::new, |t| t.as_millis().to_string())
}

fn id_text(id: Option<NodeId>) -> String {
    id.map_or_else(|| "-".to_owned(), |id| id.0.to_string())
}

fn percent(fraction: f64) -> String {
    format!("{:.1}", fraction * 100.0)
}

/// `partial` as text: what is measured, then one table per scenario.
pub fn text(rows: &[PartialRow]) -> String {
    let seeds = rows.first().map_or(0, |row| row.reports.len());
    let mut out = format!(
        "Partial connectivity: five members (three in chained-3) with the default timings,\n\
         settled with the highest leading, then cut as each scenario says for 20 s, then\n\
         healed; {seeds} seeds per row (the seed also shifts the cut's phase in the heartbeat).\n\
         An effective leader leads and is followed in its term by a majority, itself\n\
         included, over links working both ways; expected = the highest member that\n\
         reaches a majority over such links.\n\
         stable ms: from the cut until an effective leader held to the end of the window\n\
         (median, worst; never = none at the end). avail %: share of the window with an\n\
         effective leader (median, min). +terms: most growth of the highest term. msgs:\n\
         election messages in the window, heartbeats and acks excluded (median, max).\n\
         heal ms: from the heal until every member names one leader (median, worst).\n\
         ended: seeds whose effective leader at the end was the expected one. overlap,\n\
         same-term: two leaders at once, two leaders of one term (sums over the seeds).\n"
    );
    let headers = [
        "hub",
        "algorithm",
        "quorum",
        "stable ms",
        "worst",
        "avail %",
        "min",
        "+terms",
        "msgs",
        "max",
        "heal ms",
        "worst",
        "expected",
        "ended",
        "overlap",
        "same-term",
    ];
    let mut scenario = None;
    let mut cells: Vec<Vec<String>> = Vec::new();
    let flush = |out: &mut String, scenario: Option<Scenario>, cells: &mut Vec<Vec<String>>| {
        if let Some(scenario) = scenario {
            let _ = writeln!(out, "\n{}: {}", scenario.name(), describe(scenario));
            out.push_str(&columns(&headers, cells));
        }
        cells.clear();
    };
    for row in rows {
        if scenario != Some(row.run.scenario) {
            flush(&mut out, scenario, &mut cells);
            scenario = Some(row.run.scenario);
        }
        cells.push(vec![
            row.hub()
                .map_or_else(|| "-".to_owned(), |hub| hub.0.to_string()),
            measure::algorithm_name(row.algorithm).to_owned(),
            row.quorum.name().to_owned(),
            millis_text(row.stable_median()),
            millis_text(row.stable_worst()),
            percent(row.availability_median()),
            percent(row.availability_min()),
            row.term_growth_max().to_string(),
            row.messages_median().to_string(),
            row.messages_max().to_string(),
            millis_text(row.heal_median()),
            millis_text(row.heal_worst()),
            id_text(row.expected()),
            format!("{}/{}", row.ending_with_expected(), row.reports.len()),
            row.overlapping_leaderships().to_string(),
            row.same_term_leaders().to_string(),
        ]);
    }
    flush(&mut out, scenario, &mut cells);
    let violations: usize = rows.iter().map(PartialRow::violations).sum();
    let _ = writeln!(
        out,
        "\nSafety violations flagged by the simulator over all rows: {violations}."
    );
    out
}

/// `partial` as CSV, under [`PARTIAL_CSV_HEADER`], one line per row.
pub fn csv(rows: &[PartialRow]) -> String {
    let mut out = format!("{PARTIAL_CSV_HEADER}\n");
    for row in rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{:.3},{:.3},{},{},{},{},{},{},{},{},{},{}",
            row.run.scenario.name(),
            row.run.placement.name(),
            row.hub().map_or_else(String::new, |hub| hub.0.to_string()),
            measure::algorithm_name(row.algorithm),
            row.quorum.name(),
            row.reports.len(),
            millis_csv(row.stable_median()),
            millis_csv(row.stable_worst()),
            row.availability_median(),
            row.availability_min(),
            row.term_growth_max(),
            row.messages_median(),
            row.messages_max(),
            millis_csv(row.heal_median()),
            millis_csv(row.heal_worst()),
            row.expected()
                .map_or_else(String::new, |id| id.0.to_string()),
            row.ending_with_expected(),
            row.overlapping_leaderships(),
            row.same_term_leaders(),
            row.violations(),
        );
    }
    out
}
