//! Turning [`crate::measure`]'s rows into what `simulate` prints: aligned text
//! tables for people, and CSV (a header line, then one line per row) for tools.

use std::fmt::Write as _;

use crate::measure::{
    self, CaseRow, EXPERIMENTS, ExperimentRow, FailoverRow, FormulaRow, TableRow,
};
use bully_sim::paper;

/// The header of `simulate table --format csv`.
pub const TABLE_CSV_HEADER: &str = "n,classic,paper_classic,modified,paper_modified,ring,classic_delays,modified_delays,ring_delays";

/// The header of `simulate formulas --format csv`.
pub const FORMULAS_CSV_HEADER: &str =
    "n,p,classic,equation_3,modified,equation_1,modified_implementation";

/// The header of `simulate cases --format csv`.
pub const CASES_CSV_HEADER: &str = "case,n,algorithm,messages,delays,depth,leader";

/// The header of `simulate experiments --format csv`.
pub const EXPERIMENTS_CSV_HEADER: &str =
    "experiment,algorithm,messages,delays,depth,leader,leader_changes";

/// The header of `simulate failover --format csv`: one line per (N, algorithm,
/// staggering), long form.
pub const FAILOVER_CSV_HEADER: &str =
    "n,algorithm,stagger,messages,delays,detection_delays,election_delays,leader";

/// A number of message delays for CSV: at most three decimals, no trailing zeros
/// (`2`, `4.5`).
pub fn csv_delays(delays: f64) -> String {
    let text = format!("{delays:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_owned()
}

/// A leader for a report: its id, or `-` if the processes did not agree.
fn leader(leader: Option<bully_core::NodeId>) -> String {
    leader.map_or_else(|| "-".to_owned(), |id| id.to_string())
}

/// Lays out `rows` under `headers` in columns, right-aligned, two spaces apart.
pub fn columns(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|header| header.len()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.len());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, cells: &mut dyn Iterator<Item = &str>| {
        let cells: Vec<String> = cells
            .zip(&widths)
            .map(|(cell, &width)| format!("{cell:>width$}"))
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    };
    line(&mut out, &mut headers.iter().copied());
    for row in rows {
        line(&mut out, &mut row.iter().map(String::as_str));
    }
    out
}

/// `table` as text.
pub fn table_text(rows: &[TableRow]) -> String {
    let mut out = String::from(
        "Soundarabai et al., Table 1: N live processes, the lowest initiates, the crashed\n\
         former coordinator is outside the set. Messages per election (heartbeats\n\
         excluded), and the time until every process names the same leader, in message\n\
         delays (T_M, the message time: the longest a message takes).\n\n",
    );
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            let (paper_classic, paper_modified) = row.paper().map_or_else(
                || (String::new(), String::new()),
                |(classic, modified)| (classic.to_string(), modified.to_string()),
            );
            vec![
                row.n.to_string(),
                row.classic.total().to_string(),
                paper_classic,
                row.modified.total().to_string(),
                paper_modified,
                row.ring.total().to_string(),
                format!("{:.1}", row.classic.delays),
                format!("{:.1}", row.modified.delays),
                format!("{:.1}", row.ring.delays),
            ]
        })
        .collect();
    out.push_str(&columns(
        &[
            "N",
            "classic",
            "paper",
            "modified",
            "paper",
            "ring",
            "classic T_M",
            "modified T_M",
            "ring T_M",
        ],
        &cells,
    ));
    let compared = rows.iter().filter(|row| row.paper().is_some()).count();
    let mismatched: Vec<String> = rows
        .iter()
        .filter(|row| !row.matches_paper())
        .map(|row| row.n.to_string())
        .collect();
    out.push('\n');
    if compared == 0 {
        out.push_str("Table 1 has none of these N: nothing to compare.\n");
    } else if mismatched.is_empty() {
        let _ = writeln!(
            out,
            "Measured classic and modified equal Table 1 at all {compared} N it lists."
        );
    } else {
        let _ = writeln!(
            out,
            "MISMATCH with Table 1 at N = {}.",
            mismatched.join(", ")
        );
    }
    out.push_str(
        "Classic: N^2-1 (equation (4)). Modified: 3N-2 (equation (1) at P=1). Ring (the\n\
         lecture notes' algorithm, every hop acknowledged): 4N-2. Message by message:\n\
         `simulate trace --algorithm classic --nodes 5 --initiator 1`.\n",
    );
    out
}

/// `table` as CSV, under [`TABLE_CSV_HEADER`]; the paper's columns are empty
/// where Table 1 has no row for N.
pub fn table_csv(rows: &[TableRow]) -> String {
    let mut out = format!("{TABLE_CSV_HEADER}\n");
    for row in rows {
        let (paper_classic, paper_modified) = row.paper().map_or_else(
            || (String::new(), String::new()),
            |(classic, modified)| (classic.to_string(), modified.to_string()),
        );
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{}",
            row.n,
            row.classic.total(),
            paper_classic,
            row.modified.total(),
            paper_modified,
            row.ring.total(),
            csv_delays(row.classic.delays),
            csv_delays(row.modified.delays),
            csv_delays(row.ring.delays),
        );
    }
    out
}

/// Of the `rows` in a domain, how many satisfy `holds`, out of how many, and the
/// first that does not.
fn tally(
    rows: &[FormulaRow],
    domain: impl Fn(&FormulaRow) -> bool,
    holds: impl Fn(&FormulaRow) -> bool,
) -> (usize, usize, Option<FormulaRow>) {
    let in_domain: Vec<&FormulaRow> = rows.iter().filter(|row| domain(row)).collect();
    let count = in_domain.iter().filter(|row| holds(row)).count();
    let first = in_domain.iter().find(|row| !holds(row)).map(|&&row| row);
    (count, in_domain.len(), first)
}

/// One line of the `formulas` summary.
fn tally_line(
    out: &mut String,
    label: &str,
    (count, of, first): (usize, usize, Option<FormulaRow>),
) {
    let _ = write!(out, "  {label}: {count} of {of}");
    match first {
        None => out.push('\n'),
        Some(row) => {
            let _ = writeln!(
                out,
                " (not at N={} P={}: measured {})",
                row.n, row.p, row.modified
            );
        }
    }
}

/// `formulas` as text: how the measured counts compare with equations (1) and
/// (3) over every pair, the pairs of one N in full, and the sources' disagreements.
pub fn formulas_text(rows: &[FormulaRow], sample_n: u64) -> String {
    let mut out = String::new();
    let max_n = rows.iter().map(|row| row.n).max().unwrap_or(0);
    let _ = writeln!(
        out,
        "Soundarabai et al., section 5.6: process P of N (2 <= N <= {max_n}, 1 <= P <= N)\n\
         alone detects the crash and initiates; {} (N, P) pairs, each measured once per algorithm.\n",
        rows.len()
    );
    let all = |_: &FormulaRow| true;
    out.push_str("Classic Bully: pairs where the measured count equals\n");
    let (count, of, first) = tally(rows, all, |row| row.classic == row.equation_3());
    let _ = write!(out, "  equation (3) (N-P+1)(N-P)+N-1: {count} of {of}");
    match first {
        None => out.push('\n'),
        Some(row) => {
            let _ = writeln!(
                out,
                " (not at N={} P={}: measured {})",
                row.n, row.p, row.classic
            );
        }
    }
    out.push_str("Modified Bully: pairs where the measured count equals\n");
    let (count, of, _) = tally(rows, all, |row| row.modified == row.equation_1());
    let at_p1 = rows.iter().filter(|row| row.p == 1).count();
    let only_p1 = rows
        .iter()
        .filter(|row| row.modified == row.equation_1())
        .all(|row| row.p == 1);
    let _ = writeln!(
        out,
        "  equation (1) 2(N-P)+N, all pairs: {count} of {of}{}",
        if only_p1 && count == at_p1 {
            " (exactly the pairs with P = 1)"
        } else {
            ""
        }
    );
    tally_line(
        &mut out,
        "equation (1) + (P-1), i.e. 3N-P-1, pairs with P < N",
        tally(
            rows,
            |row| row.p < row.n,
            |row| row.modified == row.equation_1() + (row.p - 1),
        ),
    );
    tally_line(
        &mut out,
        "N-1, pairs with P = N",
        tally(rows, |row| row.p == row.n, |row| row.modified == row.n - 1),
    );
    out.push_str(
        "\nThe implementation follows the paper's Figure 6 log and step 1(i) (\"P sends an\n\
         ELECTION message to all processes\"), not equation (1), which leaves out the P-1\n\
         Elections to lower processes; the two agree at P = 1, where Table 1 is measured.\n\
         The highest process (P = N) has nobody to ask and announces at once, as in classic\n\
         Bully: N-1 messages, where equation (1) gives N.\n",
    );
    let sample: Vec<Vec<String>> = rows
        .iter()
        .filter(|row| row.n == sample_n)
        .map(|row| {
            vec![
                row.p.to_string(),
                row.classic.to_string(),
                row.equation_3().to_string(),
                row.modified.to_string(),
                row.equation_1().to_string(),
                row.modified_implementation().to_string(),
            ]
        })
        .collect();
    if !sample.is_empty() {
        let _ = writeln!(out, "\nN = {sample_n}:");
        out.push_str(&columns(
            &[
                "P",
                "classic",
                "eq (3)",
                "modified",
                "eq (1)",
                "3N-P-1 (N-1 at P=N)",
            ],
            &sample,
        ));
    }
    if max_n >= 1 {
        let (left, right) = paper::equation_2(max_n);
        let _ = writeln!(
            out,
            "\nAt P = 1 and N = {max_n}: equation (2) prints 2(N-1)+1 = 3N-1, but 2(N-1)+1 = {left} and \
             3N-1 = {right};\nTable 1's column is 3N-2 = {}; equation (4) N^2-1 = {}; equation (5) \
             n(n+1)/2 = {}.",
            paper::table_1_modified(max_n),
            paper::equation_4(max_n),
            paper::equation_5(max_n),
        );
    }
    out.push('\n');
    out.push_str(&disagreements_text());
    out
}

/// `formulas` as CSV, one line per `(N, P)` under [`FORMULAS_CSV_HEADER`].
pub fn formulas_csv(rows: &[FormulaRow]) -> String {
    let mut out = format!("{FORMULAS_CSV_HEADER}\n");
    for row in rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{}",
            row.n,
            row.p,
            row.classic,
            row.equation_3(),
            row.modified,
            row.equation_1(),
            row.modified_implementation()
        );
    }
    out
}

/// The sources' disagreements and what the code does, as a numbered list wrapped
/// for a terminal.
pub fn disagreements_text() -> String {
    let mut out = String::from("Where the sources disagree, and what the code does:\n");
    for (number, item) in paper::DISAGREEMENTS.iter().enumerate() {
        let _ = writeln!(out, "\n{:>2}. {}", number + 1, item.topic);
        out.push_str(&wrap(&format!("Sources: {}", item.sources), 88, "    "));
        out.push_str(&wrap(&format!("Code:    {}", item.code), 88, "    "));
    }
    out
}

/// `text` broken into lines of at most `width` characters (longer words stay
/// whole), each starting with `indent`.
pub fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::from(indent);
    for word in text.split_whitespace() {
        if line.len() > indent.len() && line.len() + 1 + word.len() > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line = String::from(indent);
        }
        if line.len() > indent.len() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if line.len() > indent.len() {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// What the lecture notes say of a case, for the `cases` table.
fn lecture_notes_say(row: &CaseRow) -> String {
    match row.case {
        measure::Case::Best => format!(
            "{} msgs, {} T_M",
            paper::best_case_messages(row.n),
            paper::BEST_CASE_DELAYS
        ),
        measure::Case::Worst => format!("O(N^2) msgs, ~{} T_M", paper::WORST_CASE_DELAYS),
    }
}

/// `cases` as text.
pub fn cases_text(rows: &[CaseRow]) -> String {
    let mut out = String::from(
        "The lecture notes' best case (the second-highest notices the coordinator's crash)\n\
         and worst case (the lowest notices), from a settled cluster 1..N led by N.\n\
         Messages from the notice until the last election message (heartbeats excluded);\n\
         time until every live process agrees, in message delays (T_M, the message time:\n\
         the longest a message takes); depth = the longest chain of dependent messages.\n\n",
    );
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            vec![
                row.case.name().to_owned(),
                row.n.to_string(),
                measure::algorithm_name(row.algorithm).to_owned(),
                row.report.total().to_string(),
                format!("{:.1}", row.report.delays),
                row.report.depth.to_string(),
                leader(row.report.leader),
                lecture_notes_say(row),
                row.report.messages.to_string(),
            ]
        })
        .collect();
    let table = columns(
        &[
            "case",
            "N",
            "algorithm",
            "messages",
            "T_M",
            "depth",
            "leader",
            "lecture notes say",
            "by kind",
        ],
        &cells,
    );
    out.push_str(&table);
    out.push_str(
        "\nBest case: classic and modified send exactly N-2 Coordinators in one message time.\n\
         The ring cannot: its token must pass every live process before anyone knows the\n\
         coordinator. Worst case: classic sends (N-2)(N+1) and agrees after 2 + (2*T_M + P_p)/T_M\n\
         = 4.5 message times (N-1 waits out the crashed N's silence: twice the message time\n\
         plus P_p, the processing time), not 5 stages; modified sends 3n-1 for n = N-1 live\n\
         processes (equation (6), its check with the crashed coordinator included) but its\n\
         cross-check waits out that silence after the handover, so it agrees later than\n\
         classic.\n",
    );
    out
}

/// `cases` as CSV, under [`CASES_CSV_HEADER`].
pub fn cases_csv(rows: &[CaseRow]) -> String {
    let mut out = format!("{CASES_CSV_HEADER}\n");
    for row in rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{}",
            row.case.name(),
            row.n,
            measure::algorithm_name(row.algorithm),
            row.report.total(),
            csv_delays(row.report.delays),
            row.report.depth,
            leader(row.report.leader),
        );
    }
    out
}

/// `experiments` as text.
pub fn experiments_text(rows: &[ExperimentRow], seed: u64) -> String {
    let mut out = format!(
        "The Bully Algorithm Dance's experiments with six dancers (the die seeded with\n\
         {seed}). Messages and time from the experiment's trigger until everyone agrees\n\
         (heartbeats excluded); leader changes = leaderships some dancer other than the\n\
         leader followed.\n\n"
    );
    for (index, what) in EXPERIMENTS.iter().enumerate() {
        let _ = writeln!(out, "  {}. {what}", index + 1);
    }
    out.push('\n');
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            vec![
                row.number.to_string(),
                measure::algorithm_name(row.algorithm).to_owned(),
                row.report.total().to_string(),
                format!("{:.1}", row.report.delays),
                row.report.depth.to_string(),
                leader(row.report.leader),
                row.report.leader_changes.to_string(),
                row.report.messages.to_string(),
            ]
        })
        .collect();
    out.push_str(&columns(
        &[
            "exp",
            "algorithm",
            "messages",
            "T_M",
            "depth",
            "leader",
            "changes",
            "by kind",
        ],
        &cells,
    ));
    out
}

/// `experiments` as CSV, under [`EXPERIMENTS_CSV_HEADER`].
pub fn experiments_csv(rows: &[ExperimentRow]) -> String {
    let mut out = format!("{EXPERIMENTS_CSV_HEADER}\n");
    for row in rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{}",
            row.number,
            measure::algorithm_name(row.algorithm),
            row.report.total(),
            csv_delays(row.report.delays),
            row.report.depth,
            leader(row.report.leader),
            row.report.leader_changes,
        );
    }
    out
}

/// `failover` as text.
pub fn failover_text(rows: &[FailoverRow]) -> String {
    let mut out = String::from(
        "Failover in practice: a settled cluster 1..N led by N; N crashes and every member\n\
         finds out by its own leader timeout (nobody is told). Messages from the crash\n\
         (heartbeats excluded, so all of them follow the first detection); time in message\n\
         delays (T_M, the message time) from the crash to the first detection (where in\n\
         the heartbeat interval the crash falls decides it: leader timeout minus 0 to 1\n\
         heartbeat interval), and from the first detection to agreement.\n\n",
    );
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            let best = if row.stagger && row.report.total() == paper::best_case_messages(row.n) {
                "yes"
            } else {
                "no"
            };
            vec![
                row.n.to_string(),
                measure::algorithm_name(row.algorithm).to_owned(),
                if row.stagger { "on" } else { "off" }.to_owned(),
                row.report.total().to_string(),
                format!("{:.1}", row.detection_delays),
                format!("{:.1}", row.election_delays()),
                format!("{:.1}", row.report.delays),
                leader(row.report.leader),
                if row.stagger { best } else { "" }.to_owned(),
            ]
        })
        .collect();
    out.push_str(&columns(
        &[
            "N",
            "algorithm",
            "stagger",
            "messages",
            "detect T_M",
            "elect T_M",
            "total T_M",
            "leader",
            "N-2?",
        ],
        &cells,
    ));
    out.push_str(
        "\nWith staggering, the highest survivor's timeout fires first; with nobody live\n\
         above it, it announces at once: the lecture notes' best case, N-2 messages in one\n\
         message time, for classic and modified. Without staggering every member detects at the same\n\
         instant and elects: O(N^2) messages (modified's Elections go to everyone, so it\n\
         sends more than classic here). The ring passes its token round whatever the order.\n",
    );
    out
}

/// `failover` as CSV, under [`FAILOVER_CSV_HEADER`].
pub fn failover_csv(rows: &[FailoverRow]) -> String {
    let mut out = format!("{FAILOVER_CSV_HEADER}\n");
    for row in rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{}",
            row.n,
            measure::algorithm_name(row.algorithm),
            row.stagger,
            row.report.total(),
            csv_delays(row.report.delays),
            csv_delays(row.detection_delays),
            csv_delays(row.election_delays()),
            leader(row.report.leader),
        );
    }
    out
}
