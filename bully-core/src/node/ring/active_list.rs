//! The ring's active list, as it travels with the token: checked in one pass
//! at every hop (in ring order from the initiator, every id a member, none
//! twice), and searched without reading it whole.

use crate::message::NodeId;

/// Checks an active list from a peer in one pass, without allocating: no longer
/// than `members` (sorted), starting at `initiator`, in ring order (ids rising,
/// wrapping round at most once, so no id twice), every id a member. Returns
/// whether `own` is on it, or `None` if the list is malformed.
///
/// The ids rise within each of the two runs, so each is looked up in the
/// sorted membership from where the previous one was found: a list of the
/// whole membership costs one pass over it rather than a binary search per id
/// (the check runs at every hop, on a list as long as the ring).
pub(super) fn check_active_list(
    members: &[NodeId],
    own: NodeId,
    active: &[NodeId],
    initiator: NodeId,
) -> Option<bool> {
    if active.len() > members.len() || active.first() != Some(&initiator) {
        return None;
    }
    let mut wrapped = false;
    let mut listed = false;
    let mut from = 0;
    for (index, &id) in active.iter().enumerate() {
        if index > 0 {
            let previous = active[index - 1];
            if id <= previous {
                if wrapped || id >= initiator {
                    return None;
                }
                wrapped = true;
                from = 0;
            }
            if wrapped && id >= initiator {
                return None;
            }
        }
        // In a ring with nobody down the next id is the next member.
        let found = if members.get(from) == Some(&id) {
            from
        } else {
            find_from(members, from, id)?
        };
        from = found + 1;
        listed |= id == own;
    }
    Some(listed)
}

/// The index of `id` in the sorted `ids`, searching from `from` on (every id
/// before `from` is below `id`): a galloping search, one comparison when `id` is
/// the next member.
fn find_from(ids: &[NodeId], from: usize, id: NodeId) -> Option<usize> {
    let rest = ids.get(from..)?;
    let mut bound = 1;
    while bound < rest.len() && rest[bound] < id {
        bound *= 2;
    }
    let (low, high) = (bound / 2, (bound + 1).min(rest.len()));
    let found = rest.get(low..high)?.binary_search(&id).ok()?;
    Some(from + low + found)
}

/// Whether `id` is on `active`, a list `check_active_list` accepted: the ids from
/// `initiator` up, rising, then those below it, rising. A binary search in the
/// run `id` belongs to, where `contains` would read up to the whole list at
/// every hop of the second pass.
pub(super) fn on_active_list(active: &[NodeId], initiator: NodeId, id: NodeId) -> bool {
    let wrap = active.partition_point(|&listed| listed >= initiator);
    let run = if id >= initiator {
        &active[..wrap]
    } else {
        &active[wrap..]
    };
    let found = run.binary_search(&id).is_ok();
    debug_assert_eq!(found, active.contains(&id), "{active:?} is in ring order");
    found
}
