//! The commands a node's owner gives it: start at boot or recovery, elect,
//! step down, hand over, report that the leader's work stopped, suspect a
//! member.

use crate::config::Preemption;
use crate::error::CommandError;
use crate::message::NodeId;
use crate::node::{Node, Phase};
use crate::time::Instant;
use crate::timer::Timer;

impl Node {
    /// Boot or recovery: "when P recovers, it starts an election" (the tutorial "What is Bully
    /// Algorithm" and Wikipedia's "Bully algorithm").
    ///
    /// With `Preemption::Always` this node starts an election (after the staggered
    /// start's wait, [`Config::with_staggered_start`](crate::Config::with_staggered_start), unless it is the highest
    /// candidate), and a higher member bullies its way back to the leadership.
    /// Without a quorum the highest candidate (classic or modified Bully)
    /// announces itself at once and leads once the answer timeout passed
    /// without a sitting leader objecting that it leads that term: a cold start
    /// agrees within three message delays, and no term is led twice. With the
    /// other policies it first listens for the sitting leader's heartbeats for
    /// one leader timeout, and only elects if it hears none.
    ///
    /// With a quorum a node refuses every vote, its own included, for a
    /// follower lease after its start (and after its first input), in case it
    /// acknowledged a leader before a restart and forgot it; unless it was
    /// declared a first boot ([`DurableState::first_boot`](crate::DurableState::first_boot)),
    /// which says it never did.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use bully_core::{Config, Message, Node, NodeId, Role};
    ///
    /// // The highest of three boots: it announces at once...
    /// let mut three = Node::new(NodeId(3), [NodeId(1), NodeId(2), NodeId(3)], Config::default())?;
    /// let booted = Instant::now();
    /// three.start(booted);
    /// let announced: Vec<_> = std::iter::from_fn(|| three.poll_transmit()).collect();
    /// assert_eq!(announced.len(), 2);
    /// assert!(announced.iter().all(|t| t.message == Message::Coordinator { term: three.term(), round: 0 }));
    /// // ...and leads once nobody objected within the answer timeout.
    /// assert_eq!(three.role(), Role::Candidate);
    /// three.handle_timeout(booted + Config::default().answer_timeout());
    /// assert_eq!(three.role(), Role::Leader);
    /// # Ok::<(), bully_core::ConfigError>(())
    /// ```
    pub fn start(&mut self, now: Instant) {
        let now = self.clock(now);
        // Declared a first boot, it promised nothing it could have forgotten
        // (docs/protocol.md, G10); any other start may follow a restart that
        // lost promises.
        let owes_promises = !self.votes.promised_nothing();
        let retries_until = self
            .quorum()
            .map(|_| Self::after(now, self.config.leader_timeout()));
        self.connectivity.started(retries_until);
        if owes_promises {
            self.forget_promises(now);
        }
        match self.config.preemption() {
            Preemption::Always if self.members.is_candidate(self.id) => {
                let rank = self.members.rank_below(None);
                let alone = self.members.len() == 1;
                let listen = rank > 0 || (self.quorum().is_none() && !alone);
                if self.config.staggered_start() && listen && self.announces_at_start(rank) {
                    self.announce_at_start(now);
                } else if self.config.staggered_start() && listen {
                    // Listen first: a higher member that boots too announces before
                    // this one's turn, and a sitting leader's heartbeat tells the
                    // current term (`Config::with_staggered_start`); with a quorum
                    // the highest's probe tells it that.
                    let wait = self.timings.start_wait(rank, owes_promises);
                    self.timers
                        .set(Timer::LeaderTimeout, Self::after(now, wait));
                } else {
                    self.stand(now);
                }
            }
            _ => self.arm_leader_timeout(now),
        }
    }

    /// Starts an election now, whatever this node believes. A leader that calls it
    /// steps down first and stands again. An observer never stands: for it this
    /// only drops the leader it follows until it hears one again.
    pub fn start_election(&mut self, now: Instant) {
        let now = self.clock(now);
        self.begin_election(now, self.term.next());
    }

    /// Gives up the leadership: the node tells every member (`Resign`), emits
    /// `SteppedDown`, and becomes a follower that waits for the next leader. The
    /// others elect at once, the highest of them first, instead of waiting out the
    /// leader timeout. Use it before a graceful shutdown.
    ///
    /// With a quorum and a resign delay ([`Config::with_resign_delay`](crate::Config::with_resign_delay)) the
    /// leadership's work is given that long to stop: the node tells the members
    /// only then, or as soon as the caller says the work stopped
    /// ([`work_stopped`](Node::work_stopped)). A caller that stopped its work
    /// before stepping down calls both, one after the other.
    ///
    /// The members treat the resigning node as suspected until they hear from it
    /// again, so it is not asked in the election that follows. Under
    /// `Preemption::Always` it takes the leadership back as soon as it hears a
    /// lower leader, as the classic algorithm demands; under `Never` it stays a
    /// follower.
    ///
    /// Without a quorum the highest member announces itself as it starts and
    /// leads a round trip later ([`Node::start`]); the others follow it from the
    /// announcement on. Stepping down in between withdraws the announcement the
    /// same way (`Resign` to every member, who elect at once), without
    /// `SteppedDown`: it never led.
    ///
    /// Returns `false`, and does nothing, if this node neither leads nor
    /// announced itself.
    pub fn step_down(&mut self, now: Instant) -> bool {
        let now = self.clock(now);
        if self.phase != Phase::Leading {
            return self.withdraw_announcement(now);
        }
        let term = self.term;
        let delay = self.config.resign_delay();
        if self.quorum().is_some() && !delay.is_zero() {
            // Nobody to leave out of the resignation: it names itself.
            self.votes.owe_resign(term, self.id);
            self.timers.set(Timer::Resign, Self::after(now, delay));
        } else {
            self.broadcast_resign(term);
        }
        self.resign_leadership();
        // docs/protocol.md: R34, standing aside after a step-down: the members
        // elect without it, until it follows a leader or stands itself.
        self.standing_aside = true;
        self.arm_leader_timeout(now);
        true
    }

    /// Tells the node that the work of its last leadership has stopped: the
    /// resign delay ([`Config::with_resign_delay`](crate::Config::with_resign_delay)) that gives the work time to
    /// stop is over. A `Resign` it still owes the members goes now, and it may
    /// vote again (a vote it deferred is cast at the next
    /// [`handle_timeout`](Node::handle_timeout), due at once).
    ///
    /// Does nothing while the node leads, or when no delay runs. `bully-agent`
    /// calls it when the command it supervises has exited after a leadership
    /// ended, so a take-back waits for the command's real stop time rather than
    /// its whole grace period.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use bully_core::{Config, DurableState, Message, Node, NodeId, Quorum};
    ///
    /// let config = Config::default()
    ///     .with_quorum(Quorum::AtLeast(1))
    ///     .with_resign_delay(Duration::from_secs(1));
    /// let first_boot = DurableState::first_boot();
    /// let mut node = Node::with_durable_state(NodeId(2), [NodeId(1), NodeId(2)], config, first_boot)?;
    /// let now = Instant::now();
    /// node.start_election(now);
    /// while node.poll_transmit().is_some() {}
    /// assert!(node.step_down(now));
    /// assert!(node.poll_transmit().is_none(), "the work has a second to stop");
    /// node.work_stopped(now + Duration::from_millis(200));
    /// let resign = node.poll_transmit().expect("told at once when it stopped");
    /// assert!(matches!(resign.message, Message::Resign { .. }));
    /// # Ok::<(), bully_core::ConfigError>(())
    /// ```
    pub fn work_stopped(&mut self, now: Instant) {
        let now = self.clock(now);
        if self.phase != Phase::Leading {
            self.release_after_work(now);
        }
    }

    /// A planned hand-over: this leader steps down (as
    /// [`step_down`](Node::step_down): its work is told to stop, and with a
    /// quorum and a resign delay its `Resign` waits for
    /// [`work_stopped`](Node::work_stopped)), its `Resign` names `to` (or, with
    /// `None`, the next highest member, as any resignation does), which elects
    /// at once rather than after a leader timeout; and it abstains until
    /// `until` ([`abstain_until`](Node::abstain_until)), so that it does not
    /// take the leadership back from a lower member in the meantime (an
    /// `until` not after `now` asks for no abstention).
    ///
    /// The highest live member leads, so a hand-over to a member below another
    /// live one would only move the leadership to that one: it is refused
    /// ([`CommandError::Outranked`]), as is a hand-over to itself, to a
    /// non-member or to an observer, to a member that is not live
    /// ([`CommandError::NotLive`]: it would not hear its name, and the
    /// others would elect only after their timeouts), and a hand-over to no
    /// member in particular when no other candidate is live
    /// ([`CommandError::NoSuccessor`]: a lone member, or one whose peers are
    /// down or only observers). "Live" is what the leader knows: with a
    /// quorum, the members that acknowledged its recent heartbeat rounds;
    /// without one, every member not suspected. Returns `Ok(false)`, and does
    /// nothing, when this node does not lead.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use bully_core::{Config, Message, Node, NodeId, Role};
    ///
    /// let members = [NodeId(1), NodeId(2), NodeId(3)];
    /// let mut three = Node::new(NodeId(3), members, Config::default())?;
    /// let now = Instant::now();
    /// three.start(now);
    /// three.handle_timeout(now + Config::default().answer_timeout());
    /// assert_eq!(three.role(), Role::Leader);
    /// while three.poll_transmit().is_some() {}
    ///
    /// let later = now + Duration::from_secs(1);
    /// assert_eq!(three.hand_over(later, Some(NodeId(2)), later + Duration::from_secs(60)), Ok(true));
    /// let resign = three.poll_transmit().expect("told at once");
    /// assert!(matches!(resign.message, Message::Resign { successor: Some(NodeId(2)), .. }));
    /// # Ok::<(), bully_core::ConfigError>(())
    /// ```
    ///
    /// docs/protocol.md: R33, a planned hand-over.
    pub fn hand_over(
        &mut self,
        now: Instant,
        to: Option<NodeId>,
        until: Instant,
    ) -> Result<bool, CommandError> {
        let now = self.clock(now);
        if let Some(to) = to {
            if to == self.id {
                return Err(CommandError::SelfReference(to));
            }
            if self.members.index_of(to).is_none() {
                return Err(CommandError::UnknownMember(to));
            }
            if !self.members.is_candidate(to) {
                return Err(CommandError::NotCandidate(to));
            }
        }
        if self.phase != Phase::Leading {
            return Ok(false);
        }
        match to {
            Some(to) => {
                if let Some(by) = self.outranking(to) {
                    return Err(CommandError::Outranked { to, by });
                }
                // A member that is down would not hear its name: the work
                // would wait for the others' timeouts.
                if !self.is_live_other(to) {
                    return Err(CommandError::NotLive(to));
                }
            }
            // Stepping down with nobody live to elect would leave the work to
            // nobody until the abstention ends.
            None if self.highest_live_other().is_none() => {
                return Err(CommandError::NoSuccessor);
            }
            None => {}
        }
        self.handing_over_to = to;
        if until > now {
            Ok(self.abstain_until(now, until))
        } else {
            // No abstention asked for: a plain step-down that names `to`.
            Ok(self.step_down(now))
        }
    }

    /// Tells the node that an external failure detector believes `member` has
    /// failed ("process 4 notices 7 is down").
    ///
    /// The member is no longer sent Election or Coordinator until it is heard from
    /// again. If it is the accepted leader, this is the same as its heartbeats
    /// stopping: `LeaderLost`, then an election.
    ///
    /// Errors if `member` is not a member, or is this node.
    pub fn suspect(&mut self, now: Instant, member: NodeId) -> Result<(), CommandError> {
        let now = self.clock(now);
        if member == self.id {
            return Err(CommandError::SelfReference(member));
        }
        if self.members.index_of(member).is_none() {
            return Err(CommandError::UnknownMember(member));
        }
        self.members.suspect(member);
        if self.phase == Phase::Idle && self.leader.is_some_and(|leader| leader.id == member) {
            self.begin_election(now, self.term.next());
        }
        Ok(())
    }
}
