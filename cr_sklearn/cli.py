"""The ``cr-sklearn`` command: argument parsing only; the work is in the library.

Sub-commands:

- ``cr-sklearn study``: data-fraction study (CV scores on nested training
  subsamples), CR against the baselines; writes CSV, PNG and Markdown.
- ``cr-sklearn evaluate``: the same at 100% of the training folds only.
- ``cr-sklearn factorial``: activations x regularisers x datasets x seeds
  under clean and messy conditions.
"""

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path

from cr_sklearn._version import __version__

__all__ = ["main"]

# A scheduler that does not answer in this time is unreachable: fail before
# any fit (dask's own default waits 30 s, then raises an OSError).
SCHEDULER_TIMEOUT_S = 10

MODEL_ALIASES = {
    "cr": "CR",
    "logreg": "LogisticRegression",
    "lr": "LogisticRegression",
    "svc": "SVC",
    "svm": "SVC",
    "rf": "RandomForest",
    "xgb": "XGBoost",
    "hgb": "HistGradientBoosting",
    "mlp": "MLP",
}


def _floats(text):
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected numbers, got {text!r}") from exc


def _ints(text):
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected integers, got {text!r}") from exc


def _names(text):
    names = [v.strip() for v in text.split(",") if v.strip()]
    if not names:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated names, got {text!r}"
        )
    return names


def _add_parallel_options(parser):
    parser.add_argument(
        "--n-jobs",
        type=int,
        default=-1,
        help="parallel fits (joblib; -1: all cores; default: %(default)s)",
    )
    parser.add_argument(
        "--backend",
        choices=("loky", "dask"),
        default="loky",
        help="joblib backend; 'dask' runs the fits on a Dask cluster "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="Dask scheduler address (tcp://host:8786) for --backend dask; "
        "without it a local cluster of single-threaded worker processes starts",
    )
    parser.add_argument(
        "--no-progress", action="store_true", help="hide the progress bar"
    )


def _add_study_options(parser, *, evaluate):
    parser.add_argument(
        "--dataset",
        default="pima",
        help="pima, wine-red, wine-white, breast-cancer, digits, or the path of "
        "a CSV file (with --target) (default: %(default)s)",
    )
    parser.add_argument("--target", help="label column of a CSV dataset")
    parser.add_argument(
        "--models",
        type=_names,
        help="comma-separated models among CR, LogisticRegression (logreg), SVC, "
        "RandomForest (rf), XGBoost (xgb; a HistGradientBoosting stand-in "
        "without xgboost), "
        "MLP (default: all)",
    )
    if not evaluate:
        parser.add_argument(
            "--fractions",
            type=_floats,
            default=[0.05, 0.1, 0.25, 0.5, 1.0],
            help="comma-separated fractions of each training fold "
            "(default: 0.05,0.1,0.25,0.5,1.0)",
        )
    parser.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="repeats of stratified k-fold CV (default: %(default)s; the default "
        "Pima study is 750 fits)",
    )
    parser.add_argument(
        "--folds", type=int, default=5, help="folds per repeat (default: %(default)s)"
    )
    parser.add_argument(
        "--scoring",
        default="accuracy",
        help="scikit-learn scorer name (default: %(default)s)",
    )
    parser.add_argument(
        "--test",
        choices=("wilcoxon", "corrected_t"),
        # One test for the table's p-values and marks and the plot's intervals.
        default="corrected_t",
        help="paired test against CR: the table's unadjusted p-values, marked * "
        "where Holm-adjusted p <= 0.05, and the plot's 95%% intervals "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--random-state", type=int, default=0, help="seed (default: %(default)s)"
    )
    parser.add_argument(
        "--out",
        default="cr_sklearn_evaluate" if evaluate else "cr_sklearn_study",
        help="folder for study.csv, study.png and study.md, checked before "
        "any fit; files of these names in it are replaced (default: %(default)s)",
    )
    _add_parallel_options(parser)


def build_parser():
    """The argument parser of ``cr-sklearn``."""
    parser = argparse.ArgumentParser(
        prog="cr-sklearn",
        description="Studies of polynomial-DREG (CR) networks against baselines.",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {__version__}"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    study = sub.add_parser(
        "study",
        help="data-fraction study: CV accuracy on nested training subsamples",
        description="Repeated stratified CV; each training fold is subsampled "
        "(stratified, nested) to each fraction and every model fits the same "
        "subsample. Prints mean +- std with p-values against CR (* where "
        "significant after Holm's correction) "
        "and writes CSV, PNG and Markdown into --out.",
    )
    _add_study_options(study, evaluate=False)
    evaluate = sub.add_parser(
        "evaluate",
        help="CV accuracy and fit time at 100%% of the training folds "
        "(a short form of 'study --fractions 1')",
        description="Repeated stratified CV of every model on the full training "
        "folds (the data-fraction study at 100%% only, 'study --fractions 1'). "
        "Prints mean +- std and fit time with Holm-corrected p-values against "
        "CR and writes CSV, PNG and Markdown into --out.",
    )
    _add_study_options(evaluate, evaluate=True)

    fact = sub.add_parser(
        "factorial",
        help="activations x regularisers x datasets x seeds, clean and messy",
        description="Fits CRClassifier for every activation and regulariser on "
        "each dataset, condition and seed; reports accuracy per cell, mean "
        "ranks and Wilcoxon tests of DREG against each regulariser.",
    )
    fact.add_argument(
        "--preset",
        choices=("quick", "paper"),
        default="quick",
        help="quick: pima and breast-cancer, poly and relu, all regularisers and "
        "conditions, 2 seeds (144 fits); paper: pima, "
        "wine-red, breast-cancer, digits, 5 activations, 5 seeds "
        "(default: %(default)s)",
    )
    fact.add_argument("--datasets", type=_names, help="override the preset's datasets")
    fact.add_argument("--activations", type=_names, help="override the activations")
    fact.add_argument(
        "--regularizers",
        type=_names,
        help="override: none, dreg, dropout, weight_decay, spectral_norm, igpen",
    )
    fact.add_argument(
        "--conditions",
        type=_names,
        help="override: clean, label_noise_40, snr_-10dB",
    )
    fact.add_argument("--seeds", type=_ints, help="override the seeds, e.g. 0,1,2")
    fact.add_argument(
        "--out",
        default="cr_sklearn_factorial",
        help="folder for factorial.csv and factorial.md, checked before any fit "
        "(default: %(default)s)",
    )
    _add_parallel_options(fact)
    # An error found after parsing is reported with its sub-command's usage.
    for command in (study, evaluate, fact):
        command.set_defaults(subparser=command)
    return parser


@contextlib.contextmanager
def _backend(name, scheduler):
    if name == "loky":
        if scheduler:
            raise ValueError("--scheduler needs --backend dask.")
        yield
        return
    import joblib

    try:
        from dask.distributed import Client
    except ImportError as exc:
        raise ValueError(
            "--backend dask needs dask.distributed: pip install 'cr_sklearn[dask]'."
        ) from exc
    if scheduler:
        try:
            client = Client(scheduler, timeout=SCHEDULER_TIMEOUT_S)
        except (OSError, TimeoutError) as exc:
            raise ValueError(
                f"Cannot reach the Dask scheduler at {scheduler} (no answer within "
                f"{SCHEDULER_TIMEOUT_S} s: {exc}). Check --scheduler, or leave it "
                "out to start a local cluster."
            ) from None
    else:
        client = Client(processes=True, threads_per_worker=1)
    with client, joblib.parallel_config(backend="dask"):
        print(f"Dask: {client.dashboard_link}", file=sys.stderr)
        yield


def _select_models(requested):
    from cr_sklearn import CRClassifier
    from cr_sklearn.study import default_baselines

    available = {"CR": CRClassifier(), **default_baselines()}
    if not requested:
        return available
    lookup = {name.lower(): name for name in available}
    # "HistGradientBoosting (XGBoost stand-in)" answers to its first word too.
    lookup.update({name.split()[0].lower(): name for name in available})
    chosen = {}
    for name in requested:
        key = MODEL_ALIASES.get(name.lower(), name).lower()
        if key == "xgboost" and "xgboost" not in lookup:
            key = "histgradientboosting"
        if key not in lookup:
            raise ValueError(
                f"Unknown model {name!r}; choose from {', '.join(available)}."
            )
        chosen[lookup[key]] = available[lookup[key]]
    return chosen


def _check_out(folder, names, inputs=()):
    """Fail before any fit if ``names`` cannot be written into ``folder``.

    Existing files of these names are replaced, as every run does, unless one
    of them is among ``inputs`` (the files the run reads). Writability is
    tried, not inferred from permission bits (root passes ``os.access`` for
    ``/proc``): the missing folders are created, a probe file is written and
    removed, and the folders created for it are removed again.
    """
    out = Path(folder)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {folder} exists and is not a folder.")
    for name in names:
        target = out / name
        if target.is_dir():
            raise ValueError(f"--out {folder}: {target} is a folder, not a file.")
        for source in inputs:
            if _same_file(target, source):
                raise ValueError(
                    f"--out {folder} would overwrite the input file {source} "
                    f"with {name}: choose another --out folder."
                )
    parent = out
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ValueError(f"--out {folder}: {parent} is not a folder.")
    created = [p for p in [out, *out.parents] if not p.exists()]
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name in names:
            target = out / name
            if target.exists():
                # Append mode opens for writing without changing the file.
                with open(target, "ab"):
                    pass
        probe = out / f".cr-sklearn-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ValueError(
            f"--out {folder} cannot be written ({exc.strerror or exc}): "
            "choose a writable folder."
        ) from None
    finally:
        for path in created:  # innermost first
            with contextlib.suppress(OSError):
                path.rmdir()


def _same_file(target, source):
    """Whether ``target`` and ``source`` name the same file (links included)."""
    target, source = Path(target), Path(source)
    if target.exists() and source.exists():
        return target.samefile(source)
    return target.resolve() == source.resolve()


def _run_study(args, fractions):
    from sklearn.model_selection import RepeatedStratifiedKFold

    from cr_sklearn.study import (
        check_dependencies,
        data_fraction_study,
        load_study_dataset,
    )

    # Before any work: the table needs pandas, the plot matplotlib.
    features = ["tables", "plots"] + (["dask"] if args.backend == "dask" else [])
    check_dependencies(*features, purpose=f"cr-sklearn {args.command}")
    if args.repeats < 1 or args.folds < 2:
        raise ValueError("--repeats must be >= 1 and --folds >= 2.")
    models = _select_models(args.models)
    if args.out:
        _check_out(
            args.out,
            ["study.csv", "study.png", "study.md"],
            inputs=[args.dataset] if Path(args.dataset).is_file() else [],
        )
    X, y = load_study_dataset(args.dataset, args.target)
    cv = RepeatedStratifiedKFold(
        n_splits=args.folds, n_repeats=args.repeats, random_state=args.random_state
    )
    n_fits = len(models) * len(fractions) * args.folds * args.repeats
    print(
        f"{args.dataset}: {X.shape[0]} samples, {X.shape[1]} features; "
        f"{len(models)} models x {len(fractions)} fractions x {args.repeats}x"
        f"{args.folds} CV = {n_fits} fits",
        file=sys.stderr,
    )
    start = time.perf_counter()
    with _backend(args.backend, args.scheduler):
        result = data_fraction_study(
            models,
            X,
            y,
            fractions=fractions,
            cv=cv,
            scoring=args.scoring,
            n_jobs=args.n_jobs,
            random_state=args.random_state,
            progress=False if args.no_progress else "auto",
        )
    elapsed = time.perf_counter() - start
    reference = "CR" if "CR" in result.models else result.models[0]
    table = result.to_markdown(reference, test=args.test)
    print(table)
    print(f"\n{n_fits} fits in {elapsed:.0f} s.")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        result.to_csv(out / "study.csv")
        _save_plot(result, out / "study.png", args.dataset, args.test)
        report = (
            f"# Data-fraction study: {args.dataset}\n\n"
            f"RepeatedStratifiedKFold({args.folds} folds x {args.repeats} repeats, "
            f"random_state={args.random_state}); each training fold subsampled "
            f"(stratified, nested) to each fraction; {n_fits} fits in "
            f"{elapsed:.0f} s.\n\n"
            + result.to_markdown(reference, test=args.test, details=True)
            + "\n\n![study](study.png)\n"
        )
        (out / "study.md").write_text(report, encoding="utf-8")
        print(f"Wrote {out / 'study.csv'}, {out / 'study.png'}, {out / 'study.md'}.")
    return 0


def _save_plot(result, path, title, test):
    import matplotlib

    matplotlib.use("Agg")
    from cr_sklearn.study import StudyDisplay

    reference = "CR" if "CR" in result.models else None
    display = StudyDisplay.from_result(
        result, reference=reference, test=test, dataset=title
    )
    display.figure_.savefig(path, dpi=120)
    import matplotlib.pyplot as plt

    plt.close(display.figure_)


def _run_factorial(args):
    from cr_sklearn.study import (
        FACTORIAL_PRESETS,
        check_dependencies,
        factorial_study,
    )

    features = ["tables"] + (["dask"] if args.backend == "dask" else [])
    check_dependencies(*features, purpose="cr-sklearn factorial")
    preset = dict(FACTORIAL_PRESETS[args.preset])
    for key in ("datasets", "activations", "regularizers", "conditions", "seeds"):
        if getattr(args, key):
            preset[key] = getattr(args, key)
    _check_out(args.out, ["factorial.csv", "factorial.md"])
    start = time.perf_counter()
    with _backend(args.backend, args.scheduler):
        result = factorial_study(
            list(preset.pop("datasets")),
            **preset,
            n_jobs=args.n_jobs,
            progress=False if args.no_progress else "auto",
        )
    elapsed = time.perf_counter() - start
    report = result.to_markdown()
    print(report)
    print(f"\n{len(result)} fits in {elapsed:.0f} s.")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result.to_csv(out / "factorial.csv")
    (out / "factorial.md").write_text(
        f"# Factorial study ({args.preset} preset)\n\n{report}\n", encoding="utf-8"
    )
    print(f"Wrote {out / 'factorial.csv'}, {out / 'factorial.md'}.")
    return 0


def main(argv=None):
    """Run ``cr-sklearn`` with ``argv`` (``sys.argv[1:]`` by default).

    Parameters
    ----------
    argv : list of str, default=None
        Command-line arguments.

    Returns
    -------
    status : int
        0 on success.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "factorial":
            return _run_factorial(args)
        fractions = [1.0] if args.command == "evaluate" else args.fractions
        return _run_study(args, fractions)
    except (ValueError, ImportError) as exc:
        args.subparser.error(str(exc))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
