"""lbsim in Python: the simulator in-process, results as pandas DataFrames.

Every function runs one lbsim command line in this process (the Rust core, with the GIL released
while it simulates) and returns what the command line prints with ``--format csv`` as a
``pandas.DataFrame``: the same columns in the same order, equal to ``pandas.read_csv`` of the CLI's
CSV for the same arguments, with each column typed from the values lbsim wrote (booleans as
``bool``, counts as ``int64``, empty cells as NaN, or ``Int64``/``boolean`` with ``pd.NA`` when a
count or flag column has empty cells).

Keyword arguments are the command's options: ``seeds=5`` is ``--seeds 5``, ``max_requests=...`` is
``--max-requests ...``, ``True`` gives a flag, a list is joined with commas, ``None`` and ``False``
leave the option out. A keyword with a dot is a scenario key (``run`` and ``series`` only), as
``--set``: ``lbsim.run("farm.toml", **{"arrivals.load": 0.95})`` or ``set={"arrivals.load": 0.95}``.

Errors are ``ValueError`` carrying the command line's one-line message. Ctrl-C stops a run
(``KeyboardInterrupt``) within a chunk of 65,536 arrivals of each running replication.
"""

from __future__ import annotations

import io
import math
import os
import sys
import warnings
from typing import Any, Callable, Iterable, Mapping, Optional, Union

import pandas as pd

from . import _lbsim

__all__ = [
    "run",
    "series",
    "homo",
    "hetero",
    "stale",
    "fixed",
    "bins",
    "swrr",
    "limit",
    "subset",
    "hash",
    "capacity",
    "policies",
    "command",
    "__version__",
]

__version__ = _lbsim.version()

Scenario = Union[str, os.PathLike, Mapping[str, Any]]

# Where `run --series` would write its file: never opened in-process (the series comes back as
# text), only named so that the command line asks for it.
_SERIES_NAME = "series.csv"


def _toml_value(value: Any) -> str:
    """A Python value as the TOML text `--set` reads."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        items = ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items())
        return "{ " + items + " }"
    raise ValueError(f"cannot give {value!r} ({type(value).__name__}) as a scenario value")


def _option_value(value: Any) -> str:
    """A Python value as a command-line option's text."""
    if isinstance(value, (list, tuple)):
        return ",".join(_option_value(v) for v in value)
    return str(value)


def _options(options: Mapping[str, Any]) -> list[str]:
    """Keyword arguments as command-line options, in the order given."""
    argv: list[str] = []
    for key, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            argv.append(flag)
        else:
            argv += [flag, _option_value(value)]
    return argv


def _default_progress() -> bool:
    """Whether to draw a bar when the caller did not say: in a notebook (IPython kernel) only."""
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    ip = getattr(shell, "get_ipython", lambda: None)()
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def _progress(enabled: Optional[bool], label: str) -> tuple[Optional[Callable], Callable]:
    """A progress callback for the core and a function that closes the bar."""
    if enabled is None:
        enabled = _default_progress()
    if not enabled:
        return None, lambda: None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None, lambda: None
    bar = None

    def tick(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, desc=label, unit_scale=True, leave=False)
        bar.total = total
        bar.n = done
        bar.refresh()

    def close() -> None:
        if bar is not None:
            bar.close()

    return tick, close


def _frame(csv: str, kinds: Iterable[tuple[str, str]]) -> pd.DataFrame:
    """The CSV read by pandas, each column typed from what lbsim wrote in it."""
    kinds = list(kinds)
    if not kinds:
        return pd.DataFrame()
    frame = pd.read_csv(io.StringIO(csv), dtype={name: object for name, _ in kinds})
    for name, kind in kinds:
        col = frame[name]
        missing = col.isna()
        if kind == "bool":
            values = col.map({"true": True, "false": False}, na_action="ignore")
            frame[name] = values.astype("boolean" if missing.any() else bool)
        elif kind == "int":
            frame[name] = pd.to_numeric(col).astype("Int64" if missing.any() else "int64")
        elif kind == "float":
            frame[name] = pd.to_numeric(col).astype("float64")
        else:
            frame[name] = col.astype(object)
    return frame


def _scenario(scenario: Scenario) -> tuple[str, Optional[str]]:
    """The file argument and, for a TOML string or a dict, the text given instead of a file."""
    if isinstance(scenario, Mapping):
        return "<dict>", _lbsim.dict_to_toml(dict(scenario))
    if isinstance(scenario, os.PathLike):
        return os.fspath(scenario), None
    if isinstance(scenario, str):
        if "\n" in scenario or "=" in scenario or "[" in scenario:
            return "<string>", scenario
        return scenario, None
    raise ValueError(
        f"scenario: a path, a TOML string or a dict, not {type(scenario).__name__}"
    )


def command(
    argv: list[str],
    *,
    text: Optional[str] = None,
    progress: Optional[bool] = None,
):
    """Runs one lbsim command line (the words after ``lbsim``) and returns the core's output:
    ``csv``, ``kinds``, ``text``, ``series``, ``figure`` and ``warnings`` attributes."""
    tick, close = _progress(progress, argv[0] if argv else "lbsim")
    try:
        out = _lbsim.call(list(argv), text, tick)
    finally:
        close()
    for line in out.warnings:
        warnings.warn(line, RuntimeWarning, stacklevel=3)
    return out


def _table(name: str, options: Mapping[str, Any], progress: Optional[bool]) -> pd.DataFrame:
    for key in options:
        if key in ("format", "out", "o"):
            raise ValueError(f"{key}= does not apply here: the DataFrame is the output")
    out = command([name] + _options(options) + ["--format", "csv"], progress=progress)
    return _frame(out.csv, out.kinds)


def _run_argv(
    scenario: Scenario,
    overrides: Optional[Mapping[str, Any]],
    options: dict[str, Any],
    name: str = "run",
) -> tuple[list[str], Optional[str]]:
    file, text = _scenario(scenario)
    keys = dict(overrides or {})
    for key in [k for k in options if "." in k]:
        keys[key] = options.pop(key)
    for key in ("format", "out", "o", "series"):
        if key in options:
            raise ValueError(f"{key}= does not apply here: the DataFrame is the output")
    argv = [name, file]
    for key, value in keys.items():
        argv += ["--set", f"{key}={_toml_value(value)}"]
    return argv + _options(options) + ["--format", "csv"], text


def run(
    scenario: Scenario,
    *,
    seeds: Optional[int] = None,
    policies: Optional[Union[str, Iterable[str]]] = None,
    set: Optional[Mapping[str, Any]] = None,  # noqa: A002 - the CLI's name
    progress: Optional[bool] = None,
    **options: Any,
) -> pd.DataFrame:
    """``lbsim run``: a scenario (a path, a TOML string or a dict), one row per policy and sweep
    point. Dotted keywords and ``set`` override scenario keys; other keywords are ``run``'s
    options (``requests``, ``warmup``, ``precision``, ``threads``, ``seed``, ``admission``...)."""
    options = {"seeds": seeds, "policies": policies, **options}
    argv, text = _run_argv(scenario, set, options)
    out = command(argv, text=text, progress=progress)
    if out.text is not None:
        return out.text
    return _frame(out.csv, out.kinds)


def series(
    scenario: Scenario,
    *,
    seeds: Optional[int] = None,
    policies: Optional[Union[str, Iterable[str]]] = None,
    set: Optional[Mapping[str, Any]] = None,  # noqa: A002 - the CLI's name
    window: Optional[float] = None,
    progress: Optional[bool] = None,
    **options: Any,
) -> pd.DataFrame:
    """``lbsim run --series``: the time series of each row (the sweep keys, then ``policy, time,
    metric, value``), one line per window of simulated time and metric. With traffic classes a
    ``class`` column follows ``policy``: ``all`` for the pooled lines, then each class's
    ``requests``, ``p50``, ``p99`` (and with the request lifecycle ``success``, ``goodput``)."""
    options = {"seeds": seeds, "policies": policies, "series_window": window, **options}
    argv, text = _run_argv(scenario, set, options)
    argv += ["--series", _SERIES_NAME]
    out = command(argv, text=text, progress=progress)
    csv = out.series or ""
    if not csv:
        return pd.DataFrame()
    return pd.read_csv(io.StringIO(csv))


def capacity(
    scenario: Scenario,
    *,
    target: str,
    over: Optional[str] = None,
    seeds: Optional[int] = None,
    policies: Optional[Union[str, Iterable[str]]] = None,
    set: Optional[Mapping[str, Any]] = None,  # noqa: A002 - the CLI's name
    progress: Optional[bool] = None,
    **options: Any,
) -> pd.DataFrame:
    """``lbsim capacity``: for each policy of a scenario (a path, a TOML string or a dict), the
    largest value of ``over`` (``arrivals.load`` by default; ``farm.groups.N.count`` or
    ``farm.slots``: the fewest) at which ``target`` (``"p99=20"``, ``"mean=3"``,
    ``"success=0.999"``) holds, with ``value_lo, value_hi`` bracketing it. Dotted keywords and
    ``set`` override scenario keys; other keywords are ``capacity``'s options (``precision``,
    ``requests``, ``max_requests``...)."""
    options = {"target": target, "over": over, "seeds": seeds, "policies": policies, **options}
    argv, text = _run_argv(scenario, set, options, "capacity")
    out = command(argv, text=text, progress=progress)
    return _frame(out.csv, out.kinds)


def _command(name: str) -> Callable[..., pd.DataFrame]:
    def call(*, progress: Optional[bool] = None, **options: Any) -> pd.DataFrame:
        return _table(name, options, progress)

    call.__name__ = name
    call.__qualname__ = name
    call.__doc__ = (
        f"``lbsim {name}`` with its options as keyword arguments (``seeds=5`` is ``--seeds 5``);"
        " returns its rows as a DataFrame."
    )
    return call


homo = _command("homo")
hetero = _command("hetero")
stale = _command("stale")
fixed = _command("fixed")
bins = _command("bins")
swrr = _command("swrr")
limit = _command("limit")
subset = _command("subset")
hash = _command("hash")  # noqa: A001 - the CLI's name


def policies() -> pd.DataFrame:
    """The policy table: name, rule, source (the code or paper it follows; empty for the textbook
    policies), parameters (as ``NAME:key=value``), and whether it runs with live information and
    with a bulletin board."""
    return pd.DataFrame(_lbsim.policies())
