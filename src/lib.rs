//! lbsim: a discrete-event simulator for load-balancing policies.
//!
//! It reproduces, and extends, the experiments of an article on P2C, smooth weighted round robin,
//! Peak EWMA and stale load information. The pieces:
//!
//! - [`engine`]: the clock and the deterministic event queue;
//! - [`model`]: the supermarket model (Poisson arrivals, FIFO servers) and what policies see;
//! - [`policy`]: the load-balancing policies behind one small trait;
//! - [`workload`]: arrival processes and service-demand distributions (all with mean 1);
//! - [`experiment`]: one module per command, running replications in parallel;
//! - [`hashing`]: consistent hashing (ring with bounded loads, Maglev) for `lbsim hash`;
//! - [`scenario`]: scenario files (TOML) for `lbsim run`, with overrides and sweeps;
//! - [`shard`]: `--shard K/N` raw records and `lbsim merge`, for sweeps over many machines;
//! - [`stats`]: mergeable per-replication statistics and their summaries;
//! - [`subset`]: subsetting, the backends each client connects to (SRE book, ch. 20);
//! - [`output`]: table, CSV and JSON from the same rows;
//! - [`input`]: the user's files read within limits (size, line length, regular files);
//! - [`theory`]: the closed forms results are checked against;
//! - [`report`]: `lbsim report`, the reproduction as one HTML page.
//!
//! Data flow: `cli` (its values typed by the value parsers of [`options`] and [`args`]) →
//! [`experiment::Config::from_cli`] (each command validates its own options,
//! [`experiment::Command::config`]) → the command's plan of tasks, executed and merged
//! ([`experiment::Planned`]), or its own run ([`experiment::Direct`]) → typed rows
//! ([`experiment::Rows`]) → a [`output::Report`] of cells for the exporters; the figures and the
//! article's checks ([`article`]) read the typed rows.

#![warn(missing_docs)]

pub mod admission;
pub mod args;
pub mod article;
pub mod cache;
pub mod cancel;
pub mod cli;
pub mod count;
pub mod engine;
pub mod error;
pub mod experiment;
pub mod hashing;
pub mod info;
pub mod input;
pub mod lifecycle;
pub mod limits;
pub mod model;
pub mod named;
pub mod options;
pub mod output;
pub mod policy;
pub mod report;
pub mod rng;
pub mod scenario;
pub mod shard;
pub mod signal;
pub mod stats;
pub mod subset;
pub mod theory;
pub mod time;
pub mod workload;
