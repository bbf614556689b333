"""``sqlclose sweep``: a spec run over many k (l, t, GAA strategies, metrics), as CSV and charts."""

from __future__ import annotations

import fcntl
import json
import math
import os
import re
import shutil
from pathlib import Path
from typing import IO

import click

from sqlclose.cli.common import (
    CONTEXT,
    OnceCommand,
    engine_options,
    guarded,
    json_option,
    quiet_option,
    release_placed,
    say,
    verbose_option,
    with_engine,
)
from sqlclose.cli.progress import sweep_progress
from sqlclose.errors import NoSolutionError, OutputExistsError

EXAMPLE = """\b
Examples:
  sqlclose sweep datasets/table3/table3.toml --k 1,2,3,4,5,9 --out out/table3-sweep
  sqlclose sweep datasets/adult/adult_gaa.toml --k 3,5,10,100,1000 --metrics nllm,ncp --nauc-range 3,1000 \\
      --out out/adult-gaa
  sqlclose sweep datasets/adult/adult_gaa.toml --k 5,10,20 --strategies S1,S3,S6 --out out/strategies --overwrite

Writes OUT/sweep.csv (one row per run), OUT/nauc.csv (normalized area under each curve) and one
OUT/<measure>.png per measure (x = k, or l or t when one k and several of those are given; one
curve per strategy or metric). Exit 3, nothing written, when no run finds a solution or a k is larger
than the table (as anonymize's exit 3 for that k).
"""


# A number as digits only: int() and float() also take "1_000", "+3", " 3", "nan" or "inf", which
# would sweep a value the command line does not show.
_DIGITS = {int: re.compile(r"[0-9]+"), float: re.compile(r"([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")}


def _numbers(kind: type, name: str, least: float | None = None, once: bool = True):
    """A callback reading a comma-separated list of numbers written in digits, none below ``least``
    (named as the sweep names it, "k = 0 is out of range (k ≥ 1)"); an empty list is refused, and so
    are an empty item and (``once``) a value given twice: `--k ,3,3` was swept as one run of k = 3
    without a word (the ninety-fourth round). The least values and the words are ``sqlclose.sweep``'s
    (``LEAST``, ``out_of_range``), written here again: importing that module loads the engines,
    which a bad option must not wait for (tests/test_cold_start.py)."""
    def parse(ctx: click.Context, param: click.Parameter, text: str | None) -> list | None:
        if text is None:
            return None
        items = text.replace(" ", "").split(",")
        if not any(items):  # "" swept as if the option were not given
            raise click.BadParameter("gives no number: give one or more, separated by commas", ctx, param)
        _refuse_empty_item(items, text, ctx, param)
        example = "3,5,10" if kind is int else "1.5,2,3"
        _refuse_not_finite(items, kind, name if least is not None else None, example, ctx, param)
        bad = [item for item in items if not _DIGITS[kind].fullmatch(item)]
        if bad:
            raise click.BadParameter(f"{bad[0]!r} is not a {'whole ' if kind is int else ''}number written in "
                                     f"digits (expected comma-separated numbers, e.g. {example})", ctx, param)
        values = [kind(item) for item in items]
        low = [item for item, value in zip(items, values) if least is not None and value < least]
        if low:
            letter = name.lstrip("-")
            raise click.BadParameter(f"{letter} = {low[0]} is out of range ({letter} ≥ {least:g})", ctx, param)
        if once:
            _refuse_twice(items, values, "gives", ctx, param)
        return values
    return parse


def _refuse_not_finite(items: list[str], kind: type, name: str | None, example: str, ctx: click.Context,
                       param: click.Parameter) -> None:
    """nan, inf, or digits past what a float holds (1e400, read as inf), told as typed: "t = inf is
    out of range (t ≥ 0)" contradicted itself and quoted a value nobody typed (the ninety-sixth
    round). ``name`` (``--t``) names each value, as the range check does."""
    from sqlclose.model.text import NON_FINITE_WORDS, not_finite

    for item in items:
        unsigned = item.lstrip("+-")
        # 1e400 as a k is no whole number written in digits, told so below
        past = kind is float and _DIGITS[float].fullmatch(unsigned) and math.isinf(float(unsigned))
        if unsigned.lower() in NON_FINITE_WORDS or past:
            named = f"{name.lstrip('-')} = " if name else ""
            raise click.BadParameter(f"{named}{not_finite(item)}: give finite numbers written in digits, e.g. "
                                     f"{example}", ctx, param)


def _names(ctx: click.Context, param: click.Parameter, text: str | None) -> list[str] | None:
    if text is None:
        return None
    items = [item.strip() for item in text.split(",")]
    if not any(items):  # "" swept the default alone, as if the option were not given
        raise click.BadParameter("names none: give one or more, separated by commas", ctx, param)
    _refuse_empty_item(items, text, ctx, param)
    _refuse_twice(items, [item.lower() for item in items], "names", ctx, param)  # read without case: S1 is s1
    return items


def _refuse_empty_item(items: list[str], text: str, ctx: click.Context, param: click.Parameter) -> None:
    if "" in items:
        raise click.BadParameter(f"has an empty item ({text!r}): give the values separated by single commas, with "
                                 "none before the first or after the last", ctx, param)


def _refuse_twice(items: list[str], values: list, verb: str, ctx: click.Context, param: click.Parameter) -> None:
    """A value given twice is one run (the sweep runs each value once): refused, as typed."""
    for i, value in enumerate(values):
        if value in values[:i]:
            first = items[values.index(value)]
            same = "" if first == items[i] else f" ({first} and {items[i]} are one)"
            raise click.BadParameter(f"{verb} {items[i]} twice{same}: give each value once", ctx, param)


@click.command(cls=OnceCommand, context_settings=CONTEXT, epilog=EXAMPLE,
               short_help="Run a spec over many k (l, t, strategies, metrics): CSV, NAUC and charts.")
@click.argument("spec_path", metavar="SPEC.toml", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--k", "ks", required=True, callback=_numbers(int, "--k", least=1), metavar="K,K,…",
              help="The values of k to run (e.g. 3,5,10,100).")
@click.option("--l", "ls", callback=_numbers(float, "--l", least=1), metavar="L,…",
              help="Values of l (Incognito: the first sensitive column's l-diversity model; GAA: the paper's "
                   "l-diversity value).")
@click.option("--t", "ts", callback=_numbers(float, "--t", least=0), metavar="T,…",
              help="Values of t (Incognito: the first sensitive column's t; GAA: the paper's L1 t-closeness value).")
@click.option("--strategies", callback=_names, metavar="S1,S3,…", help="GAA merge strategies (S1–S7, ldiv, tclo).")
@click.option("--metrics", callback=_names, metavar="NLLM,NCP,…",
              help="Metrics (GAA: what guides the merges; default the spec's [search] metric).")
@click.option("--nauc-range", callback=_numbers(float, "--nauc-range", once=False), metavar="LO,HI",
              help="The range of the swept parameter NAUC is taken over (default: all of it).")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder to write sweep.csv, nauc.csv and the PNG charts into.")
@click.option("--source", type=click.Path(path_type=Path),
              help="Input table (overrides [source] path; refused when the spec's source is a query).")
@click.option("--overwrite", is_flag=True, help="Replace the sweep files already in OUT.")
@click.option("--no-charts", is_flag=True, help="Write the CSV files only.")
@click.option("--no-progress", is_flag=True, help="Do not show progress per run.")
@engine_options
@json_option
@quiet_option
@verbose_option
@guarded
def sweep(spec_path: Path, ks: list[int], ls: list[float] | None, ts: list[float] | None,
          strategies: list[str] | None, metrics: list[str] | None, nauc_range: list[float] | None, out: Path,
          source: Path | None, overwrite: bool, no_charts: bool, no_progress: bool, engine_name: str | None,
          threads: int | None, memory_limit: str | None, temp_directory: Path | None, as_json: bool, quiet: bool,
          verbose: bool) -> None:
    """Run SPEC.toml's algorithm ([search]: Incognito, or GAA) for every value of k (and l, t;
    GAA strategies and metrics), preparing the data once, and write every run's utility, the
    normalized area under each curve and one chart per measure into OUT."""
    from sqlclose.model.spec import load_spec

    spec = with_engine(load_spec(spec_path), engine_name, threads, memory_limit, temp_directory)
    from sqlclose.sweep import CHARTED  # once the spec is valid: a mistake in it is told without the engines
    from sqlclose.sweep import sweep as run_sweep

    lo_hi = _range(nauc_range, ks, ls, ts)

    # Every file a sweep may write, charts included even under --no-charts: an older sweep's
    # chart left beside this sweep's CSV would be read as this sweep's.
    targets = ["sweep.csv", "nauc.csv", *[f"{m}.png" for m in CHARTED]]
    _refuse_inputs(out, targets, spec, source)
    _refuse_unwritable(out, targets, charts=not no_charts)
    if out.is_dir():
        _settle_dead_sweeps(out)  # before the files in the way are counted: a finished swap's are there
    in_the_way = [name for name in targets if (out / name).exists()]
    if in_the_way and not overwrite:
        raise OutputExistsError(f"{out} already holds {', '.join(in_the_way[:4])}{' …' if len(in_the_way) > 4 else ''}"
                                "; pass --overwrite to replace them, or choose another --out")
    with sweep_progress(not (quiet or as_json or no_progress)) as on_progress:
        result = run_sweep(source, spec, ks, ls=ls, ts=ts, strategies=strategies, metrics=metrics,
                           on_progress=on_progress)
    failed = result.failed_runs()
    if len(failed) == len(result.rows):  # files of empty curves would pass for a sweep
        raise NoSolutionError(f"no run of the sweep found a solution ({_listed(failed)}); nothing was written: relax "
                              "k, l or t, allow more suppression, or add hierarchy levels")
    written = _write(result, out, targets, overwrite, lo_hi, charts=not no_charts)
    if as_json:
        say(json.dumps({"out": str(out), "runs": len(result.rows), "seconds": round(result.seconds, 3),
                          "files": [str(p) for p in written], "warnings": result.warnings,
                          "failed_runs": failed,
                          "nauc": result.nauc(*lo_hi)}, indent=2, default=str))
    elif not quiet:
        _print_summary(result, written, lo_hi)


def _range(given: list[float] | None, ks: list[int], ls: list[float] | None,
           ts: list[float] | None) -> tuple[float | None, float | None]:
    """--nauc-range checked against the values of the parameter the sweep runs over, each once (as
    the sweep runs them: "--k 2,2 --l 1.5,2,2.5" runs over l)."""
    from sqlclose.sweep import swept_values

    if given is None:
        return None, None
    x, swept = swept_values(ks, ls, ts)
    if len(swept) < 2:
        raise click.BadParameter(f"the sweep runs over one value of {x} ({swept[0]:g}): give more than one k, l or t "
                                 "to take NAUC over a range", param_hint="'--nauc-range'")
    if len(given) != 2 or not min(swept) <= given[0] < given[1] <= max(swept):
        raise click.BadParameter(f"expected LO,HI with {min(swept):g} <= LO < HI <= {max(swept):g} (inside the swept "
                                 f"values of {x}), got {','.join(f'{v:g}' for v in given)}",
                                 param_hint="'--nauc-range'")
    return given[0], given[1]


def _refuse_inputs(out: Path, targets: list[str], spec, source: Path | None) -> None:
    """No sweep file may replace a file the sweep reads — the table (or a file its query names, or
    a pattern source's match), the spec, a hierarchy — whatever --overwrite says, as ``anonymize``
    refuses it. A Parquet folder source is left out: it reads only .parquet files, and a sweep
    writes none. Nor may one land inside a Parquet folder release (any run's): that release's digest
    is all its files, so it would no longer match its report."""
    from sqlclose.prepare.sources import query_files
    from sqlclose.release.files import refuse_inputs, refuse_inside_folder_releases

    given = [source] if source else [spec.source.path] if spec.source and spec.source.path else []
    inputs = [path for path in [*spec.files_read, *given, *([] if source else query_files(spec.source))]
              if not path.is_dir()]
    for name in targets:
        refuse_inputs(out / name, "sweep file", inputs, written=f"the sweep's {name}")
    refuse_inside_folder_releases(out / targets[0], "sweep file")


def _refuse_unwritable(out: Path, targets: list[str], charts: bool) -> None:
    """What would fail only at the end — an OUT that cannot be made or written, charts without
    matplotlib — fails before the first run (exit 5, as ``anonymize``): a sweep may take hours."""
    from sqlclose.errors import EnvironmentFailure
    from sqlclose.release.files import refuse_blocked_folder
    from sqlclose.utility.charts import pyplot

    try:
        refuse_blocked_folder(out / targets[0])  # its parent is OUT: OUT itself, or where it would be made
    except EnvironmentFailure as e:
        raise EnvironmentFailure(f"--out {out}: {e}; no run was made: choose another --out") from None
    if charts:
        pyplot("the sweep's charts")


def _write(result, out: Path, targets: list[str], overwrite: bool, lo_hi: tuple, charts: bool) -> list[Path]:
    """Everything is drawn in a temporary folder inside OUT, then swapped in whole (``_swap_in``):
    a failure or a stop leaves OUT as it was — an earlier sweep's files, or no folder at all when the
    run made it."""
    from sqlclose.release.placing import folders_undone_on_failure
    from sqlclose.release.recovery import run_token

    with folders_undone_on_failure(out / targets[0]):
        out.mkdir(parents=True, exist_ok=True)
        staging = out / f".sweep-{run_token()}"
        staging.mkdir()
        held = _held(staging)
        try:
            made = [result.to_csv(staging / "sweep.csv"), result.nauc_to_csv(staging / "nauc.csv", *lo_hi)]
            if charts:
                made += result.charts(staging)
            return _swap_in(out, staging, made, targets, overwrite)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
            held.close()


_LOCK = ".lock"  # in a staging folder: held (flock) by its sweep for as long as it runs


def _held(staging: Path) -> IO[str]:
    """The staging folder's lock, taken: the kernel lets it go when the sweep's process ends, however
    it ends, on this host whatever its process id namespace (two containers' sweeps both PID 1)."""
    handle = (staging / _LOCK).open("w")
    fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def _settle_dead_sweeps(out: Path) -> None:
    """The staging folders of sweeps killed in OUT (SIGKILL, a crash: no ``finally`` ran) are
    settled: one killed while it computed is removed, its partial figures with it (counts the
    reports withhold: review h2 of the eighty-sixth round found them left for good); one killed
    during its swap (``earlier`` made: every file was written) is finished, its files moved in as
    ``_swap_in`` would have. A folder is dead when its lock can be taken: a live sweep's, and one
    without a lock (an older sqlclose's, the user's own ``.sweep-notes``), are left alone."""
    for staging in out.glob(".sweep-*"):
        try:
            handle = (staging / _LOCK).open("r+")
        except OSError:  # not a sweep's of this kind (or not a folder): not ours to judge
            continue
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # held: its sweep runs
                continue
            if (staging / "earlier").is_dir():
                for made in staging.iterdir():
                    if made.is_file() and made.name != _LOCK:
                        os.replace(made, out / made.name)
            shutil.rmtree(staging, ignore_errors=True)


def _swap_in(out: Path, staging: Path, made: list[Path], targets: list[str], overwrite: bool) -> list[Path]:
    """Every sweep file in OUT now (an earlier sweep's, under --overwrite) is set aside into
    ``staging``, then this sweep's are moved in; a failure or a stop before the last move puts the
    earlier ones back, so that OUT holds one sweep, whole. The earlier files this sweep did not
    write (a chart of a measure it has no value for) go with ``staging``. Once the last is in, a
    stop says the files stand."""
    in_the_way = [name for name in targets if (out / name).exists()]
    if in_the_way and not overwrite:  # one appeared while the sweep ran
        raise OutputExistsError(f"{out} now holds {', '.join(in_the_way[:4])}, which appeared while the sweep ran; "
                                "pass --overwrite to replace them, or choose another --out")
    aside, set_aside, placed = staging / "earlier", [], []
    aside.mkdir()
    try:
        for name in in_the_way:
            os.replace(out / name, aside / name)
            set_aside.append(name)
        for path in made:
            os.replace(path, out / path.name)
            placed.append(out / path.name)
    except BaseException:
        for path in placed:
            path.unlink(missing_ok=True)
        for name in set_aside:
            os.replace(aside / name, out / name)
        raise
    release_placed(f"the sweep's files are in place in {out}")
    return placed


def _print_summary(result, written: list[Path], lo_hi: tuple) -> None:
    from sqlclose.model.text import counted

    say(f"swept {counted(len(result.rows), 'run')} of {result.source} over {result.x} in {result.seconds:.1f} s")
    for path in written:
        what = {"sweep.csv": "one row per run", "nauc.csv": "NAUC per curve and measure"}.get(path.name, "chart")
        say(f"  {path}  ({what})")
    for warning in result.warnings:
        say(f"  warning    {warning}")
    failed = result.failed_runs()
    if failed:
        say(f"  {counted(len(failed), 'run')} found no solution: {_listed(failed)}")
    main = "mean_alteration" if result.measured("mean_alteration") else "discernibility"
    rows = [r for r in result.nauc(*lo_hi) if r["measure"] == main]
    taken = sorted((r for r in rows if r["nauc"] is not None), key=lambda r: r["nauc"])
    if taken:
        say(f"  NAUC of {main} on [{taken[0]['lo']:g}, {taken[0]['hi']:g}]: " + "; ".join(
       f"{r['curve']} {r['nauc']:.4g}{_over_gaps(r, result.x)}" for r in taken))
    for r in rows:
        if r["nauc"] is None:  # its note: "not taken: no solution at l = 3, …"
            curve = f" of {r['curve']}" if len(result.curve_keys()) > 1 else ""
            say(f"  NAUC of {main}{curve} on [{r['lo']:g}, {r['hi']:g}] {r['note']}; give --nauc-range "
                  "inside the values it solved")


def _listed(runs: list[str]) -> str:
    return ", ".join(runs[:5]) + (" …" if len(runs) > 5 else "")


def _over_gaps(row: dict, x: str) -> str:
    gaps = row["interpolated"].replace(";", ", ")
    return f" (a straight line over {x} = {gaps}, which found no solution)" if gaps else ""
