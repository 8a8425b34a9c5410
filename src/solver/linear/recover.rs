//! A distributed fit that survives a lost partition: when a worker dies, Dask rebuilds its
//! partitions from their graph, holding their rows but none of the fit's per-row state. That
//! state is a cache: [`Recovering`], the driver's [`Dispatch`], keeps the rounds that changed
//! it, and one restore round replays them on the rebuilt partitions only ([`Sequenced`]), the
//! same expressions in the same order, so the rebuilt state is the undisturbed fit's bit for
//! bit. Then the failed round is sent again: a partition that already answered it replies from
//! its copy of the reply (a round is never applied twice). The fit's record is then the
//! undisturbed fit's, bit for bit.
//!
//! The log holds the driver's messages (`d`-vectors and scalars, as the wire carries), not
//! per-row state; rounds that only read the state ([`READ_ONLY`]) are not kept.

use super::partition::{Answer, Dispatch};
use crate::error::{Error, Result};

/// The rounds that read a partition's state without changing it (a restore need not replay
/// them): the sums of the rows and of the current state, the sampled rows, the line search's
/// trials of the linear solve, the labels' summaries and the width's running sums.
pub(crate) const READ_ONLY: &[&str] = &[
    "mean",
    "sum_d",
    "sketch_rows",
    "jacobi_sums",
    "line_terms",
    "p_hat",
    "labels",
    "measures",
    "fold_values",
    "rows",
];

/// One round as the driver sent it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Logged {
    pub(crate) op: String,
    pub(crate) v: Vec<f64>,
    pub(crate) s: Vec<f64>,
}

/// A partition that numbers the rounds it answers (from 0, one per round of the fit) and keeps
/// its last reply to a round that changed its state: such a round sent again is answered from
/// it, not applied twice (one that only reads the state is answered again, so that the large
/// replies, the sketch's rows, are not kept). A partition without the fit's state (rebuilt
/// past round 0) says so instead of answering.
pub(crate) struct Sequenced<P> {
    inner: P,
    at: Option<u64>,
    last: Vec<f64>,
}

impl<P: Answer> Sequenced<P> {
    /// A partition that has answered no round.
    pub(crate) fn new(inner: P) -> Self {
        Self {
            inner,
            at: None,
            last: Vec::new(),
        }
    }

    /// The bytes the partition holds, its copy of its last reply included.
    #[cfg(feature = "python")]
    pub(crate) fn held_bytes(&self) -> usize {
        self.inner.held_bytes() + std::mem::size_of_val(&self.last[..])
    }

    /// The reply to round `seq`; `None` when this partition holds no state of the fit (it was
    /// rebuilt after round 0: [`Self::restore`] first).
    pub(crate) fn answer_at(
        &mut self,
        seq: u64,
        op: &str,
        v: &[f64],
        s: &[f64],
    ) -> Result<Option<Vec<f64>>> {
        let read_only = READ_ONLY.contains(&op);
        match self.at {
            Some(at) if at == seq && !read_only => return Ok(Some(self.last.clone())),
            Some(at) if at == seq => return self.inner.answer(op, v, s).map(Some),
            None if seq > 0 => return Ok(None),
            Some(at) if at + 1 != seq => {
                return Err(Error::InvalidData(format!(
                    "a partition at round {at} was sent round {seq} ({op:?})"
                )))
            }
            _ => {}
        }
        let out = self.inner.answer(op, v, s)?;
        self.at = Some(seq);
        if read_only {
            self.last.clear();
        } else {
            self.last.clone_from(&out);
        }
        Ok(Some(out))
    }

    /// A round outside the fit's sequence: only those that read the state ([`READ_ONLY`]).
    pub(crate) fn query(&mut self, op: &str, v: &[f64], s: &[f64]) -> Result<Vec<f64>> {
        if !READ_ONLY.contains(&op) {
            return Err(Error::InvalidData(format!(
                "the round {op:?} changes a partition's state: it needs its round number"
            )));
        }
        self.inner.answer(op, v, s)
    }

    /// Brings a rebuilt partition to the state before round `seq` by replaying `log` (the
    /// rounds before `seq` that changed the state, in order); a partition that holds that
    /// state already is left as it is.
    pub(crate) fn restore(&mut self, seq: u64, log: &[Logged]) -> Result<()> {
        match self.at {
            None => {
                for r in log {
                    self.inner.answer(&r.op, &r.v, &r.s)?;
                }
                self.at = seq.checked_sub(1);
                self.last.clear();
                Ok(())
            }
            Some(at) if at + 1 == seq || at == seq => Ok(()),
            Some(at) => Err(Error::InvalidData(format!(
                "a partition at round {at} cannot be restored to round {seq}"
            ))),
        }
    }
}

/// The driver's link to the partitions under [`Recovering`]: numbered rounds, and the restore
/// round.
pub(crate) trait Link {
    /// The replies of every partition to round `seq`.
    fn round(&mut self, seq: u64, op: &str, v: &[f64], s: &[f64]) -> Result<Vec<Vec<f64>>>;
    /// After a failed call: the partitions found without their state, if that was the failure
    /// (their workers were lost); `None` for any other failure.
    fn lost(&mut self) -> Option<Vec<usize>>;
    /// One restore round: the partitions `parts` replay `log` to the state before round `seq`
    /// ([`Sequenced::restore`]).
    fn restore(&mut self, parts: &[usize], seq: u64, log: &[Logged]) -> Result<()>;
}

/// The driver's [`Dispatch`] over a [`Link`]: numbers the rounds, logs those that change the
/// partitions' state, and on a lost partition sends one restore round to the lost partitions
/// and the failed round again, up to `retries` restore rounds in the fit.
pub(crate) struct Recovering<L> {
    link: L,
    log: Vec<Logged>,
    seq: u64,
    retries: usize,
    restores: usize,
}

impl<L: Link> Recovering<L> {
    /// Rounds over `link`, with at most `retries` restore rounds.
    pub(crate) fn new(link: L, retries: usize) -> Self {
        Self {
            link,
            log: Vec::new(),
            seq: 0,
            retries,
            restores: 0,
        }
    }

    /// The restore rounds sent so far.
    #[cfg(test)]
    pub(crate) fn restores(&self) -> usize {
        self.restores
    }

    /// The link.
    pub(crate) fn link(&mut self) -> &mut L {
        &mut self.link
    }

    /// Restores the partitions `lost` (and any found lost meanwhile), failing once the
    /// retries are spent.
    fn restore(&mut self, mut lost: Vec<usize>, op: &str) -> Result<()> {
        loop {
            if self.restores >= self.retries {
                return Err(Error::InvalidData(format!(
                    "partitions {lost:?} lost their state at round {} ({op:?}), and no restore \
                     is left ({} allowed)",
                    self.seq, self.retries
                )));
            }
            self.restores += 1;
            match self.link.restore(&lost, self.seq, &self.log) {
                Ok(()) => return Ok(()),
                Err(e) => {
                    let more = self.link.lost().ok_or(e)?;
                    lost.extend(more);
                    lost.sort_unstable();
                    lost.dedup();
                }
            }
        }
    }
}

impl<L: Link> Dispatch for Recovering<L> {
    fn round(&mut self, op: &str, v: &[f64], s: &[f64]) -> Result<Vec<Vec<f64>>> {
        loop {
            match self.link.round(self.seq, op, v, s) {
                Ok(replies) => {
                    if !READ_ONLY.contains(&op) {
                        self.log.push(Logged {
                            op: op.to_owned(),
                            v: v.to_vec(),
                            s: s.to_vec(),
                        });
                    }
                    self.seq += 1;
                    return Ok(replies);
                }
                Err(e) => {
                    let lost = self.link.lost().ok_or(e)?;
                    self.restore(lost, op)?;
                }
            }
        }
    }
}

/// Partitions in process whose states are dropped at chosen rounds (the tests' link): each
/// drop rebuilds the partition from its rows (`make`), as Dask rebuilds a lost one.
#[cfg(test)]
pub(crate) struct Dropping<P, F> {
    pub(crate) parts: Vec<Sequenced<P>>,
    make: F,
    /// `(round, partition)`: the partition loses its state just before the round.
    drops: Vec<(u64, usize)>,
    lost: Option<Vec<usize>>,
    /// Every round's name, in order (numbered rounds only).
    pub(crate) ops: Vec<String>,
}

#[cfg(test)]
impl<P: Answer, F: Fn(usize) -> P> Dropping<P, F> {
    /// The partitions `make(0), make(1), ...` (`n` of them), dropped at `drops`.
    pub(crate) fn new(n: usize, make: F, drops: Vec<(u64, usize)>) -> Self {
        Self {
            parts: (0..n).map(|k| Sequenced::new(make(k))).collect(),
            make,
            drops,
            lost: None,
            ops: Vec::new(),
        }
    }
}

#[cfg(test)]
impl<P: Answer, F: Fn(usize) -> P> Link for Dropping<P, F> {
    fn round(&mut self, seq: u64, op: &str, v: &[f64], s: &[f64]) -> Result<Vec<Vec<f64>>> {
        let (mut replies, mut lost) = (Vec::new(), Vec::new());
        for k in 0..self.parts.len() {
            if let Some(i) = self.drops.iter().position(|&d| d == (seq, k)) {
                self.drops.remove(i);
                self.parts[k] = Sequenced::new((self.make)(k));
            }
            match self.parts[k].answer_at(seq, op, v, s)? {
                Some(r) => replies.push(r),
                None => lost.push(k),
            }
        }
        if lost.is_empty() {
            if self.ops.len() as u64 == seq {
                self.ops.push(op.to_owned());
            }
            Ok(replies)
        } else {
            self.lost = Some(lost);
            Err(Error::InvalidData(format!("round {seq}: partitions lost")))
        }
    }

    fn lost(&mut self) -> Option<Vec<usize>> {
        self.lost.take()
    }

    fn restore(&mut self, parts: &[usize], seq: u64, log: &[Logged]) -> Result<()> {
        for &k in parts {
            self.parts[k].restore(seq, log)?;
        }
        Ok(())
    }
}

impl<A: Answer + ?Sized> Answer for Box<A> {
    fn answer(&mut self, op: &str, v: &[f64], s: &[f64]) -> Result<Vec<f64>> {
        (**self).answer(op, v, s)
    }
    fn held_bytes(&self) -> usize {
        (**self).held_bytes()
    }
}

/// Rounds to drop a partition's state at (the tests' choice) from the rounds of an
/// undisturbed fit, `ops`: the first and the middle round of every kind (so within the line
/// searches, the Newton steps and the outer steps), each at partition `round % parts`, and one
/// round where every partition is lost at once.
#[cfg(test)]
pub(crate) fn drops_for(ops: &[String], parts: usize) -> Vec<(u64, usize)> {
    let mut kinds: Vec<&str> = ops.iter().map(String::as_str).collect();
    kinds.sort_unstable();
    kinds.dedup();
    let mut drops = Vec::new();
    for kind in kinds {
        let at: Vec<u64> = (0..ops.len() as u64)
            .filter(|&i| ops[i as usize] == kind)
            .collect();
        for seq in [at[0], at[at.len() / 2]] {
            drops.push((seq, seq as usize % parts));
        }
    }
    let all = ops.len() as u64 * 2 / 3;
    drops.extend((0..parts).map(|k| (all, k)));
    drops.sort_unstable();
    drops.dedup();
    drops
}

/// The number of restore rounds `drops` cost: one per round with a drop past round 0 (a
/// partition rebuilt before the first round has no state to lose).
#[cfg(test)]
pub(crate) fn restores_for(drops: &[(u64, usize)]) -> usize {
    let mut seqs: Vec<u64> = drops.iter().map(|d| d.0).filter(|&s| s > 0).collect();
    seqs.dedup();
    seqs.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A partition that counts: its state is the sum of what it was sent.
    struct Counter(f64);

    impl Answer for Counter {
        fn answer(&mut self, op: &str, v: &[f64], _: &[f64]) -> Result<Vec<f64>> {
            if op == "add" {
                self.0 += v[0];
            }
            Ok(vec![self.0])
        }
        fn held_bytes(&self) -> usize {
            8
        }
    }

    #[test]
    fn a_round_is_applied_once_and_a_rebuilt_partition_is_restored() {
        let mut p = Sequenced::new(Counter(0.0));
        assert_eq!(p.answer_at(0, "add", &[2.0], &[]).unwrap(), Some(vec![2.0]));
        assert_eq!(p.answer_at(0, "add", &[2.0], &[]).unwrap(), Some(vec![2.0]));
        assert_eq!(p.answer_at(1, "mean", &[], &[]).unwrap(), Some(vec![2.0]));
        assert_eq!(p.answer_at(1, "mean", &[], &[]).unwrap(), Some(vec![2.0]));
        assert!(p.answer_at(3, "add", &[1.0], &[]).is_err());
        assert!(p.query("add", &[1.0], &[]).is_err());
        assert_eq!(p.query("mean", &[], &[]).unwrap(), vec![2.0]);
        let mut rebuilt = Sequenced::new(Counter(0.0));
        assert_eq!(rebuilt.answer_at(1, "add", &[1.0], &[]).unwrap(), None);
        let log = [Logged {
            op: "add".into(),
            v: vec![2.0],
            s: vec![],
        }];
        rebuilt.restore(1, &log).unwrap();
        rebuilt.restore(1, &log).unwrap(); // holds the state: left as it is
        assert_eq!(
            rebuilt.answer_at(1, "add", &[1.0], &[]).unwrap(),
            Some(vec![3.0])
        );
        assert!(rebuilt.restore(5, &log).is_err());

        // the driver: a drop at rounds 1 and 3 of partition 1 of 2, within the budget and past it
        let run = |retries: usize| {
            let link = Dropping::new(2, |_| Counter(0.0), vec![(1, 1), (3, 1)]);
            let mut driver = Recovering::new(link, retries);
            let mut sums = Vec::new();
            for (k, op) in ["add", "mean", "add", "mean"].iter().enumerate() {
                sums.push(driver.round(op, &[k as f64 + 1.0], &[])?);
            }
            Ok::<_, Error>((sums, driver.restores()))
        };
        let (sums, restores) = run(2).unwrap();
        assert_eq!(restores, 2);
        assert_eq!(sums[3], vec![vec![4.0], vec![4.0]]);
        let err = run(1).unwrap_err().to_string();
        assert!(err.contains("no restore is left (1 allowed)"), "{err}");
    }
}
