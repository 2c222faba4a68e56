//! Same command, same bytes: whatever the thread count, and whatever the other rows.

use crate::util::lbsim_ok;

const SMALL: [&str; 8] =
    ["--format", "csv", "--loads", "0.7,0.9", "--requests", "20000", "--warmup", "2000"];

#[test]
fn csv_is_identical_for_one_and_two_threads() {
    let one = lbsim_ok(&[&["homo", "--threads", "1"], &SMALL[..]].concat());
    let two = lbsim_ok(&[&["homo", "--threads", "2"], &SMALL[..]].concat());
    assert_eq!(one, two);
    let one = lbsim_ok(&["bins", "--format", "csv", "--n", "1000,5000", "--threads", "1"]);
    let two = lbsim_ok(&["bins", "--format", "csv", "--n", "1000,5000", "--threads", "2"]);
    assert_eq!(one, two);
}

#[test]
fn a_row_does_not_depend_on_the_other_rows() {
    let all = lbsim_ok(&[&["homo"], &SMALL[..]].concat());
    let alone = lbsim_ok(&[&["homo", "--policies", "p2c"], &SMALL[..]].concat());
    let p2c_rows: Vec<&str> = all.lines().filter(|l| l.contains(",p2c,")).collect();
    let alone_rows: Vec<&str> = alone.lines().skip(1).collect();
    assert_eq!(p2c_rows, alone_rows);
}

#[test]
fn the_seed_changes_the_numbers() {
    let a = lbsim_ok(&[&["homo", "--seed", "1"], &SMALL[..]].concat());
    let b = lbsim_ok(&[&["homo", "--seed", "2"], &SMALL[..]].concat());
    assert_ne!(a, b);
}
