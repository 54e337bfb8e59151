//! `bully-agent init --config FILE`: declares this member's first boot in a
//! new cluster, as etcd's `--initial-cluster-state new` does, by writing its
//! initial state file ([`DataDir::declare_first_boot`]).
//!
//! A member whose state file is missing cannot tell a first boot from a lost
//! data directory, and a member that lost its state may have promised a
//! leader, in acknowledgements it forgot, not to vote against it: voting at
//! once could elect a second leader while that lease runs. So `run` without a
//! state file waits a follower lease before it votes, and only a member
//! declared new votes at once.
//!
//! A one-shot command rather than a setting or a flag on `run`: a setting
//! stays in the configuration after the first boot (etcd's known pitfall with
//! `initial-cluster-state = new` left in place), and a flag stays in the unit
//! or the pod's command line, so either would declare the member new again
//! at its next start after a lost volume, exactly when it must not. `init`
//! acts once, on a data directory that holds no state, and refuses when one
//! exists; the state file it writes says "first boot" only until the
//! member's first vote or acknowledgement.

use std::path::Path;

use crate::config;
use crate::state::DataDir;

/// Runs `bully-agent init`: writes the declared first boot into the data
/// directory of the configuration at `path` (as node `id` if given), and
/// says so on stdout. Refused, with one line, when the directory already
/// holds a state file or an agent runs on it.
pub fn init(path: &Path, id: Option<u64>) -> Result<i32, String> {
    let identity = config::read_identity(path, id).map_err(|error| error.to_string())?;
    // The lock keeps a running agent out while the file is written, and
    // `init` out while an agent runs.
    let data = DataDir::open(&identity.data_dir, identity.cluster, identity.id)
        .map_err(|error| error.to_string())?;
    let state = data
        .declare_first_boot()
        .map_err(|error| error.to_string())?;
    println!(
        "{}: node {} of cluster {} declared a member of a new cluster: its first \
         `bully-agent run` votes at once. Never run init for it again, even after its \
         state is lost: just start it, and it waits a follower lease before it votes.",
        state.display(),
        identity.id,
        identity.cluster.0
    );
    Ok(0)
}
