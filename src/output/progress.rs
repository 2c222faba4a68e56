//! The progress bar: requests simulated out of the total, with an ETA, on stderr; replications
//! done out of the total when the number of requests is not known before the run (`--warmup
//! auto`, `--precision`, commands that simulate no queue).
//!
//! Requests move the bar inside a replication: every replication adds its arrivals to
//! [`ARRIVALS`] as it goes, which a visible bar reads at every redraw.
//!
//! It is shown only when stderr is a terminal and `--quiet` was not given, and only once a run has
//! lasted [`REVEAL_AFTER`]: a short run prints nothing at all. Otherwise the bar is hidden and every
//! call on it is a no-op, so callers never need to ask. It never writes to stdout.

use std::io::IsTerminal;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::engine::ARRIVALS;

/// How long a run must last before its bar appears.
pub const REVEAL_AFTER: Duration = Duration::from_secs(1);

/// How often a visible bar redraws (elapsed time and ETA move between replications).
const TICK: Duration = Duration::from_millis(200);

/// The decision: draw a bar for `total` replications?
pub fn should_show(quiet: bool, stderr_is_terminal: bool, total: u64) -> bool {
    !quiet && stderr_is_terminal && total > 0
}

/// A bar for `total` replications labelled `label`, hidden for now: hidden for good unless
/// [`should_show`] says otherwise, in which case [`Meter`] reveals it.
pub fn progress_bar(total: u64, label: &str) -> ProgressBar {
    bar_of(total, label, "replications")
}

/// A bar for `total` simulated requests (arrivals, warm-ups included), hidden for now.
pub fn requests_bar(total: u64, label: &str) -> ProgressBar {
    bar_of(total, label, "requests")
}

fn bar_of(total: u64, label: &str, unit: &str) -> ProgressBar {
    let style = ProgressStyle::with_template(&format!(
        "{{prefix}} {{elapsed_precise}} [{{wide_bar}}] {{pos}}/{{len}} {unit}, ETA {{eta}}"
    ))
    .expect("valid template")
    .progress_chars("=> ");
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
    bar.set_style(style);
    bar.set_prefix(label.to_string());
    bar
}

/// Hears about the progress of a run, from any worker thread.
pub trait Reporter: Sync {
    /// One more replication finished.
    fn done(&self);
    /// `n` replications were added to the run (`--precision` doubling a row's requests).
    fn more(&self, n: u64) {
        let _ = n;
    }
}

/// A closure counts finished replications and ignores added work.
impl<F: Fn() + Sync> Reporter for F {
    fn done(&self) {
        self();
    }
}

impl Reporter for Meter {
    fn done(&self) {
        self.inc();
    }

    fn more(&self, n: u64) {
        self.bar.inc_length(n);
    }
}

/// A bar that reveals itself on stderr after [`REVEAL_AFTER`] if the run is still going.
#[derive(Debug)]
pub struct Meter {
    bar: ProgressBar,
    reveal: Option<(Sender<()>, JoinHandle<()>)>,
    /// Counting requests: [`ARRIVALS`] when the run started.
    base: Option<u64>,
}

impl Meter {
    /// Starts counting `total` replications, or the `requests` they simulate when that is known
    /// before the run; `quiet` keeps the bar hidden.
    pub fn start(total: u64, requests: Option<u64>, label: &str, quiet: bool) -> Meter {
        let requests = requests.filter(|&r| r > 0 && total > 0);
        let base = requests.map(|_| ARRIVALS.load(Ordering::Relaxed));
        let bar = match requests {
            Some(r) => requests_bar(r, label),
            None => progress_bar(total, label),
        };
        let reveal = should_show(quiet, std::io::stderr().is_terminal(), total).then(|| {
            let (done, wait) = mpsc::channel::<()>();
            let shown = bar.clone();
            let thread = std::thread::spawn(move || {
                if let Err(RecvTimeoutError::Timeout) = wait.recv_timeout(REVEAL_AFTER) {
                    shown.set_draw_target(ProgressDrawTarget::stderr());
                    shown.enable_steady_tick(TICK);
                    // Counting requests: follow the shared count until the run is over.
                    while let (Some(base), Err(RecvTimeoutError::Timeout)) =
                        (base, wait.recv_timeout(TICK))
                    {
                        shown.set_position(simulated_since(base));
                    }
                }
            });
            (done, thread)
        });
        Meter { bar, reveal, base }
    }

    /// One more replication finished (callable from any thread); counting requests, the bar
    /// catches up with the requests simulated.
    pub fn inc(&self) {
        match self.base {
            Some(base) => self.bar.set_position(simulated_since(base)),
            None => self.bar.inc(1),
        }
    }

    /// A handle on the bar (to clear it from elsewhere, e.g. on an interrupt).
    pub fn bar(&self) -> ProgressBar {
        self.bar.clone()
    }

    /// The run is over: removes the bar from the terminal, leaving nothing behind.
    pub fn finish(mut self) {
        if let Some((done, thread)) = self.reveal.take() {
            drop(done);
            let _ = thread.join();
        }
        self.bar.finish_and_clear();
    }
}

/// Requests simulated in this process since the count stood at `base`.
fn simulated_since(base: u64) -> u64 {
    ARRIVALS.load(Ordering::Relaxed).saturating_sub(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_only_on_a_terminal_without_quiet_and_with_work() {
        assert!(should_show(false, true, 30));
        assert!(!should_show(true, true, 30), "--quiet hides it");
        assert!(!should_show(false, false, 30), "not a terminal: hidden");
        assert!(!should_show(false, true, 0), "nothing to count (swrr)");
    }

    #[test]
    fn a_new_bar_is_hidden_and_counts() {
        let bar = progress_bar(7, "homo");
        assert!(bar.is_hidden());
        bar.inc(3);
        assert_eq!((bar.position(), bar.length()), (3, Some(7)));
    }

    #[test]
    fn a_quiet_progress_never_spawns_a_reveal() {
        let p = Meter::start(10, None, "homo", true);
        assert!(p.reveal.is_none());
        p.inc();
        assert_eq!(p.bar().position(), 1);
        p.finish();
    }

    /// Counting requests, the bar stands at the arrivals simulated since it started: a
    /// replication of 5 + 70,000 arrivals moves it by that much, whatever else ran before. (Other
    /// tests simulate concurrently, so the position is checked from below.)
    #[test]
    fn a_bar_of_requests_follows_the_replications_arrivals() {
        use crate::experiment::{Scenario, run_replication};
        let p = Meter::start(1, Some(70_005), "homo", true);
        assert_eq!(p.bar().length(), Some(70_005));
        let sc = Scenario::live(
            crate::model::Farm::homogeneous(10, 0.5),
            crate::policy::PolicyKind::PnC(2),
            10.0,
        );
        run_replication(&sc, &crate::experiment::RunConfig::new(5, 70_000, 1000), 1, 0);
        p.inc();
        assert!(p.bar().position() >= 70_005, "at {}", p.bar().position());
        p.finish();
    }
}
