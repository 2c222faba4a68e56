//! Stopping a run from outside: a flag a program that links lbsim sets, and the points where
//! every loop looks at it. A leaf module, so that the engine and the commands that do not run it
//! (and the workload's generators they call) can all look.

use std::sync::atomic::{AtomicBool, Ordering};

/// How many steps (balls, keys, requests, generated times) a loop outside the engine takes
/// between two calls to [`cancel_point`]: a power of two, so a check costs a mask and a compare.
pub const EVERY: u64 = 1 << 16;

/// Set by a program that links lbsim (the Python package, on Ctrl-C) to stop every running
/// replication of this process. Each looks at it through [`cancel_point`] and, when it is set,
/// unwinds with a [`Cancelled`] payload through its caller, as salsa cancels a query
/// (`Cancelled::throw`, `std::panic::resume_unwind`: no panic message, and every value on the way
/// is dropped). The caller catches it with `std::panic::catch_unwind`; the command line never
/// sets it.
pub static CANCEL: AtomicBool = AtomicBool::new(false);

/// The payload a replication unwinds with when [`CANCEL`] is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

/// Unwinds with [`Cancelled`] if [`CANCEL`] is set. The engine calls it when a replication adds
/// a chunk to `engine::ARRIVALS` (every `engine::ARRIVALS_CHUNK` arrivals, so its loop pays
/// nothing more); the commands that do not run the engine (`bins`, `hash`, `subset`, `swrr`,
/// `limit`) once per replication and every [`EVERY`] steps of a long loop (the arrival patterns
/// `limit` generates included), so a program that sets [`CANCEL`] stops them as soon as it stops
/// a queueing run.
#[inline]
pub fn cancel_point() {
    if CANCEL.load(Ordering::Relaxed) {
        cancelled();
    }
}

/// [`cancel_point`] at every [`EVERY`]-th step of a loop, `step` counted from 0.
#[inline]
pub fn cancel_every(step: u64) {
    if step.is_multiple_of(EVERY) {
        cancel_point();
    }
}

#[cold]
#[inline(never)]
fn cancelled() -> ! {
    std::panic::resume_unwind(Box::new(Cancelled))
}
