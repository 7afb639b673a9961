//! Criterion benchmarks of the runtime's own overheads (filled in below).
fn main() {}
