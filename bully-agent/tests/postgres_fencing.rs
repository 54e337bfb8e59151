//! Fencing end to end, against a real PostgreSQL: three agents on 127.0.0.1 run
//! `deploy/postgres/fenced-writer.sh`, which writes a row every 50 ms or so,
//! each in one transaction that checks the job's `BULLY_FENCING_TOKEN` against
//! the highest token the database has seen (`deploy/postgres/schema.sql`).
//!
//! The leader's agent, its supervisor and its job are frozen together
//! (SIGSTOP, as a VM pause would) until another member leads and its job's
//! first write has landed. Then the old job wakes first, as a process can
//! whose machine comes back before its agent gets the CPU: it writes under its
//! old token before anything can tell it that its leadership is over. The
//! database must refuse that write; then the old agent wakes too.
//!
//! What the test checks is in the database: in commit order (the rows' `seq`),
//! the tokens never go back, every row of the old leader comes before the new
//! leader's first, and the new leader's writes go on landing after the refusal.
//! A fence that compared tokens wrongly (as unpadded strings, or not at all)
//! lets the old job's write land after the new leader's: the test then fails
//! on the order of the rows, or on the refusal that never comes.
//!
//! Needs PostgreSQL's `initdb`, `pg_ctl` and `psql` (Debian: `apt-get install
//! postgresql`); without them it says why and passes without running.

mod support;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bully_agent::token::format_token;
use bully_core::{FencingToken, NodeId, Term};
use support::cluster::{Cluster, Options, Ports, Timing};
use support::postgres::{Postgres, bin_dir};
use support::procs::{freeze_tree, thaw_groups};

/// How long the test waits for anything before it gives up.
const PATIENCE: Duration = Duration::from_secs(20);

/// How many rows the first leader's job writes before the pause.
const LEADER_ROWS: usize = 5;

/// The database the jobs write to.
const DATABASE: &str = "fenced";

/// `deploy/postgres/`, where the job and its schema live.
fn example_dir() -> PathBuf {
    let agent = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = agent.parent().expect("bully-agent is in the workspace");
    workspace.join("deploy/postgres")
}

/// A token as psql prints `term, leader`: `TERM|LEADER`.
fn parse_token(text: &str) -> FencingToken {
    let (term, leader) = text
        .trim()
        .split_once('|')
        .unwrap_or_else(|| panic!("not a token: {text:?}"));
    FencingToken {
        term: Term(term.parse().expect("a term")),
        leader: NodeId(leader.parse().expect("a leader id")),
    }
}

/// One row of `writes`.
#[derive(Clone, Copy, Debug)]
struct Row {
    seq: u64,
    token: FencingToken,
}

/// Every row of `writes`, in commit order.
fn rows(db: &Postgres) -> Vec<Row> {
    db.psql(
        DATABASE,
        "SELECT seq, term, leader FROM writes ORDER BY seq",
    )
    .lines()
    .map(|line| {
        let (seq, token) = line.split_once('|').expect("seq|term|leader");
        Row {
            seq: seq.parse().expect("a seq"),
            token: parse_token(token),
        }
    })
    .collect()
}

/// The token in the fence row: the highest a write has landed with.
fn fence(db: &Postgres) -> FencingToken {
    parse_token(&db.psql(DATABASE, "SELECT term, leader FROM fence"))
}

/// The rows whose token is below one committed before them.
fn regressions(rows: &[Row]) -> Vec<Row> {
    let mut highest: Option<FencingToken> = None;
    let mut back = Vec::new();
    for row in rows {
        match highest {
            Some(high) if row.token < high => back.push(*row),
            _ => highest = Some(row.token),
        }
    }
    back
}

/// The job's refusal lines under `token` in an agent's log (its stdout is the
/// agent's).
fn refusals(log: &str, token: FencingToken) -> Vec<String> {
    let prefix = format!("fenced-writer: refused {}: ", format_token(token));
    log.lines()
        .filter(|line| line.starts_with(&prefix))
        .map(str::to_owned)
        .collect()
}

/// Polls `found` every 20 ms until it returns something; panics with `what`
/// and `context()` after [`PATIENCE`].
fn wait_for<T>(
    what: &str,
    mut found: impl FnMut() -> Option<T>,
    context: impl Fn() -> String,
) -> T {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(value) = found() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not within {PATIENCE:?}\n{}",
            context()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The agents' command: a script in the cluster's directory that runs the
/// example job with this server's `psql` first on `PATH`. Not `exec`: the
/// script leads the job's process group and names the cluster's directory,
/// by which the cluster's cleanup finds the job. (A script's last command is
/// not exec'd by bash: only a `bash -c` string's is.)
fn write_job(cluster: &Cluster, db: &Postgres) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = cluster.dir().join("job");
    let script = format!(
        "#!/bin/bash\nset -euo pipefail\nPATH='{}':\"$PATH\"\nbash '{}' '{}'\n",
        db.bin().display(),
        example_dir().join("fenced-writer.sh").display(),
        db.conninfo(DATABASE),
    );
    std::fs::write(&path, script).expect("write the job");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
        .expect("make the job executable");
    path
}

#[test]
fn an_old_leaders_write_after_a_pause_is_refused_by_postgresql() {
    let bin = match bin_dir() {
        Ok(bin) => bin,
        Err(reason) => {
            println!("skipped: {reason}");
            return;
        }
    };
    // Declared first, dropped last: the jobs are killed before the server stops.
    let db = Postgres::start(&bin);
    db.create_database(DATABASE, &example_dir().join("schema.sql"));

    let mut cluster = Cluster::configure(Options {
        size: 3,
        timing: Timing::FAST,
        relay: false,
        other_secret: None,
        missing_command: None,
        child_settings: "",
        ports: Ports::Ephemeral,
    });
    let job = write_job(&cluster, &db);
    cluster.set_command(vec![OsString::from(job)]);
    // The highest first, as `Cluster::start` does, so that it leads first.
    for id in cluster.ids().into_iter().rev() {
        cluster.spawn(id);
    }
    let context = || format!("{}\n----- rows\n{:?}", cluster.all_logs(), rows(&db));

    let leader = cluster.wait_for_agreement(PATIENCE);
    let old = wait_for(
        "the leader's job writes",
        || {
            let token = fence(&db);
            let written = rows(&db).iter().filter(|r| r.token == token).count();
            (token.leader.0 == leader && written >= LEADER_ROWS).then_some(token)
        },
        context,
    );

    // The leader's machine pauses: its agent, supervisor and job all stop.
    let agent = cluster.pid(leader);
    let frozen = freeze_tree(agent, PATIENCE);
    let supervisors = cluster.supervisors(leader);
    let job_groups: Vec<u32> = frozen
        .groups
        .iter()
        .copied()
        .filter(|group| *group != agent && !supervisors.contains(group))
        .collect();
    assert!(
        !job_groups.is_empty(),
        "the leader's job was not found under its agent: {frozen:?}\n{}",
        context()
    );
    let old_rows_frozen = rows(&db).iter().filter(|r| r.token == old).count();

    // Another member leads, and its job's first write lands.
    let new_first = wait_for(
        "a newer leader's job writes",
        || rows(&db).into_iter().find(|row| row.token > old),
        context,
    );

    // The old job wakes first and writes under its old token; nothing has told
    // it yet that its leadership is over. The database refuses, and the job
    // says so and exits.
    thaw_groups(&job_groups);
    let refused = wait_for(
        "the old job's write after the pause is refused",
        || {
            let late: Vec<Row> = rows(&db)
                .into_iter()
                .filter(|r| r.token == old && r.seq > new_first.seq)
                .collect();
            assert!(
                late.is_empty(),
                "the database took the old job's writes after the new leader's: {late:?}\n{}",
                context()
            );
            let found = refusals(&cluster.node_log(leader), old);
            (!found.is_empty()).then_some(found)
        },
        context,
    );
    let seq_at_refusal = rows(&db).last().map_or(0, |row| row.seq);
    // Then its agent wakes, finds its lease long gone, and follows.
    cluster.continue_agent_group(leader);

    // The new leadership's writes go on landing.
    wait_for(
        "writes land after the refusal",
        || rows(&db).into_iter().find(|row| row.seq > seq_at_refusal),
        context,
    );

    let rows = rows(&db);
    let old_rows: Vec<&Row> = rows.iter().filter(|r| r.token == old).collect();
    let newer_rows = rows.iter().filter(|r| r.token > old).count();
    let last_old = old_rows.last().expect("the old leader's rows").seq;
    println!(
        "postgres fencing: member {leader}'s job wrote {} rows under {} ({} of them \
         counted as it froze, {} since); member {} led \
         next, its first row #{}; the old job, resumed first, was refused {} time(s): \
         {:?}; {} rows in all, {} under newer tokens, {} whose token went back",
        old_rows.len(),
        format_token(old),
        old_rows_frozen,
        old_rows.len() - old_rows_frozen,
        new_first.token.leader.0,
        new_first.seq,
        refused.len(),
        refused[0],
        rows.len(),
        newer_rows,
        regressions(&rows).len(),
    );
    assert_eq!(
        regressions(&rows).len(),
        0,
        "a write landed under an older token than one committed before it: {:?}\n{}",
        regressions(&rows),
        context()
    );
    assert!(
        last_old < new_first.seq,
        "the old leader's row #{last_old} landed after the new leader's first, #{}",
        new_first.seq
    );
    assert!(
        refused[0].contains("is older than"),
        "the refusal is the fence's: {refused:?}"
    );
    assert!(
        rows.iter().any(|r| r.seq > seq_at_refusal && r.token > old),
        "no write landed under a newer token after the refusal"
    );
    // The fence holds the newest token a row landed with (or a newer one, if a
    // write landed since the rows were read).
    assert!(fence(&db) >= rows.last().expect("rows").token);
}
