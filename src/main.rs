//! The `lbsim` binary: parse, validate, run, write. See the library for everything else.
//!
//! Exit status: 0 success, 1 the output could not be written, 2 usage error (one line on stderr,
//! nothing on stdout), 130 interrupted (nothing on stdout, no temporary file left).

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Mutex, MutexGuard};

use clap::Parser;
use lbsim::cli::{Cli, Command};
use lbsim::config::Config;
use lbsim::experiment;
use lbsim::output::progress::Progress;

/// Exit status for output that could not be written.
const EXIT_IO: u8 = 1;
/// Exit status for a usage error (clap's convention).
const EXIT_USAGE: u8 = 2;
/// Exit status after Ctrl-C (128 + SIGINT).
const EXIT_INTERRUPTED: i32 = 130;

/// The temporary output files being written: the interrupt handler removes them.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn pending() -> MutexGuard<'static, Vec<PathBuf>> {
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                let _ = e.print();
                return ExitCode::from(EXIT_USAGE);
            }
            // Usage errors are one line: clap's first line names the option and the problem.
            let text = e.render().to_string();
            say(text.lines().next().unwrap_or("error: invalid arguments"));
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let cfg = match Config::from_cli(&cli) {
        Ok(cfg) => cfg,
        Err(e) => {
            say(&format!("error: {e}"));
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let progress = Progress::start(
        experiment::replications(&cfg),
        command_name(&cli.command),
        cli.global.quiet,
    );
    let bar = progress.bar();
    // Failing to install the handler only means Ctrl-C kills the process the default way.
    let _ = ctrlc::set_handler(move || {
        bar.finish_and_clear();
        for tmp in pending().drain(..) {
            let _ = std::fs::remove_file(tmp);
        }
        std::process::exit(EXIT_INTERRUPTED);
    });
    // Open the temporary file before the run: an unwritable destination fails at once.
    let (out, plot) = match (
        cfg.common.out.as_deref().map(TempOut::create).transpose(),
        cfg.common.plot.as_deref().map(TempOut::create).transpose(),
    ) {
        (Ok(out), Ok(plot)) => (out, plot),
        (Err((path, e)), _) => return cannot_write("--out", &path, e, progress),
        (_, Err((path, e))) => return cannot_write("--plot", &path, e, progress),
    };

    let report = experiment::run(&cfg, &|| progress.inc());
    progress.finish();
    for warning in &report.warnings {
        say(warning);
    }
    if let Some(plot) = plot {
        let svg = lbsim::output::plot::svg(&report).unwrap_or_default();
        if let Err(e) = plot.commit(svg.as_bytes()) {
            say(&format!("error: writing the figure: {e}"));
            return ExitCode::from(EXIT_IO);
        }
    }
    let bytes = cfg.common.format.exporter().serialize(&report);
    let result = match out {
        Some(out) => out.commit(&bytes),
        None => io::stdout().lock().write_all(&bytes).and_then(|()| io::stdout().flush()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader went away (`| head`): what it wanted was written.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            say(&format!("error: writing the output: {e}"));
            ExitCode::from(EXIT_IO)
        }
    }
}

fn cannot_write(option: &str, path: &Path, e: io::Error, progress: Progress) -> ExitCode {
    progress.finish();
    say(&format!("error: cannot write {option} '{}': {e}", path.display()));
    ExitCode::from(EXIT_IO)
}

/// One line on stderr; a closed stderr is not worth a panic.
fn say(line: &str) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

fn command_name(c: &Command) -> &'static str {
    match c {
        Command::Bins(_) => "bins",
        Command::Fixed(_) => "fixed",
        Command::Homo(_) => "homo",
        Command::Hetero(_) => "hetero",
        Command::Stale(_) => "stale",
        Command::Swrr(_) => "swrr",
    }
}

/// An output file written atomically: a temporary file beside the destination, renamed over it
/// once complete. Until then the destination is untouched; the temporary file is removed on any
/// error, on drop, and by the interrupt handler.
struct TempOut {
    tmp: PathBuf,
    path: PathBuf,
    file: File,
}

impl TempOut {
    fn create(path: &Path) -> Result<TempOut, (PathBuf, io::Error)> {
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = dir.join(format!(".{name}.lbsim-{}.tmp", std::process::id()));
        let mut slot = pending();
        let file = File::create(&tmp).map_err(|e| (path.to_path_buf(), e))?;
        slot.push(tmp.clone());
        Ok(TempOut { tmp, path: path.to_path_buf(), file })
    }

    /// Writes `bytes` and renames the temporary file over the destination. Holds the lock the
    /// interrupt handler takes, so an interrupt lands before or after the rename, not during it.
    fn commit(mut self, bytes: &[u8]) -> io::Result<()> {
        let mut slot = pending();
        let result = (|| {
            self.file.write_all(bytes)?;
            self.file.sync_all()?;
            std::fs::rename(&self.tmp, &self.path)
        })();
        if result.is_ok() {
            slot.retain(|t| t != &self.tmp);
        }
        result
    }
}

impl Drop for TempOut {
    fn drop(&mut self) {
        let mut slot = pending();
        if slot.contains(&self.tmp) {
            let _ = std::fs::remove_file(&self.tmp);
            slot.retain(|t| t != &self.tmp);
        }
    }
}
