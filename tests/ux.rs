//! Terminal, pipe, file and signal behaviour of the binary, and a property test over hostile
//! command lines.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use clap::{CommandFactory, Parser};
use lbsim::cli::Cli;
use lbsim::experiment;
use lbsim::experiment::{Config, Experiment};
use lbsim::output::Format;
use lbsim::output::progress::Reporter;
use proptest::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::util::lbsim;

const BIN: &str = env!("CARGO_BIN_EXE_lbsim");

/// A run of a few seconds on one thread (so the progress bar, shown after one second, has time to
/// appear even on a fast machine).
const LONG_ENOUGH: &[&str] = &[
    "homo",
    "--loads",
    "0.9",
    "--policies",
    "p2c,jsq",
    "--requests",
    "6e6",
    "--seeds",
    "4",
    "--threads",
    "1",
    "--format",
    "csv",
];

/// A run long enough to be interrupted.
const VERY_LONG: &[&str] = &["homo", "--requests", "1e9", "--threads", "1", "--format", "csv"];

/// A fresh empty directory under the system's temporary directory, removed when dropped (also
/// when a test fails).
fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("lbsim-ux-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Quotes a word for `sh -c`.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

fn shell_line(args: &[&str]) -> String {
    std::iter::once(BIN).chain(args.iter().copied()).map(quote).collect::<Vec<_>>().join(" ")
}

fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

// ---------------------------------------------------------------------------------------------
// Progress bar

#[test]
fn nothing_but_data_when_stderr_is_not_a_terminal() {
    let out = lbsim(LONG_ENOUGH);
    assert!(out.status.success());
    assert!(out.stderr.is_empty(), "no bar when piped: {:?}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("load,policy,"), "{stdout}");
    assert_eq!(stdout.lines().count(), 3, "a header and two rows, nothing else: {stdout}");
}

/// Runs `args` under a pseudo-terminal with stdout redirected to a file; returns what reached
/// the terminal (stderr) and the file (stdout).
fn under_a_terminal(name: &str, args: &[&str]) -> Option<(String, String)> {
    if !have("script") {
        eprintln!("skipped: `script` (util-linux) is not installed");
        return None;
    }
    let dir = scratch(name);
    let file = dir.join("stdout.csv");
    let line = format!("{} > {}", shell_line(args), quote(file.to_str().unwrap()));
    let out = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .expect("script runs");
    assert!(out.status.success(), "{line}: {}", text(&out.stderr));
    let stdout = std::fs::read_to_string(&file).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    Some((text(&out.stdout), stdout))
}

#[test]
fn a_terminal_gets_a_bar_on_stderr_with_count_and_eta_and_stdout_stays_clean() {
    let Some((terminal, stdout)) = under_a_terminal("tty", LONG_ENOUGH) else { return };
    // The bar counts the requests simulated (8 replications of 100,000 + 6,000,000 arrivals),
    // so it moves inside a replication.
    assert!(terminal.contains("requests, ETA"), "no bar: {terminal:?}");
    assert!(terminal.contains("/48800000 requests, ETA"), "count and ETA: {terminal:?}");
    assert!(stdout.starts_with("load,policy,"), "{stdout}");
    assert_eq!(stdout.lines().count(), 3, "{stdout}");
    assert!(!stdout.contains("ETA") && !stdout.contains('\x1b'), "{stdout:?}");
}

#[test]
fn quiet_hides_the_bar_even_on_a_terminal() {
    let mut args = LONG_ENOUGH.to_vec();
    args.push("--quiet");
    let Some((terminal, stdout)) = under_a_terminal("quiet", &args) else { return };
    assert!(!terminal.contains("ETA"), "--quiet shows a bar: {terminal:?}");
    assert_eq!(stdout.lines().count(), 3);
}

// ---------------------------------------------------------------------------------------------
// Help and version

#[test]
fn every_option_states_its_default_and_every_command_ends_with_examples() {
    let mut cli = Cli::command();
    cli.build();
    // Options with no default by design: flags, and the optional inputs of `swrr`.
    let no_default = ["help", "version", "quiet", "trace"];
    for sub in cli.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = sub.get_name();
        // A required positional argument (run's FILE) has no default to state.
        // A required option (capacity's --target) has none either.
        for arg in sub.get_arguments().filter(|a| !a.is_positional() && !a.is_required_set()) {
            let id = arg.get_id().as_str();
            if no_default.contains(&id) {
                continue;
            }
            let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
            assert!(
                !arg.get_default_values().is_empty() || help.contains("[default"),
                "lbsim {name} --{id}: no default in its help: {help}"
            );
        }
        let after = sub.get_after_help().map(|h| h.to_string()).unwrap_or_default();
        let examples: Vec<&str> = after
            .lines()
            .filter(|l| l.trim_start().starts_with(&format!("lbsim {name}")))
            .collect();
        assert!((2..=3).contains(&examples.len()), "lbsim {name}: examples {examples:?}");
        for example in examples {
            let words = split_example(example);
            let cli = Cli::try_parse_from(&words)
                .unwrap_or_else(|e| panic!("example `{example}` does not parse: {e}"));
            if name == "merge" || name == "report" {
                // merge takes its configuration from the files it reads (lbsim::shard::Invocation);
                // report has none (lbsim::report, tests/report.rs).
                continue;
            }
            Config::from_cli(&cli)
                .unwrap_or_else(|e| panic!("example `{example}` is refused: {e}"));
        }
    }
}

/// The words of an example line: up to a pipe or two spaces (the comment), single quotes
/// respected.
fn split_example(line: &str) -> Vec<String> {
    let line = line.trim_start();
    let line = line.split(" |").next().unwrap();
    let line = line.split("   ").next().unwrap();
    let mut words = Vec::new();
    for (i, part) in line.split('\'').enumerate() {
        if i % 2 == 1 {
            words.push(part.to_string());
        } else {
            words.extend(part.split_whitespace().map(str::to_string));
        }
    }
    words
}

#[test]
fn help_shows_units_defaults_and_examples_and_version_prints() {
    let help = crate::util::lbsim_ok(&["homo", "--help"]);
    for needle in ["[default: 100]", "mean service times", "Examples:", "lbsim homo --loads"] {
        assert!(help.contains(needle), "homo --help lacks {needle:?}");
    }
    let top = crate::util::lbsim_ok(&["--help"]);
    assert!(top.contains("--quiet") && top.contains("Exit status"), "{top}");
    let version = crate::util::lbsim_ok(&["--version"]);
    assert_eq!(version.trim(), format!("lbsim {}", env!("CARGO_PKG_VERSION")));
}

// ---------------------------------------------------------------------------------------------
// Pipes

/// Runs `args | head -n 3` in bash with pipefail; returns the pipeline's status and lbsim's
/// stderr.
fn into_head(args: &[&str]) -> (Option<i32>, String) {
    let dir = scratch(&format!("pipe-{}", args[0]));
    let err = dir.join("stderr");
    let line = format!(
        "set -o pipefail; {} 2> {} | head -n 3 > /dev/null",
        shell_line(args),
        quote(err.to_str().unwrap())
    );
    let status = Command::new("bash").args(["-c", &line]).status().expect("bash runs");
    let stderr = std::fs::read_to_string(&err).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    (status.code(), stderr)
}

#[test]
fn a_reader_that_stops_early_is_not_an_error() {
    if !have("bash") {
        eprintln!("skipped: bash is not installed");
        return;
    }
    // The brief's example, and an output far larger than a pipe's buffer (a certain EPIPE).
    for args in [
        &["homo", "--format", "csv", "--requests", "20000"][..],
        &["swrr", "--trace", "400000,1", "--format", "csv"][..],
    ] {
        let (code, stderr) = into_head(args);
        assert_eq!(code, Some(0), "lbsim {args:?} | head -n 3: {stderr}");
        assert_eq!(stderr, "", "lbsim {args:?} | head -n 3 is quiet");
    }
}

#[test]
fn a_full_disk_is_an_io_error_with_exit_1() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else { return };
    let out = Command::new(BIN)
        .args(["bins", "--n", "100", "--format", "csv"])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("error: writing the output"), "{stderr}");
}

// ---------------------------------------------------------------------------------------------
// Output files

const PREVIOUS: &str = "previous contents\n";

#[test]
fn a_refused_command_leaves_the_output_file_alone() {
    let dir = scratch("refused");
    let file = dir.join("result.csv");
    std::fs::write(&file, PREVIOUS).unwrap();
    let path = file.to_str().unwrap();
    for bad in [
        &["homo", "--loads", "1.5", "-o", path][..],
        &["homo", "-o", path, "--policies", "p2c,p2c"][..],
        &["bins", "--n", "1e12", "--out", path][..],
        &["hetero", "--bogus", "-o", path][..],
    ] {
        let out = lbsim(bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(out.stdout.is_empty());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), PREVIOUS, "{bad:?}");
        assert_eq!(entries(&dir), ["result.csv"], "{bad:?} left a file behind");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unwritable_destination_fails_before_running_and_leaves_nothing() {
    // Nothing can be created in /proc, even by root.
    let out = lbsim(&["homo", "--requests", "1e9", "-o", "/proc/lbsim-result.csv"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    assert!(text(&out.stderr).contains("--out"), "{}", text(&out.stderr));
    assert!(!Path::new("/proc/lbsim-result.csv").exists());
}

// ---------------------------------------------------------------------------------------------
// Destinations that are not plain files, and write failures

/// A short command whose output is known: its stdout when written there.
const SMALL: &[&str] = &["bins", "--n", "100,200", "--d", "1,2", "--format", "csv"];

/// Makes a device node `dir/name` (major, minor), or says why the test is skipped.
fn device(dir: &Path, name: &str, major: u32, minor: u32) -> Option<PathBuf> {
    let node = dir.join(name);
    let made = Command::new("mknod")
        .arg(&node)
        .args(["c", &major.to_string(), &minor.to_string()])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        eprintln!("skipped: cannot mknod a character device here (needs root)");
        return None;
    }
    Some(node)
}

fn with_out(args: &[&str], option: &str, path: &Path) -> Vec<String> {
    let mut v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    v.extend([option.to_string(), path.to_str().unwrap().to_string()]);
    v
}

fn run(args: &[String]) -> Output {
    Command::new(BIN).args(args).output().expect("lbsim runs")
}

fn is_char_device(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_char_device())
}

#[test]
fn out_at_a_character_device_writes_into_it_and_keeps_the_node() {
    let dir = scratch("chardev");
    let Some(null) = device(&dir, "null", 1, 3) else { return };
    let out = run(&with_out(SMALL, "-o", &null));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{}", text(&out.stderr));
    assert!(is_char_device(&null), "the device node was replaced");
    assert_eq!(entries(&dir), ["null"], "nothing else was created");
    // The same for the figure.
    let fixed = ["fixed", "--n", "20", "--d", "2", "--requests", "2000", "--seeds", "2"];
    let out = run(&with_out(&fixed, "--plot", &null));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(is_char_device(&null), "--plot replaced the device node");
    assert_eq!(entries(&dir), ["null"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn out_at_a_fifo_writes_into_it_for_its_reader() {
    if !have("mkfifo") {
        eprintln!("skipped: mkfifo is not installed");
        return;
    }
    let dir = scratch("fifo");
    let fifo = dir.join("pipe");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let expected = crate::util::lbsim_ok(SMALL);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let out = run(&with_out(SMALL, "-o", &fifo));
    let still_a_fifo = std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo();
    if !(out.status.success() && still_a_fifo) {
        if still_a_fifo {
            // Release the reader, still waiting for a writer. (A reader of a FIFO replaced by
            // a file waits for ever, but on a node no one can reach: the test ends regardless.)
            use std::os::unix::fs::OpenOptionsExt;
            let mut w = std::fs::OpenOptions::new();
            let _ = w.write(true).custom_flags(libc::O_NONBLOCK).open(&fifo);
        }
        panic!(
            "-o at a FIFO: {:?}, still a FIFO: {still_a_fifo}: {}",
            out.status,
            text(&out.stderr)
        );
    }
    assert_eq!(reader.join().unwrap(), expected);
    assert_eq!(entries(&dir), ["pipe"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn out_at_a_symlink_replaces_its_target_keeps_the_link_and_the_mode() {
    let dir = scratch("symlink");
    let target = dir.join("target.csv");
    std::fs::write(&target, PREVIOUS).unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
    let link = dir.join("link.csv");
    std::os::unix::fs::symlink("target.csv", &link).unwrap();
    let expected = crate::util::lbsim_ok(SMALL);
    let out = run(&with_out(SMALL, "-o", &link));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "link replaced");
    assert_eq!(std::fs::read_link(&link).unwrap(), Path::new("target.csv"));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), expected);
    let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o640, "the target's mode is kept");
    assert_eq!(entries(&dir), ["link.csv", "target.csv"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_read_only_file_is_refused_and_left_as_it_was() {
    // Root may write anything: the mode bits are what says "do not overwrite".
    let dir = scratch("readonly");
    let file = dir.join("result.csv");
    std::fs::write(&file, PREVIOUS).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444)).unwrap();
    let fixed = ["fixed", "--n", "20", "--d", "2", "--requests", "2000", "--seeds", "2"];
    for args in [with_out(SMALL, "-o", &file), with_out(&fixed, "--plot", &file)] {
        let out = run(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("error: ") && stderr.contains("read-only"), "{stderr}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), PREVIOUS);
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o444);
        assert_eq!(entries(&dir), ["result.csv"]);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn out_dash_and_a_link_to_the_process_stdout_write_to_stdout() {
    let expected = crate::util::lbsim_ok(SMALL);
    assert_eq!(crate::util::lbsim_ok(&[SMALL, &["-o", "-"]].concat()), expected);
    // Like `-o /dev/stdout`, without going near the machine's own /dev/stdout.
    let dir = scratch("stdout-link");
    let link = dir.join("stdout");
    std::os::unix::fs::symlink("/proc/self/fd/1", &link).unwrap();
    let out = run(&with_out(SMALL, "-o", &link));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), expected);
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "link replaced");
    assert_eq!(entries(&dir), ["stdout"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_closed_stdout_is_exit_1_with_one_line() {
    for args in [SMALL, &["--help"], &["--version"]] {
        let out = Command::new("sh")
            .args(["-c", "exec \"$0\" \"$@\" >&-", BIN])
            .args(args)
            .output()
            .expect("sh runs");
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?} >&-: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: ") && stderr.contains("stdout"), "{stderr}");
    }
}

#[test]
fn help_and_version_into_a_full_device_are_exit_1() {
    let dir = scratch("full-help");
    let Some(full) = device(&dir, "full", 1, 7) else { return };
    for args in [&["--help"][..], &["--version"], &["homo", "--help"]] {
        let sink = std::fs::OpenOptions::new().write(true).open(&full).unwrap();
        let out = Command::new(BIN).args(args).stdout(sink).output().unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("error: writing the"), "{stderr}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_failed_output_leaves_no_file_behind() {
    let dir = scratch("no-partial");
    let Some(full) = device(&dir, "full", 1, 7) else { return };
    let fixed = ["fixed", "--n", "20", "--d", "2", "--requests", "2000", "--seeds", "2"];
    // The table cannot be written to stdout: no figure either.
    let svg = dir.join("x.svg");
    let sink = std::fs::OpenOptions::new().write(true).open(&full).unwrap();
    let out = Command::new(BIN).args(with_out(&fixed, "--plot", &svg)).stdout(sink).output();
    let out = out.unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(entries(&dir), ["full"], "a figure was left from a failed run");
    // The figure cannot be written: no table file either.
    let csv = dir.join("x.csv");
    let args = [with_out(&fixed, "--plot", &full), vec!["-o".into(), csv.to_str().unwrap().into()]];
    let out = run(&args.concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr).lines().count(), 1, "{}", text(&out.stderr));
    assert_eq!(entries(&dir), ["full"], "an output file was left from a failed run");
    assert!(is_char_device(&full));
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Interrupt

/// Starts the binary, waits until `ready` holds (or a few seconds), sends SIGINT, and collects it.
fn interrupt(args: &[&str], ready: impl Fn(u32) -> bool) -> Output {
    signal("INT", args, ready)
}

/// Starts the binary, waits until `ready` holds (or a few seconds), sends the signal `name`
/// (`INT`, `TERM`, `HUP`), and collects it.
fn signal(name: &str, args: &[&str], ready: impl Fn(u32) -> bool) -> Output {
    let child = Command::new(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("lbsim starts");
    let pid = child.id();
    let start = Instant::now();
    while !ready(pid) && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    // Leave the run a moment to get going.
    std::thread::sleep(Duration::from_millis(300));
    let sent =
        Command::new("kill").args([&format!("-{name}"), &pid.to_string()]).status().expect("kill");
    assert!(sent.success());
    let waited = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(waited.elapsed() < Duration::from_secs(5), "SIG{name} is not handled promptly");
    out
}

/// True once the process runs more than one thread (the interrupt handler's is the first).
fn has_threads(pid: u32) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/task")).map_or(true, |d| d.count() > 1)
}

#[test]
fn ctrl_c_exits_130_with_nothing_on_stdout() {
    let out = interrupt(VERY_LONG, has_threads);
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
}

#[test]
fn ctrl_c_removes_the_temporary_file_and_keeps_the_previous_output() {
    let dir = scratch("interrupt");
    let file = dir.join("result.csv");
    std::fs::write(&file, PREVIOUS).unwrap();
    let mut args = VERY_LONG.to_vec();
    args.extend(["-o", file.to_str().unwrap()]);
    let out = interrupt(&args, has_threads);
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), PREVIOUS);
    assert_eq!(entries(&dir), ["result.csv"], "the temporary file is gone");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_signal_that_ends_a_run_leaves_the_previous_output_and_no_temporary_file() {
    // What a terminal, `kill`, `timeout`, `docker stop` and a batch system's time and resource
    // limits send (Slurm's --signal, SGE's notify, LSF: SIGUSR1/SIGUSR2, SIGXCPU; setitimer:
    // SIGALRM, SIGVTALRM, SIGPROF). Numbers as on Linux.
    let signals = [
        ("TERM", 15),
        ("HUP", 1),
        ("ALRM", 14),
        ("USR1", 10),
        ("USR2", 12),
        ("XCPU", 24),
        ("XFSZ", 25),
        ("VTALRM", 26),
        ("PROF", 27),
    ];
    for (name, number) in signals {
        let dir = scratch(&format!("signal-{name}"));
        let file = dir.join("result.csv");
        std::fs::write(&file, PREVIOUS).unwrap();
        let mut args = VERY_LONG.to_vec();
        args.extend(["-o", file.to_str().unwrap()]);
        let out = signal(name, &args, has_threads);
        assert_eq!(out.status.code(), Some(128 + number), "SIG{name}: {}", text(&out.stderr));
        assert!(out.stdout.is_empty(), "SIG{name}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), PREVIOUS, "SIG{name}");
        assert_eq!(entries(&dir), ["result.csv"], "SIG{name} left the temporary file");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn a_run_killed_while_it_simulates_leaves_no_temporary_file() {
    // SIGKILL cannot be caught: nothing must have been created before the output is ready.
    let dir = scratch("signal-KILL");
    let file = dir.join("result.csv");
    let mut args = VERY_LONG.to_vec();
    args.extend(["-o", file.to_str().unwrap()]);
    let out = signal("KILL", &args, has_threads);
    assert_eq!(out.status.code(), None, "killed by a signal");
    assert!(entries(&dir).is_empty(), "left {:?}", entries(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Queue guard

#[test]
fn a_guard_stop_is_a_warning_line_on_stderr_and_the_data_stays_clean() {
    let out = lbsim(&[
        "homo",
        "--loads",
        "0.99",
        "--policies",
        "random,jsq",
        "--servers",
        "10",
        "--requests",
        "20000",
        "--warmup",
        "0",
        "--queue-guard",
        "5",
        "--seeds",
        "2",
        "--format",
        "csv",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    let warnings: Vec<&str> = stderr.lines().collect();
    assert!(!warnings.is_empty(), "a stop is reported");
    for w in &warnings {
        assert!(
            w.starts_with("warning: load 0.99, policy random")
                || w.starts_with("warning: load 0.99, policy jsq"),
            "{w}"
        );
        assert!(w.contains("--queue-guard 5"), "{w}");
    }
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), 3, "{stdout}");
    assert!(!stdout.contains("warning"), "{stdout}");
}

// ---------------------------------------------------------------------------------------------
// Options a command does not use, and messages

fn refused(args: &[&str]) -> String {
    let out = lbsim(args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(out.stdout.is_empty(), "{args:?}");
    // Clap's own errors keep their whole message; lbsim's are one line.
    if Cli::try_parse_from(std::iter::once("lbsim").chain(args.iter().copied())).is_ok() {
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    }
    assert!(stderr.starts_with("error: "), "{stderr}");
    stderr
}

#[test]
fn a_selection_that_runs_nothing_is_a_usage_error() {
    let e = refused(&["bins", "--n", "1000", "--d", "1", "--variants", "left"]);
    assert!(e.contains("--variants") && e.contains("--d"), "{e}");
}

#[test]
fn options_a_command_does_not_use_are_refused_by_name() {
    let e = refused(&["swrr", "--trace", "5,1,1", "--weights", "1,1"]);
    assert!(e.contains("--trace") && e.contains("--weights"), "{e}");
    for option in ["--seeds", "--seed", "--threads"] {
        let e = refused(&["swrr", option, "3"]);
        assert!(e.contains(option), "{e}");
        let e = refused(&[option, "3", "swrr", "--trace", "5,1,1"]);
        assert!(e.contains(option), "{e}");
    }
    // A set of one server has no smoothness to measure.
    assert!(refused(&["swrr", "--weights", "3,1;5"]).contains("--weights"));
}

#[test]
fn the_trace_in_json_has_arrays_and_no_unused_parameters() {
    let json = crate::util::lbsim_ok(&["swrr", "--trace", "5,1,1", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["params"], serde_json::json!({ "trace": [5, 1, 1] }));
    assert_eq!(v["rows"][0]["before"], serde_json::json!([5, 1, 1]));
    assert_eq!(v["rows"][0]["after"], serde_json::json!([-2, 1, 1]));
    let json = crate::util::lbsim_ok(&["swrr", "--weights", "5,1,1", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["params"], serde_json::json!({ "sets": [[5, 1, 1]] }));
}

#[test]
fn a_bad_format_lists_the_accepted_values() {
    let e = refused(&["homo", "--format", "CSV"]);
    assert!(e.contains("--format") && e.contains("table, csv, json"), "{e}");
}

#[test]
fn counts_take_underscores_only_between_digits() {
    for bad in ["_10", "1__0", "10_", "_"] {
        assert!(refused(&["bins", "--n", bad]).contains("--n"), "{bad}");
    }
    let out = crate::util::lbsim_ok(&["bins", "--n", "1_000", "--d", "2", "--format", "csv"]);
    assert!(out.contains("\n1000,2,uniform,"), "{out}");
}

#[test]
fn quiet_may_be_given_twice() {
    let out = lbsim(&["-q", "bins", "--n", "100", "--quiet", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn too_many_threads_are_lowered_with_a_warning_and_change_nothing() {
    let args =
        ["homo", "--loads", "0.9", "--policies", "p2c", "--requests", "2000", "--seeds", "3"];
    let one = crate::util::lbsim_ok(&[&args[..], &["--threads", "1", "--format", "csv"]].concat());
    let out = lbsim(&[&args[..], &["--threads", "1024", "--format", "csv"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), one);
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("warning: --threads 1024 lowered to "), "{stderr}");
}

// ---------------------------------------------------------------------------------------------
// Hostile command lines

const GLOBAL: &[&str] = &["--seeds", "--seed", "--threads", "--format"];
const RUN: &[&str] =
    &["--requests", "--warmup", "--queue-guard", "--precision", "--max-requests", "--quantiles"];

/// The commands and their own options.
fn commands() -> Vec<(&'static str, Vec<&'static str>)> {
    let with_run = |own: &[&'static str]| own.iter().chain(RUN).copied().collect::<Vec<_>>();
    vec![
        ("bins", vec!["--n", "--d", "--variants"]),
        ("fixed", with_run(&["--n", "--lambda", "--d"])),
        ("homo", with_run(&["--servers", "--loads", "--policies", "--tau", "--baseline"])),
        (
            "hetero",
            with_run(&[
                "--slow",
                "--slow-rate",
                "--fast",
                "--fast-rate",
                "--load",
                "--policies",
                "--tau",
                "--baseline",
            ]),
        ),
        ("stale", with_run(&["--servers", "--load", "--periods", "--policies", "--baseline"])),
        ("swrr", vec!["--trace", "--weights"]),
        ("subset", vec!["--clients", "--backends", "--subsets", "--methods"]),
        ("hash", vec!["--servers", "--keys", "--vnodes", "--methods", "--balance"]),
    ]
}

const NASTY: &[&str] = &[
    "",
    " ",
    "0",
    "-0",
    "-1",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "infinity",
    "1e300",
    "1e-300",
    "5e-324",
    "1e-7",
    "0.5",
    "0.99",
    "1",
    "2",
    "3",
    "10",
    "1e15",
    "1e9",
    "1e12",
    "1000000000",
    "18446744073709551616",
    "1_000",
    "1.5e3",
    "0x10",
    "p2c",
    "p2c,p2c",
    "p100c",
    "p101c",
    "random,jsq",
    "swrr",
    "jsq-local",
    "a,,b",
    ",",
    "0.5,0.9",
    "0,0.5",
    "uniform,left",
    "left",
    "5,1,1",
    "1000000,1",
    "5,1,1;1,2",
    "5,1,1;5,1,1",
    "1;",
    "csv",
    "json",
    "table",
    "ü",
    "日本",
    "0.5\n0.9",
    "--",
    "-",
    "-q",
    "auto",
    "0.01",
    "50,99.9",
    "99",
    "100",
];

/// One hostile command line: a command, some of its options (and global ones) with nasty values.
fn argv() -> impl Strategy<Value = Vec<String>> {
    (0..commands().len()).prop_flat_map(|c| {
        let (name, own) = commands().swap_remove(c);
        let options: Vec<&'static str> = own.into_iter().chain(GLOBAL.iter().copied()).collect();
        let n = options.len();
        (
            Just(name),
            proptest::sample::subsequence(options, 0..=n.min(5)),
            proptest::collection::vec(
                (proptest::sample::select(NASTY), any::<bool>(), any::<bool>()),
                5,
            ),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|(name, opts, values, quiet, short)| {
                let mut args = vec!["lbsim".to_string(), name.to_string()];
                // Mostly short runs where the command line leaves the length open, so that
                // accepted command lines are cheap enough to run.
                let short_run: &[(&str, &str)] = match name {
                    "bins" => &[("--n", "100")],
                    "swrr" | "subset" => &[],
                    "hash" => &[("--keys", "1000")],
                    _ => &[("--requests", "300"), ("--warmup", "30"), ("--seeds", "2")],
                };
                for &(opt, value) in short_run {
                    if short && !opts.contains(&opt) {
                        args.extend([opt.to_string(), value.to_string()]);
                    }
                }
                for (opt, (value, joined, nice)) in opts.into_iter().zip(values) {
                    // Half the time a plausible value, so that more commands get past parsing.
                    let value = if nice { plausible(opt) } else { value };
                    if joined {
                        args.push(format!("{opt}={value}"));
                    } else {
                        args.extend([opt.to_string(), value.to_string()]);
                    }
                }
                if quiet {
                    args.push("--quiet".into());
                }
                args
            })
    })
}

fn plausible(opt: &str) -> &'static str {
    match opt {
        "--seeds" | "--threads" | "--d" => "2",
        "--seed" => "7",
        "--format" => "json",
        "--requests" => "500",
        "--warmup" => "50",
        "--queue-guard" => "3",
        "--n" | "--servers" | "--slow" | "--fast" => "10",
        "--lambda" | "--loads" | "--load" => "0.9",
        "--policies" => "p2c,jsq",
        "--tau" | "--slow-rate" | "--fast-rate" => "0.5",
        "--variants" => "left",
        "--periods" => "0,1",
        "--trace" | "--weights" => "5,1,1",
        "--precision" => "0.1",
        "--max-requests" => "1000",
        "--quantiles" => "50,99.9",
        "--baseline" => "p2c",
        "--clients" | "--backends" => "12",
        "--subsets" => "3,4",
        "--methods" => "deterministic",
        "--keys" => "1000",
        "--vnodes" => "1,10",
        "--balance" => "1.25",
        _ => "1",
    }
}

/// Work an accepted configuration would do, roughly in arrivals (or balls, or picks).
fn cost(cfg: &Config) -> f64 {
    let seeds = cfg.common.seeds as f64;
    let threads = cfg.common.threads.unwrap_or(1) as f64;
    // --precision may double up to --max-requests, each doubling a run from scratch (twice the
    // largest run in all); --warmup auto adds a pilot of the same length.
    let arrivals = |r: &lbsim::experiment::RunConfig| {
        let doubling = if r.precision.is_some() { 2.0 } else { 1.0 };
        r.most_arrivals() as f64 * doubling
    };
    let farm = |servers: usize| if servers > 10_000 { f64::INFINITY } else { servers as f64 };
    let work = match &cfg.experiment {
        Experiment::Bins(b) => b.n.iter().map(|&n| n as f64).sum::<f64>() * b.d.len() as f64 * 2.0,
        Experiment::Fixed(f) => {
            let d = f.d.iter().copied().max().unwrap_or(1) as f64;
            arrivals(&f.run) * (f.lambda.len() * f.d.len()) as f64 * d * d + farm(f.n)
        }
        Experiment::Homo(h) => {
            arrivals(&h.run) * (h.loads.len() * h.policies.len()) as f64 * 2.0 + farm(h.servers)
        }
        Experiment::Hetero(h) => {
            arrivals(&h.run) * h.policies.len() as f64 * 2.0 + farm(h.slow + h.fast)
        }
        Experiment::Stale(s) => {
            let shortest = s.periods.iter().copied().filter(|&p| p > 0.0).fold(1e9, f64::min);
            let posts = arrivals(&s.run) / (s.load * s.servers as f64) / shortest;
            (arrivals(&s.run) * 2.0 + posts * s.servers as f64)
                * (s.periods.len() * s.policies.len()) as f64
                + farm(s.servers)
        }
        Experiment::Swrr(s) => {
            let sets = s.trace.iter().chain(&s.sets);
            sets.map(|w| w.iter().sum::<u64>() as f64 * w.len() as f64).sum::<f64>() * 10.0
        }
        Experiment::Capacity(c) => {
            // Both ends and about ten bisection steps per policy, each up to --max-requests
            // (doubling from --requests: twice the largest run in all).
            let probes = 12.0 * c.policies.len() as f64;
            (c.max_requests + c.warmup) as f64 * 2.0 * probes + farm(c.spec.rates().len())
        }
        Experiment::Run(r) => r
            .points
            .iter()
            .map(|p| arrivals(&p.run) * p.policies.len() as f64 * 2.0 + farm(p.spec.rates().len()))
            .sum(),
        Experiment::Hash(h) => {
            // Per row: two placements of every key, two rings (or Maglev tables) built.
            let most = h.vnodes.iter().copied().max().unwrap_or(1) as f64;
            let build = ((h.servers as f64 + 1.0) * most).max(65537.0) * 2.0;
            lbsim::experiment::hash::cases(h).len() as f64 * (h.keys as f64 * 2.0 + build)
        }
        Experiment::Print(_) => 0.0,
        Experiment::Subset(s) => {
            (s.clients * s.backends * s.subsets.len() * s.methods.len()) as f64
        }
        // One limiter: about the pattern's arrivals; the claims: some 10^7 requests.
        Experiment::Limit(l) if l.admission.is_some() => l.duration * 1e3,
        Experiment::Limit(_) => 1e7,
    };
    work * seeds + threads * 1e4
}

/// Counts what a run reports.
#[derive(Default)]
struct Count {
    done: AtomicU64,
    more: AtomicU64,
}

impl Reporter for Count {
    fn done(&self) {
        self.done.fetch_add(1, Ordering::Relaxed);
    }

    fn more(&self, n: u64) {
        self.more.fetch_add(n, Ordering::Relaxed);
    }
}

/// Parses and validates in-process, as the binary does; runs the command when cheap. Returns the
/// exit status the binary must give.
fn in_process(args: &[String]) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                return 0;
            }
            let first = e.render().to_string();
            assert!(first.lines().next().is_some_and(|l| l.starts_with("error: ")), "{first}");
            return 2;
        }
    };
    let cfg = match Config::from_cli(&cli) {
        Ok(cfg) => cfg,
        Err(e) => {
            let text = e.to_string();
            assert_eq!(text.lines().count(), 1, "{args:?}: {e}");
            assert!(text.contains("--"), "{args:?}: the message names no option: {e}");
            return 2;
        }
    };
    if cost(&cfg) <= 1e6 {
        let count = Count::default();
        let report = experiment::run(&cfg, &count);
        // Every replication announced up front or added on the way (--precision) is reported done.
        let (done, more) = (count.done.into_inner(), count.more.into_inner());
        assert_eq!(done, experiment::replications(&cfg) + more, "{args:?}");
        for format in [Format::Table, Format::Csv, Format::Json] {
            assert!(!format.exporter().serialize(&report).is_empty());
        }
    }
    0
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any command line: no panic while parsing, validating or (when cheap) running.
    #[test]
    fn hostile_command_lines_never_panic_in_process(args in argv()) {
        let code = in_process(&args);
        prop_assert!(code == 0 || code == 2);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 60, failure_persistence: None, ..ProptestConfig::default() })]

    /// The binary agrees: exit 0 (output on stdout) or 2 (one line naming an option on stderr,
    /// nothing on stdout), never a panic.
    #[test]
    fn hostile_command_lines_exit_0_or_2(args in argv()) {
        // Running the binary is only worth it when the in-process verdict is cheap to check.
        let expected = in_process(&args);
        let accepted_and_costly = expected == 0 && {
            let cfg = Config::from_cli(&Cli::try_parse_from(&args).unwrap()).unwrap();
            cost(&cfg) > 1e6
        };
        prop_assume!(!accepted_and_costly);
        let out = Command::new(BIN).args(&args[1..]).output().unwrap();
        let stderr = text(&out.stderr);
        prop_assert_eq!(out.status.code(), Some(expected), "{:?}: {}", args, stderr);
        prop_assert!(!stderr.contains("panicked"), "{}", stderr);
        if expected == 2 {
            prop_assert!(out.stdout.is_empty(), "{:?}", args);
            prop_assert!(stderr.starts_with("error: "), "{:?}: {}", args, stderr);
            // Clap's own errors keep their whole message (missing arguments, suggestions).
            if Cli::try_parse_from(&args).is_ok() {
                prop_assert_eq!(stderr.lines().count(), 1, "{:?}: {}", args, stderr);
            }
        } else {
            prop_assert!(!out.stdout.is_empty(), "{:?}", args);
        }
    }
}

#[test]
fn a_sample_of_hostile_inputs_is_refused_with_one_line() {
    let refused: &[&[&str]] = &[
        &["homo", "--servers", "1000000000"],
        &["homo", "--requests", "1e15"],
        &["homo", "--seeds", "1e9"],
        &["bins", "--n", "1e12"],
        &["bins", "--threads", "1025"],
        &["swrr", "--trace", "1000000,1"],
        &["swrr", "--weights", "5,1,1;5,1,1"],
        &["swrr", "--weights", "5,1,1;;1,2"],
        &["homo", "--loads", "5e-324"],
        &["homo", "--tau", "-inf"],
        &["homo", "--policies", "p1000c"],
        &["homo", "--servers", "100000", "--policies", "swrr"],
        &["hetero", "--slow-rate", "1e-300"],
        &["hetero", "--slow-rate", "0.1234567", "--policies", "swrr"],
        &["fixed", "--lambda", "0.99999", "--d", "1"],
        &["stale", "--periods", "0.001", "--requests", "1e10"],
        &[
            "homo",
            "--loads",
            "1e-6",
            "--servers",
            "1",
            "--policies",
            "random",
            "--requests",
            "1e11",
        ],
        &["homo", "--loads", "0.5\n0.9"],
        &["homo", "-o", "/tmp/"],
    ];
    for args in refused {
        let out = lbsim(args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: ") && stderr.contains("--"), "{args:?}: {stderr}");
    }
}

/// Runs the binary under `ulimit -v` of 1 GiB, killed after `secs`: a command that would
/// allocate gigabytes before refusing aborts or is killed here instead of taking the machine
/// down. Returns the exit status (None: killed) and stderr.
fn in_little_memory(args: &[&str], secs: u64) -> (Option<i32>, String) {
    bounded(args, None, secs)
}

/// What a writer thread feeds to the standard input of [`bounded`].
type Feed = Box<dyn FnOnce(std::process::ChildStdin) + Send>;

/// [`in_little_memory`] with a standard input fed by `feed` (none: empty). The writer thread
/// ends when the process closes its end (a broken pipe).
fn bounded(args: &[&str], feed: Option<Feed>, secs: u64) -> (Option<i32>, String) {
    let mut child = Command::new("sh")
        .args(["-c", &format!("ulimit -v 1048576 && exec {}", shell_line(args))])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh runs");
    let stdin = child.stdin.take().unwrap();
    let writer = feed.map(|f| std::thread::spawn(move || f(stdin)));
    let deadline = Instant::now() + Duration::from_secs(secs);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if let Some(w) = writer {
        w.join().unwrap();
    }
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    (status, stderr)
}

/// Writes zero bytes until the reader goes away, like `/dev/zero`.
fn zeros() -> Feed {
    Box::new(|mut stdin| {
        let block = vec![0u8; 1 << 16];
        while std::io::Write::write_all(&mut stdin, &block).is_ok() {}
    })
}

/// The scenario of a trace read from `file`.
fn trace_scenario(dir: &Path, file: &Path) -> String {
    let toml = format!(
        "policies = [\"p2c\"]\n[arrivals]\nkind = \"trace\"\nfile = {:?}\n",
        file.to_str().unwrap()
    );
    let path = dir.join("trace.toml");
    std::fs::write(&path, toml).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn a_device_or_a_fifo_where_a_file_is_needed_is_refused_by_name() {
    let dir = scratch("not-regular");
    // A FIFO nobody writes (opening it would wait forever), and a /dev/zero of our own where
    // mknod is permitted (reading it would fill the memory).
    let fifo = dir.join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let mut nodes = vec![(fifo, "a FIFO")];
    nodes.extend(device(&dir, "zero", 1, 5).map(|z| (z, "a character device")));
    for (node, what) in &nodes {
        let node_str = node.to_str().unwrap();
        let scenario = trace_scenario(&dir, node);
        let limit_trace = format!("trace:file={node_str}");
        let cases: [&[&str]; 4] = [
            &["run", &scenario],
            &["run", node_str],
            &["merge", node_str],
            &["limit", "--limiter", "token-bucket:rate=1,burst=1", "--pattern", &limit_trace],
        ];
        for args in cases {
            let (code, stderr) = in_little_memory(args, 10);
            assert_eq!(code, Some(2), "{args:?}: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            assert!(stderr.contains(node_str), "{stderr}");
            assert!(stderr.contains(&format!("is {what}, not a regular file")), "{stderr}");
        }
    }
}

#[test]
fn an_endless_standard_input_is_refused_at_its_limit() {
    let (code, stderr) = bounded(&["merge", "-"], Some(zeros()), 20);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("standard input:1: cannot read: line 1 is longer than 64 MiB"),
        "{stderr}"
    );
    let (code, stderr) = bounded(&["run", "-"], Some(zeros()), 20);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("'standard input': is larger than 1 MiB"), "{stderr}");
}

#[test]
fn a_trace_line_of_megabytes_is_refused_with_its_line_number() {
    let dir = scratch("long-line");
    let csv = dir.join("long.csv");
    std::fs::write(&csv, format!("time\n1\n{}\n3\n", "0".repeat(2 << 20))).unwrap();
    let scenario = trace_scenario(&dir, &csv);
    let (code, stderr) = in_little_memory(&["run", &scenario], 10);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("arrivals.file: cannot read") && stderr.contains("long.csv"),
        "{stderr}"
    );
    assert!(stderr.contains("line 3 is longer than 1 MiB"), "{stderr}");
}

#[test]
fn an_output_that_names_an_input_is_refused_and_the_input_kept() {
    let dir = scratch("output-is-input");
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let trace = dir.join("trace.csv");
    std::fs::write(&trace, "time\n0\n1\n2\n3\n").unwrap();
    let scenario = trace_scenario(&dir, &trace);
    std::fs::write(dir.join("demands.csv"), "demand\n0.5\n1.5\n").unwrap();
    let empirical =
        "policies = [\"p2c\"]\n[service]\nkind = \"empirical\"\nfile = \"demands.csv\"\n";
    std::fs::write(dir.join("empirical.toml"), empirical).unwrap();
    std::os::unix::fs::symlink(&scenario, dir.join("link.toml")).unwrap();
    std::fs::hard_link(&scenario, dir.join("hard.toml")).unwrap();
    let originals: Vec<(PathBuf, Vec<u8>)> = ["trace.toml", "trace.csv", "demands.csv"]
        .iter()
        .map(|f| (dir.join(f), std::fs::read(dir.join(f)).unwrap()))
        .collect();
    let limit_trace = format!("trace:file={}", trace.to_str().unwrap());
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["run".into(), scenario.clone(), "-o".into(), scenario.clone()],
            "--out names the scenario file",
        ),
        (
            vec!["run".into(), scenario.clone(), "-o".into(), path("link.toml")],
            "--out names the scenario file",
        ),
        (
            vec!["run".into(), scenario.clone(), "-o".into(), path("hard.toml")],
            "--out names the scenario file",
        ),
        (
            vec!["run".into(), scenario.clone(), "--print".into(), "-o".into(), scenario.clone()],
            "--out names the scenario file",
        ),
        (
            vec!["run".into(), scenario.clone(), "-o".into(), path("trace.csv")],
            "--out names the trace",
        ),
        (
            vec!["run".into(), path("empirical.toml"), "-o".into(), path("demands.csv")],
            "--out names the demands",
        ),
        (
            vec!["run".into(), scenario.clone(), "--series".into(), path("trace.csv")],
            "--series names the trace",
        ),
        (
            vec![
                "run".into(),
                scenario.clone(),
                "--series".into(),
                path("o.csv"),
                "-o".into(),
                path("o.csv"),
            ],
            "--series and --out name the same file",
        ),
        (
            vec![
                "limit".into(),
                "--limiter".into(),
                "token-bucket:rate=1,burst=1".into(),
                "--pattern".into(),
                limit_trace,
                "-o".into(),
                path("trace.csv"),
            ],
            "--out names the trace",
        ),
    ];
    for (args, what) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let e = refused(&args);
        assert!(e.contains(what), "{args:?}: {e}");
        for (file, bytes) in &originals {
            assert_eq!(&std::fs::read(file).unwrap(), bytes, "{args:?} changed {file:?}");
        }
    }
    assert!(!dir.join("o.csv").exists());
}

#[test]
fn a_scenario_is_read_from_standard_input_for_a_dash() {
    let dir = scratch("stdin-scenario");
    let toml = "policies = [\"p2c\", \"jsq\"]\n[run]\nrequests = 2000\nseeds = 2\n";
    let file = dir.join("s.toml");
    std::fs::write(&file, toml).unwrap();
    let from_file = crate::util::lbsim_ok(&["run", file.to_str().unwrap(), "--format", "csv"]);
    let mut child = Command::new(BIN)
        .args(["run", "-", "--format", "csv"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), toml.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), from_file);
    // Not as a shard: the merge would read the scenario again.
    let e = refused(&["run", "-", "--shard", "0/2"]);
    assert!(e.contains("--shard") && e.contains("standard input"), "{e}");
}

#[test]
fn a_limit_pattern_of_billions_is_refused_up_front_in_little_memory() {
    let limiter = "token-bucket:rate=100,burst=10";
    for pattern in [
        "boundary:count=1e12,window=1",
        "boundary:count=5e6",
        "poisson:rate=1e9",
        "poisson:rate=1e10",
        "constant:rate=1e9",
        "on-off:rate=1e9,on=1,off=1",
    ] {
        let args = ["limit", "--limiter", limiter, "--pattern", pattern];
        let started = Instant::now();
        // Ten seconds leave room for a loaded machine; a refusal takes milliseconds.
        let (code, stderr) = in_little_memory(&args, 10);
        assert_eq!(code, Some(2), "{pattern}: {stderr}");
        assert!(started.elapsed() < Duration::from_secs(10), "{pattern}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains("--pattern") && stderr.contains("at most"), "{stderr}");
    }
    // 5e8 arrivals per replication, 2.5e9 over the five default seeds: refused per replication
    // (they do not fit in memory); 2e8 over five seeds is refused for its total.
    let (_, stderr) =
        in_little_memory(&["limit", "--limiter", limiter, "--pattern", "boundary:count=5e6"], 10);
    assert!(stderr.contains("500000000 arrivals per replication"), "{stderr}");
    let (_, stderr) = in_little_memory(
        &["limit", "--limiter", limiter, "--pattern", "constant:rate=2e6", "--seeds", "6"],
        10,
    );
    assert!(stderr.contains("arrivals over --seeds 6"), "{stderr}");
}

#[test]
fn parse_and_validation_agree_with_the_binary_on_plain_cases() {
    assert_eq!(in_process(&["lbsim".into(), "swrr".into()]), 0);
    assert_eq!(in_process(&["lbsim".into(), "homo".into(), "--loads=2".into()]), 2);
    let cli = Cli::parse_from(["lbsim", "homo", "-q"]);
    assert!(cli.global.quiet);
}

#[test]
fn run_takes_the_run_options_of_the_other_commands() {
    let dir = crate::util::Dir::new("run-options");
    // The file asks for a long run; the command line wins over it.
    let file = dir.file(
        "s.toml",
        "policies = [\"random\", \"p2c\", \"jsq\"]\n[farm]\ngroups = [{ count = 20, rate = 1.0 }]\n\
         [arrivals]\nload = 0.8\n[run]\nrequests = 1e9\nwarmup = 1e8\nseeds = 3\n",
    );
    let ok = |extra: &[&str]| {
        let args = [&["run", file.as_str(), "-q", "--format", "csv"][..], extra].concat();
        crate::util::lbsim_ok(&args)
    };
    // --requests and --warmup mean what `--set run.requests=...` means.
    let short = ok(&["--requests", "2e4", "--warmup", "2e3"]);
    assert_eq!(short, ok(&["--set", "run.requests=20000", "--set", "run.warmup=2000"]));
    let printed = crate::util::lbsim_ok(&[
        "run",
        file.as_str(),
        "--requests",
        "2e4",
        "--warmup",
        "auto",
        "--queue-guard",
        "50",
        "--print",
    ]);
    for key in ["requests = 20000", "warmup = \"auto\"", "queue_guard = 50"] {
        assert!(printed.contains(key), "{key} in {printed}");
    }
    // --quantiles adds the percentiles that are not columns already, after the last column but
    // realised_load and the note.
    let q = ok(&["--requests", "2e4", "--warmup", "2e3", "--quantiles", "50,75,99.99"]);
    let header = q.lines().next().unwrap();
    assert!(header.ends_with(",load,p75,p99.99,realised_load,note"), "{header}");
    assert_eq!(header.matches("p50").count(), 1, "{header}");
    for (p75, p90) in crate::util::column(&q, "p75").iter().zip(crate::util::column(&q, "p90")) {
        let (p75, p90): (f64, f64) = (p75.parse().unwrap(), p90.parse().unwrap());
        assert!(p75 > 0.0 && p75 < p90, "p75 {p75}, p90 {p90}");
    }
    // --baseline compares every row with one policy of its point, paired over replications.
    let b = ok(&["--requests", "2e4", "--warmup", "2e3", "--baseline", "p2c"]);
    assert!(b.lines().next().unwrap().ends_with(
        ",load,mean_vs_base,mean_vs_base_ci95,p99_vs_base,p99_vs_base_ci95,realised_load,note"
    ));
    assert_eq!(crate::util::column(&b, "mean_vs_base")[1].parse::<f64>().unwrap(), 0.0);
    let vs: f64 = crate::util::column(&b, "mean_vs_base")[2].parse().unwrap();
    assert!(vs < -0.3, "jsq against p2c at load 0.8 on 20 servers: {vs}");
    for args in [
        &["--baseline", "nope"][..],
        &["--precision", "2"],
        &["--max-requests", "1e7"],
        &["--requests", "1.5"],
        &["--warmup", "-1"],
        &["--quantiles", "100"],
        &["--precision", "0.01", "--seeds", "1"],
        &["--quantiles", "75", "--print"],
    ] {
        let option = args[0];
        let out = lbsim(&[&["run", file.as_str()][..], args].concat());
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(option), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn run_precision_is_homo_precision_from_the_command_line_or_the_file() {
    // `homo --precision` and the scenario file it prints run the same doubling: same rows, same
    // `requests` column; `--precision` on `run` and `run.precision` in the file are the same key.
    let dir = crate::util::Dir::new("run-precision");
    let homo = [
        "homo",
        "--loads",
        "0.8",
        "--policies",
        "random,p2c",
        "--servers",
        "10",
        "--requests",
        "1e4",
        "--warmup",
        "1e3",
        "--seeds",
        "3",
        "--precision",
        "0.03",
    ];
    let direct = crate::util::lbsim_ok(&[&homo[..], &["-q", "--format", "csv"]].concat());
    let printed = crate::util::lbsim_ok(&[&homo[..], &["--print-scenario"]].concat());
    assert!(printed.contains("precision = 0.03"), "{printed}");
    let file = dir.file("h.toml", &printed);
    let via_file = crate::util::lbsim_ok(&["run", &file, "-q", "--format", "csv"]);
    for c in ["policy", "mean", "mean_ci95", "p99", "steady", "requests"] {
        assert_eq!(
            crate::util::column(&direct, c),
            crate::util::column(&via_file, c),
            "column {c}"
        );
    }
    let requests: Vec<u64> =
        crate::util::column(&direct, "requests").iter().map(|r| r.parse().unwrap()).collect();
    assert!(requests.iter().any(|&r| r > 10_000), "some row doubled: {requests:?}");
    let plain = dir.file("plain.toml", &printed.replace("precision = 0.03\n", ""));
    let via_option = crate::util::lbsim_ok(&[
        "run",
        &plain,
        "-q",
        "--format",
        "csv",
        "--precision",
        "0.03",
        "--max-requests",
        "1e8",
    ]);
    assert_eq!(via_file, via_option);
}

/// README.md, as shipped.
fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap()
}

#[test]
fn the_readme_starts_with_one_command_that_builds_and_runs_the_main_experiment() {
    let text = readme();
    let start = text.find("## Getting started").expect("a Getting started section");
    let block = &text[start..];
    let code = &block[block.find("```sh\n").expect("a shell block") + 6..];
    let commands: Vec<&str> = code[..code.find("```").unwrap()]
        .lines()
        .map(|l| l.split('#').next().unwrap().trim())
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(commands.first(), Some(&"cargo run --release -- homo --seeds 5"), "{commands:?}");
    assert!(commands.contains(&"cargo test --release"), "{commands:?}");
    // What it runs is what `lbsim homo --seeds 5` is.
    let cli = Cli::try_parse_from(["lbsim", "homo", "--seeds", "5"]).unwrap();
    assert!(Config::from_cli(&cli).is_ok());
}

#[test]
fn the_series_columns_are_the_sweep_keys_then_policy_time_metric_value_as_documented() {
    let dir = crate::util::Dir::new("series-columns");
    let file = dir.file(
        "s.toml",
        "policies = [\"p2c\"]\n[farm]\ngroups = [{ count = 10, rate = 1.0 }]\n[run]\n\
         requests = 2000\nwarmup = 200\nseeds = 2\n[sweep]\n\"arrivals.load\" = [0.5, 0.8]\n",
    );
    let series = dir.0.join("series.csv");
    crate::util::lbsim_ok(&["run", &file, "-q", "--series", series.to_str().unwrap()]);
    let written = std::fs::read_to_string(&series).unwrap();
    assert_eq!(written.lines().next(), Some("arrivals.load,policy,time,metric,value"));
    let doc = readme().split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        doc.contains("one column per sweep key") && doc.contains("then `policy,time,metric,value`"),
        "README's --series paragraph names the columns as written"
    );
    let help = lbsim(&["run", "--help"]);
    let help = text(&help.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(help.contains("the sweep keys, then `policy,time,metric,value`"), "{help}");
}

/// A run estimated over an hour says so on stderr before it starts, even with `-q`, and can be
/// stopped at once; the warning is not a refusal.
#[test]
fn a_run_estimated_over_an_hour_warns_before_starting() {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(BIN)
        .args(["homo", "--requests", "1e11", "--seeds", "1", "-q"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("lbsim starts");
    let stderr = child.stderr.take().expect("piped stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stderr).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(Duration::from_secs(60));
    child.kill().expect("kill");
    let _ = child.wait();
    let line = line.expect("a first stderr line within a minute");
    assert!(line.starts_with("warning: this run is estimated to take about"), "{line}");
    assert!(line.contains("--requests"), "says how to shorten it: {line}");
}

/// A default run is short: no estimate is printed.
#[test]
fn a_default_run_does_not_warn_of_its_length() {
    let cfg = Config::from_cli(&Cli::parse_from(["lbsim", "homo"])).expect("valid");
    let all = experiment::replications(&cfg);
    let (_, s) = experiment::estimate::estimate(&cfg, all, 1).expect("homo is estimated");
    assert!(s < experiment::estimate::WARN_AFTER, "{s}");
    assert!(experiment::estimate::warning(&cfg, all).is_none());
    let long =
        Config::from_cli(&Cli::parse_from(["lbsim", "homo", "--requests", "1e11"])).expect("valid");
    assert!(experiment::estimate::warning(&long, experiment::replications(&long)).is_some());
    // A merge simulates nothing: no estimate, however long the run its shards made.
    assert!(experiment::estimate::warning(&long, 0).is_none());
}

/// Clap's usage errors are printed whole: every missing argument, and its suggestions.
#[test]
fn usage_errors_name_what_is_missing_and_suggest_the_near_miss() {
    let cases: &[(&[&str], &[&str])] = &[
        (&["run"], &["required arguments were not provided", "<"]),
        (&["merge"], &["required arguments were not provided", "<FILE"]),
        (&["homo", "--load", "0.5"], &["--load", "--loads"]),
        (&["hom"], &["hom", "homo"]),
    ];
    for (args, wanted) in cases {
        let out = lbsim(args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        // Past the first line: the missing argument or the suggestion.
        let rest: String = stderr.lines().skip(1).collect::<Vec<_>>().join("\n");
        assert!(wanted.iter().all(|w| stderr.contains(w)), "{args:?}: {stderr}");
        assert!(rest.contains(wanted[1]), "{args:?}: not past the first line: {stderr}");
    }
    let stderr = text(&lbsim(&["homo", "--loads"]).stderr);
    assert!(!stderr.contains("[possible values: ]"), "{stderr}");
    assert!(stderr.contains("--loads"), "{stderr}");
}

#[test]
fn an_output_through_a_dangling_link_into_a_missing_directory_is_a_usage_error() {
    let dir = scratch("dangling-out");
    let link = dir.join("link");
    std::os::unix::fs::symlink(dir.join("missing").join("x"), &link).unwrap();
    let link = link.to_string_lossy().into_owned();
    let e = refused(&["homo", "-o", link.as_str()]);
    assert!(e.contains(&link) && e.contains("missing") && e.contains("--out"), "{e}");
    // The same as a path into a missing directory.
    let e = refused(&["homo", "-o", &dir.join("missing").join("x").to_string_lossy()]);
    assert!(e.contains("does not exist"), "{e}");
    assert_eq!(entries(&dir), ["link"]);
}

#[test]
fn dry_run_checks_without_simulating_or_writing() {
    let dir = scratch("dry-run");
    let out = dir.join("out.csv").to_string_lossy().into_owned();
    // 10^9 arrivals per replication would take hours; the check takes no time and writes nothing.
    let checked = lbsim(&["homo", "--requests", "1e9", "-o", &out, "--dry-run"]);
    assert_eq!(checked.status.code(), Some(0), "{}", text(&checked.stderr));
    assert!(checked.stdout.is_empty() && entries(&dir).is_empty());
    let e = refused(&["homo", "--loads", "2", "--dry-run"]);
    assert!(e.contains("--loads"), "{e}");
    let sharded = lbsim(&["homo", "--requests", "1e9", "--shard", "0/4", "--dry-run"]);
    assert_eq!(sharded.status.code(), Some(0), "{}", text(&sharded.stderr));
    assert!(sharded.stdout.is_empty());
    let e = refused(&["homo", "--shard", "4/4", "--dry-run"]);
    assert!(e.contains("--shard"), "{e}");
}

#[test]
fn run_help_says_where_relative_paths_of_standard_input_lead() {
    let help = crate::util::lbsim_ok(&["run", "--help"]);
    let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("`-` for standard input (its relative paths"), "{help}");
    assert!(flat.contains("current directory"), "{help}");
    assert!(flat.contains("--dry-run"), "{help}");
}

#[test]
fn slurm_submit_refuses_a_command_that_lbsim_refuses() {
    let dir = scratch("slurm-submit");
    // A stand-in sbatch that records its calls: submit must not reach it with a bad command.
    let bin = dir.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let calls = dir.join("calls");
    let sbatch = bin.join("sbatch");
    std::fs::write(&sbatch, format!("#!/bin/sh\necho \"$*\" >> '{}'\necho 42\n", calls.display()))
        .unwrap();
    std::fs::set_permissions(&sbatch, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/slurm/submit");
    let submit = |args: &[&str]| {
        let sweep = dir.join("sweep");
        Command::new("bash")
            .arg(script)
            .args(["--dir", &sweep.to_string_lossy()])
            .args(args)
            .env("LBSIM", BIN)
            .env("PATH", &path)
            .current_dir(&*dir)
            .output()
            .unwrap()
    };
    for (args, names) in [
        (&["2", "homo", "--loads", "2"][..], "--loads"),
        (&["2", "homo", "--format", "csv", "-o", "missing/x.csv"], "--out"),
        (&["2", "run", "-"], "--shard"),
    ] {
        let out = submit(args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.lines().next().unwrap_or("").starts_with("error: "), "{err}");
        assert!(err.contains(names) && err.contains("nothing was submitted"), "{args:?}: {err}");
        assert!(!calls.exists() && !dir.join("sweep").exists(), "{args:?}");
    }
    // A command lbsim accepts is submitted: the shards' array, then the merge.
    let out = submit(&["2", "homo", "--loads", "0.5", "--format", "csv", "-o", "x.csv"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "42 42\n");
    assert_eq!(std::fs::read_to_string(&calls).unwrap().lines().count(), 2);
}
