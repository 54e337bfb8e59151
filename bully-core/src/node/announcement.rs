//! The start's announcement, classic Bully without a quorum: the highest
//! candidate announces itself as soon as it boots, and leads once a round trip
//! brought no objection.
//!
//! A member that boots does not know the cluster's current term. Listening for
//! a heartbeat interval first would teach it (a sitting leader's heartbeat names
//! the term), but makes every cold start wait that long. Instead the highest
//! candidate, which wins any election it stands in, sends its Coordinator at
//! once and treats it as a question: a sitting leader that led the announced
//! term or a later one answers with its own Coordinator (a reminder), and the
//! newcomer then stands in a term above it. It leads only once the answer
//! timeout (a round trip and a processing time) has passed without such an
//! answer, so it never leads a term another member led (S4): a cold start
//! agrees within the answer timeout, and a member that comes back to a sitting
//! leader leads one message delay after the reminder, three in all.

use crate::message::{NodeId, Term};
use crate::node::{Node, Phase};
use crate::time::Instant;
use crate::timer::Timer;

impl Node {
    /// Whether a start announces at once instead of listening first: no
    /// quorum, no candidate above this node, and classic or modified Bully (in
    /// both the highest member wins at once, without asking anyone). The ring
    /// elects by passing a token round every member, whose second pass is the
    /// announcement: a ring start still listens first.
    pub(super) fn announces_at_start(&self, rank: usize) -> bool {
        rank == 0 && self.quorum().is_none() && self.highest_wins_unasked()
    }

    /// Announces this node's leadership of the next term to every member, and
    /// waits the answer timeout for a sitting leader to object.
    ///
    /// docs/protocol.md: R3, the start's announcement.
    pub(super) fn announce_at_start(&mut self, now: Instant) {
        let term = self.term.next();
        if self.highest.is_some_and(|highest| term <= highest.term) {
            // Only at the end of the term space (`Term::next` saturates), where
            // this node already accepted the last term: the ordinary election
            // refuses, and this node waits as a follower.
            self.begin_election(now, term);
            return;
        }
        self.enter_election(term);
        // `Claiming` without a quorum is only this wait: the Coordinator is
        // sent, and no vote is needed.
        self.become_claiming(term);
        self.broadcast_coordinator(term);
        self.timers
            .set(Timer::Answer, Self::after(now, self.timings.answer_timeout));
    }

    /// Nobody objected within the answer timeout: the announced term was
    /// nobody else's, and this node leads it.
    ///
    /// docs/protocol.md: G15, without a quorum, the announcement waits.
    pub(super) fn on_start_unopposed(&mut self, now: Instant, term: Term) {
        if term != self.term {
            // A newer term reached it while it waited: the announced one is
            // not the term it would lead now, and the newer one it never
            // announced. It stands above it, as after an objection.
            self.begin_election(now, self.term.next());
            return;
        }
        self.lead(now);
        self.timers.set(
            Timer::Heartbeat,
            Self::after(now, self.config.heartbeat_interval()),
        );
    }

    /// `Node::step_down` while the start's announcement waits for objections:
    /// the members already follow it (they accepted its Coordinator), so it
    /// withdraws the announcement as a leader resigns, with `Resign` to every
    /// member, and they elect at once instead of waiting out their leader
    /// timeout. It never led: no `SteppedDown`. Returns whether there was an
    /// announcement to withdraw.
    pub(super) fn withdraw_announcement(&mut self, now: Instant) -> bool {
        let Phase::Claiming { term } = self.phase else {
            return false;
        };
        if self.quorum().is_some() {
            return false;
        }
        self.timers.stop(Timer::Answer);
        self.broadcast_resign(term);
        self.become_idle();
        self.standing_aside = true;
        self.arm_leader_timeout(now);
        true
    }

    /// A leadership of `term` from `from`, a lower member, while this node's
    /// start announcement waits for objections: if `term` is the announced one
    /// or later, the announcement collided with a sitting leadership. This node
    /// stands in a term above it (and, the highest, wins it at once). Returns
    /// whether it was such an objection.
    pub(super) fn on_objection(&mut self, now: Instant, from: NodeId, term: Term) -> bool {
        let Phase::Claiming { term: announced } = self.phase else {
            return false;
        };
        if self.quorum().is_some() || term < announced || !self.would_preempt(from) {
            return false;
        }
        self.term = self.term.max(term);
        self.begin_election(now, self.term.next());
        true
    }

    /// A Coordinator of `term` from `from`, without a quorum: if this node
    /// leads `term` and `from` is higher, `from` started without knowing the
    /// term and announced it (above): tell it, so that it stands above, before
    /// following it as the higher token (`Node::on_leadership`). Without the
    /// staggered start nobody waits for this: every start elects and leads at
    /// once, as in the sources.
    pub(super) fn object_to_announcement(&mut self, from: NodeId, term: Term) {
        if self.config.staggered_start() && from > self.id && self.leadership_term() == Some(term) {
            self.remind(from);
        }
    }
}
