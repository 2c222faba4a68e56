//! The `lbsim` binary: parse, validate, run, write. See the library for everything else.

use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use clap::Parser;
use lbsim::cli::Cli;
use lbsim::config::Config;
use lbsim::experiment;

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
                return ExitCode::from(2);
            }
            // Usage errors are one line: clap's first line names the option and the problem.
            let text = e.render().to_string();
            eprintln!("{}", text.lines().next().unwrap_or("error: invalid arguments"));
            return ExitCode::from(2);
        }
    };
    let cfg = match Config::from_cli(&cli) {
        Ok(cfg) => cfg,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(out) = &cfg.common.out {
        let dir = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !dir.is_dir() {
            eprintln!(
                "error: invalid value '{}' for --out: directory '{}' does not exist",
                out.display(),
                dir.display()
            );
            return ExitCode::from(2);
        }
    }
    let report = experiment::run(&cfg, &|| {});
    let bytes = cfg.common.format.exporter().serialize(&report);
    let result = match &cfg.common.out {
        Some(path) => write_atomically(path, &bytes),
        None => io::stdout().lock().write_all(&bytes),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: writing the output: {e}");
            ExitCode::from(1)
        }
    }
}

/// Writes `bytes` to a temporary file beside `path`, then renames it over `path`.
fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.lbsim-{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
