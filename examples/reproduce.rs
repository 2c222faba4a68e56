//! Regenerates `results/` (or the directory given as the first argument): every article table as
//! CSV, the figures as SVG, and `results.txt` with the article's numbers and the closed forms
//! beside lbsim's. Run through `reproduce/run.sh`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

fn main() -> ExitCode {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "results".into()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("error: cannot create {}: {e}", dir.display());
        return ExitCode::from(1);
    }
    let start = Instant::now();
    let total = lbsim::article::replications();
    let done = AtomicU64::new(0);
    let progress = || {
        let k = done.fetch_add(1, Ordering::Relaxed) + 1;
        if k.is_multiple_of(20) || k == total {
            eprintln!("  {k}/{total} replications, {:.0} s", start.elapsed().as_secs_f64());
        }
    };
    let files = match lbsim::article::generate(None, &progress) {
        Ok(files) => files,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    for (name, bytes) in files {
        let path = dir.join(&name);
        if let Err(e) = std::fs::write(&path, bytes) {
            eprintln!("error: writing {}: {e}", path.display());
            return ExitCode::from(1);
        }
        eprintln!("wrote {}", path.display());
    }
    eprintln!("reproduction took {:.0} s", start.elapsed().as_secs_f64());
    ExitCode::SUCCESS
}
