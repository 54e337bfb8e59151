//! A throwaway PostgreSQL server for one test: `initdb` into a temporary
//! directory, `pg_ctl start` on a unix socket in that directory (no TCP port),
//! trust authentication (only whoever can enter the directory can connect),
//! and `pg_ctl stop` with the directory removed when dropped, after a failure
//! too.
//!
//! `initdb` refuses to run as root, so under root the server runs as `nobody`,
//! which owns the directory; otherwise as the test's user.

use std::ffi::OsStr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The user the server's superuser role is named after (clients connect as it).
pub(crate) const ROLE: &str = "bully";

/// The directory of PostgreSQL's `initdb`, `pg_ctl` and `psql`, or why there is
/// none: `BULLY_POSTGRES_BIN` if set, else the newest of Debian's
/// `/usr/lib/postgresql/VERSION/bin`, else the directory of `initdb` on `PATH`.
pub(crate) fn bin_dir() -> Result<PathBuf, String> {
    let has_all = |dir: &Path| {
        ["initdb", "pg_ctl", "psql"]
            .iter()
            .all(|b| dir.join(b).is_file())
    };
    if let Some(dir) = std::env::var_os("BULLY_POSTGRES_BIN") {
        let dir = PathBuf::from(dir);
        return if has_all(&dir) {
            Ok(dir)
        } else {
            Err(format!(
                "BULLY_POSTGRES_BIN={} lacks initdb, pg_ctl or psql",
                dir.display()
            ))
        };
    }
    // Debian keeps the server's programs off PATH, one directory per version.
    let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .filter(|(_, dir)| has_all(dir))
        .collect();
    debian.sort();
    if let Some((_, dir)) = debian.pop() {
        return Ok(dir);
    }
    let on_path = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default();
    on_path.into_iter().find(|dir| has_all(dir)).ok_or_else(|| {
        "PostgreSQL's initdb, pg_ctl and psql were found neither in BULLY_POSTGRES_BIN, \
         /usr/lib/postgresql/*/bin nor on PATH (Debian: apt-get install postgresql)"
            .to_owned()
    })
}

/// A running server; stopped and removed when dropped.
#[derive(Debug)]
pub(crate) struct Postgres {
    bin: PathBuf,
    dir: tempfile::TempDir,
    /// The user and group the server runs as, when the test runs as root.
    owner: Option<(u32, u32)>,
}

impl Postgres {
    /// Creates a cluster with `bin`'s `initdb` and starts it; panics, with the
    /// server's log, if it does not start.
    pub(crate) fn start(bin: &Path) -> Postgres {
        let dir = tempfile::Builder::new()
            .prefix("bully-postgres-")
            .tempdir()
            .expect("a temporary directory");
        let owner = (id(&["-u"]) == Some(0)).then(|| {
            let ids = id(&["-u", "nobody"]).zip(id(&["-g", "nobody"]));
            ids.expect("initdb refuses root, and there is no user nobody to run it as")
        });
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))
                .expect("give the directory to nobody");
        }
        let postgres = Postgres {
            bin: bin.to_owned(),
            dir,
            owner,
        };
        // A throwaway cluster: no fsync, C locale (the machine's may be missing).
        postgres.run_as_owner(
            "initdb",
            [
                "--pgdata".as_ref(),
                postgres.data().as_os_str(),
                "--username".as_ref(),
                ROLE.as_ref(),
                "--auth=trust".as_ref(),
                "--no-sync".as_ref(),
                "--locale=C".as_ref(),
                "--encoding=UTF8".as_ref(),
            ],
        );
        let options = format!(
            "-c listen_addresses='' -c unix_socket_directories='{}' -c fsync=off",
            postgres.socket_dir().display()
        );
        postgres.run_as_owner(
            "pg_ctl",
            [
                "start".as_ref(),
                "--wait".as_ref(),
                "--pgdata".as_ref(),
                postgres.data().as_os_str(),
                "--log".as_ref(),
                postgres.log().as_os_str(),
                "-o".as_ref(),
                options.as_ref(),
            ],
        );
        postgres
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// The directory of the server's unix socket.
    pub(crate) fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The directory of `psql` and the server's other programs.
    pub(crate) fn bin(&self) -> &Path {
        &self.bin
    }

    /// The server's log so far, for a failure message.
    pub(crate) fn server_log(&self) -> String {
        std::fs::read_to_string(self.log()).unwrap_or_default()
    }

    /// A libpq connection string for `database`.
    pub(crate) fn conninfo(&self, database: &str) -> String {
        format!(
            "host={} user={ROLE} dbname={database}",
            self.socket_dir().display()
        )
    }

    /// Creates `database` and runs the SQL file `schema` in it.
    pub(crate) fn create_database(&self, database: &str, schema: &Path) {
        self.psql("postgres", &format!("CREATE DATABASE {database}"));
        let output = self
            .psql_command(database)
            .arg("--file")
            .arg(schema)
            .output()
            .expect("run psql");
        check("psql --file", &output, &self.server_log());
    }

    /// Runs `sql` in `database`; returns psql's unaligned rows (fields split
    /// by `|`, one row a line). Panics if psql fails.
    pub(crate) fn psql(&self, database: &str, sql: &str) -> String {
        let output = self
            .psql_command(database)
            .arg("--command")
            .arg(sql)
            .output()
            .expect("run psql");
        check(&format!("psql {sql:?}"), &output, &self.server_log());
        String::from_utf8(output.stdout).expect("psql prints UTF-8")
    }

    fn psql_command(&self, database: &str) -> Command {
        let mut psql = Command::new(self.bin.join("psql"));
        psql.args(["--no-psqlrc", "--quiet", "--no-align", "--tuples-only"])
            .args(["--set", "ON_ERROR_STOP=1", "--dbname"])
            .arg(self.conninfo(database))
            .stdin(Stdio::null());
        psql
    }

    /// Runs one of the server's programs as the directory's owner.
    fn run_as_owner<'a>(&self, program: &str, args: impl IntoIterator<Item = &'a OsStr>) {
        let mut command = Command::new(self.bin.join(program));
        command
            .args(args)
            .current_dir(self.dir.path())
            .stdin(Stdio::null());
        if let Some((uid, gid)) = self.owner {
            // std drops the supplementary groups too, as it changes the uid.
            command.uid(uid).gid(gid);
        }
        let output = command
            .output()
            .unwrap_or_else(|error| panic!("run {program}: {error}"));
        check(program, &output, &self.server_log());
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // Immediate: the test is over, nothing needs a clean shutdown; the
        // TempDir then removes the directory.
        let mut stop = Command::new(self.bin.join("pg_ctl"));
        stop.args(["stop", "--wait", "--mode=immediate", "--pgdata"])
            .arg(self.data())
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        if let Some((uid, gid)) = self.owner {
            stop.uid(uid).gid(gid);
        }
        if let Err(error) = stop.status() {
            eprintln!("pg_ctl stop: {error}");
        }
    }
}

/// `id ARGS`: a user's or group's number (`-u`, `-g`), ours without a name.
fn id(args: &[&str]) -> Option<u32> {
    let output = Command::new("id").args(args).output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    output.status.success().then(|| text.trim().parse().ok())?
}

/// Panics with `what`'s output and the server's log unless it succeeded.
fn check(what: &str, output: &Output, server_log: &str) {
    assert!(
        output.status.success(),
        "{what}: {}\n{}{}\n----- server log\n{server_log}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
}
