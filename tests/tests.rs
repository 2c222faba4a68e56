//! Integration tests: one binary (see matklad, "Delete Cargo Integration Tests").

mod admission;
mod capacity;
mod classes;
mod cli;
mod determinism;
mod engine;
mod experiments;
mod feedback;
mod fleet;
mod hashing;
mod health;
mod honest;
mod lifecycle;
mod outcomes;
mod plots;
mod regression;
mod report;
mod scenario;
mod shard;
mod states;
mod subset;
mod util;
mod ux;
mod validation;
