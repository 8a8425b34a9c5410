//! The kernel-row cache of the SMO: an LRU cache of rows keyed by point ([`RowCache`]), which
//! hands out where a row is ([`RowRef`]): a cache slot, or the Gram's own storage.

use super::{GramRows, NIL};

/// LRU cache of kernel rows keyed by point; every row holds all `n_points` values.
#[derive(Debug)]
pub(super) struct RowCache {
    pub(super) n_points: usize,
    pub(super) capacity: usize,
    slot_of: Vec<usize>,
    point_of: Vec<usize>,
    data: Vec<Vec<f64>>,
    prev: Vec<usize>,
    next: Vec<usize>,
    head: usize,
    tail: usize,
    pub(super) computed: usize,
}

impl RowCache {
    pub(super) fn new(n_points: usize, cache_bytes: usize) -> Self {
        let row_bytes = 8 * n_points.max(1);
        let capacity = (cache_bytes / row_bytes).clamp(2, n_points.max(2));
        Self {
            n_points,
            capacity,
            slot_of: vec![NIL; n_points],
            point_of: Vec::new(),
            data: Vec::new(),
            prev: Vec::new(),
            next: Vec::new(),
            head: NIL,
            tail: NIL,
            computed: 0,
        }
    }

    fn unlink(&mut self, s: usize) {
        let (p, n) = (self.prev[s], self.next[s]);
        if p == NIL {
            self.head = n;
        } else {
            self.next[p] = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            self.prev[n] = p;
        }
        self.prev[s] = NIL;
        self.next[s] = NIL;
    }

    fn push_front(&mut self, s: usize) {
        self.prev[s] = NIL;
        self.next[s] = self.head;
        if self.head != NIL {
            self.prev[self.head] = s;
        }
        self.head = s;
        if self.tail == NIL {
            self.tail = s;
        }
    }

    /// Where the row of `point` is: in place in the Gram when it stores its rows, else in a
    /// cache slot, computed (evicting the least recently used row) on a miss. The two most
    /// recent rows are never evicted by the next call.
    pub(super) fn get<G: GramRows>(&mut self, gram: &G, point: usize) -> RowRef {
        if gram.stored_row(point).is_some() {
            return RowRef::Stored(point);
        }
        let s = self.slot_of[point];
        if s != NIL {
            if self.head != s {
                self.unlink(s);
                self.push_front(s);
            }
            return RowRef::Slot(s);
        }
        if gram.reads_known_rows() {
            self.compute(gram, &[point]);
            return RowRef::Slot(self.slot_of[point]);
        }
        let s = self.claim_slot(point);
        gram.fill_row(point, &mut self.data[s]);
        self.computed += 1;
        RowRef::Slot(s)
    }

    /// A slot for the row of `point` (a new one while below capacity, else the least recently
    /// used one, evicted), marked as the most recent; its values are the caller's to fill.
    fn claim_slot(&mut self, point: usize) -> usize {
        let s = if self.data.len() < self.capacity {
            self.data.push(vec![0.0; self.n_points]);
            self.point_of.push(point);
            self.prev.push(NIL);
            self.next.push(NIL);
            self.data.len() - 1
        } else {
            let s = self.tail;
            self.unlink(s);
            self.slot_of[self.point_of[s]] = NIL;
            self.point_of[s] = point;
            s
        };
        self.slot_of[point] = s;
        self.push_front(s);
        s
    }

    /// Whether the row of `point` is at hand without computing it.
    pub(super) fn has<G: GramRows>(&self, gram: &G, point: usize) -> bool {
        self.slot_of[point] != NIL || gram.stored_row(point).is_some()
    }

    /// Computes the rows of the `points` not at hand in one batch ([`GramRows::fill_rows`]),
    /// at most `capacity - 2` of them (the first ones), so that the two most recent rows stay.
    pub(super) fn fetch_many<G: GramRows>(&mut self, gram: &G, points: &[usize]) {
        let room = self.capacity.saturating_sub(2).max(1);
        let mut missing: Vec<usize> = Vec::with_capacity(points.len());
        for &p in points {
            if !self.has(gram, p) && !missing.contains(&p) && missing.len() < room {
                missing.push(p);
            }
        }
        if missing.len() <= 1 {
            return; // a single row is computed by `get` when asked for
        }
        self.compute(gram, &missing);
    }

    /// Computes the rows of `points` (none at hand, at most `capacity - 2`) into slots claimed
    /// for them in one batch ([`GramRows::fill_rows_known`]), handing the Gram the rows already
    /// cached when it [reads them](GramRows::reads_known_rows).
    fn compute<G: GramRows>(&mut self, gram: &G, points: &[usize]) {
        let slots: Vec<usize> = points.iter().map(|&p| self.claim_slot(p)).collect();
        let mut known: Vec<Option<&[f64]>> = Vec::new();
        if gram.reads_known_rows() {
            known.resize(self.n_points, None);
        }
        // Mutable views of the claimed slots, shared views of the others.
        let mut by_slot: Vec<Option<&mut [f64]>> = Vec::with_capacity(self.data.len());
        for (s, v) in self.data.iter_mut().enumerate() {
            if slots.contains(&s) {
                by_slot.push(Some(v.as_mut_slice()));
            } else {
                if let Some(k) = known.get_mut(self.point_of[s]) {
                    *k = Some(v.as_slice());
                }
                by_slot.push(None);
            }
        }
        // in the order of `points`
        let mut outs: Vec<&mut [f64]> = slots
            .iter()
            .filter_map(|&s| by_slot.get_mut(s).and_then(Option::take))
            .collect();
        gram.fill_rows_known(points, &mut outs, &known);
        self.computed += points.len();
    }

    /// The row behind `r` (from [`RowCache::get`] with the same `gram`).
    pub(super) fn row<'s, G: GramRows>(&'s self, gram: &'s G, r: RowRef) -> &'s [f64] {
        match r {
            RowRef::Slot(s) => &self.data[s],
            RowRef::Stored(p) => gram.stored_row(p).unwrap_or_default(),
        }
    }
}

/// A kernel row handed out by [`RowCache::get`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RowRef {
    /// A cache slot.
    Slot(usize),
    /// The point's row stored in the Gram itself.
    Stored(usize),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Gram whose row `i` is `i` everywhere, to see which rows the cache computes.
    struct Counting(usize);

    impl GramRows for Counting {
        fn n_points(&self) -> usize {
            self.0
        }
        fn diagonal(&self) -> Vec<f64> {
            (0..self.0).map(|i| i as f64).collect()
        }
        fn fill_row(&self, i: usize, out: &mut [f64]) {
            out.iter_mut().for_each(|o| *o = i as f64);
        }
    }

    #[test]
    fn row_cache_is_lru_by_point() {
        let g = Counting(10);
        let mut c = RowCache::new(10, 3 * 8 * 10);
        assert_eq!(c.capacity, 3);
        for p in [0, 1, 2] {
            let s = c.get(&g, p);
            assert_eq!(c.row(&g, s)[4], p as f64);
        }
        assert_eq!(c.computed, 3);
        c.get(&g, 0); // hit: 0 becomes most recent, 1 least recent
        assert_eq!(c.computed, 3);
        let s = c.get(&g, 5); // evicts 1
        assert_eq!(c.row(&g, s)[0], 5.0);
        assert_eq!(c.slot_of[1], NIL);
        c.get(&g, 0);
        c.get(&g, 2);
        assert_eq!(c.computed, 4);
        c.get(&g, 1); // evicts 5
        assert_eq!(c.slot_of[5], NIL);
        assert_eq!(c.computed, 5);
        // Never fewer than two rows.
        assert_eq!(RowCache::new(10, 0).capacity, 2);
    }
}
