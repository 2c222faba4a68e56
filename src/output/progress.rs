//! The progress bar: replications done out of the total, with an ETA, on stderr.
//!
//! It is shown only when stderr is a terminal and `--quiet` was not given, and only once a run has
//! lasted [`REVEAL_AFTER`]: a short run prints nothing at all. Otherwise the bar is hidden and every
//! call on it is a no-op, so callers never need to ask. It never writes to stdout.

use std::io::IsTerminal;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a run must last before its bar appears.
pub const REVEAL_AFTER: Duration = Duration::from_secs(1);

/// How often a visible bar redraws (elapsed time and ETA move between replications).
const TICK: Duration = Duration::from_millis(200);

/// The decision: draw a bar for `total` replications?
pub fn should_show(quiet: bool, stderr_is_terminal: bool, total: u64) -> bool {
    !quiet && stderr_is_terminal && total > 0
}

/// A bar for `total` replications labelled `label`, hidden for now: hidden for good unless
/// [`should_show`] says otherwise, in which case [`Progress`] reveals it.
pub fn progress_bar(total: u64, label: &str) -> ProgressBar {
    let style = ProgressStyle::with_template(
        "{prefix} {elapsed_precise} [{wide_bar}] {pos}/{len} replications, ETA {eta}",
    )
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

impl Reporter for Progress {
    fn done(&self) {
        self.inc();
    }

    fn more(&self, n: u64) {
        self.bar.inc_length(n);
    }
}

/// A bar that reveals itself on stderr after [`REVEAL_AFTER`] if the run is still going.
#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
    reveal: Option<(Sender<()>, JoinHandle<()>)>,
}

impl Progress {
    /// Starts counting `total` replications; `quiet` keeps the bar hidden.
    pub fn start(total: u64, label: &str, quiet: bool) -> Progress {
        let bar = progress_bar(total, label);
        let reveal = should_show(quiet, std::io::stderr().is_terminal(), total).then(|| {
            let (done, wait) = mpsc::channel::<()>();
            let shown = bar.clone();
            let thread = std::thread::spawn(move || {
                if let Err(RecvTimeoutError::Timeout) = wait.recv_timeout(REVEAL_AFTER) {
                    shown.set_draw_target(ProgressDrawTarget::stderr());
                    shown.enable_steady_tick(TICK);
                }
            });
            (done, thread)
        });
        Progress { bar, reveal }
    }

    /// One more replication finished (callable from any thread).
    pub fn inc(&self) {
        self.bar.inc(1);
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
        let p = Progress::start(10, "homo", true);
        assert!(p.reveal.is_none());
        p.inc();
        assert_eq!(p.bar().position(), 1);
        p.finish();
    }
}
