//! Work run in parallel and consumed in order, with a bounded number of results waiting.
//!
//! Replications finish in any order, but a scenario's statistics must be added in replication
//! order (float sums are not associative) and raw records are written in task order. Collecting
//! every result before folding them held all of them at once: gigabytes for a sweep of thousands of
//! replications. Here workers take the tasks in increasing order, and the result of task `i` is
//! handed to the consumer as soon as tasks `0..i` have been; a worker does not start a task more
//! than [`window`] tasks ahead of the consumer, so at most that many results wait, whatever the
//! number of tasks.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex};

/// Tasks a worker may run ahead of the oldest unconsumed one: 16 per worker keeps every worker
/// busy while one long replication holds the consumer back, at the memory of 16 results each.
pub fn window(workers: usize) -> usize {
    16 * workers.max(1)
}

struct State<R, C> {
    /// The next task to start.
    next: usize,
    /// The next task to consume.
    consumed: usize,
    /// Finished tasks waiting for their predecessors.
    done: BTreeMap<usize, R>,
    consume: C,
}

/// Runs `work(i)` for every `i in 0..n` on the current rayon pool and gives each result to
/// `consume(i, result)` in increasing `i`, from whichever worker finished the task that unblocked
/// it (one at a time). The order of the calls to `consume` never depends on scheduling.
pub fn for_each_in_order<R, W, C>(n: usize, work: W, consume: C)
where
    R: Send,
    W: Fn(usize) -> R + Sync,
    C: FnMut(usize, R) + Send,
{
    let workers = rayon::current_num_threads().min(n.max(1));
    let ahead = window(workers);
    let state = Mutex::new(State { next: 0, consumed: 0, done: BTreeMap::new(), consume });
    let ready = Condvar::new();
    let worker = || {
        loop {
            let i = {
                let mut s = state.lock().expect("no worker panics while holding the lock");
                while s.next < n && s.next >= s.consumed + ahead {
                    s = ready.wait(s).expect("no worker panics while holding the lock");
                }
                if s.next >= n {
                    return;
                }
                s.next += 1;
                s.next - 1
            };
            let r = work(i);
            let mut s = state.lock().expect("no worker panics while holding the lock");
            s.done.insert(i, r);
            let s = &mut *s;
            while let Some(r) = s.done.remove(&s.consumed) {
                (s.consume)(s.consumed, r);
                s.consumed += 1;
            }
            ready.notify_all();
        }
    };
    if workers <= 1 {
        worker();
        return;
    }
    rayon::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|_| worker());
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_consumed_in_order_whatever_finishes_first() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
        let mut seen = Vec::new();
        pool.install(|| {
            for_each_in_order(
                200,
                |i| {
                    // Early tasks take longest, so later ones finish first.
                    std::thread::sleep(std::time::Duration::from_micros(
                        ((200 - i) % 7) as u64 * 300,
                    ));
                    i * 3
                },
                |i, r| seen.push((i, r)),
            );
        });
        assert_eq!(seen, (0..200).map(|i| (i, i * 3)).collect::<Vec<_>>());
    }

    #[test]
    fn no_more_than_the_window_waits() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let started = std::sync::atomic::AtomicUsize::new(0);
        let mut most = 0;
        pool.install(|| {
            for_each_in_order(
                500,
                |i| {
                    started.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    // Task 0 is slow: the others pile up behind it until the window is full.
                    if i == 0 {
                        std::thread::sleep(std::time::Duration::from_millis(50));
                    }
                },
                |i, ()| most = most.max(started.load(std::sync::atomic::Ordering::SeqCst) - i),
            );
        });
        assert!(most <= window(3), "{most} tasks started ahead of the consumer");
    }
}
