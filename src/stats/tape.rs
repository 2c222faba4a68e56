//! Records written front to back into an anonymous temporary file, then read back from the
//! start as often as needed: where `run --series` keeps the windows a replication has closed and
//! the windows its row has pooled, instead of in memory.
//!
//! The file is created unlinked (`O_TMPFILE` where the system has it), in the system's
//! temporary directory (`TMPDIR`): it has no name, so nothing is left behind however the
//! process ends, and it is gone when the last [`Tape`] holding it is dropped. Clones of a tape
//! share the file; each reader reads at its own offset.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

/// Bytes buffered by a writer and by a reader.
const BUFFER: usize = 1 << 16;

/// A tape being written.
#[derive(Debug)]
pub struct TapeWriter {
    out: BufWriter<File>,
}

impl TapeWriter {
    /// An empty tape.
    pub fn new() -> io::Result<TapeWriter> {
        Ok(TapeWriter { out: BufWriter::with_capacity(BUFFER, tempfile::tempfile()?) })
    }

    /// The tape as written, ready to be read.
    pub fn finish(self) -> io::Result<Tape> {
        let file = self.out.into_inner().map_err(io::IntoInnerError::into_error)?;
        let len = file.metadata()?.len();
        Ok(Tape { file: Arc::new(file), len })
    }
}

impl Write for TapeWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.out.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// A written tape.
#[derive(Debug, Clone)]
pub struct Tape {
    file: Arc<File>,
    len: u64,
}

impl Tape {
    /// Bytes on the tape.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A reader from the start, buffered.
    pub fn reader(&self) -> BufReader<TapeReader> {
        BufReader::with_capacity(
            BUFFER,
            TapeReader { file: Arc::clone(&self.file), at: 0, len: self.len },
        )
    }
}

/// Reads a tape at its own offset.
#[derive(Debug)]
pub struct TapeReader {
    file: Arc<File>,
    at: u64,
    len: u64,
}

impl Read for TapeReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = usize::try_from(self.len - self.at).unwrap_or(usize::MAX);
        let want = buf.len().min(left);
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.read_at(&mut buf[..want], self.at)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "a tape shorter than written",
            ));
        }
        self.at += n as u64;
        Ok(n)
    }
}

/// Writes `x` as an LEB128 varint.
pub fn put_varint(out: &mut impl Write, mut x: u64) -> io::Result<()> {
    let mut bytes = [0u8; 10];
    let mut n = 0;
    while x >= 0x80 {
        bytes[n] = (x as u8) | 0x80;
        x >>= 7;
        n += 1;
    }
    bytes[n] = x as u8;
    out.write_all(&bytes[..=n])
}

/// Reads an LEB128 varint.
pub fn get_varint(r: &mut impl Read) -> io::Result<u64> {
    let (mut x, mut shift) = (0u64, 0u32);
    loop {
        let mut byte = [0u8; 1];
        r.read_exact(&mut byte)?;
        if shift >= 64 {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "a varint over 64 bits"));
        }
        x |= u64::from(byte[0] & 0x7f) << shift;
        if byte[0] < 0x80 {
            return Ok(x);
        }
        shift += 7;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tape_reads_back_what_was_written_as_often_as_asked() {
        let mut w = TapeWriter::new().unwrap();
        for x in [0, 1, 127, 128, 300, u64::MAX] {
            put_varint(&mut w, x).unwrap();
        }
        w.write_all(&1.5f64.to_le_bytes()).unwrap();
        let tape = w.finish().unwrap();
        assert_eq!(tape.len(), 1 + 1 + 1 + 2 + 2 + 10 + 8);
        for _ in 0..2 {
            let mut r = tape.reader();
            let xs: Vec<u64> = (0..6).map(|_| get_varint(&mut r).unwrap()).collect();
            assert_eq!(xs, [0, 1, 127, 128, 300, u64::MAX]);
            let mut f = [0u8; 8];
            r.read_exact(&mut f).unwrap();
            assert_eq!(f64::from_le_bytes(f), 1.5);
            assert_eq!(r.read(&mut f).unwrap(), 0, "nothing after the end");
        }
    }
}
