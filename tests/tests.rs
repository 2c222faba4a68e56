//! Integration tests: one binary (see matklad, "Delete Cargo Integration Tests").

mod cli;
mod determinism;
mod engine;
mod experiments;
mod honest;
mod regression;
mod scenario;
mod shard;
mod util;
mod ux;
mod validation;
