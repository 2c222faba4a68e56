//! `lbsim merge FILE... | -`: reads shards' raw records and checks them before anything is
//! summarised.
//!
//! The first manifest gives the command: its recorded command line is parsed again (with the
//! merge's `--format`, `-o`, `--threads`, `-q` and `--plot` in place of the shard's), and the hash of the
//! plan it resolves to must be the recorded one (a scenario file edited since, or another lbsim,
//! shows here). Then every shard must be of this lbsim version, of the same plan and split, each
//! `K` once, each task once, each task's checksum that of its content and its fields consistent
//! ([`Record`]); a shard must end with its end record. Each failure is a usage error:
//! one line naming what is missing, doubled, mismatched or truncated, exit status 2.
//!
//! Files are read line by line, named in any order, and in step: the next line comes from the file
//! whose shard holds the next task, so each task is summarised as soon as it is read and only
//! about one record per shard waits. `-` is standard input, which may hold several shards one
//! after the other (`cat shard-*.jsonl | lbsim merge -`): there the tasks of a shard wait until
//! the shards before it on the stream are read.

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

use clap::Parser;
use serde::de::IgnoredAny;

use super::records::{Line, Manifest, Record, Task, VERSION, checksum};
use super::{Plan, plan_hash};
use crate::cli::{Cli, Command, MergeArgs};
use crate::error::{UsageError, shown};
use crate::experiment::Config;
use crate::experiment::capacity::Search;
use crate::experiment::{Fold, Merged, Queueing};
use crate::input::{self, LineLimit, RECORD_LINE};
use crate::stats::RepStats;

fn fail(message: impl Into<String>) -> UsageError {
    UsageError::Other(message.into())
}

/// One input: a file or standard input, read line by line.
struct Input {
    name: String,
    reader: Box<dyn BufRead>,
    line: usize,
    /// A line read ahead (the first manifest), returned first.
    ahead: Option<String>,
}

impl Input {
    /// Standard input for `-`, else a regular file; lines longer than [`RECORD_LINE`] stop the
    /// reading.
    fn open(path: &Path) -> Result<Input, UsageError> {
        let (name, reader): (String, Box<dyn BufRead>) = if path == Path::new("-") {
            let stdin = LineLimit::new(io::stdin(), RECORD_LINE);
            ("standard input".into(), Box::new(BufReader::new(stdin)))
        } else {
            let name = path.display().to_string();
            let file = input::open_regular(path)
                .map_err(|e| fail(format!("cannot read raw records '{}': {e}", shown(&name))))?;
            (name, Box::new(BufReader::new(LineLimit::new(file, RECORD_LINE))))
        };
        Ok(Input { name, reader, line: 0, ahead: None })
    }

    /// The next line without its newline, and whether the input ended inside it (no newline).
    fn next(&mut self) -> Result<Option<(String, bool)>, UsageError> {
        if let Some(l) = self.ahead.take() {
            self.line += 1;
            return Ok(Some((l, false)));
        }
        let mut buf = String::new();
        let n = self
            .reader
            .read_line(&mut buf)
            .map_err(|e| fail(format!("{}:{}: cannot read: {e}", self.name, self.line + 1)))?;
        if n == 0 {
            return Ok(None);
        }
        self.line += 1;
        let cut = buf.ends_with('\n');
        if cut {
            buf.pop();
        }
        Ok(Some((buf, !cut)))
    }

    fn at(&self) -> String {
        format!("{}:{}", self.name, self.line)
    }
}

/// Reads the raw records of `args.files`; returns the command they ran (with the merge's output
/// options) and every task's result, or the one line saying why they do not make a whole.
pub fn read(cli: &Cli, args: &MergeArgs) -> Result<(Config, Merged), UsageError> {
    let g = &cli.global;
    let given = [("--seeds", g.seeds.is_some()), ("--seed", g.seed.is_some())];
    let given = given.into_iter().chain([("--shard", g.shard.is_some())]);
    if let Some((option, _)) = given.into_iter().find(|&(_, given)| given) {
        return Err(UsageError::Conflict {
            option: option.into(),
            rule: "does not apply to merge, which takes it from the shards' command".into(),
        });
    }
    if args.files.iter().filter(|f| *f == Path::new("-")).count() > 1 {
        return Err(fail("merge reads standard input (-) once: name it once"));
    }
    // Outputs are checked against the shards before anything else is read: whatever else is wrong
    // with the command, a shard is never the file it is told to write.
    let shards: Vec<(&str, &Path)> = args.files.iter().map(|f| ("a shard", f.as_path())).collect();
    let outputs = [
        ("--out", g.out.as_deref()),
        ("--plot", args.plot.as_deref()),
        ("--series", args.series.as_deref()),
    ];
    crate::output::dest::check_inputs_kept(&outputs, &shards)?;
    crate::output::dest::check_series_apart(args.series.as_deref(), g.out.as_deref())?;
    let mut inputs = args.files.iter().map(|f| Input::open(f)).collect::<Result<Vec<_>, _>>()?;
    let first = &mut inputs[0];
    let Some((text, _)) = first.next()? else {
        return Err(fail(format!("{}: empty: no raw records of lbsim --shard", first.name)));
    };
    let manifest = match serde_json::from_str::<Line<IgnoredAny>>(&text) {
        Ok(Line::Manifest(m)) => m,
        _ => {
            return Err(fail(format!(
                "{}: not raw records of lbsim --shard (the first line is not a manifest)",
                first.at()
            )));
        }
    };
    check_version(&manifest, &first.at())?;
    first.ahead = Some(text);
    first.line = 0;
    let cfg = command(cli, args, &manifest, &first.name)?;
    let plan = Plan::of(&cfg)?;
    let tasks = plan.tasks(&cfg.common);
    if plan_hash(&cfg) != manifest.plan || tasks != manifest.tasks {
        return Err(fail(format!(
            "{}: `lbsim {}` now resolves to another plan than the shards ran (hash {}, recorded \
             {}): its scenario file or lbsim changed since",
            first.name,
            shown(&manifest.command.join(" ")),
            plan_hash(&cfg),
            manifest.plan
        )));
    }
    let cfg = series_to(cfg, args, &first.name)?;
    let seeds = cfg.common.seeds;
    let merged = match plan {
        Plan::Bins(_) => {
            let mut loads = Vec::new();
            collect(&mut inputs, &manifest, seeds, |_, m: u32| loads.push(m))?;
            Merged::Loads(loads)
        }
        Plan::Queueing(Queueing { runs, groups, .. }) => {
            // Each replication is added to its scenario's fold as soon as the tasks before it
            // are, then dropped: memory does not grow with the number of tasks.
            let mut folds: Vec<Fold> = (runs.iter().zip(groups))
                .map(|(run, groups)| Fold::new(run, groups.map(|g| (g, seeds))))
                .collect();
            collect(&mut inputs, &manifest, seeds, |i, r: RepStats| {
                folds[(i / seeds) as usize].add(&r);
            })?;
            Merged::Outcomes(folds.into_iter().map(|f| f.finish(0)).collect())
        }
        Plan::Searches(_) => {
            let mut searches = Vec::new();
            collect(&mut inputs, &manifest, 1, |_, s: Search| searches.push(s))?;
            Merged::Searches(searches)
        }
    };
    Ok((cfg, merged))
}

/// `cfg` writing its series where `merge --series` says, and nowhere without it (the path the
/// shards' command named is not the merge's to write).
fn series_to(mut cfg: Config, args: &MergeArgs, name: &str) -> Result<Config, UsageError> {
    match (&mut cfg.experiment, &args.series) {
        (crate::experiment::Experiment::Run(r), file)
            if r.points.iter().all(|p| p.run.series.is_some()) =>
        {
            r.series.clone_from(file);
        }
        (_, None) => {}
        (_, Some(_)) => {
            return Err(UsageError::Conflict {
                option: "--series".into(),
                rule: format!(
                    "writes the series of `lbsim run --series` shards; {name} holds shards run \
                     without --series, which recorded no windows"
                ),
            });
        }
    }
    Ok(cfg)
}

fn check_version(m: &Manifest, at: &str) -> Result<(), UsageError> {
    if m.lbsim != VERSION {
        return Err(fail(format!(
            "{at}: raw records of lbsim {}; this is lbsim {VERSION}, which merges only its own",
            shown(&m.lbsim)
        )));
    }
    Ok(())
}

/// The command a manifest recorded, parsed again with the merge's output options.
fn command(merge: &Cli, args: &MergeArgs, m: &Manifest, name: &str) -> Result<Config, UsageError> {
    let what = || format!("{name}: the recorded command `lbsim {}`", shown(&m.command.join(" ")));
    let argv = std::iter::once("lbsim".to_string()).chain(m.command.iter().cloned());
    let mut cli = Cli::try_parse_from(argv).map_err(|e| {
        // A value refused by its parser is the command's own usage error, as when it was run.
        if let Some(e) = crate::options::refused(&e) {
            return e.clone();
        }
        let text = e.render().to_string();
        let first = text.lines().next().unwrap_or("").trim_start_matches("error: ").to_string();
        fail(format!("{} does not parse: {first}", what()))
    })?;
    if matches!(cli.command, Command::Merge(_)) || cli.global.shard.is_none() {
        return Err(fail(format!("{} is not a --shard run", what())));
    }
    cli.global.shard = None;
    cli.global.format = merge.global.format;
    cli.global.out.clone_from(&merge.global.out);
    cli.global.threads.clone_from(&merge.global.threads);
    cli.global.quiet = merge.global.quiet;
    if let Some(plot) = &args.plot {
        match &mut cli.command {
            Command::Fixed(a) => a.plot = Some(plot.clone()),
            Command::Stale(a) => a.plot = Some(plot.clone()),
            Command::Homo(a) => a.plot = Some(plot.clone()),
            Command::Hetero(a) => a.plot = Some(plot.clone()),
            Command::Run(a) => a.plot = Some(plot.clone()),
            Command::Capacity(a) => a.plot = Some(plot.clone()),
            _ => {
                return Err(UsageError::Conflict {
                    option: "--plot".into(),
                    rule: format!(
                        "draws the figure of fixed, stale, homo, hetero, run and capacity only; {name} holds shards of `lbsim {}`",
                        shown(&m.command.join(" "))
                    ),
                });
            }
        }
    }
    Config::from_cli(&cli)
}

/// The state of one shard met in the inputs.
struct Seen {
    /// Where its manifest was.
    name: String,
}

/// What [`collect`] knows between lines: the shards met, the tasks present, the results read
/// ahead of a missing predecessor, and the next task to consume.
struct Collector<'a, R> {
    first: &'a Manifest,
    first_name: String,
    seeds: u64,
    present: Vec<bool>,
    waiting: BTreeMap<u64, R>,
    next: u64,
    shards: Vec<Option<Seen>>,
    /// The most results that waited at once (after those that could be consumed were).
    held: usize,
}

/// Which input to read a line from next: the one whose open shard holds the next task; else the
/// first one not inside a shard (its next line is a manifest or its end), so that every file's
/// shard is known; else the first one not at its end (reading ahead: the next task is in none of
/// the open shards, as when shards follow one another on one stream). `None` when all ended.
fn pick(open: &[Option<(u64, u64)>], ended: &[bool], wanted: Option<u64>) -> Option<usize> {
    let live = |i: &usize| !ended[*i];
    let all = 0..open.len();
    (all.clone().filter(live))
        .find(|&i| wanted.is_some() && open[i].map(|(k, _)| k) == wanted)
        .or_else(|| all.clone().filter(live).find(|&i| open[i].is_none()))
        .or_else(|| all.clone().find(live))
}

/// Reads the inputs to their ends, giving each task's result to `consume` in task order as soon
/// as the results of the tasks before it are given. Separate files are read in step: a line is
/// pulled from the file whose shard holds the next task ([`pick`]), so that with shards dealt
/// round robin only about one record per shard waits; results read ahead of a missing
/// predecessor wait (shards one after another on one stream wait for their turn). Returns the
/// most results that waited at once, once every task was read once; on an error, what was
/// consumed is to be thrown away.
fn collect<R: Record>(
    inputs: &mut [Input],
    first: &Manifest,
    seeds: u64,
    mut consume: impl FnMut(u64, R),
) -> Result<usize, UsageError> {
    let (n, tasks) = (first.shards, first.tasks);
    let mut c = Collector {
        first,
        first_name: inputs[0].name.clone(),
        seeds,
        present: vec![false; tasks as usize],
        waiting: BTreeMap::new(),
        next: 0,
        shards: (0..n).map(|_| None).collect(),
        held: 0,
    };
    // Per input: the shard whose records are being read, and the task lines read so far.
    let mut open: Vec<Option<(u64, u64)>> = vec![None; inputs.len()];
    let mut ended = vec![false; inputs.len()];
    loop {
        let wanted = (c.next < tasks).then(|| c.next % n);
        let Some(i) = pick(&open, &ended, wanted) else { break };
        let input = &mut inputs[i];
        let Some((text, cut)) = input.next()? else {
            ended[i] = true;
            if let Some((k, _)) = open[i] {
                return Err(truncated(input, k, n));
            }
            continue;
        };
        if !text.trim().is_empty() {
            c.line(input, &mut open[i], &text, cut, &mut consume)?;
        }
    }
    let absent: Vec<u64> = (0..n).filter(|&k| c.shards[k as usize].is_none()).collect();
    let missing: Vec<u64> = (0..tasks).filter(|&i| !c.present[i as usize]).collect();
    if !missing.is_empty() {
        let which = if absent.is_empty() {
            String::new()
        } else {
            let names: Vec<String> = absent.iter().map(|k| format!("{k}/{n}")).collect();
            format!(
                "{} {} missing: ",
                if absent.len() == 1 { "shard" } else { "shards" },
                join(&names)
            )
        };
        return Err(fail(format!("{which}{}", list("tasks", &missing))));
    }
    debug_assert_eq!(c.next, tasks, "every task is present, so every one was consumed");
    Ok(c.held)
}

impl<R: Record> Collector<'_, R> {
    /// One non-blank line of `input`, inside shard `open` (the shard and its task lines so far)
    /// if any; `cut`: the input ended inside it.
    fn line(
        &mut self,
        input: &Input,
        open: &mut Option<(u64, u64)>,
        text: &str,
        cut: bool,
        consume: &mut impl FnMut(u64, R),
    ) -> Result<(), UsageError> {
        let (n, tasks) = (self.first.shards, self.first.tasks);
        let line: Line<R> = match serde_json::from_str(text) {
            Ok(l) => l,
            Err(_) if cut => {
                return Err(fail(format!(
                    "{}: truncated: the input ends inside a record (the shard did not finish \
                     writing)",
                    input.at()
                )));
            }
            Err(e) => {
                return Err(fail(format!("{}: not a raw record: {e}", input.at())));
            }
        };
        match line {
            Line::Manifest(m) => {
                if let Some((k, _)) = *open {
                    return Err(truncated(input, k, n));
                }
                *open = Some((self.manifest(&m, input)?, 0));
            }
            Line::Task(t) => {
                let Some((k, count)) = open else {
                    return Err(fail(format!("{}: a task before any manifest", input.at())));
                };
                let (index, result) =
                    checked(t, input, (*k, n), (tasks, self.seeds), &mut self.present)?;
                self.waiting.insert(index, result);
                while let Some(r) = self.waiting.remove(&self.next) {
                    consume(self.next, r);
                    self.next += 1;
                }
                self.held = self.held.max(self.waiting.len());
                *count += 1;
            }
            Line::End(e) => {
                let Some((k, count)) = open.take() else {
                    return Err(fail(format!("{}: an end record before any manifest", input.at())));
                };
                if e.tasks != count {
                    return Err(fail(format!(
                        "{}: shard {k}/{n} ends after {count} tasks but says it wrote {}",
                        input.at(),
                        e.tasks
                    )));
                }
            }
        }
        Ok(())
    }

    /// Shard manifest `m` met in `input`, once it is of the first's command and split and not
    /// met before: its `K`.
    fn manifest(&mut self, m: &Manifest, input: &Input) -> Result<u64, UsageError> {
        let (first, first_name) = (self.first, &self.first_name);
        let n = first.shards;
        check_version(m, &input.at())?;
        if m.plan != first.plan || m.tasks != first.tasks {
            return Err(fail(format!(
                "{}: a shard of another command than {first_name}'s: {}",
                input.at(),
                difference(&m.command, &first.command, first_name)
            )));
        }
        if m.shards != n || m.shard >= n {
            return Err(fail(format!(
                "{}: shard {}/{} of another split than {first_name}'s ({}/{n}): merge the shards \
                 of one split",
                input.at(),
                m.shard,
                m.shards,
                first.shard
            )));
        }
        let k = m.shard;
        if let Some(seen) = &self.shards[k as usize] {
            let doubled: Vec<u64> =
                super::Shard { index: k, count: n }.tasks(first.tasks).collect();
            return Err(fail(format!(
                "shard {k}/{n} given twice ({} and {}): {}",
                seen.name,
                input.name,
                list("tasks", &doubled)
            )));
        }
        self.shards[k as usize] = Some(Seen { name: input.name.clone() });
        Ok(k)
    }
}

/// Task line `t` of shard `k`/`n` (of `tasks` tasks, `seeds` per scenario), once it is one of the
/// shard's tasks, not given before (`present`, which it is marked in), and intact: its index
/// and result.
fn checked<R: Record>(
    t: Task<R>,
    input: &Input,
    (k, n): (u64, u64),
    (tasks, seeds): (u64, u64),
    present: &mut [bool],
) -> Result<(u64, R), UsageError> {
    let consistent = t.index < tasks
        && t.index % n == k
        && t.scenario.checked_mul(seeds).and_then(|i| i.checked_add(t.replication))
            == Some(t.index)
        && t.replication < seeds;
    if !consistent {
        return Err(fail(format!(
            "{}: task {} is not a task of shard {k}/{n} (0 to {} in steps of {n})",
            input.at(),
            t.index,
            tasks.saturating_sub(1)
        )));
    }
    let (index, result) = verified(t, &input.at(), k, n)?;
    if std::mem::replace(&mut present[index as usize], true) {
        return Err(fail(format!("{}: task {} given twice in shard {k}/{n}", input.at(), index)));
    }
    Ok((index, result))
}

/// A command line as its options: an option with the values that follow it (`--seed 2`), or
/// `--opt=value`, or a word before the first option (the command, a file); the options that
/// only say where a shard goes (`--shard`, `-o`/`--out`) are left out.
fn options(argv: &[String]) -> Vec<String> {
    const FLAGS: [&str; 4] = ["-q", "--quiet", "--print", "--print-scenario"];
    let mut items: Vec<Vec<&str>> = Vec::new();
    let mut takes_values = false;
    for word in argv {
        let is_option = word.starts_with('-') && word.len() > 1;
        if is_option || !takes_values {
            items.push(vec![word]);
            takes_values = is_option && !word.contains('=') && !FLAGS.contains(&word.as_str());
        } else {
            items.last_mut().expect("an option before its value").push(word);
        }
    }
    let placement = |o: &str| {
        let name = o.split('=').next().unwrap_or(o);
        matches!(name, "--shard" | "-o" | "--out")
    };
    items.retain(|item| !placement(item[0]));
    items.into_iter().map(|item| item.join(" ")).collect()
}

/// What differs between the command lines of two shards, `this` and the one in `other_name`:
/// the options of each that the other lacks, in full.
fn difference(this: &[String], other: &[String], other_name: &str) -> String {
    let (a, b) = (options(this), options(other));
    let only = |x: &[String], y: &[String]| -> String {
        let d: Vec<String> =
            x.iter().filter(|o| !y.contains(o)).map(|o| format!("`{}`", shown(o))).collect();
        if d.is_empty() { "nothing".into() } else { d.join(" ") }
    };
    let (here, there) = (only(&a, &b), only(&b, &a));
    if here == "nothing" && there == "nothing" {
        return format!(
            "both ran `lbsim {}`, which resolved to different plans (a scenario file changed \
             between them?)",
            shown(&a.join(" "))
        );
    }
    format!("this one gives {here} where {other_name} gives {there}")
}

/// Task `t`'s index and result, once its checksum matches its content and its fields agree.
fn verified<R: Record>(mut t: Task<R>, at: &str, k: u64, n: u64) -> Result<(u64, R), UsageError> {
    let index = t.index;
    let damaged =
        |what: String| fail(format!("{at}: task {index} of shard {k}/{n} is damaged: {what}"));
    let Some(given) = t.xxh64.take() else {
        return Err(damaged("it has no checksum (xxh64)".into()));
    };
    let content = checksum(&t);
    if given != content {
        return Err(damaged(format!(
            "its checksum {} is not that of its content ({content}): the record was changed \
             after it was written",
            shown(&given)
        )));
    }
    if let Some(what) = t.result.damage() {
        return Err(damaged(what));
    }
    Ok((index, t.result))
}

fn truncated(input: &Input, k: u64, n: u64) -> UsageError {
    fail(format!(
        "{}: truncated: shard {k}/{n} stops after line {} without its end record (the shard did \
         not finish writing)",
        input.name, input.line
    ))
}

/// `what a, b, c` with at most ten items, then how many in all.
fn list(what: &str, items: &[u64]) -> String {
    const SHOWN: usize = 10;
    let shown: Vec<String> = items.iter().take(SHOWN).map(u64::to_string).collect();
    let what = if items.len() == 1 { what.trim_end_matches('s') } else { what };
    let more =
        if items.len() > SHOWN { format!(", ... ({} in all)", items.len()) } else { String::new() };
    format!("{what} {}{more}", shown.join(", "))
}

fn join(items: &[String]) -> String {
    items.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn a_command_line_is_read_as_its_options_without_where_the_shard_goes() {
        let o = options(&argv("-q homo --loads 0.5,0.9 --seed=2 --shard 0/2 -o s0.jsonl --print"));
        assert_eq!(o, ["-q", "homo", "--loads 0.5,0.9", "--seed=2", "--print"]);
        let o = options(&argv("run f.toml --set a=1 --set b=2 --out=x --shard=1/2"));
        assert_eq!(o, ["run", "f.toml", "--set a=1", "--set b=2"]);
    }

    #[test]
    fn the_difference_names_the_options_that_differ_in_full() {
        let long =
            "homo --loads 0.5,0.7,0.8,0.9,0.95,0.99 --policies random,rr,p2c,p2c-repl,p3c,jsq";
        let a = argv(&format!("{long} --seed 2 --shard 0/2"));
        let b = argv(&format!("{long} --shard 1/2 -o s1.jsonl"));
        assert_eq!(difference(&a, &b, "s1"), "this one gives `--seed 2` where s1 gives nothing");
        let c = argv(&format!("{long} --seeds 3 --shard 1/2"));
        assert_eq!(
            difference(&a, &c, "s1"),
            "this one gives `--seed 2` where s1 gives `--seeds 3`"
        );
        assert!(difference(&a, &a, "s1").starts_with("both ran `lbsim homo"));
    }
    /// Raw records of `tasks` tasks of one replication each (`bins` results) as `n` shards, one
    /// text per shard.
    fn shards(tasks: u64, n: u64) -> (Manifest, Vec<String>) {
        let manifest = |k| Manifest {
            lbsim: VERSION.into(),
            command: argv("bins --shard 0/2"),
            plan: "p".into(),
            tasks,
            shards: n,
            shard: k,
        };
        let text = (0..n).map(|k| {
            let mut s = super::super::records::line::<()>(&Line::Manifest(manifest(k)));
            let mine: Vec<u64> = (k..tasks).step_by(n as usize).collect();
            mine.iter().for_each(|&i| s += &super::super::records::task_line(i, i as u32, 1));
            s + &super::super::records::line::<()>(&Line::End(super::super::records::End {
                tasks: mine.len() as u64,
            }))
        });
        (manifest(0), text.collect())
    }

    fn input(name: &str, text: String) -> Input {
        let reader = Box::new(io::Cursor::new(text.into_bytes()));
        Input { name: name.into(), reader, line: 0, ahead: None }
    }

    #[test]
    fn shards_in_separate_files_are_read_in_step() {
        // 1000 tasks in 4 shards: read file after file, most of the tasks would wait for those of
        // the shards before theirs; read in step, none waits, whatever order the files are named.
        let (first, texts) = shards(1000, 4);
        for order in [[0, 1, 2, 3], [3, 1, 0, 2]] {
            let mut inputs: Vec<Input> =
                order.iter().map(|&k| input(&format!("s{k}"), texts[k].clone())).collect();
            let mut seen = Vec::new();
            let held = collect(&mut inputs, &first, 1, |i, m: u32| seen.push((i, m))).unwrap();
            assert_eq!(held, 0, "order {order:?}");
            assert!(seen.iter().enumerate().all(|(i, &(j, m))| i as u64 == j && m as u64 == j));
            assert_eq!(seen.len(), 1000);
        }
        // The same shards one after another on one stream: the later shards' tasks wait, all but
        // one of each of the first three shards' 250 when shard 3 begins.
        let mut one = [input("standard input", texts.concat())];
        let held = collect(&mut one, &first, 1, |_, _: u32| {}).unwrap();
        assert_eq!(held, 3 * 249);
    }

    #[test]
    fn a_shard_missing_from_separate_files_is_named() {
        let (first, texts) = shards(10, 3);
        let mut inputs = [input("s0", texts[0].clone()), input("s2", texts[2].clone())];
        let e = collect(&mut inputs, &first, 1, |_, _: u32| {}).unwrap_err().to_string();
        assert_eq!(e, "shard 1/3 missing: tasks 1, 4, 7");
    }
}
