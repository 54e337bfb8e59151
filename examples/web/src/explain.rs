//! The numbers explained where they appear: for the run on the page, the measured
//! count of election messages beside the formulas the sources give for that
//! setting (with their equation or figure and source), this implementation's
//! count, and one sentence on why they differ where they do. Where no source
//! publishes a count (the ring, the crashed coordinator counted among the N) the
//! page says so and shows the count derived here, which the tests check against
//! the simulator for every N and P the page offers.

use serde::Serialize;

use crate::episode::Episode;
use crate::scenario::{AlgorithmChoice, QuorumChoice, Settings};
use bully_sim::paper;

/// Soundarabai et al.'s paper, by its authors and title.
pub const SOUNDARABAI_PAPER: &str =
    "Soundarabai et al., \"Improved Bully Election Algorithm for Distributed Systems\"";
/// The lecture notes that give the synchronous model's timing, the best case and
/// the ring, by their title.
pub const LECTURE_NOTES_TITLE: &str =
    "\"Election Algorithm in Distributed Systems\" (lecture notes)";
/// How a row names the paper (the full title is in [`Explanation::sources`]).
const SOUNDARABAI: &str = "Soundarabai et al.";
/// How a row names the lecture notes.
const LECTURE_NOTES: &str = "the lecture notes \"Election Algorithm in Distributed Systems\"";

/// What the page shows beside the measured count.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Explanation {
    /// The setting, as a heading.
    pub title: String,
    /// The run's numbers in words (N, P, who crashed).
    pub setting: String,
    /// Whether this is the setting of Soundarabai et al.'s Table 1.
    pub table_1: bool,
    /// Election messages counted (heartbeats left out).
    pub measured: u64,
    /// The formulas that apply, the sources' first.
    pub rows: Vec<Formula>,
    /// Why a source's count differs from the measured one, or why none applies.
    pub why: Option<String>,
    /// The documents the rows cite, by title.
    pub sources: Vec<&'static str>,
}

/// One formula and its value for the run's N and P.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Formula {
    /// Where it comes from: "Soundarabai et al., equation (3)", or "derived here".
    pub source: String,
    /// The formula, as the source writes it.
    pub formula: String,
    /// Its value for this run.
    pub value: u64,
    /// Whether the value is the measured count.
    pub matches: bool,
}

fn row(
    source: impl Into<String>,
    formula: impl Into<String>,
    value: u64,
    measured: u64,
) -> Formula {
    Formula {
        source: source.into(),
        formula: formula.into(),
        value,
        matches: value == measured,
    }
}

/// The explanation for the current `episode` of a cluster built with `settings`,
/// `joined` the members that joined it through their own timeouts; `None` while
/// nothing has happened.
pub(crate) fn explain(
    settings: &Settings,
    episode: &Episode,
    joined: &[u64],
    measured: u64,
) -> Option<Explanation> {
    let n = settings.n;
    let algorithm = settings.algorithm;
    let other = |why: String| {
        let mut letters = why.chars();
        let why = match letters.next() {
            // The reasons are written here and start with an ASCII letter; this
            // keeps Unicode's case tables out of the module.
            Some(first) => format!("{}{}.", first.to_ascii_uppercase(), letters.as_str()),
            None => why,
        };
        Some(Explanation {
            title: "No published count applies to this run".to_owned(),
            setting: format!("N = {n} processes, {}", name(algorithm)),
            table_1: false,
            measured,
            rows: Vec::new(),
            why: Some(why),
            sources: Vec::new(),
        })
    };
    let (p, crashed) = match *episode {
        Episode::Idle if measured == 0 => return None,
        Episode::Idle => return other("nothing started this run by hand".to_owned()),
        Episode::Other(why) => return other(why.to_owned()),
        Episode::Fresh { p } => (p, None),
        Episode::CoordinatorCrashed { p: Some(p), knows } => (p, Some((true, knows))),
        Episode::CoordinatorCrashed { p: None, .. } => match joined.first() {
            Some(&p) => (p, Some((false, true))),
            None => return other("the coordinator crashed and nobody has noticed yet".to_owned()),
        },
    };
    if settings.loss_percent > 0 {
        return other(format!(
            "links lose {} % of the messages here; the sources count reliable links",
            settings.loss_percent
        ));
    }
    if settings.quorum != QuorumChoice::None {
        return other(
            "a quorum is on: its acknowledgements and probes are messages the sources, which \
             count Bully without one, do not have"
                .to_owned(),
        );
    }
    let others: Vec<String> = joined
        .iter()
        .filter(|&&id| id != p)
        .map(u64::to_string)
        .collect();
    if !others.is_empty() {
        return other(format!(
            "process{} {} joined on {} own (a leader timeout ran out) while the election \
             ran, so several elections overlap and no formula counts them",
            if others.len() > 1 { "es" } else { "" },
            others.join(", "),
            if others.len() > 1 { "their" } else { "its" },
        ));
    }
    Some(match crashed {
        Some((told, knows)) => crashed_coordinator(algorithm, n, p, measured, told, knows),
        None => fresh(algorithm, n, p, measured),
    })
}

fn name(algorithm: AlgorithmChoice) -> &'static str {
    match algorithm {
        AlgorithmChoice::Classic => "classic Bully",
        AlgorithmChoice::Modified => "modified Bully",
        AlgorithmChoice::Ring => "ring",
    }
}

/// One process of a fresh cluster calls the election: Table 1's setting for the
/// two Bully algorithms.
fn fresh(algorithm: AlgorithmChoice, n: u64, p: u64, measured: u64) -> Explanation {
    let setting = format!("N = {n} processes, all up, nobody leading; P = {p} calls the election");
    let table_row = |column: &str, value: Option<u64>| {
        value.map(|value| {
            row(
                format!("{SOUNDARABAI}, Table 1, row N = {n}"),
                format!("{column} column"),
                value,
                measured,
            )
        })
    };
    let table_note = |formula: &str| {
        if p != 1 {
            " Table 1 lists P = 1 only (the lowest process calls the election); the equation \
             above is its general form."
                .to_owned()
        } else if paper::table_1(n).is_none() {
            format!(
                " Table 1 lists N = 5, 10, 15, 20 and 25; {formula} gives its count for N = {n}."
            )
        } else {
            String::new()
        }
    };
    match algorithm {
        AlgorithmChoice::Classic => {
            let mut rows = vec![row(
                format!("{SOUNDARABAI}, equation (3)"),
                "(N − P + 1)(N − P) + N − 1",
                paper::equation_3(n, p),
                measured,
            )];
            if p == 1 {
                rows.push(row(
                    format!("{SOUNDARABAI}, equation (4), P = 1"),
                    "N² − 1",
                    paper::equation_4(n),
                    measured,
                ));
            }
            rows.extend(table_row(
                "Bully",
                (p == 1)
                    .then(|| paper::table_1(n))
                    .flatten()
                    .map(|(c, _)| c),
            ));
            let why = format!(
                "Elections go to every higher process, each answers and holds its own election; \
                 the highest announces to the N − 1 others.{}",
                table_note("equation (4)")
            );
            Explanation {
                title: "Classic Bully, one process calls an election (Table 1's setting)"
                    .to_owned(),
                setting,
                table_1: true,
                measured,
                rows,
                why: Some(why),
                sources: vec![SOUNDARABAI_PAPER],
            }
        }
        AlgorithmChoice::Modified => {
            let mut rows = vec![row(
                format!("{SOUNDARABAI}, equation (1)"),
                "2(N − P) + N",
                paper::equation_1(n, p),
                measured,
            )];
            let why = if p >= n {
                rows.push(row(
                    "this implementation (the highest announces at once)",
                    "N − 1",
                    paper::modified_implementation(n, p),
                    measured,
                ));
                "P is the highest process: with nobody above it to ask it announces at once to \
                 the N − 1 others, where equation (1) still counts a round of Elections and \
                 answers (step 1(iv): \"if no one responds, P wins\")."
                    .to_owned()
            } else {
                rows.push(row(
                    format!("{SOUNDARABAI}, Figure 6's log and step 1(i)"),
                    "3N − P − 1",
                    paper::modified_implementation(n, p),
                    measured,
                ));
                if p == 1 {
                    rows.extend(table_row(
                        "Modified Bully",
                        paper::table_1(n).map(|(_, m)| m),
                    ));
                    format!(
                        "At P = 1 nobody is below the initiator, so equation (1) and Figure 6 agree: \
                         3N − 2, Table 1's column.{}",
                        table_note("3N − 2")
                    )
                } else {
                    format!(
                        "Equation (1) leaves out the P − 1 = {} Elections that P sends to the \
                         processes below it, which the paper's own Figure 6 log (4 → 1, 2, 3) and \
                         step 1(i) (\"P sends an ELECTION message to all processes\") do send; \
                         at P = 1 both give 3N − 2, Table 1's column.",
                        p - 1
                    )
                }
            };
            Explanation {
                title: "Modified Bully, one process calls an election (Table 1's setting)"
                    .to_owned(),
                setting,
                table_1: true,
                measured,
                rows,
                why: Some(why),
                sources: vec![SOUNDARABAI_PAPER],
            }
        }
        AlgorithmChoice::Ring => Explanation {
            title: "Ring, one process calls an election".to_owned(),
            setting,
            table_1: false,
            measured,
            rows: vec![row(
                "derived here: the token's N hops and N − 1 more, each acknowledged",
                "4N − 2",
                paper::ring_implementation(n),
                measured,
            )],
            why: Some(format!(
                "No count is published for the ring: {LECTURE_NOTES} describe it without one, and \
                 Soundarabai et al.'s Table 1 compares the two Bully algorithms only."
            )),
            sources: vec![LECTURE_NOTES_TITLE],
        },
    }
}

/// The highest process led and crashed; `p` noticed (by hand when `told`, else
/// by its own leader timeout, first of all), or called an election without
/// knowing (`!knows`).
fn crashed_coordinator(
    algorithm: AlgorithmChoice,
    n: u64,
    p: u64,
    measured: u64,
    told: bool,
    knows: bool,
) -> Explanation {
    if !knows {
        return unknowing(algorithm, n, p, measured);
    }
    let how = if told {
        "was told to notice"
    } else {
        "noticed first, when its own leader timeout ran out (they are staggered by rank, highest first)"
    };
    let setting = format!(
        "N = {n} processes; the coordinator, {n}, crashed; P = {p} {how}; N − 1 = {} are up",
        n - 1
    );
    let live = n - 1;
    let highest_live = p == live;
    let derived = "derived here: no formula is published with the crashed coordinator among the N";
    let best_case = || {
        row(
            format!("{LECTURE_NOTES}, best case"),
            "N − 2",
            n - 2,
            measured,
        )
    };
    let (title, rows, why, sources) = match algorithm {
        AlgorithmChoice::Classic => {
            let mut rows = vec![
                row(
                    format!("{SOUNDARABAI}, equation (3), for the N − 1 live processes"),
                    "(N − P)(N − P − 1) + N − 2",
                    paper::equation_3(live, p),
                    measured,
                ),
                row(
                    derived,
                    "(N − P)² + N − 3",
                    (n - p) * (n - p) + n - 3,
                    measured,
                ),
            ];
            let why = if highest_live {
                rows.push(best_case());
                "P is the highest live process and knows the coordinator is down: it announces \
                 at once to the N − 2 others."
                    .to_owned()
            } else {
                format!(
                    "Each of the N − P − 1 = {} live processes above P also sends an Election to \
                     the crashed coordinator, which only P knows is down; the paper counts the \
                     live processes only.",
                    n - p - 1
                )
            };
            (
                "Classic Bully, the coordinator crashed",
                rows,
                why,
                vec![SOUNDARABAI_PAPER, LECTURE_NOTES_TITLE],
            )
        }
        AlgorithmChoice::Modified => {
            let mut rows = vec![row(
                format!("{SOUNDARABAI}, equation (1), for the N − 1 live processes"),
                "2(N − 1 − P) + N − 1",
                paper::equation_1(live, p),
                measured,
            )];
            let why = if highest_live {
                rows.push(row(derived, "N − 2", n - 2, measured));
                rows.push(best_case());
                "P is the highest live process and knows the coordinator is down: it announces \
                 at once to the N − 2 others, where equation (1) counts a round of Elections."
                    .to_owned()
            } else {
                if p == 1 {
                    rows.push(row(
                        format!("{SOUNDARABAI}, equation (6), n = N − 1 live processes, P = 1"),
                        "3n − 1",
                        paper::equation_6(live),
                        measured,
                    ));
                }
                rows.push(row(derived, "3N − P − 3", 3 * n - p - 3, measured));
                format!(
                    "Equation (1) leaves out the P − 1 = {} Elections to the processes below P \
                     and the check the chosen process sends to the crashed coordinator, which \
                     equation (6) counts (given for P = 1 only).",
                    p - 1
                )
            };
            (
                "Modified Bully, the coordinator crashed",
                rows,
                why,
                vec![SOUNDARABAI_PAPER, LECTURE_NOTES_TITLE],
            )
        }
        AlgorithmChoice::Ring => {
            let (formula, value, why) = if highest_live {
                (
                    "4N − 6",
                    4 * n - 6,
                    "No count is published for the ring. Here: the ring of the N − 1 live \
                     processes, 4(N − 1) − 2; P, the highest live process, knows the coordinator \
                     is down and passes the token straight on.",
                )
            } else {
                (
                    "4N − 5",
                    4 * n - 5,
                    "No count is published for the ring. Here: the ring of the N − 1 live \
                     processes, 4(N − 1) − 2, plus the hop from N − 1 to the crashed coordinator, \
                     which goes unanswered (N − 1 does not know it is down).",
                )
            };
            (
                "Ring, the coordinator crashed",
                vec![row(derived, formula, value, measured)],
                why.to_owned(),
                vec![LECTURE_NOTES_TITLE],
            )
        }
    };
    Explanation {
        title: title.to_owned(),
        setting,
        table_1: false,
        measured,
        rows,
        why: Some(why),
        sources,
    }
}

/// The coordinator crashed and `p` calls an election without knowing it: as
/// [`crashed_coordinator`], and `p` asks the crashed coordinator too.
fn unknowing(algorithm: AlgorithmChoice, n: u64, p: u64, measured: u64) -> Explanation {
    let live = n - 1;
    let setting = format!(
        "N = {n} processes; the coordinator, {n}, crashed; P = {p} calls an election without \
         knowing it; N − 1 = {live} are up"
    );
    let derived = "derived here: no formula is published with the crashed coordinator among the N";
    let (title, rows, why) = match algorithm {
        AlgorithmChoice::Classic => (
            "Classic Bully, the coordinator crashed",
            vec![
                row(
                    format!("{SOUNDARABAI}, equation (3), for the N − 1 live processes"),
                    "(N − P)(N − P − 1) + N − 2",
                    paper::equation_3(live, p),
                    measured,
                ),
                row(
                    derived,
                    "(N − P)² + N − 2",
                    (n - p) * (n - p) + n - 2,
                    measured,
                ),
            ],
            format!(
                "P and each of the N − P − 1 = {} live processes above it also send an Election \
                 to the crashed coordinator, which none of them knows is down; the paper counts \
                 the live processes only.",
                n - p - 1
            ),
        ),
        AlgorithmChoice::Modified if p == live => (
            "Modified Bully, the coordinator crashed",
            vec![
                row(
                    format!("{SOUNDARABAI}, equation (1), for the N − 1 live processes"),
                    "2(N − 1 − P) + N − 1",
                    paper::equation_1(live, p),
                    measured,
                ),
                row(derived, "2N − 3", 2 * n - 3, measured),
            ],
            "P is the highest live process: its Elections go to all N − 1 others, the crashed \
             coordinator included, nobody above it answers, and it announces to the N − 2 \
             others; equation (1) counts the live processes only."
                .to_owned(),
        ),
        AlgorithmChoice::Modified => (
            "Modified Bully, the coordinator crashed",
            vec![
                row(
                    format!("{SOUNDARABAI}, equation (1), for the N − 1 live processes"),
                    "2(N − 1 − P) + N − 1",
                    paper::equation_1(live, p),
                    measured,
                ),
                row(derived, "3N − P − 2", 3 * n - p - 2, measured),
            ],
            format!(
                "Equation (1) leaves out the P − 1 = {} Elections to the processes below P, P's \
                 Election to the crashed coordinator, and the chosen process's check with it \
                 (which equation (6) counts, for P = 1 only).",
                p - 1
            ),
        ),
        AlgorithmChoice::Ring => (
            "Ring, the coordinator crashed",
            vec![row(derived, "4N − 5", 4 * n - 5, measured)],
            "No count is published for the ring. Here: the ring of the N − 1 live processes, \
             4(N − 1) − 2, plus one hop to the crashed coordinator, which goes unanswered."
                .to_owned(),
        ),
    };
    Explanation {
        title: title.to_owned(),
        setting,
        table_1: false,
        measured,
        rows,
        why: Some(why),
        sources: vec![SOUNDARABAI_PAPER, LECTURE_NOTES_TITLE],
    }
}
