//! Each member's clock: how the instants a member's node is given relate to the
//! simulation's real time.
//!
//! The simulation keeps one real (simulated) time: deliveries and timers are
//! scheduled in it, and the checker compares in it. A member's node is given its
//! own clock's reading instead, and that clock may run at its own rate, `1 + drift`
//! seconds per real second (A2, the bounded-drift assumption of
//! docs/correctness.md, section 3, bounds `|drift|` by
//! `Config::with_clock_drift`'s ρ), and may step forward. A timer a node arms for
//! its own instant `T` fires at the first real instant at which its clock reads
//! `T` or later, so `handle_timeout` always finds it due.
//!
//! The arithmetic is in whole nanoseconds (the drift in parts per billion), so the
//! same run gives the same instants on every machine, and a clock that neither
//! drifts nor stepped gives exactly the real instant.

use std::time::Duration;

use bully_core::{Instant, NodeId};

use super::{SimError, Simulation, TraceEntry};

/// Parts per billion in one.
const BILLION: i128 = 1_000_000_000;

/// One member's clock, piecewise linear in real time: from the real instant
/// `anchor_real` on it reads `anchor_local` plus the real time since, scaled by
/// `1 + ppb / 10^9`. A change of rate or a step starts a new piece.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Clock {
    anchor_real: Instant,
    anchor_local: Instant,
    /// How many nanoseconds the clock gains per real second (negative: loses).
    ppb: i64,
}

impl Clock {
    /// A clock that reads the real time exactly.
    pub(crate) fn exact(epoch: Instant) -> Clock {
        Clock {
            anchor_real: epoch,
            anchor_local: epoch,
            ppb: 0,
        }
    }

    fn is_exact(&self) -> bool {
        self.ppb == 0 && self.anchor_real == self.anchor_local
    }

    /// The drift: how much faster than real time the clock runs (negative:
    /// slower), as a fraction.
    pub(crate) fn drift(&self) -> f64 {
        self.ppb as f64 / BILLION as f64
    }

    /// What the clock reads at the real instant `real` (at or after the start of
    /// the current piece; earlier instants are read at the current rate too).
    pub(crate) fn local(&self, real: Instant) -> Instant {
        if self.is_exact() {
            return real;
        }
        let elapsed = signed_nanos(real, self.anchor_real);
        let scaled = (elapsed * (BILLION + i128::from(self.ppb))).div_euclid(BILLION);
        offset(self.anchor_local, scaled)
    }

    /// The first real instant at which the clock reads `local` or later.
    pub(crate) fn real(&self, local: Instant) -> Instant {
        if self.is_exact() {
            return local;
        }
        let elapsed = signed_nanos(local, self.anchor_local);
        let rate = BILLION + i128::from(self.ppb);
        // The smallest `d` with `floor(d * rate / 10^9) >= elapsed` is
        // `ceil(elapsed * 10^9 / rate)`.
        let numerator = elapsed * BILLION;
        let real = -(-numerator).div_euclid(rate);
        offset(self.anchor_real, real)
    }

    /// From the real instant `now` on, the clock runs `ppb` parts per billion
    /// fast (negative: slow), continuing from what it reads at `now`.
    pub(crate) fn set_rate(&mut self, now: Instant, ppb: i64) {
        let reading = self.local(now);
        *self = Clock {
            anchor_real: now,
            anchor_local: reading,
            ppb,
        };
    }

    /// At the real instant `now` the clock jumps forward by `by`.
    pub(crate) fn step(&mut self, now: Instant, by: Duration) {
        let reading = self.local(now);
        let stepped = reading.checked_add(by).unwrap_or(reading);
        *self = Clock {
            anchor_real: now,
            anchor_local: stepped,
            ppb: self.ppb,
        };
    }
}

/// The drifts [`Simulation::set_clock_drift`] accepts: a clock that runs
/// forward, at most twice as fast as real time and at least a tenth as fast.
const DRIFT_RANGE: std::ops::RangeInclusive<f64> = -0.9..=1.0;

impl Simulation {
    /// From now on member `id`'s clock runs `drift` faster than real time
    /// (negative: slower): `1 + drift` seconds per real second, continuing from
    /// what it reads now. Its node is given that clock's readings, and a timer it
    /// arms fires when that clock reads the deadline. A2 bounds `|drift|` by the
    /// configuration's ρ (`Config::clock_drift`); a drift beyond it is accepted,
    /// so a test can show what it breaks. Kept across crashes and restarts (the
    /// machine's clock, not the process's).
    ///
    /// ```
    /// use std::time::Duration;
    /// use bully_sim::Simulation;
    /// use bully_core::{Config, NodeId};
    ///
    /// let mut sim = Simulation::new(1, (1..=3).map(NodeId), Config::default())?;
    /// let before = sim.local_now(NodeId(3)).unwrap();
    /// sim.set_clock_drift(NodeId(3), -0.001)?;
    /// sim.run_for(Duration::from_secs(10));
    /// let read = sim.local_now(NodeId(3)).unwrap() - before;
    /// assert_eq!(read, Duration::from_millis(9_990), "1,000 ppm slow: 10 ms in 10 s");
    /// # Ok::<(), bully_sim::SimError>(())
    /// ```
    pub fn set_clock_drift(&mut self, id: NodeId, drift: f64) -> Result<(), SimError> {
        let index = self.index(id)?;
        if !DRIFT_RANGE.contains(&drift) {
            return Err(SimError::ClockDrift(drift));
        }
        // At most 10^9 in magnitude: exact in an i64.
        let ppb = (drift * 1e9).round() as i64;
        self.slots[index].clock.set_rate(self.now, ppb);
        self.rearm(index);
        self.record(TraceEntry::Fault {
            description: format!("clock of {id} drifts {drift:+}"),
        });
        Ok(())
    }

    /// Member `id`'s clock jumps forward by `by` now (a resumed virtual machine's,
    /// say). While the member is down that is all it does; while it runs, it
    /// shortens whatever the member is timing, its promises to a leader and its
    /// wait for answers too, which A2 rules out: the run has left the
    /// synchronous model ([`has_faulted`](Self::has_faulted)), and the checker
    /// counts overlapping leaderships and work instead of flagging them (see
    /// [`clock_stepped`](Self::clock_stepped)).
    pub fn step_clock(&mut self, id: NodeId, by: Duration) -> Result<(), SimError> {
        let index = self.index(id)?;
        self.slots[index].clock.step(self.now, by);
        if self.slots[index].up && !by.is_zero() {
            // Its timeouts fire early: outside the synchronous model too.
            self.faulted = true;
            self.clock_stepped = true;
            self.checker.left_model();
        }
        self.rearm(index);
        self.record(TraceEntry::Fault {
            description: format!("clock of {id} steps {by:?}"),
        });
        Ok(())
    }

    /// What member `id`'s clock reads now (the simulation's [`now`](Self::now)
    /// unless it drifts or stepped), or `None` for a stranger.
    pub fn local_now(&self, id: NodeId) -> Option<Instant> {
        let index = self.index(id).ok()?;
        Some(self.slots[index].clock.local(self.now))
    }

    /// How much faster than real time member `id`'s clock runs (negative:
    /// slower), or `None` for a stranger.
    pub fn clock_drift(&self, id: NodeId) -> Option<f64> {
        let index = self.index(id).ok()?;
        Some(self.slots[index].clock.drift())
    }

    /// Whether a running member's clock has stepped forward
    /// ([`step_clock`](Self::step_clock)): the run has left A2, and overlapping
    /// leaderships and work are counted, not flagged.
    pub fn clock_stepped(&self) -> bool {
        self.clock_stepped
    }

    /// Requeues member `index`'s timer after its clock changed: its deadline on
    /// its own clock comes at another real instant now.
    fn rearm(&mut self, index: usize) {
        let now = self.now;
        let slot = &mut self.slots[index];
        let real = slot.timer_at.map(|at| slot.clock.real(at).max(now));
        if real != slot.timer_real {
            slot.timer_real = real;
            if let Some(at) = real {
                self.timers.push(std::cmp::Reverse((at, index)));
            }
        }
    }
}

/// `a - b` in nanoseconds, negative if `a` is earlier.
fn signed_nanos(a: Instant, b: Instant) -> i128 {
    if a >= b {
        i128::try_from(a.duration_since(b).as_nanos()).unwrap_or(i128::MAX / BILLION)
    } else {
        -i128::try_from(b.duration_since(a).as_nanos()).unwrap_or(i128::MAX / BILLION)
    }
}

/// `base` moved by `nanos` (either way), or `base` itself if that leaves the
/// range an `Instant` can hold.
fn offset(base: Instant, nanos: i128) -> Instant {
    let magnitude = Duration::from_nanos(u64::try_from(nanos.unsigned_abs()).unwrap_or(u64::MAX));
    let moved = if nanos >= 0 {
        base.checked_add(magnitude)
    } else {
        base.checked_sub(magnitude)
    };
    moved.unwrap_or(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn an_exact_clock_reads_the_real_time() {
        let epoch = Instant::now();
        let clock = Clock::exact(epoch);
        assert_eq!(clock.local(epoch + ms(1234)), epoch + ms(1234));
        assert_eq!(clock.real(epoch + ms(1234)), epoch + ms(1234));
    }

    #[test]
    fn a_clock_one_percent_fast_reads_a_second_after_990_ms_and_change() {
        let epoch = Instant::now();
        let mut clock = Clock::exact(epoch);
        clock.set_rate(epoch, 10_000_000);
        assert_eq!(clock.local(epoch + ms(1000)), epoch + ms(1010));
        let real = clock.real(epoch + ms(1000));
        // 1 s / 1.01 = 990.099009900... ms, rounded up to the nanosecond.
        assert_eq!(real, epoch + Duration::from_nanos(990_099_010));
        assert!(clock.local(real) >= epoch + ms(1000), "due when it fires");
        let before = real - Duration::from_nanos(1);
        assert!(
            clock.local(before) < epoch + ms(1000),
            "not a nanosecond earlier"
        );
    }

    #[test]
    fn a_slow_clock_fires_every_deadline_at_the_first_instant_it_reads_it() {
        let epoch = Instant::now();
        let mut clock = Clock::exact(epoch);
        clock.set_rate(epoch + ms(5), -300_000_000);
        for step in 1..2_000u64 {
            let deadline = epoch + Duration::from_nanos(step * 7_919_333);
            let real = clock.real(deadline);
            assert!(clock.local(real) >= deadline, "{step}");
            assert!(
                clock.local(real - Duration::from_nanos(1)) < deadline,
                "{step}"
            );
        }
    }

    #[test]
    fn a_step_moves_the_reading_forward_and_the_rate_continues() {
        let epoch = Instant::now();
        let mut clock = Clock::exact(epoch);
        clock.set_rate(epoch, 100_000_000);
        clock.step(epoch + ms(100), ms(500));
        // 110 ms by then, 500 ms more at once, then 1.1 ms per ms.
        assert_eq!(clock.local(epoch + ms(100)), epoch + ms(610));
        assert_eq!(clock.local(epoch + ms(200)), epoch + ms(720));
        assert_eq!(clock.real(epoch + ms(720)), epoch + ms(200));
        assert!((clock.drift() - 0.1).abs() < 1e-12);
    }
}
