//! The supermarket model: Poisson arrivals dispatched by a policy to a farm of FIFO servers.
//!
//! - A farm of `n` FIFO servers; server `i` serves at rate `mu_i`. A request's demand is `Exp(1)`
//!   and takes `demand / mu_i` at server `i`.
//! - Arrivals form one Poisson stream of rate `load * sum(mu_i)`.
//! - The policy picks a server at the arrival instant, reading the [`LoadTable`]; the request then
//!   waits there, FIFO, until served. A queue length counts the request in service.
//! - The first `warmup` arrivals are simulated but not measured; the next `requests` are; then no
//!   more arrivals are generated and the farm drains. Time averages cover the window from the first
//!   to the last measured arrival.
//!
//! The engine's `simulate` (a layer above) runs one replication of it and returns its
//! [`RepStats`](crate::stats::RepStats).
//!
//! A [`Farm`] may depart from the article's servers: `slots` workers sharing each server's FIFO
//! queue (M/M/c), processor sharing ([`Discipline::Ps`]), and rate changes during the run
//! ([`RateChange`]); the servers that simulate them are in `engine/servers.rs`.

mod classes;
mod clients;
mod departures;
mod farm;
mod load;

pub use classes::{Class, Classes, DEFAULT_SLICE, SCHED_PRIO_TO_WEIGHT, nice_weight};
pub use clients::Clients;

pub use farm::{Discipline, Farm, Information, RateChange, RunLength, SimOptions};
pub use load::LoadTable;
