//! Reading the user's files within limits, so that a wrong path (`/dev/zero`, a FIFO nobody
//! writes, a file of gigabytes without a line break) is refused with one line instead of
//! filling the memory or waiting forever.
//!
//! A scenario is small: it is read whole, up to [`SCENARIO_BYTES`]. A trace, an empirical
//! distribution or a shard's raw records may be large but are made of lines: they are read as a
//! stream, and a line longer than its limit ([`CSV_LINE`], [`RECORD_LINE`]) stops the reading.
//! Named files must be regular files (links to one are followed); standard input, where a
//! command reads it (`-`), is a stream like any other and gets the same line limits.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// The largest scenario file read: 1 MiB (the shipped examples are under 4 KiB).
pub const SCENARIO_BYTES: usize = 1 << 20;

/// The longest line of a CSV file (a trace or an empirical distribution): 1 MiB.
pub const CSV_LINE: usize = 1 << 20;

/// The longest line of raw records: 64 MiB (a task line of a replication of 10^7 requests on
/// 100 servers takes about 250 KB; one of 10^6 servers, about 8 MB).
pub const RECORD_LINE: usize = 64 << 20;

/// A size in bytes as a message says it (`1 MiB`, `256 MiB`, `100 bytes`).
pub fn size(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// Why a file was not read; displays as the words after the file's name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// The system's reason (`No such file or directory (os error 2)`).
    #[error("{0}")]
    System(String),
    /// Not a regular file: what it is (`a directory`, `a FIFO`).
    #[error("is {0}, not a regular file")]
    NotRegular(&'static str),
    /// More bytes than the limit.
    #[error("is larger than {}", size(*.0))]
    TooLarge(usize),
    /// Not UTF-8.
    #[error("is not UTF-8 text")]
    NotText,
}

impl From<io::Error> for InputError {
    fn from(e: io::Error) -> Self {
        InputError::System(e.to_string())
    }
}

/// `Ok` when `path` is a regular file or a link to one; else what it is, in words
/// (`is a directory`, `is a character device`, `is a FIFO`), or the system's reason it cannot be
/// looked at (`No such file or directory (os error 2)`).
pub fn regular(path: &Path) -> Result<(), InputError> {
    use std::os::unix::fs::FileTypeExt;
    let kind = std::fs::metadata(path)?.file_type();
    let what = if kind.is_file() {
        return Ok(());
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    Err(InputError::NotRegular(what))
}

/// Opens `path` for reading if it is a regular file (see [`regular`]).
pub fn open_regular(path: &Path) -> Result<File, InputError> {
    regular(path)?;
    Ok(File::open(path)?)
}

/// Reads all of `reader` as UTF-8 text of at most `max` bytes.
pub fn read_text(reader: impl Read, max: usize) -> Result<String, InputError> {
    let mut bytes = Vec::new();
    reader.take(max as u64 + 1).read_to_end(&mut bytes)?;
    if bytes.len() > max {
        return Err(InputError::TooLarge(max));
    }
    String::from_utf8(bytes).map_err(|_| InputError::NotText)
}

/// A reader that fails (`InvalidData`) as soon as a line grows longer than its limit, so that
/// whatever reads lines from it holds at most one line of that length.
#[derive(Debug)]
pub struct LineLimit<R> {
    inner: R,
    max: usize,
    /// Bytes since the last line break.
    run: usize,
    /// Line breaks seen.
    lines: u64,
}

impl<R: Read> LineLimit<R> {
    /// Lines of `inner` at most `max` bytes long (the line break not counted).
    pub fn new(inner: R, max: usize) -> LineLimit<R> {
        LineLimit { inner, max, run: 0, lines: 0 }
    }
}

impl<R: Read> Read for LineLimit<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        for &b in &buf[..n] {
            if b == b'\n' {
                self.lines += 1;
                self.run = 0;
            } else {
                self.run += 1;
                if self.run > self.max {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("line {} is longer than {}", self.lines + 1, size(self.max)),
                    ));
                }
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};

    /// An endless stream of one byte, like `/dev/zero`.
    struct Endless(u8);

    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            buf.fill(self.0);
            Ok(buf.len())
        }
    }

    #[test]
    fn an_endless_line_stops_at_the_limit() {
        let mut r = BufReader::new(LineLimit::new(Endless(0), 1000));
        let mut line = String::new();
        let e = r.read_line(&mut line).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert_eq!(e.to_string(), "line 1 is longer than 1000 bytes");
        assert!(line.len() <= 1000 + 8192, "{}", line.len());
    }

    #[test]
    fn lines_up_to_the_limit_pass_and_the_long_one_is_named() {
        let good = format!("{}\n{}\n{}", "a".repeat(10), "b".repeat(10), "c".repeat(10));
        let mut all = String::new();
        BufReader::new(LineLimit::new(good.as_bytes(), 10)).read_to_string(&mut all).unwrap();
        assert_eq!(all, good);
        // The error comes with the read that reaches the long line, naming it.
        let text = format!("{}\n{}\n{}\n", "a".repeat(10), "b".repeat(10), "c".repeat(11));
        let mut rest = String::new();
        let e = BufReader::new(LineLimit::new(text.as_bytes(), 10))
            .read_to_string(&mut rest)
            .unwrap_err();
        assert_eq!(e.to_string(), "line 3 is longer than 10 bytes");
    }

    #[test]
    fn endless_text_is_refused_at_its_size() {
        let e = read_text(Endless(b'a'), 1 << 20).unwrap_err();
        assert_eq!(
            (e.to_string().as_str(), e),
            ("is larger than 1 MiB", InputError::TooLarge(1 << 20))
        );
        assert_eq!(read_text(&b"x = 1\n"[..], 6).unwrap(), "x = 1\n");
        let e = read_text(&[0xff, 0xfe][..], 6).unwrap_err();
        assert_eq!((e.to_string().as_str(), e), ("is not UTF-8 text", InputError::NotText));
    }

    #[test]
    fn what_is_not_a_regular_file_is_said() {
        let dir = std::env::temp_dir();
        let e = regular(&dir).unwrap_err();
        assert_eq!(e, InputError::NotRegular("a directory"));
        assert_eq!(e.to_string(), "is a directory, not a regular file");
        let e = regular(&dir.join("lbsim-no-such-file")).unwrap_err().to_string();
        assert!(e.contains("No such file"), "{e}");
    }
}
