//! Where `-o/--out` and `--plot` write, and how, so that output never harms a file.
//!
//! A destination is one of:
//!
//! - `-`: stdout;
//! - a regular file, or a name that does not exist yet: the output goes to a temporary file beside
//!   it, renamed over it once everything has been written. A reader never sees half a file, and a
//!   failed or interrupted run leaves the file as it was. A symbolic link is followed: its target
//!   is replaced and the link kept. The replacement keeps the target's permission bits (and its
//!   owner, where the system allows). A file without any write permission bit (e.g. mode 0444) is
//!   refused, even for root, and so is one this user may not open for writing;
//! - anything else: a character or block device (`/dev/null`), a FIFO, or a path that goes
//!   through `/proc` (`/dev/stdout`, `/dev/fd/1`): opened and written in place, appending as the
//!   shell's `>>` does, since such a file cannot be replaced. A FIFO is opened only when the
//!   output is ready: opening it waits for a reader.
//!
//! A temporary file is created only when the output is ready to be written (opening the
//! destination before the run only checks that one can be created there), so a run killed while
//! it simulates, even by SIGKILL, leaves nothing behind. The temporary files being written are
//! listed in one registry, so that a signal handler can remove them ([`exit_discarding`]) before
//! the process exits.

use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use crate::error::{UsageError, bad, conflict, shown};

/// The temporary files this process is writing.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn pending() -> MutexGuard<'static, Vec<PathBuf>> {
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Removes every temporary file still being written and exits with `code`. Holds the registry's
/// lock until the end, so no rename can happen after it (and none is half done before it).
pub fn exit_discarding(code: i32) -> ! {
    let mut slot = pending();
    for tmp in slot.drain(..) {
        let _ = fs::remove_file(tmp);
    }
    std::process::exit(code)
}

/// How many symbolic links are followed before giving up (Linux's own limit).
const MAX_LINKS: usize = 40;

/// Where a path leads once its symbolic links are followed.
#[derive(Debug, PartialEq, Eq)]
enum Followed {
    /// Through `/proc`: the kernel's view of open files, written in place as given.
    Kernel,
    /// A path that is not a symbolic link (it may not exist).
    Path(PathBuf),
}

fn parent(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

fn in_proc(dir: &Path) -> bool {
    fs::canonicalize(dir).is_ok_and(|d| d.starts_with("/proc"))
}

/// Follows `path`'s symbolic links, one at a time (a dangling link leads to the path it names).
fn follow(path: &Path) -> io::Result<Followed> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        if in_proc(parent(&p)) {
            return Ok(Followed::Kernel);
        }
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                // `join` keeps an absolute target as it is.
                p = parent(&p).join(fs::read_link(&p)?);
            }
            Ok(_) => return Ok(Followed::Path(p)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Followed::Path(p)),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// The path `path`'s symbolic links lead to, when it is one (a dangling link leads to the path it
/// names); `None` when it is no link, or leads into `/proc`, or cannot be followed.
pub fn link_target(path: &Path) -> Option<PathBuf> {
    match follow(path).ok()? {
        Followed::Path(p) if p != path => Some(p),
        _ => None,
    }
}

/// The file a path names, for telling whether two options name the same file: where its links
/// lead, canonical if it exists, else its canonical directory joined with its name. `None` for
/// stdout.
pub fn identity(path: &Path) -> Option<PathBuf> {
    if path == Path::new("-") {
        return None;
    }
    let p = match follow(path).ok()? {
        Followed::Kernel => return Some(path.to_path_buf()),
        Followed::Path(p) => p,
    };
    fs::canonicalize(&p).ok().or_else(|| {
        let dir = fs::canonicalize(parent(&p)).ok()?;
        Some(dir.join(p.file_name()?))
    })
}

/// Whether `a` and `b` name one file: the same device and inode where both exist (so through
/// symbolic and hard links alike), else the same [`identity`]. Standard output (`-`) is no file.
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (fs::metadata(a), fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => identity(a).is_some_and(|i| Some(i) == identity(b)),
    }
}

/// An output destination, opened before the run so that an unwritable one fails early.
#[derive(Debug)]
pub struct Destination {
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Stdout,
    /// Written in place; `file` is `None` for a FIFO until the output is ready.
    InPlace {
        path: PathBuf,
        file: Option<File>,
    },
    /// A temporary file, created by [`Destination::write`] when the output is ready (so that a
    /// run killed before has nothing to leave behind) and renamed over `path` by [`commit`];
    /// `like` is the metadata of the file replaced.
    Replace {
        path: PathBuf,
        like: Option<Box<Metadata>>,
        tmp: Option<(PathBuf, File)>,
    },
}

impl Destination {
    /// Stdout.
    pub fn stdout() -> Destination {
        Destination { kind: Kind::Stdout }
    }

    /// Opens the destination `path` names (`-` is stdout); see the module's documentation.
    pub fn open(path: &Path) -> io::Result<Destination> {
        if path == Path::new("-") {
            return Ok(Destination::stdout());
        }
        let target = match follow(path)? {
            Followed::Kernel => return in_place(path.to_path_buf(), false),
            Followed::Path(p) => p,
        };
        match fs::metadata(&target) {
            Ok(m) if m.is_file() => {
                refuse_read_only(&m)?;
                // May this user write it? (Opening to append changes nothing.)
                OpenOptions::new().append(true).open(&target)?;
                replace(target, Some(&m))
            }
            Ok(m) if m.is_dir() => Err(io::Error::new(io::ErrorKind::IsADirectory, "a directory")),
            Ok(m) => {
                refuse_read_only(&m)?;
                in_place(target, m.file_type().is_fifo())
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => replace(target, None),
            Err(e) => Err(e),
        }
    }

    /// True for stdout.
    pub fn is_stdout(&self) -> bool {
        matches!(self.kind, Kind::Stdout)
    }

    /// True when the output is made visible by [`commit`] (a file replaced atomically), false when
    /// [`write`](Self::write) itself delivers it (stdout, a device, a FIFO).
    pub fn is_replaced(&self) -> bool {
        matches!(self.kind, Kind::Replace { .. })
    }

    /// Writes the whole output: to stdout or in place at once, or into the temporary file (synced
    /// to disk, not yet visible: [`commit`] makes it so).
    pub fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.put(bytes)?;
        self.flush()
    }

    /// An empty [`Spool`] for output made piece by piece before it is written here: beside the
    /// file to replace (on its file system), else in the system's temporary directory.
    pub fn spool(&self) -> io::Result<Spool> {
        let near = match &self.kind {
            Kind::Replace { path, .. } => path.clone(),
            _ => std::env::temp_dir().join("lbsim-spool"),
        };
        // Unlinked at once, under the registry's lock (as `replace` checks a directory): the file
        // lives only as long as this process holds it open.
        let slot = pending();
        let (tmp, file) = create(&near)?;
        fs::remove_file(&tmp)?;
        drop(slot);
        Ok(Spool { file: io::BufWriter::with_capacity(1 << 16, file) })
    }

    /// Writes what `spool` holds as the whole output, as [`Destination::write`] does, reading it
    /// a megabyte at a time.
    pub fn write_spool(&mut self, spool: &mut Spool) -> io::Result<()> {
        use std::io::{Read, Seek, SeekFrom};
        spool.file.flush()?;
        let file = spool.file.get_mut();
        file.seek(SeekFrom::Start(0))?;
        let mut chunk = vec![0u8; 1 << 20];
        loop {
            let n = file.read(&mut chunk)?;
            if n == 0 {
                break;
            }
            self.put(&chunk[..n])?;
        }
        self.flush()
    }

    /// Writes the whole output, as [`Destination::write`] does, from what `make` writes into it
    /// piece by piece (buffered): output made as it is written, never held whole.
    pub fn write_from(
        &mut self,
        make: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut out = io::BufWriter::with_capacity(1 << 16, Appender(self));
        make(&mut out)?;
        out.flush()?;
        drop(out);
        self.flush()
    }

    /// Appends `bytes` to the output (creating the temporary file of a file to replace).
    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        match &mut self.kind {
            Kind::Stdout => io::stdout().lock().write_all(bytes),
            Kind::InPlace { path, file } => {
                let file = match file {
                    Some(f) => f,
                    None => file.insert(OpenOptions::new().append(true).open(&*path)?),
                };
                file.write_all(bytes)
            }
            Kind::Replace { path, like, tmp } => {
                let (_, file) = match tmp {
                    Some(t) => t,
                    None => tmp.insert(temporary(path, like.as_deref())?),
                };
                file.write_all(bytes)
            }
        }
    }

    /// Delivers what [`Destination::put`] appended: flushed, or synced to disk for a file to
    /// replace.
    fn flush(&mut self) -> io::Result<()> {
        match &mut self.kind {
            Kind::Stdout => io::stdout().lock().flush(),
            Kind::InPlace { file: Some(file), .. } => file.flush(),
            Kind::Replace { tmp: Some((_, file)), .. } => file.sync_all(),
            Kind::InPlace { file: None, .. } | Kind::Replace { tmp: None, .. } => Ok(()),
        }
    }
}

/// Appends what is written to a destination's output.
struct Appender<'a>(&'a mut Destination);

impl Write for Appender<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.put(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Output made piece by piece before it is written (a shard's raw records, which may be larger
/// than memory): a buffered file already unlinked, so that a run killed even by SIGKILL leaves
/// nothing behind. [`Destination::write_spool`] copies it to its destination.
#[derive(Debug)]
pub struct Spool {
    file: io::BufWriter<File>,
}

impl Write for Spool {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Renames the written temporary files over their destinations, all under the registry's lock (a
/// signal lands before the first rename or after the last). Destinations written in place need
/// nothing more.
pub fn commit(destinations: Vec<Destination>) -> io::Result<()> {
    let mut slot = pending();
    for d in &destinations {
        if let Kind::Replace { tmp: Some((tmp, _)), path, .. } = &d.kind {
            if let Err(e) = fs::rename(tmp, path) {
                // Dropping `destinations` then removes the temporary files not renamed.
                drop(slot);
                return Err(e);
            }
            slot.retain(|t| t != tmp);
        }
    }
    Ok(())
}

fn refuse_read_only(m: &Metadata) -> io::Result<()> {
    if m.permissions().readonly() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("it is read-only (mode {:04o})", m.mode() & 0o7777),
        ));
    }
    Ok(())
}

fn in_place(path: PathBuf, fifo: bool) -> io::Result<Destination> {
    let file = if fifo { None } else { Some(OpenOptions::new().append(true).open(&path)?) };
    Ok(Destination { kind: Kind::InPlace { path, file } })
}

/// A file to be replaced by a temporary file beside it. Whether one can be created there is
/// checked now, by creating one and removing it at once (under the registry's lock, so that a
/// signal cannot land between the two), so that an unwritable destination fails before the run.
fn replace(path: PathBuf, like: Option<&Metadata>) -> io::Result<Destination> {
    {
        let slot = pending();
        let (tmp, file) = create(&path)?;
        drop(file);
        fs::remove_file(&tmp)?;
        drop(slot);
    }
    Ok(Destination { kind: Kind::Replace { path, like: like.cloned().map(Box::new), tmp: None } })
}

/// A new file beside `path`, named `.NAME.lbsim-PID[-N].tmp`; the caller holds the registry's lock.
fn create(path: &Path) -> io::Result<(PathBuf, File)> {
    let dir = parent(path);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let pid = std::process::id();
    for attempt in 0.. {
        let tmp = match attempt {
            0 => dir.join(format!(".{name}.lbsim-{pid}.tmp")),
            n => dir.join(format!(".{name}.lbsim-{pid}-{n}.tmp")),
        };
        // `create_new`: never write through whatever already has that name.
        match OpenOptions::new().read(true).write(true).create_new(true).open(&tmp) {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => continue,
            Err(e) => return Err(e),
        }
    }
    unreachable!("the loop returns")
}

/// The temporary file that will replace `path`, registered for removal on a signal, with the
/// permission bits (and owner) of `like` if given.
fn temporary(path: &Path, like: Option<&Metadata>) -> io::Result<(PathBuf, File)> {
    let mut slot = pending();
    let (tmp, file) = create(path)?;
    slot.push(tmp.clone());
    drop(slot);
    if let Some(m) = like {
        // The owner first: changing it may clear the set-user-ID bits the mode then restores.
        // Only root may give a file away; otherwise it stays this user's.
        let _ = std::os::unix::fs::fchown(&file, Some(m.uid()), Some(m.gid()));
        if let Err(e) = file.set_permissions(fs::Permissions::from_mode(m.mode() & 0o7777)) {
            let mut slot = pending();
            let _ = fs::remove_file(&tmp);
            slot.retain(|t| *t != tmp);
            return Err(e);
        }
    }
    Ok((tmp, file))
}

impl Drop for Destination {
    fn drop(&mut self) {
        if let Kind::Replace { tmp: Some((tmp, _)), .. } = &self.kind {
            let mut slot = pending();
            if slot.contains(tmp) {
                let _ = fs::remove_file(tmp);
                slot.retain(|t| t != tmp);
            }
        }
    }
}

// ===== checks of the output options, before anything runs =====

/// Refuses an `--out` (or `--plot`) that cannot name a file: empty, a directory, or in a missing directory.
pub fn check_out(option: &str, out: &Path) -> Result<(), UsageError> {
    let text = out.to_string_lossy();
    if text.is_empty() || text.ends_with('/') || out.is_dir() || out.file_name().is_none() {
        return Err(bad(option, &text, "expected a file name, not a directory"));
    }
    let dir = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !dir.is_dir() {
        let dir = shown(&dir.to_string_lossy());
        return Err(bad(option, &text, format!("directory '{dir}' does not exist")));
    }
    if let Some(target) = link_target(out) {
        let dir = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !dir.is_dir() {
            let (target, dir) = (target.to_string_lossy(), dir.to_string_lossy());
            return Err(bad(
                option,
                &text,
                format!(
                    "a symbolic link to '{}', whose directory '{}' does not exist",
                    shown(&target),
                    shown(&dir)
                ),
            ));
        }
    }
    Ok(())
}

/// Refuses an output option that names one of the files the command reads (by device and
/// inode, so through links too): writing the output would replace its input. `outputs` pairs
/// each option with its file; `inputs` says what each input is.
pub fn check_inputs_kept(
    outputs: &[(&str, Option<&Path>)],
    inputs: &[(&str, &Path)],
) -> Result<(), UsageError> {
    for &(option, out) in outputs {
        let Some(out) = out.filter(|o| *o != Path::new("-")) else { continue };
        if let Some((what, input)) = inputs.iter().find(|(_, input)| same_file(out, input)) {
            let input = shown(&input.to_string_lossy());
            return Err(conflict(
                option,
                format!(
                    "names {what} '{input}', which the output would replace: write it elsewhere"
                ),
            ));
        }
    }
    Ok(())
}

/// `run`'s `--out` and `--series` against its `inputs` (the scenario file, its traces and
/// empirical files at every sweep point) and against each other.
pub fn check_run_outputs(
    out: Option<&Path>,
    series: Option<&Path>,
    inputs: &[(&str, &Path)],
) -> Result<(), UsageError> {
    check_inputs_kept(&[("--out", out), ("--series", series)], inputs)?;
    check_series_apart(series, out)
}

/// `--series` and `--out` may not name the same file (by device and inode, through links).
pub fn check_series_apart(series: Option<&Path>, out: Option<&Path>) -> Result<(), UsageError> {
    match (series, out) {
        (Some(series), Some(out)) if same_file(series, out) => {
            Err(conflict("--series", "and --out name the same file"))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("lbsim-dest-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn links_are_followed_to_their_target_and_proc_is_the_kernel() {
        let dir = scratch("follow");
        let file = dir.join("file");
        fs::write(&file, "x").unwrap();
        std::os::unix::fs::symlink("file", dir.join("one")).unwrap();
        std::os::unix::fs::symlink(dir.join("one"), dir.join("two")).unwrap();
        std::os::unix::fs::symlink("missing", dir.join("dangling")).unwrap();
        assert_eq!(follow(&dir.join("two")).unwrap(), Followed::Path(dir.join("file")));
        assert_eq!(follow(&dir.join("dangling")).unwrap(), Followed::Path(dir.join("missing")));
        std::os::unix::fs::symlink("loop", dir.join("loop")).unwrap();
        assert!(follow(&dir.join("loop")).is_err());
        assert_eq!(follow(Path::new("/proc/self/fd/1")).unwrap(), Followed::Kernel);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_replaced_file_keeps_its_mode_and_a_dropped_one_leaves_nothing() {
        let dir = scratch("mode");
        let file = dir.join("out.csv");
        fs::write(&file, "old").unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o640)).unwrap();
        let mut d = Destination::open(&file).unwrap();
        assert!(d.is_replaced());
        d.write(b"new").unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "old", "not visible before the commit");
        commit(vec![d]).unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "new");
        assert_eq!(fs::metadata(&file).unwrap().mode() & 0o7777, 0o640);

        let mut d = Destination::open(&file).unwrap();
        d.write(b"newer").unwrap();
        drop(d);
        assert_eq!(fs::read_to_string(&file).unwrap(), "new");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "no temporary file left");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn identity_sees_through_links_and_dots() {
        let dir = scratch("identity");
        std::os::unix::fs::symlink("a.csv", dir.join("link.csv")).unwrap();
        assert_eq!(identity(&dir.join("link.csv")), identity(&dir.join("./a.csv")));
        fs::write(dir.join("a.csv"), "").unwrap();
        assert_eq!(identity(&dir.join("link.csv")), identity(&dir.join("a.csv")));
        assert_eq!(identity(Path::new("-")), None);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn out_must_name_a_file_in_an_existing_directory() {
        assert!(check_out("--out", Path::new("results.csv")).is_ok());
        for bad in ["", "/", "/tmp", "/tmp/", "..", "/nonexistent-dir/x.csv"] {
            let e = check_out("--out", Path::new(bad)).unwrap_err().to_string();
            assert!(e.contains("--out"), "{bad}: {e}");
        }
    }
}
