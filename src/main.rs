//! The `lbsim` binary: parse, validate, run, write. See the library for everything else.
//!
//! Exit status: 0 success, 1 the output could not be written, 2 usage error (one line on stderr,
//! or clap's whole message with its suggestions for a malformed command line; nothing on stdout),
//! 128 + the signal's number after a signal that ends the run (SIGINT 130, SIGTERM 143, SIGHUP
//! 129, SIGUSR1 138, ...: [`ENDING_SIGNALS`]; nothing on stdout, no temporary file left).

use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Parser;
use indicatif::ProgressBar;
use lbsim::cli::Cli;
use lbsim::output::dest::{self, Destination, Spool};
use lbsim::output::progress::Meter;
use lbsim::shard::Invocation;

/// Exit status for output that could not be written.
const EXIT_IO: u8 = 1;
/// Exit status for a usage error (clap's convention).
const EXIT_USAGE: u8 = 2;

/// Whether stdout (descriptor 1) was closed when the process started (`lbsim ... >&-`). Rust's
/// runtime opens `/dev/null` in place of a closed standard descriptor before `main` runs, so
/// every write would then succeed into nothing; [`CHECK_STDOUT`] looks before it does.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Run by the C runtime among the ELF constructors, before Rust's runtime starts.
#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static CHECK_STDOUT: extern "C" fn() = {
    extern "C" fn check_stdout() {
        // SAFETY: F_GETFD only reads the descriptor's flags; it fails (EBADF) iff 1 is closed.
        if unsafe { libc::fcntl(libc::STDOUT_FILENO, libc::F_GETFD) } == -1 {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
        }
    }
    check_stdout
};

fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_error(e),
    };
    if let lbsim::cli::Command::Report(a) = &cli.command {
        return report(a, &cli.global);
    }
    let argv = std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
    let job = match Invocation::from_cli(&cli, argv) {
        Ok(job) => job,
        Err(e) => {
            say(&format!("error: {e}"));
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let cfg = job.config();
    if cli.global.dry_run {
        for warning in &cfg.warnings {
            say(warning);
        }
        return ExitCode::SUCCESS;
    }
    let progress = Meter::start(
        job.replications(),
        job.requests(),
        lbsim::experiment::command_name(&cli.command),
        cli.global.quiet,
    );
    clean_up_on_signals(progress.bar());
    for warning in &cfg.warnings {
        say(warning);
    }
    // A diagnostic, not progress: printed with --quiet too.
    if let Some(line) = lbsim::experiment::estimate::warning(cfg, job.replications()) {
        say(&line);
    }
    // Open every destination before the run: an unwritable one fails at once.
    let out = match cfg.common.out.as_deref().map(Destination::open).transpose() {
        Ok(out) => out.unwrap_or_else(Destination::stdout),
        Err(e) => return cannot_write("--out", cfg.common.out.as_deref(), e, progress),
    };
    let plot = match cfg.common.plot.as_deref().map(Destination::open).transpose() {
        Ok(plot) => plot,
        Err(e) => return cannot_write("--plot", cfg.common.plot.as_deref(), e, progress),
    };
    // A shard carries its windows in its records: `merge --series` writes them.
    let series_path = match &cfg.experiment {
        lbsim::experiment::Experiment::Run(r) if !matches!(job, Invocation::Shard { .. }) => {
            r.series.as_deref()
        }
        _ => None,
    };
    let series = match series_path.map(Destination::open).transpose() {
        Ok(series) => series,
        Err(e) => return cannot_write("--series", series_path, e, progress),
    };
    if stdout_closed() && (out.is_stdout() || plot.as_ref().is_some_and(Destination::is_stdout)) {
        progress.finish();
        say("error: cannot write the output: stdout is closed");
        return ExitCode::from(EXIT_IO);
    }

    // A shard's raw records go to a spool as they are made, and from there to the output.
    let spool = match &job {
        Invocation::Shard { .. } => match out.spool() {
            Ok(spool) => Some(spool),
            Err(e) => return cannot_write("--out", cfg.common.out.as_deref(), e, progress),
        },
        _ => None,
    };
    let (mut results, spool) = match run(&job, &progress, spool) {
        Ok(done) => done,
        Err(e) => {
            progress.finish();
            say(&format!("error: writing the output: {e}"));
            return ExitCode::from(EXIT_IO);
        }
    };
    // The series goes to its own file, written from the rows' tapes line by line.
    let series_csv = results.report.series.take();
    let report = &results.report;
    progress.finish();
    for warning in &report.warnings {
        say(warning);
    }
    let body = match (spool, &report.text) {
        (Some(spool), _) => Body::Spool(spool),
        (None, Some(text)) => Body::Bytes(text.clone().into_bytes()),
        (None, None) => Body::Bytes(cfg.common.format.exporter().serialize(report)),
    };
    let mut outputs = vec![("output", out, body)];
    if let Some(plot) = plot {
        let svg = results.rows.figure().unwrap_or_default();
        outputs.push(("figure", plot, Body::Bytes(svg.into_bytes())));
    }
    if let Some(series) = series {
        let body = series_csv.map_or_else(|| Body::Bytes(Vec::new()), Body::Series);
        outputs.push(("series", series, body));
    }
    write_all(outputs)
}

/// Writes every output: stdout first, then the files to replace (written, not yet visible), then
/// devices and FIFOs; the renames come last, so a run whose output failed anywhere leaves no file
/// behind.
fn write_all(mut outputs: Vec<(&str, Destination, Body)>) -> ExitCode {
    outputs.sort_by_key(|(_, d, _)| match (d.is_stdout(), d.is_replaced()) {
        (true, _) => 0,
        (false, true) => 1,
        (false, false) => 2,
    });
    for (what, d, body) in &mut outputs {
        let written = match body {
            Body::Bytes(bytes) => d.write(bytes),
            Body::Spool(spool) => d.write_spool(spool),
            Body::Series(csv) => d.write_from(|out| csv.write(out)),
        };
        match written {
            Ok(()) => {}
            // The reader went away (`| head`): what it wanted was written.
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe && !d.is_replaced() => {}
            Err(e) => {
                say(&format!("error: writing the {what}: {e}"));
                return ExitCode::from(EXIT_IO);
            }
        }
    }
    match dest::commit(outputs.into_iter().map(|(_, d, _)| d).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            say(&format!("error: writing the output: {e}"));
            ExitCode::from(EXIT_IO)
        }
    }
}

/// What an output holds: bytes, a spool of raw records, or the series written from its tapes.
enum Body {
    Bytes(Vec<u8>),
    Spool(Spool),
    Series(lbsim::output::series::SeriesCsv),
}

/// Runs the job; a shard writes its raw records into `spool`, returned with the results.
fn run(
    job: &Invocation,
    progress: &Meter,
    spool: Option<Spool>,
) -> io::Result<(lbsim::experiment::Results, Option<Spool>)> {
    let Some(mut spool) = spool else { return Ok((job.execute(progress), None)) };
    let results = job.write_records(progress, &mut spool)?;
    spool.flush()?;
    Ok((results, Some(spool)))
}

/// Help and version (exit 0, or 1 if they cannot be written), and usage errors (exit 2, clap's
/// whole message).
fn clap_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let what = if e.kind() == ErrorKind::DisplayHelp { "help" } else { "version" };
            let written = if stdout_closed() {
                Err(io::Error::other("stdout is closed"))
            } else {
                e.print().and_then(|()| io::stdout().flush())
            };
            match written {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
                Err(e) => {
                    say(&format!("error: writing the {what}: {e}"));
                    ExitCode::from(EXIT_IO)
                }
            }
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            ExitCode::from(EXIT_USAGE)
        }
        _ => {
            // A value its parser refused: lbsim's one line, as for any other usage error.
            if let Some(refused) = lbsim::options::refused(&e) {
                say(&format!("error: {refused}"));
                return ExitCode::from(EXIT_USAGE);
            }
            // Clap's whole message: every missing argument, the accepted values and its
            // suggestions ("tip: a similar argument exists"), then the usage line.
            say(e.render().to_string().trim_end());
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// The signals that end a run, handled alike: what a terminal (SIGHUP, SIGINT), `kill` and
/// `timeout` (SIGTERM), a batch system's time and resource limits (SIGTERM, SIGUSR1, SIGUSR2,
/// SIGXCPU, SIGXFSZ, SIGALRM) and profiling timers (SIGVTALRM, SIGPROF) send, each of which would
/// otherwise kill the process without removing its temporary files.
const ENDING_SIGNALS: [i32; 10] = {
    use signal_hook::consts::*;
    [SIGHUP, SIGINT, SIGTERM, SIGALRM, SIGUSR1, SIGUSR2, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF]
};

/// On any of [`ENDING_SIGNALS`]: clear the progress bar, remove the temporary files and exit
/// with 128 + the signal's number, as a shell reports a process killed by it.
fn clean_up_on_signals(bar: ProgressBar) {
    // Without the handler a signal only kills the process the default way.
    let Ok(mut signals) = signal_hook::iterator::Signals::new(ENDING_SIGNALS) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            bar.finish_and_clear();
            dest::exit_discarding(128 + signal);
        }
    });
}

fn cannot_write(option: &str, path: Option<&Path>, e: io::Error, progress: Meter) -> ExitCode {
    progress.finish();
    let path = path.unwrap_or(Path::new("-")).display();
    say(&format!("error: cannot write {option} '{path}': {e}"));
    ExitCode::from(EXIT_IO)
}

/// `lbsim report DIR`: the page from the results directory (or every command run again with
/// `--run`), written to `DIR/index.html` atomically; one line on stdout says what it holds.
fn report(a: &lbsim::cli::ReportArgs, g: &lbsim::cli::Global) -> ExitCode {
    use lbsim::report;
    let usage = |e: String| {
        say(&format!("error: {e}"));
        ExitCode::from(EXIT_USAGE)
    };
    let given = [
        ("--seeds", g.seeds.is_some()),
        ("--seed", g.seed.is_some()),
        ("--out", g.out.is_some()),
        ("--shard", g.shard.is_some()),
        ("--threads", g.threads.is_some() && !a.run),
        ("--format", g.format != lbsim::output::Format::Table),
    ];
    if let Some((option, _)) = given.iter().find(|(_, given)| *given) {
        return usage(format!(
            "{option} does not apply to report, which writes DIR/index.html from the \
             reproduction's own command lines (--threads only with --run)"
        ));
    }
    if let Err(e) = report::check_dir(&a.dir) {
        return usage(e.to_string());
    }
    if g.dry_run {
        return ExitCode::SUCCESS;
    }
    let contents = if a.run {
        let progress = Meter::start(lbsim::article::replications(), None, "report", g.quiet);
        clean_up_on_signals(progress.bar());
        let contents = report::regenerate(g.threads, &progress);
        progress.finish();
        contents
    } else {
        report::read(a.results.as_deref().unwrap_or(Path::new("results")))
    };
    let contents = match contents {
        Ok(c) => c,
        Err(e) => return usage(e.to_string()),
    };
    let index = report::index(&a.dir);
    if let Err(e) = std::fs::create_dir_all(&a.dir) {
        say(&format!("error: cannot write '{}': {e}", a.dir.display()));
        return ExitCode::from(EXIT_IO);
    }
    let out = match Destination::open(&index) {
        Ok(out) => out,
        Err(e) => {
            say(&format!("error: cannot write '{}': {e}", index.display()));
            return ExitCode::from(EXIT_IO);
        }
    };
    let page = report::page(&contents);
    let code = write_all(vec![("report", out, Body::Bytes(page.into_bytes()))]);
    if code == ExitCode::SUCCESS {
        let figures = contents.sections.iter().map(|s| s.figures.len()).sum::<usize>();
        println!(
            "{}: {} tables, {figures} figures, {} comparisons ({})",
            index.display(),
            contents.sections.len(),
            contents.comparisons.len(),
            contents.origin
        );
    }
    code
}

/// One line on stderr; a closed stderr is not worth a panic.
fn say(line: &str) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}
