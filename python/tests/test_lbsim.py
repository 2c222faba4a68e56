"""lbsim from Python: the same numbers as the command line, typed columns, errors, Ctrl-C,
determinism across threads, and the example notebook."""

import io
import os
import signal
import threading
import time

import pandas as pd
import pytest

import lbsim

# A short homo sweep: two loads, two seeds, every default policy.
HOMO = dict(loads=[0.5, 0.9], seeds=2, requests=20000, warmup=2000)
HOMO_ARGV = ["homo", "--loads", "0.5,0.9", "--seeds", "2", "--requests", "20000",
             "--warmup", "2000", "--format", "csv"]


def cli_frame(cli, *argv, cwd=None):
    status, out, err = cli(*argv, cwd=cwd)
    assert status == 0, err
    return pd.read_csv(io.StringIO(out))


def test_homo_equals_the_cli_csv(cli):
    df = lbsim.homo(**HOMO)
    expected = cli_frame(cli, *HOMO_ARGV)
    assert list(df.columns) == list(expected.columns)
    # Same values, bit for bit: the CSV carries full precision and both sides read it back.
    pd.testing.assert_frame_equal(df, expected, check_dtype=False)


def test_run_with_overrides_equals_the_cli_csv(cli, root):
    path = root / "examples" / "scenarios" / "hetero.toml"
    df = lbsim.run(path, seeds=2, requests=20000, warmup=2000, **{"arrivals.load": 0.8})
    expected = cli_frame(cli, "run", str(path), "--seeds", "2", "--requests", "20000",
                         "--warmup", "2000", "--set", "arrivals.load=0.8", "--format", "csv")
    pd.testing.assert_frame_equal(df, expected, check_dtype=False)
    same = lbsim.run(str(path), seeds=2, requests=20000, warmup=2000, set={"arrivals.load": 0.8})
    pd.testing.assert_frame_equal(df, same)


def test_a_toml_string_and_a_dict_run_as_the_file(root):
    path = root / "examples" / "scenarios" / "hetero.toml"
    text = path.read_text()
    from_file = lbsim.run(path, seeds=2, requests=5000, warmup=500)
    from_text = lbsim.run(text, seeds=2, requests=5000, warmup=500)
    pd.testing.assert_frame_equal(from_file, from_text)
    scenario = {
        "farm": {"groups": [{"name": "all", "count": 4, "rate": 1.0}]},
        "arrivals": {"load": 0.7},
        "policies": ["random", "p2c"],
    }
    toml = ('policies = ["random", "p2c"]\n[farm]\n[[farm.groups]]\nname = "all"\ncount = 4\n'
            'rate = 1.0\n[arrivals]\nload = 0.7\n')
    a = lbsim.run(scenario, seeds=2, requests=5000, warmup=500)
    b = lbsim.run(toml, seeds=2, requests=5000, warmup=500)
    pd.testing.assert_frame_equal(a, b)
    assert list(a["policy"]) == ["random", "p2c"]


def test_columns_are_typed_from_what_lbsim_wrote():
    df = lbsim.homo(**HOMO)
    assert df["steady"].dtype == bool
    assert df["seeds"].dtype == "int64" and df["max_queue"].dtype == "int64"
    assert df["mean"].dtype == "float64" and df["load"].dtype == "float64"
    assert df["policy"].dtype == object
    # An empty note is NaN, as pandas.read_csv reads an empty cell; the others are text.
    notes = df["note"]
    assert notes.isna().any() and all(isinstance(n, str) for n in notes.dropna())


def test_errors_are_value_errors_with_the_cli_message(cli, root):
    status, _, err = cli("run", "nope.toml")
    assert status == 2
    with pytest.raises(ValueError) as e:
        lbsim.run("nope.toml")
    assert str(e.value) == err.strip().removeprefix("error: ")
    bad = root / "examples" / "scenarios" / "hetero.toml"
    status, _, err = cli("run", str(bad), "--set", "arrivals.load=-1")
    with pytest.raises(ValueError) as e:
        lbsim.run(bad, **{"arrivals.load": -1})
    assert status == 2 and str(e.value) == err.strip().removeprefix("error: ")
    with pytest.raises(ValueError, match="--loads"):
        lbsim.homo(loads=[1.5])
    with pytest.raises(ValueError, match="does not apply"):
        lbsim.homo(out="x.csv")
    with pytest.raises(ValueError, match="shard"):
        lbsim.homo(shard="0/2", **HOMO)


def test_the_same_frame_whatever_the_threads():
    one = lbsim.homo(threads=1, **HOMO)
    two = lbsim.homo(threads=2, **HOMO)
    pd.testing.assert_frame_equal(one, two)


def test_series_is_a_frame_of_windows(root):
    path = root / "examples" / "scenarios" / "hetero.toml"
    s = lbsim.series(path, seeds=1, policies="p2c", requests=5000, warmup=0, window=50)
    assert list(s.columns[-4:]) == ["policy", "time", "metric", "value"]
    assert set(s["policy"]) == {"p2c"}
    assert {"requests", "p99"} <= set(s["metric"])


def test_series_with_classes_has_a_class_column(root):
    path = root / "examples" / "scenarios" / "classes.toml"
    s = lbsim.series(path, seeds=1, requests=5000, warmup=0, window=50)
    assert list(s.columns[-5:]) == ["policy", "class", "time", "metric", "value"]
    assert set(s["class"]) == {"all", "interactive", "batch"}
    per_class = s[(s["class"] != "all") & (s["metric"] == "requests")]
    pooled = s[(s["class"] == "all") & (s["metric"] == "requests")]
    assert per_class["value"].sum() == pooled["value"].sum()


def test_policies_lists_the_registry():
    p = lbsim.policies()
    assert {"name", "rule", "source", "parameters", "live", "board"} <= set(p.columns)
    assert {"random", "rr", "p2c-pewma", "least-request"} <= set(p["name"])
    source = dict(zip(p["name"], p["source"]))
    assert "least_request_lb.cc" in source["least-request"]
    assert source["random"] == ""


def test_capacity_of_a_dict_equals_the_cli_csv(cli, tmp_path):
    toml = ('policies = ["random", "p2c"]\n[farm]\n[[farm.groups]]\nname = "all"\ncount = 4\n'
            'rate = 1.0\n[arrivals]\nload = 0.5\n')
    path = tmp_path / "farm.toml"
    path.write_text(toml)
    scenario = {
        "farm": {"groups": [{"name": "all", "count": 4, "rate": 1.0}]},
        "arrivals": {"load": 0.5},
        "policies": ["random", "p2c"],
    }
    df = lbsim.capacity(scenario, target="mean=3", seeds=2, requests=5000, warmup=500,
                        precision=0.05, max_requests=20000)
    expected = cli_frame(cli, "capacity", str(path), "--target", "mean=3", "--seeds", "2",
                         "--requests", "5000", "--warmup", "500", "--precision", "0.05",
                         "--max-requests", "20000", "--format", "csv")
    pd.testing.assert_frame_equal(df, expected, check_dtype=False)
    assert list(df["policy"]) == ["random", "p2c"]
    assert (df["value_lo"] <= df["value_hi"]).all()


def test_ctrl_c_stops_a_run_within_a_second():
    # A run that would take minutes: SIGINT after 0.5 s must end it with KeyboardInterrupt, and
    # the process must simulate normally afterwards.
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        lbsim.homo(loads=[0.9], seeds=4, requests=10**9, warmup=0, progress=False)
    elapsed = time.monotonic() - start
    timer.join()
    assert elapsed < 1.5, f"stopped {elapsed - 0.5:.2f} s after the signal"
    again = lbsim.homo(**HOMO)
    pd.testing.assert_frame_equal(again, lbsim.homo(**HOMO))


# Runs of the commands that do not run the engine, each well over 3 s on one core.
SLOW = [
    ("bins", dict(n=[10**8], d=[2], variants=["uniform"], seeds=2)),
    ("hash", dict(keys=10**7, servers=100, seeds=4, balance=1.25)),
    ("subset", dict(clients=100000, backends=1000, seeds=20)),
    ("limit", dict(limiter="token-bucket:rate=100,burst=10", pattern="poisson:rate=1000",
                   duration=10000, seeds=40)),
]


@pytest.mark.parametrize("name,options", SLOW, ids=[name for name, _ in SLOW])
def test_ctrl_c_stops_every_command_within_a_second(name, options):
    # Each looks at the request once per replication and every 65,536 steps of its long loops:
    # SIGINT after 0.5 s must end it well before it would finish (a replication of subset, the
    # coarsest, takes about 0.5 s).
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        getattr(lbsim, name)(progress=False, **options)
    elapsed = time.monotonic() - start
    timer.join()
    assert elapsed < 1.5, f"{name} stopped {elapsed - 0.5:.2f} s after the signal"


def test_progress_is_reported_when_asked(monkeypatch):
    seen = []
    out = lbsim.command(["homo", "--loads", "0.9", "--seeds", "2", "--requests", "2000000",
                         "--format", "csv"], progress=False)
    assert out.csv
    from lbsim import _lbsim
    _lbsim.call(["homo", "--loads", "0.9", "--seeds", "2", "--requests", "2000000",
                 "--format", "csv"], None, lambda done, total: seen.append((done, total)))
    assert seen, "no progress reported"
    assert seen[-1][0] == seen[-1][1], "the last report is the whole run"
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:])), "progress never goes back"


def test_the_example_notebook_runs(root, tmp_path):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(root / "examples" / "lbsim.ipynb", as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if "image/png" in o.get("data", {})]
    assert images, "the notebook drew no figure"
