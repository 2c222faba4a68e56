//! Terminal, pipe, file and signal behaviour of the binary.
