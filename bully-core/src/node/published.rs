//! What the node last told its driver of its permit to work, and the rule
//! that turns the permit live now into the next change to tell: a permit that
//! ended is told so before anything starts, and is never renewed.

use crate::permit::{Permit, PermitChange};
use crate::time::Instant;

/// The permit [`Node::poll_permit`](crate::Node::poll_permit) last said
/// started or was renewed, if it has not said it ended, and whether it ended
/// since (its end came, or the leadership ended) even if a permit under the
/// same token is live again.
///
/// It is derived from the lease and from what the driver polled, so the
/// node's `Eq` and `Hash` leave it out: two nodes in the same protocol state
/// decide the same, whatever their drivers have read.
#[derive(Clone, Debug, Default)]
pub(crate) struct Published {
    open: Option<Permit>,
    ended: bool,
}

impl Published {
    /// Whether a permit was told and its end not yet: only then is there
    /// anything to watch.
    #[inline]
    pub(crate) fn is_open(&self) -> bool {
        self.open.is_some() && !self.ended
    }

    /// The permit `live` at an instant before an input changed anything: the
    /// open one ended if it is not live then.
    pub(crate) fn observe(&mut self, live: Option<Permit>) {
        if let Some(open) = self.open {
            if live.map(|permit| permit.token) != Some(open.token) {
                self.ended = true;
            }
        }
    }

    /// When the driver must look again for the open permit to end: its end as
    /// the lease now stands (`live`, the permit now). `None` if none is open,
    /// and if the open one is no longer live: that change waits to be polled,
    /// with nothing to wait for.
    pub(crate) fn deadline(&self, live: Option<Permit>) -> Option<Instant> {
        let open = self.open.filter(|_| !self.ended)?;
        live.filter(|permit| permit.token == open.token)?.until
    }

    /// The next change to tell, the permit now being `live`; records it as told.
    pub(crate) fn next(&mut self, live: Option<Permit>) -> Option<PermitChange> {
        match self.open {
            Some(open) if self.ended || live.map(|permit| permit.token) != Some(open.token) => {
                self.open = None;
                self.ended = false;
                Some(PermitChange::Ended(open))
            }
            Some(open) => {
                let renewed = live.filter(|permit| permit.until != open.until)?;
                self.open = Some(renewed);
                Some(PermitChange::Renewed(renewed))
            }
            None => {
                let started = live?;
                self.open = Some(started);
                Some(PermitChange::Started(started))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The rule on its own, with permits made by hand: each case names the
    //! change it must give.

    use std::time::Duration;

    use super::*;
    use crate::event::FencingToken;
    use crate::message::{NodeId, Term};

    fn permit(term: u64, until: Instant) -> Permit {
        Permit {
            token: FencingToken {
                term: Term(term),
                leader: NodeId(1),
            },
            until: Some(until),
        }
    }

    #[test]
    fn a_permit_starts_is_renewed_and_ends_once_each() {
        let t0 = Instant::now();
        let first = permit(1, t0);
        let later = permit(1, t0 + Duration::from_secs(1));
        let mut published = Published::default();
        assert_eq!(published.next(None), None);
        assert_eq!(
            published.next(Some(first)),
            Some(PermitChange::Started(first))
        );
        assert_eq!(published.next(Some(first)), None, "nothing changed");
        assert_eq!(published.deadline(Some(first)), first.until);
        assert_eq!(
            published.next(Some(later)),
            Some(PermitChange::Renewed(later))
        );
        assert_eq!(published.next(None), Some(PermitChange::Ended(later)));
        assert_eq!(published.next(None), None, "told once");
        assert!(!published.is_open());
    }

    #[test]
    fn a_new_token_ends_the_open_permit_before_the_next_starts() {
        let t0 = Instant::now();
        let (old, new) = (permit(1, t0), permit(2, t0));
        let mut published = Published::default();
        published.next(Some(old));
        assert_eq!(published.deadline(Some(new)), None, "not the open one");
        assert_eq!(published.next(Some(new)), Some(PermitChange::Ended(old)));
        assert_eq!(published.next(Some(new)), Some(PermitChange::Started(new)));
    }

    #[test]
    fn a_permit_that_lapsed_ends_even_if_renewed_since() {
        let t0 = Instant::now();
        let first = permit(1, t0);
        let renewed = permit(1, t0 + Duration::from_secs(1));
        let mut published = Published::default();
        published.next(Some(first));
        published.observe(Some(first));
        assert!(published.is_open(), "still live");
        published.observe(None);
        assert!(!published.is_open());
        assert_eq!(published.deadline(Some(renewed)), None);
        assert_eq!(
            published.next(Some(renewed)),
            Some(PermitChange::Ended(first)),
            "never renewed once it ended"
        );
        assert_eq!(
            published.next(Some(renewed)),
            Some(PermitChange::Started(renewed))
        );
    }
}
