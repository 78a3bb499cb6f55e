"""The ``cr-sklearn`` command (``study``, ``evaluate``, ``factorial``, ``compare``)."""

import argparse
import ast
import contextlib
import difflib
import importlib.util
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

from cr_sklearn._version import __version__

__all__ = ["main"]

# A scheduler that does not answer in this time is unreachable.
SCHEDULER_TIMEOUT_S = 10
# The most fits one run may ask for: beyond it the task list alone is huge.
MAX_FITS = 20_000
# Rows of the one-epoch trial fit that checks --cr-param before a study.
TRIAL_ROWS = 200
# Paths in messages are cut to this many characters.
_SHOWN_PATH = 120

# Short names; a model's own name is matched case-insensitively without one.
MODEL_ALIASES = {
    "logreg": "LogisticRegression",
    "lr": "LogisticRegression",
    "svm": "SVC",
    "rf": "RandomForest",
    "xgb": "XGBoost",
    "hgb": "HistGradientBoosting",
}

# The factorial preset's entries that options override, and their help.
_OVERRIDES = {
    "datasets": "override the preset's datasets",
    "activations": "override the activations",
    "regularizers": "override: none, dreg, dropout, weight_decay, spectral_norm, igpen",
    "conditions": "override: clean, label_noise_40, snr_-10dB",
    "seeds": "override the seeds, e.g. 0,1,2",
}


def _numbers(kind, name):
    def parse(text):
        try:
            return [kind(v) for v in text.split(",") if v.strip()]
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"expected {name}, got {text!r}") from exc

    return parse


def _names(text):
    names = [v.strip() for v in text.split(",") if v.strip()]
    if not names:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated names, got {text!r}"
        )
    return names


def _cr_param(text):
    """``KEY=VALUE`` as ``(key, value)``, the value a Python literal or a word."""
    if len(text) > 10_000:
        raise argparse.ArgumentTypeError("--cr-param is longer than 10,000 characters")
    key, sep, value = text.partition("=")
    key, value = key.strip(), value.strip()
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(
            f"expected KEY=VALUE with a CRClassifier parameter name, got {text!r:.80}"
        )
    try:
        return key, ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    if not value or value[0] in "([{'\"+-.0123456789":
        raise argparse.ArgumentTypeError(
            f"{key}={value!r:.80} is not a Python literal (such as 2, 0.5, "
            "(64, 64), None, 'text'); a bare word such as relu is a string"
        )
    return key, value  # a bare word: activation=relu


def _option(parser, flag, help, **kwargs):
    """``parser.add_argument(flag, ...)``, its ``help`` followed by the default."""
    parser.add_argument(flag, help=f"{help} (default: %(default)s)", **kwargs)


def _add_parallel_options(parser):
    parser.add_argument(
        "--n-jobs",
        type=int,
        default=-1,
        help="parallel fits (joblib; -1: all cores; default: %(default)s)",
    )
    _option(
        parser,
        "--backend",
        "joblib backend; 'dask' runs the fits on a Dask cluster",
        choices=("loky", "dask"),
        default="loky",
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
    _option(
        parser,
        "--dataset",
        "pima, wine-red, wine-white, breast-cancer, digits, or the path of a CSV "
        "file (with --target)",
        default="pima",
    )
    parser.add_argument("--target", help="label column of a CSV dataset")
    parser.add_argument(
        "--models",
        type=_names,
        help="comma-separated models among CR, LogisticRegression (logreg), SVC, "
        "RandomForest (rf), XGBoost (xgb; a HistGradientBoosting stand-in "
        "without xgboost), MLP (default: all)",
    )
    if not evaluate:
        parser.add_argument(
            "--fractions",
            type=_numbers(float, "numbers"),
            default=[0.05, 0.1, 0.25, 0.5, 1.0],
            help="comma-separated fractions of each training fold "
            "(default: 0.05,0.1,0.25,0.5,1.0)",
        )
    fits = "6 models x" + " 5 fractions x" * (not evaluate) + " 5x5 CV = "
    fits += "150 fits" if evaluate else "750 fits"
    parser.add_argument(
        "--repeats",
        type=int,
        default=5,
        help=f"repeats of stratified k-fold CV (default: %(default)s; the default "
        f"run is {fits}; at most {MAX_FITS:,} fits a run)",
    )
    _option(parser, "--folds", "folds per repeat", type=int, default=5)
    _option(parser, "--scoring", "scikit-learn scorer name", default="accuracy")
    _option(
        parser,
        "--test",
        "paired test against CR: the table's unadjusted p-values, marked * where "
        "Holm-adjusted p <= 0.05, and the plot's 95%% intervals",
        choices=("wilcoxon", "corrected_t"),
        default="corrected_t",
    )
    _option(parser, "--random-state", "seed", type=int, default=0)
    parser.add_argument(
        "--cr-param",
        type=_cr_param,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a parameter of the CR model (CRClassifier), repeatable: "
        "--cr-param encoding_bins=2 --cr-param hidden_layer_sizes=(32,32); "
        "values are Python literals (a bare word is a string), checked by a "
        "one-epoch fit before the study",
    )
    parser.add_argument(
        "--no-preprocess",
        action="store_true",
        help="no preprocessing of a CSV file: without it, text columns are "
        "one-hot encoded and missing values imputed inside each training fold "
        "(a pipeline before every model), and what was done is printed",
    )
    _option(
        parser,
        "--out",
        "folder for study.csv, study.png and study.md, checked before any fit; "
        "files of these names in it are replaced, symbolic links refused",
        default="cr_sklearn_evaluate" if evaluate else "cr_sklearn_study",
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
        "subsample. Prints mean +- std with unadjusted p-values against CR (* "
        "where significant after Holm's correction) "
        "and writes CSV, PNG and Markdown into --out.",
    )
    _add_study_options(study, evaluate=False)
    evaluate = sub.add_parser(
        "evaluate",
        help="CV accuracy and fit time at 100%% of the training folds "
        "(a short form of 'study --fractions 1')",
        # A description is printed as written: no %-formatting.
        description="Repeated stratified CV of every model on the full training "
        "folds (the data-fraction study at 100% only, 'study --fractions 1'). "
        "Prints mean +- std and fit time with unadjusted p-values against CR "
        "(* where significant after Holm's correction) and writes CSV, PNG and "
        "Markdown into --out.",
    )
    _add_study_options(evaluate, evaluate=True)

    fact = sub.add_parser(
        "factorial",
        help="activations x regularisers x datasets x seeds, clean and messy",
        description="Fits CRClassifier for every activation and regulariser on "
        "each dataset, condition and seed; reports accuracy per cell, mean "
        "ranks and Wilcoxon tests of DREG against each regulariser.",
    )
    _option(
        fact,
        "--preset",
        "quick: pima and breast-cancer, poly and relu, all regularisers and "
        "conditions, 2 seeds (144 fits); paper: pima, wine-red, breast-cancer, "
        "digits, 5 activations, 5 seeds",
        choices=("quick", "paper"),
        default="quick",
    )
    for key, text in _OVERRIDES.items():
        kind = _numbers(int, "integers") if key == "seeds" else _names
        fact.add_argument(f"--{key}", type=kind, help=text)
    _option(
        fact,
        "--out",
        "folder for factorial.csv and factorial.md, checked before any fit",
        default="cr_sklearn_factorial",
    )
    _add_parallel_options(fact)
    compare = _add_compare_parser(sub)
    # An error found after parsing is reported with its sub-command's usage.
    for command in (study, evaluate, fact, compare):
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
    # "HistGradientBoosting (XGBoost stand-in)" answers to its first word too.
    lookup = {k.lower(): name for name in available for k in (name, name.split()[0])}
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


def _shown(path):
    """``path`` for a message, cut to a readable length."""
    text = os.fspath(path)
    return text if len(text) <= _SHOWN_PATH else text[: _SHOWN_PATH - 3] + "..."


def _check_out(folder, names, inputs=()):
    """Fail before any fit if ``names`` cannot be written into ``folder``.

    Files among ``inputs`` or that are symbolic links are refused. A probe file
    is written and removed (root passes ``os.access`` for ``/proc``).
    """
    if not os.fspath(folder):
        raise ValueError("--out is empty: name the folder to write into.")
    out = Path(folder)
    shown = _shown(out)
    try:
        if out.exists() and not out.is_dir():
            raise ValueError(f"--out {shown} exists and is not a folder.")
        for name in names:
            target = out / name
            if target.is_symlink():
                raise ValueError(
                    f"--out {shown}: {name} is a symbolic link (to "
                    f"{_shown(os.readlink(target))}); cr-sklearn does not write "
                    "through links: remove it or choose another --out folder."
                )
            if target.is_dir():
                raise ValueError(
                    f"--out {shown}: {_shown(target)} is a folder, not a file."
                )
            for source in inputs:
                if _same_file(target, source):
                    raise ValueError(
                        f"--out {shown} would overwrite the input file "
                        f"{_shown(source)} with {name}: choose another --out folder."
                    )
        parent = out
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if not parent.is_dir():
            raise ValueError(f"--out {shown}: {_shown(parent)} is not a folder.")
        created = [p for p in [out, *out.parents] if not p.exists()]
    except OSError as exc:  # a name too long, a loop of links, ...
        raise ValueError(
            f"--out {_shown(folder)} cannot be used ({exc.strerror or exc}): "
            "choose another folder."
        ) from None
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
            f"--out {shown} cannot be written ({exc.strerror or exc}): "
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


@contextlib.contextmanager
def _ctrl_c_deferred():
    """Hold a Ctrl-C (SIGINT) back while the block runs, then deliver it."""
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous is None:
        yield  # signal handlers belong to the main thread
        return
    held = []
    signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if held:
            signal.raise_signal(signal.SIGINT)


def _swap_in(stage, out, names):
    """Move each ``stage / name`` over ``out / name``: all of them or none.

    A file about to be replaced is first linked (or copied) into ``stage``:
    after an error midway the files already moved are put back.
    """
    done = []
    try:
        for name in names:
            target, backup = out / name, None
            if target.exists() or target.is_symlink():
                backup = stage / f".previous-{name}"
                try:
                    os.link(target, backup, follow_symlinks=False)
                except OSError:  # a file system without hard links
                    shutil.copy2(target, backup, follow_symlinks=False)
            os.replace(stage / name, target)
            done.append((target, backup))
    except BaseException:
        for target, backup in reversed(done):
            with contextlib.suppress(OSError):
                if backup is None:
                    target.unlink()
                else:
                    os.replace(backup, target)
        raise


def _cr_params(args, models):
    """``--cr-param`` as a dict, the names checked against CRClassifier's."""
    from cr_sklearn import CRClassifier

    params = dict(args.cr_param)
    if not params:
        return params
    if "CR" not in models:
        raise ValueError(
            "--cr-param sets parameters of the CR model, which --models leaves out."
        )
    known = CRClassifier().get_params(deep=False)
    for key in params:
        if key not in known:
            close = difflib.get_close_matches(key, list(known), n=3)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise ValueError(
                f"--cr-param {key}: CRClassifier has no parameter {key!r}.{hint} "
                f"Its parameters: {', '.join(sorted(known))}."
            )
    return params


def _trial_fit(model, X, y, preprocessor, params):
    """Fit ``model`` for one epoch on a few rows: bad --cr-param fail now."""
    import numpy as np
    from sklearn.base import clone
    from sklearn.model_selection import train_test_split

    rows = np.arange(len(y))
    if len(y) > TRIAL_ROWS:
        try:
            rows, _ = train_test_split(
                rows, train_size=TRIAL_ROWS, stratify=y, random_state=0
            )
        except ValueError:  # a class too rare to stratify
            rows = rows[:TRIAL_ROWS]
    X_trial = X.iloc[rows] if hasattr(X, "iloc") else X[rows]
    if preprocessor is not None:
        X_trial = clone(preprocessor).fit_transform(X_trial)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clone(model).set_params(max_iter=1).fit(X_trial, y[rows])
    except (ValueError, TypeError) as exc:
        settings = ", ".join(f"{k}={v!r}" for k, v in params.items())
        raise ValueError(
            f"--cr-param {settings}: a one-epoch trial fit of CRClassifier on "
            f"{len(rows)} rows failed: {exc}"
        ) from None


def _progress(args):
    """A bar in a terminal, plain lines in a log or a pipe, or nothing."""
    if args.no_progress:
        return False
    try:
        terminal = sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):
        terminal = False
    # Without tqdm, plain lines in a terminal too.
    bar = terminal and importlib.util.find_spec("tqdm") is not None
    return "auto" if bar else "lines"


def _plural(n, word):
    return f"{n} {word}" + ("" if n == 1 else "s")


def _load(args):
    """``(X, y, preprocessor, notes)`` of --dataset, preprocessed unless told."""
    from cr_sklearn.study import load_study_dataset, tabular_preprocessor

    if args.no_preprocess:
        try:
            X, y = load_study_dataset(args.dataset, args.target)
        except ValueError as exc:
            if "Non-numeric" in str(exc) or "Missing values" in str(exc):
                raise ValueError(
                    f"{exc} (Without --no-preprocess, cr-sklearn one-hot encodes "
                    "text columns and imputes missing values in each fold.)"
                ) from None
            raise
        return X, y, None, []
    # A frame: the models, CR included, see the column names.
    X, y = load_study_dataset(args.dataset, args.target, as_frame=True)
    return X, y, *tabular_preprocessor(X)


def _run_study(args, fractions):
    from sklearn.base import clone
    from sklearn.model_selection import RepeatedStratifiedKFold
    from sklearn.pipeline import make_pipeline

    from cr_sklearn.study import check_dependencies, data_fraction_study

    # Before any work: the table needs pandas, the plot matplotlib.
    features = ["tables", "plots"] + (["dask"] if args.backend == "dask" else [])
    check_dependencies(*features, purpose=f"cr-sklearn {args.command}")
    if args.repeats < 1 or args.folds < 2:
        raise ValueError("--repeats must be >= 1 and --folds >= 2.")
    models = _select_models(args.models)
    params = _cr_params(args, models)
    n_fits = len(models) * len(fractions) * args.folds * args.repeats
    if n_fits > MAX_FITS:
        raise ValueError(
            f"{_plural(len(models), 'model')} x {_plural(len(fractions), 'fraction')}"
            f" x {args.repeats:,} repeats x {args.folds:,} folds is {n_fits:,} fits, "
            f"above the {MAX_FITS:,} of one run (the default study is 750): run "
            "several with different --random-state values."
        )
    _check_out(
        args.out,
        ["study.csv", "study.png", "study.md"],
        # isfile is False, not an error, for a name too long: the loader says so.
        inputs=[args.dataset] if os.path.isfile(args.dataset) else [],
    )
    X, y, preprocessor, notes = _load(args)
    if params:
        models["CR"] = models["CR"].set_params(**params)
        _trial_fit(models["CR"], X, y, preprocessor, params)
    if preprocessor is not None:
        models = {
            name: make_pipeline(clone(preprocessor), model)
            for name, model in models.items()
        }
    cv = RepeatedStratifiedKFold(
        n_splits=args.folds, n_repeats=args.repeats, random_state=args.random_state
    )
    print(
        f"{args.dataset}: {X.shape[0]} samples, {_plural(X.shape[1], 'feature')}; "
        f"{_plural(len(models), 'model')} x {_plural(len(fractions), 'fraction')} x "
        f"{args.repeats}x{args.folds} CV = {n_fits} fits",
        file=sys.stderr,
    )
    if notes:
        print(
            "Preprocessing inside each training fold (--no-preprocess to turn "
            "it off):\n" + "\n".join(f"  {note}" for note in notes),
            file=sys.stderr,
        )
    result, elapsed = _fits(
        args,
        data_fraction_study,
        models,
        X,
        y,
        fractions=fractions,
        cv=cv,
        scoring=args.scoring,
        random_state=args.random_state,
    )
    reference = "CR" if "CR" in result.models else result.models[0]
    print(result.to_markdown(reference, test=args.test))
    print(f"\n{n_fits} fits in {elapsed:.0f} s.")
    what = (
        "the full training folds"
        if fractions == [1.0]
        else "each training fold subsampled (stratified, nested) to each fraction"
    )
    report = (
        f"# {'Evaluation' if args.command == 'evaluate' else 'Data-fraction study'}: "
        f"{args.dataset}\n\n"
        f"RepeatedStratifiedKFold({args.folds} folds x {args.repeats} repeats, "
        f"random_state={args.random_state}); {what}; {n_fits} fits in "
        f"{elapsed:.0f} s.\n\n"
        + (
            "Preprocessing inside each training fold: " + "; ".join(notes) + ".\n\n"
            if notes
            else ""
        )
        + result.to_markdown(reference, test=args.test, details=True)
        + "\n\n![study](study.png)\n"
    )
    return _write_all(
        args.out,
        {
            "study.csv": result.to_csv,
            "study.png": lambda path: _save_plot(result, path, args.dataset, args.test),
            "study.md": lambda path: path.write_text(report, encoding="utf-8"),
        },
    )


def _fits(args, study, *study_args, **kwargs):
    """``(result, seconds)`` of ``study`` on the chosen backend, warnings shown once."""
    start = time.perf_counter()
    with (
        _backend(args.backend, args.scheduler),
        warnings.catch_warnings(record=True) as caught,
    ):
        result = study(
            *study_args, **kwargs, n_jobs=args.n_jobs, progress=_progress(args)
        )
    elapsed = time.perf_counter() - start
    seen = list(dict.fromkeys((w.category.__name__, str(w.message)) for w in caught))
    if seen:
        print("Warnings from the fits (each shown once):", file=sys.stderr)
        for category, message in seen:
            print(f"  {category}: {message}", file=sys.stderr)
    return result, elapsed


def _write_all(folder, writers):
    """Write each ``name: write(path)`` of ``writers`` into ``folder``, as one set; 0.

    The files are written into a hidden folder inside ``folder``; once all
    are written they replace the files of those names together (a Ctrl-C
    waits for the swap): an interrupted or failed run leaves the previous
    set whole, never a new CSV beside an old plot. A link made since the
    check is refused, never written through.
    """
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    for name in writers:
        if (out / name).is_symlink():
            raise ValueError(
                f"--out {_shown(out)}: {name} became a symbolic link during the "
                "run; nothing was written through it."
            )
    stage = Path(tempfile.mkdtemp(prefix=".cr-sklearn-", dir=out))
    try:
        for name, write in writers.items():
            write(stage / name)
        with _ctrl_c_deferred():
            _swap_in(stage, out, list(writers))
            print(f"Wrote {', '.join(str(out / name) for name in writers)}.")
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return 0


def _save_plot(result, path, title, test):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from cr_sklearn.study import StudyDisplay

    reference = "CR" if "CR" in result.models else None
    display = StudyDisplay.from_result(
        result, reference=reference, test=test, dataset=title
    )
    display.figure_.savefig(path, dpi=120, format="png")
    plt.close(display.figure_)


def _add_compare_parser(sub):
    """The ``compare`` sub-command: every model on several tables."""
    compare = sub.add_parser(
        "compare",
        help="several tables: mean rank, Friedman, Nemenyi and Holm tests, "
        "critical-difference diagram; resumes an interrupted run",
        description="Repeated stratified CV of every model on every table "
        "(optionally at several training fractions); prints and writes mean "
        "scores and ranks, Friedman's test with Holm and Nemenyi post-hoc "
        "tests, wins/ties/losses against the reference per table, and a "
        "critical-difference diagram. Finished fits are kept in --out/cache: "
        "the same command run again fits only what is missing.",
    )
    compare.add_argument(
        "--dataset",
        action="append",
        default=[],
        help="a table: pima, wine-red, wine-white, breast-cancer, digits or "
        "the path of a CSV file (with --target); repeatable",
    )
    compare.add_argument(
        "--dataset-dir",
        metavar="DIR",
        help="a folder whose *.csv files are tables (with --target)",
    )
    compare.add_argument("--target", help="label column of the CSV tables")
    compare.add_argument(
        "--models",
        type=_names,
        help="comma-separated models among CR, LogisticRegression (logreg), SVC, "
        "RandomForest (rf), XGBoost (xgb), MLP (default: all)",
    )
    compare.add_argument(
        "--fractions",
        type=_numbers(float, "numbers"),
        default=[1.0],
        help="comma-separated fractions of each training fold (default: 1)",
    )
    _option(
        compare, "--repeats", "repeats of stratified k-fold CV", type=int, default=2
    )
    _option(compare, "--folds", "folds per repeat", type=int, default=5)
    _option(compare, "--scoring", "scikit-learn scorer name", default="accuracy")
    _option(
        compare,
        "--test",
        "paired test over the splits of each table, for wins/ties/losses",
        choices=("wilcoxon", "corrected_t"),
        default="corrected_t",
    )
    _option(
        compare,
        "--reference",
        "model the others are tested against (default: CR, else the first)",
        default=None,
    )
    _option(
        compare,
        "--rope",
        "half-width of the region of practical equivalence of the Bayesian "
        "signed-rank test, in score units",
        type=float,
        default=0.01,
    )
    _option(compare, "--random-state", "seed", type=int, default=0)
    compare.add_argument(
        "--cr-param",
        type=_cr_param,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a parameter of the CR model (CRClassifier), repeatable, as in study",
    )
    compare.add_argument(
        "--no-preprocess",
        action="store_true",
        help="no preprocessing of the CSV tables (by default text columns are "
        "one-hot encoded and missing values imputed inside each training fold)",
    )
    _option(
        compare,
        "--out",
        "folder for compare.csv, compare.md, compare.png (and compare_curves.png "
        "with several fractions), and cache/ of finished fits",
        default="cr_sklearn_compare",
    )
    _add_parallel_options(compare)
    return compare


def _compare_tables(args):
    """The --dataset and --dataset-dir tables: CSV paths or named (X, y) tuples."""
    from cr_sklearn.study import load_study_dataset

    names = list(args.dataset)
    if args.dataset_dir:
        folder = Path(args.dataset_dir)
        if not folder.is_dir():
            raise ValueError(f"--dataset-dir {_shown(folder)} is not a folder.")
        found = sorted(folder.glob("*.csv"))
        if not found:
            raise ValueError(f"--dataset-dir {_shown(folder)} has no *.csv files.")
        names += [os.fspath(p) for p in found]
    if not names:
        raise ValueError("Name the tables: --dataset (repeatable) or --dataset-dir.")
    tables = []
    for name in names:
        if not os.path.isfile(name):
            # A named dataset, or the loader's error naming the problem.
            tables.append((name, *load_study_dataset(name, args.target)))
        elif args.target is None:
            raise ValueError(
                f"A CSV table needs its label column: --target for {name}."
            )
        else:
            tables.append(Path(name))
    return tables


def _run_compare(args):
    from cr_sklearn.study import (
        CriticalDifferenceDisplay,
        RankCurveDisplay,
        check_dependencies,
        compare_study,
        load_study_dataset,
        tabular_preprocessor,
    )

    features = ["tables", "plots"] + (["dask"] if args.backend == "dask" else [])
    check_dependencies(*features, purpose="cr-sklearn compare")
    if args.repeats < 1 or args.folds < 2:
        raise ValueError("--repeats must be >= 1 and --folds >= 2.")
    models = _select_models(args.models)
    params = _cr_params(args, models)
    tables = _compare_tables(args)
    n_fits = len(models) * len(tables) * len(args.fractions) * args.folds * args.repeats
    if n_fits > MAX_FITS:
        raise ValueError(
            f"{_plural(len(models), 'model')} x {_plural(len(tables), 'table')} x "
            f"{_plural(len(args.fractions), 'fraction')} x {args.repeats:,} repeats "
            f"x {args.folds:,} folds is {n_fits:,} fits, above the {MAX_FITS:,} of "
            "one run."
        )
    names = ["compare.csv", "compare.md", "compare.png", "compare_curves.png"]
    csvs = [t for t in tables if isinstance(t, Path)]
    _check_out(args.out, names, inputs=csvs)
    if params:
        models["CR"] = models["CR"].set_params(**params)
        first = tables[0]
        if isinstance(first, Path):
            X, y = load_study_dataset(
                os.fspath(first), args.target, as_frame=not args.no_preprocess
            )
            preprocessor = None if args.no_preprocess else tabular_preprocessor(X)[0]
        else:
            X, y, preprocessor = first[1], first[2], None
        _trial_fit(models["CR"], X, y, preprocessor, params)
    cache = Path(args.out) / "cache"
    print(
        f"{_plural(len(tables), 'table')} x {_plural(len(models), 'model')} x "
        f"{_plural(len(args.fractions), 'fraction')} x {args.repeats}x{args.folds} "
        f"CV = {n_fits} fits (finished fits kept in {_shown(cache)})",
        file=sys.stderr,
    )
    from sklearn.model_selection import RepeatedStratifiedKFold

    cv = RepeatedStratifiedKFold(
        n_splits=args.folds, n_repeats=args.repeats, random_state=args.random_state
    )
    result, elapsed = _fits(
        args,
        compare_study,
        models,
        tables,
        target=args.target,
        cv=cv,
        fractions=args.fractions,
        scoring=args.scoring,
        cache=cache,
        preprocess=not args.no_preprocess,
        random_state=args.random_state,
    )
    reference = args.reference or ("CR" if "CR" in result.models else None)
    reference = result._reference(reference)
    text = result.to_markdown(reference, test=args.test, rope=args.rope)
    print(text)
    fitted = len(result) // len(result.metrics) - result.n_cached
    print(
        f"\n{fitted} fits in {elapsed:.0f} s; {result.n_cached} read from the cache.",
        file=sys.stderr,
    )

    def plot(display, path):
        import matplotlib.pyplot as plt

        display.figure_.savefig(path, dpi=120, format="png")
        plt.close(display.figure_)

    import matplotlib

    matplotlib.use("Agg")
    writers = {
        "compare.csv": result.to_csv,
    }
    pictures = ""
    try:
        cd = CriticalDifferenceDisplay.from_result(result)
    except ValueError as exc:
        print(f"No critical-difference diagram: {exc}", file=sys.stderr)
    else:
        writers["compare.png"] = lambda path: plot(cd, path)
        pictures += "\n\n![critical differences](compare.png)"
    if len(result.fractions) > 1:
        curves = RankCurveDisplay.from_result(result, reference=reference)
        writers["compare_curves.png"] = lambda path: plot(curves, path)
        pictures += "\n\n![ranks by fraction](compare_curves.png)"
    listing = ", ".join(result.tables)
    report = (
        f"# Comparison on {_plural(len(result.tables), 'table')}\n\n"
        f"Tables: {listing}. RepeatedStratifiedKFold({args.folds} folds x "
        f"{args.repeats} repeats, random_state={args.random_state})"
        + (
            ""
            if result.fractions == [1.0]
            else "; each training fold subsampled (stratified, nested) to "
            + ", ".join(f"{f:.0%}" for f in result.fractions)
        )
        + f". {len(result) // len(result.metrics)} fits.\n\n"
        + text
        + pictures
        + "\n"
    )
    writers["compare.md"] = lambda path: path.write_text(report, encoding="utf-8")
    return _write_all(args.out, writers)


def _run_factorial(args):
    from cr_sklearn.study import FACTORIAL_PRESETS, check_dependencies, factorial_study

    features = ["tables"] + (["dask"] if args.backend == "dask" else [])
    check_dependencies(*features, purpose="cr-sklearn factorial")
    preset = dict(FACTORIAL_PRESETS[args.preset])
    preset |= {key: getattr(args, key) for key in _OVERRIDES if getattr(args, key)}
    _check_out(args.out, ["factorial.csv", "factorial.md"])
    result, elapsed = _fits(
        args, factorial_study, list(preset.pop("datasets")), **preset
    )
    report = result.to_markdown()
    print(report)
    print(f"\n{len(result)} fits in {elapsed:.0f} s.")
    text = f"# Factorial study ({args.preset} preset)\n\n{report}\n"
    return _write_all(
        args.out,
        {
            "factorial.csv": result.to_csv,
            "factorial.md": lambda path: path.write_text(text, encoding="utf-8"),
        },
    )


def main(argv=None):
    """Run ``cr-sklearn`` with ``argv`` (``sys.argv[1:]`` by default).

    Parameters
    ----------
    argv : list of str, default=None
        Command-line arguments.

    Returns
    -------
    status : int
        0 on success; 130 after a Ctrl-C (no fit cut short is reported; the
        result files are replaced whole or not at all).
    """
    args = build_parser().parse_args(argv)
    try:
        if args.command == "factorial":
            return _run_factorial(args)
        if args.command == "compare":
            return _run_compare(args)
        return _run_study(args, [1.0] if args.command == "evaluate" else args.fractions)
    except KeyboardInterrupt:
        print("\nInterrupted.", file=sys.stderr)
        return 130  # 128 + SIGINT, as a shell reports it
    except (ValueError, ImportError) as exc:
        args.subparser.error(str(exc))
    except OSError as exc:  # the file system, at any step: no traceback
        where = f" ({_shown(exc.filename)})" if exc.filename else ""
        args.subparser.error(f"{exc.strerror or exc}{where}.")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
