//! Throughput benchmark (filled in by the benchmark harness work).

fn main() {}
