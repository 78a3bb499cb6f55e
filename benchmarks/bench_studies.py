"""Studies on Pima and friends: accuracy, data fraction, factorial, tau, reliability.

``pima``
    The CRClassifier defaults against the usual baselines under 5x5 repeated
    stratified CV on the bundled Pima, with the paired Nadeau-Bengio
    corrected t-test against CR (folds share training rows).
``fraction``
    The default ``cr-sklearn study``: nested subsamples (5% to 100%) of each
    training fold, the corrected t-test and the Wilcoxon test, Holm-marked;
    ``--csv`` keeps the tidy records, ``--from-csv`` rebuilds from them.
``factorial``
    Activations x regularisers on four data sets, clean, with corrupted
    labels and with input noise (``factorial_study``); the records go to a
    CSV beside the report.
``tau``
    The gradient tail ratio on Pima's test folds by the one rule
    (``gradient_norms`` on a pipeline) for CR networks and the baselines, and
    the cost of the analytic norms against ``predict_proba``.
``reliability``
    Accuracy, confidence and flips under input noise per quintile of
    ``input_sensitivity``, on Pima (5x5 CV) and SST-5 (train -> test).

Run::

    python benchmarks/run.py pima --n-jobs 2
    python benchmarks/run.py fraction --csv benchmarks/results/data_fraction.csv
    python benchmarks/run.py factorial
    python benchmarks/run.py tau --n-jobs 2
    python benchmarks/run.py reliability --n-jobs 2
"""

from pathlib import Path

import numpy as np
from harness import (
    Config,
    header,
    load_pima_arrays,
    load_sst5_embeddings,
    markdown_table,
    one_thread,
    parallel,
    timed,
)
from rules import ROUNDS_46


def _with_xgboost(models, **params):
    """``models`` and, when installed, ``XGBoost`` with ``params`` (one thread)."""
    try:
        from xgboost import XGBClassifier
    except ImportError:
        print("xgboost is not installed: skipped")
        return models
    return {**models, "XGBoost": XGBClassifier(n_jobs=1, random_state=0, **params)}


def _folds(y, repeats):
    from sklearn.model_selection import RepeatedStratifiedKFold

    cv = RepeatedStratifiedKFold(n_splits=5, n_repeats=repeats, random_state=0)
    return list(cv.split(np.zeros(len(y)), y))


def _fit_score(model, X, y, train, test):
    from sklearn.base import clone

    with one_thread():
        model = clone(model)
        seconds = timed(model.fit, X[train], y[train])
        return model.score(X[test], y[test]), seconds


# -- pima -----------------------------------------------------------------------


def pima_models():
    """Name -> unfitted estimator, CR's defaults first (XGBoost if installed)."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    from cr_sklearn import CRClassifier

    def scaled(model):
        return make_pipeline(StandardScaler(), model)

    models = {
        "CRClassifier (raw X)": CRClassifier(random_state=0, n_threads=1),
        "StandardScaler + CRClassifier": scaled(
            CRClassifier(random_state=0, n_threads=1)
        ),
        "LogisticRegression": scaled(LogisticRegression(max_iter=1000)),
        "SVC (RBF)": scaled(SVC()),
        "RandomForest (500)": RandomForestClassifier(500, random_state=0, n_jobs=1),
        "MLPClassifier (64, 64)": scaled(
            MLPClassifier((64, 64), max_iter=1000, random_state=0)
        ),
    }
    return _with_xgboost(models)


def run_pima(args):
    """The ``pima`` report."""
    from cr_sklearn.study import corrected_ttest

    X, y = load_pima_arrays()
    splits = _folds(y, args.repeats)
    acc = {}
    rows = []
    for name, model in pima_models().items():
        jobs = [(model, X, y, tr, te) for tr, te in splits]
        out = dict(parallel(_fit_score, jobs, args.n_jobs))
        scores = np.array([out[i][0] for i in range(len(jobs))])
        fit = np.mean([out[i][1] for i in range(len(jobs))])
        acc[name] = scores
        mean = f"{100 * scores.mean():.2f} +- {100 * scores.std():.2f}"
        rows.append([name, mean, f"{fit:.3f}"])
    rows.sort(key=lambda r: -float(r[1].split()[0]))
    reference = "CRClassifier (raw X)"
    ratio = len(splits[0][1]) / len(splits[0][0])
    paired = []
    for name, scores in acc.items():
        if name != reference:
            diff = acc[reference] - scores
            _, p = corrected_ttest(diff, ratio)
            se = np.sqrt((1 / diff.size + ratio) * diff.var(ddof=1))
            paired.append(
                [name, f"{100 * diff.mean():+.2f}", f"{100 * se:.2f}", f"{p:.3f}"]
            )
    lines = header("Pima: the CRClassifier defaults against the baselines", args.argv)
    lines += [
        "",
        f"RepeatedStratifiedKFold(5 x {args.repeats}, random_state=0); one "
        "thread per fit; mean fit time.",
        "",
    ]
    lines += markdown_table(["model", "accuracy (%)", "fit time (s)"], rows)
    lines += ["", f"Paired with {reference}, fold by fold (CR - baseline):", ""]
    head = ["baseline", "mean difference (points)", "corrected SE", "p (corrected t)"]
    return "\n".join(lines + markdown_table(head, paired)) + "\n"


def _pima_args(parser):
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)


# -- fraction and factorial -------------------------------------------------------


def run_fraction(args):
    """The ``fraction`` report: the default data-fraction study on Pima."""
    import pandas as pd
    from sklearn.model_selection import RepeatedStratifiedKFold

    from cr_sklearn import CRClassifier
    from cr_sklearn.study import StudyResult, data_fraction_study, default_baselines

    if args.from_csv:
        result = StudyResult.from_frame(pd.read_csv(args.from_csv))
        source = (
            f"the records in {Path(args.from_csv).name} of an identical run "
            "(its fit times are that run's)"
        )
    else:
        X, y = load_pima_arrays()
        cv = RepeatedStratifiedKFold(n_splits=5, n_repeats=5, random_state=0)
        models = {"CR": CRClassifier(), **default_baselines()}
        result = data_fraction_study(
            models, X, y, cv=cv, random_state=0, n_jobs=args.n_jobs, progress=True
        )
        source = "this run"
    if args.csv:
        result.to_csv(args.csv)
    note = (
        "RepeatedStratifiedKFold(5x5, random_state=0), stratified nested "
        f"subsamples of each training fold; results from {source}."
    )
    parts = header("Pima data-fraction study", args.argv, notes=[note])
    parts += [
        "",
        "## Accuracy: corrected resampled t-test (Nadeau-Bengio) against CR",
        "",
        "The default of `cr-sklearn study`: unadjusted p-values, `*` where "
        "Holm's correction over the table still rejects at 0.05.",
        "",
        result.to_markdown("CR", test="corrected_t", details=True),
        "",
        "## Accuracy: Wilcoxon signed-rank test against CR",
        "",
        "It ignores the overlap of the splits' training sets, so it rejects "
        "more often than it should.",
        "",
        result.to_markdown("CR", test="wilcoxon", details=True),
    ]
    return "\n".join(parts) + "\n"


def _fraction_args(parser):
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--from-csv", help="tidy records of an identical run")
    parser.add_argument("--csv", help="also write the tidy records here")


FACTORIAL_DATASETS = "pima,wine-red,breast-cancer,digits"


def run_factorial(args):
    """The ``factorial`` report; its records go beside it as ``factorial.csv``."""
    import harness

    from cr_sklearn.study import factorial_study

    datasets, activations = args.datasets.split(","), args.activations.split(",")
    seeds = [int(s) for s in args.seeds.split(",")]
    result = factorial_study(
        datasets,
        activations=activations,
        seeds=seeds,
        n_jobs=args.n_jobs,
        progress=True,
    )
    output = Path(args.output or harness.RESULTS / "factorial.md")
    result.to_csv(output.with_suffix(".csv"))
    times = result.to_frame().groupby("regularizer", sort=False)["fit_time"].mean()
    rows = [[r, f"{t:.2f}", f"{t / times['none']:.2f}x"] for r, t in times.items()]
    note = (
        f"Datasets {', '.join(datasets)}; activations {', '.join(activations)}; "
        f"seeds {seeds}; one stratified 75/25 split per seed; {len(result)} fits."
    )
    lines = header("Factorial study", args.argv, notes=[note])
    lines += [
        "",
        result.to_markdown("dreg"),
        "",
        "### Mean fit time per regulariser",
        "",
    ]
    lines += markdown_table(["regularizer", "seconds", "vs none"], rows)
    return "\n".join(lines) + "\n"


def _factorial_args(parser):
    parser.add_argument("--activations", default="poly,relu")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--datasets", default=FACTORIAL_DATASETS)
    parser.add_argument("--n-jobs", type=int, default=2)


# -- tau --------------------------------------------------------------------------

#: Rows beyond the core comparison, left out by ``--core``.
EXTRA_TAU_ROWS = (
    'CR poly, dreg="stream", no encoding',
    'GELU net, dreg="local"',
    *(f"CR poly, issue 46 candidate {name}" for name in ROUNDS_46),
)


def tau_models(core=False):
    """The models whose tau is measured (CR variants first)."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.neural_network import MLPClassifier
    from sklearn.svm import SVC

    from cr_sklearn import CRClassifier

    cr = dict(random_state=0, n_threads=1)
    found = {
        'CR poly, dreg="stream"': CRClassifier(dreg="stream", **cr),
        # Without the input encoding: norms in the standardised inputs' space.
        'CR poly, dreg="stream", no encoding': CRClassifier(
            dreg="stream", encoding_bins=None, dropout=0.1, **cr
        ),
        'CR poly, dreg="local"': CRClassifier(dreg="local", **cr),
        "CR poly, dreg=None": CRClassifier(dreg=None, **cr),
        'GELU net, dreg="local"': CRClassifier(activation="gelu", dreg="local", **cr),
        # Issue 46's candidates (benchmarks/rules.py), beside the defaults.
        **{
            f"CR poly, issue 46 candidate {name}": CRClassifier(**params, **cr)
            for name, params in ROUNDS_46.items()
        },
        "MLPClassifier(64,64)": MLPClassifier((64, 64), max_iter=1000, random_state=0),
        "SVC (RBF)": SVC(),
        "RandomForest(300)": RandomForestClassifier(n_estimators=300, random_state=0),
    }
    found = _with_xgboost(found, n_estimators=200)
    return {k: v for k, v in found.items() if not (core and k in EXTRA_TAU_ROWS)}


def _tau_fold(model, X, y, train, test):
    from sklearn.base import clone
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from cr_sklearn import gradient_norms

    with one_thread():
        model = make_pipeline(StandardScaler(), clone(model)).fit(X[train], y[train])
        # The one rule: gradient_norms takes the final step's input itself.
        return gradient_norms(model, X[test]), float(model.score(X[test], y[test]))


def restate_claim(medians):
    """The papers' claim (CR 1.01-1.02, others 1.07-1.09) against ``medians``."""
    cr = {k: v for k, v in medians.items() if k.startswith("CR poly")}
    others = {k: v for k, v in medians.items() if not k.startswith("CR poly")}
    lines = [
        "The papers state that CR networks keep tau in [1.01, 1.02] against "
        "1.07-1.09 for usual activations. "
        f"Measured here by the one rule (median tau q=99 per fold): CR networks "
        f"{min(cr.values()):.2f}-{max(cr.values()):.2f}; the other families "
        f"{min(others.values()):.2f}-{max(others.values()):.2f}."
    ]
    lowest = min(others, key=others.get)
    if max(cr.values()) < min(others.values()):
        lines.append(
            "Every CR network's tau is below every other family's"
            + (", but none is within [1.01, 1.02]." if min(cr.values()) > 1.02 else ".")
        )
    else:
        below = sorted(k for k, v in cr.items() if v < others[lowest])
        lines.append(
            f"The papers' ordering does not hold for every row: the lowest "
            f"other family is {lowest} ({others[lowest]:.2f}); CR rows below "
            f"it: {'; '.join(below) or 'none'}."
        )
    return lines


def run_tau(args):
    """The ``tau`` report."""
    from cr_sklearn import CRClassifier, gradient_tail_ratio

    X, y = load_pima_arrays()
    splits = _folds(y, args.repeats)
    rows, medians = [], {}
    for name, model in tau_models(args.core).items():
        out = dict(
            parallel(
                _tau_fold, [(model, X, y, tr, te) for tr, te in splits], args.n_jobs
            )
        )
        norms = [out[i][0] for i in range(len(splits))]

        def per_fold(q, norms=norms):
            taus = np.array([gradient_tail_ratio(n, q=q) for n in norms])
            taus = taus[np.isfinite(taus)]
            if not taus.size:
                return "nan"
            lo, med, hi = np.percentile(taus, [25, 50, 75])
            return f"{med:.3f} [{lo:.3f}, {hi:.3f}]"

        taus = [gradient_tail_ratio(n) for n in norms if n.max() > 0]
        medians[name] = float(np.median(taus)) if taus else np.nan
        nonzero = [n for n in norms if n.mean() > 0]
        pooled = [
            gradient_tail_ratio(nonzero, q=q) if nonzero else np.nan for q in (99, 95)
        ]
        accuracy = np.mean([out[i][1] for i in range(len(splits))])
        pooled = [f"{p:.3f}" for p in pooled]
        rows.append([name, per_fold(99), per_fold(95), *pooled, f"{accuracy:.3f}"])
    # The analytic path's cost: norms against predict_proba on 100k rows.
    with one_thread():
        model = CRClassifier(random_state=0, n_threads=1).fit(X, y)
        rng = np.random.RandomState(0)
        big = X[rng.randint(0, len(X), 100_000)]
        big = big + 0.01 * X.std(axis=0) * rng.normal(size=big.shape)
        model.input_gradient_norms(big[:1000])
        proba = np.median([timed(model.predict_proba, big) for _ in range(5)])
        grads = np.median([timed(model.input_gradient_norms, big) for _ in range(5)])
    note = (
        f"RepeatedStratifiedKFold(5 x {args.repeats}, random_state=0); every model "
        "last in make_pipeline(StandardScaler(), model); norms by `gradient_norms` "
        "on the pipeline: the gradient with respect to the standardised features, "
        "each column in units of its standard deviation in the test fold (CR "
        "analytic through its input encoding; others central finite differences "
        "of decision_function or of the log-odds). Median [IQR] over folds; "
        "pooled = all folds' norms, each scaled by its mean."
    )
    lines = header("tau on Pima, by one rule for every model", args.argv, notes=[note])
    cols = ["model", "tau q=99 per fold", "tau q=95 per fold", "pooled q=99"]
    lines += ["", *markdown_table([*cols, "pooled q=95", "accuracy"], rows)]
    lines += ["", "## The papers' claim, restated", "", *restate_claim(medians), ""]
    lines += [
        "## Cost of the analytic path",
        "",
        "CRClassifier defaults on Pima, one "
        "thread; 100k rows drawn from Pima with noise of 0.01 std; median of 5.",
        "",
    ]
    lines += markdown_table(
        ["predict_proba s", "input_gradient_norms s", "ratio"],
        [[f"{proba:.3f}", f"{grads:.3f}", f"{grads / proba:.2f}x"]],
    )
    return "\n".join(lines) + "\n"


def _tau_args(parser):
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--core", action="store_true", help="without the extra rows")


# -- reliability --------------------------------------------------------------------

SIGMAS = (0.1, 0.3)
N_DRAWS = 10


def quintiles(values):
    """The quintile (0 to 4) of each value."""
    return np.digitize(values, np.percentile(values, [20, 40, 60, 80]))


def _reliability_fold(X, y, train, test, seed):
    from cr_sklearn import CRClassifier

    with one_thread():
        model = CRClassifier(random_state=0, n_threads=1).fit(X[train], y[train])
        Xt, yt = X[test], y[test]
        pred = model.predict(Xt)
        rng = np.random.RandomState(seed)
        std = X[train].std(axis=0)
        flips = {
            s: np.mean(
                [
                    model.predict(Xt + rng.normal(size=Xt.shape) * s * std) != pred
                    for _ in range(N_DRAWS)
                ],
                axis=0,
            )
            for s in SIGMAS
        }
        tail = model.gradient_norm_quantiles_[99] / model.gradient_norm_mean_
        sens = model.input_sensitivity(Xt)
        by_x = (
            model.input_gradient_norms(Xt) / model.input_gradient_norms(X[train]).mean()
        )
        margin = np.abs(model.predict_proba(Xt)[:, 1] - 0.5)
    return dict(
        sens=sens,
        sens_x=by_x,
        correct=pred == yt,
        margin=margin,
        flips=flips,
        beyond=sens > tail,
    )


def _aurc(correct, confidence):
    from cr_sklearn import aurc_score

    return aurc_score(correct.astype(int), np.ones(len(correct), int), confidence)


def _reliability_pima(args):
    X, y = load_pima_arrays()
    jobs = [(X, y, tr, te, i) for i, (tr, te) in enumerate(_folds(y, args.repeats))]
    folds = [f for _, f in sorted(parallel(_reliability_fold, jobs, args.n_jobs))]
    # Quintiles within each fold (sensitivity is relative to its model), pooled.
    q = np.concatenate([quintiles(f["sens"]) for f in folds])
    cat = {
        k: np.concatenate([f[k] for f in folds])
        for k in ("sens", "correct", "margin", "beyond")
    }
    columns = {"accuracy": cat["correct"], "mean abs(p-0.5)": cat["margin"]}
    for s in SIGMAS:
        columns[f"flip rate sigma={s}"] = np.concatenate([f["flips"][s] for f in folds])
    columns["beyond training p99"] = cat["beyond"]
    rows = [
        [
            f"Q{k + 1}",
            f"{np.median(cat['sens'][q == k]):.2f}",
            int((q == k).sum()),
            *(f"{np.mean(v[q == k]):.3f}" for v in columns.values()),
        ]
        for k in range(5)
    ]
    q_x = np.concatenate([quintiles(f["sens_x"]) for f in folds])
    by_x = ", ".join(f"{np.mean(cat['correct'][q_x == k]):.3f}" for k in range(5))
    aurc = {
        k: np.mean([_aurc(f["correct"], -f[k]) for f in folds])
        for k in ("sens", "sens_x")
    }
    aurc["margin"] = np.mean([_aurc(f["correct"], f["margin"]) for f in folds])
    corr = np.corrcoef(cat["sens"], cat["margin"])[0, 1]
    lines = [
        "### Pima, CRClassifier (defaults)",
        "",
        f"RepeatedStratifiedKFold(5 x {args.repeats}); quintiles of "
        "input_sensitivity within each test fold, pooled; flips: the share of "
        f"{N_DRAWS} Gaussian perturbations (sigma x training std) that change "
        "the prediction.",
        "",
    ]
    lines += markdown_table(["quintile", "median sensitivity", "n", *columns], rows)
    lines += [
        "",
        f"Correlation(sensitivity, |p - 0.5|) = {corr:.2f}. Ranked instead by "
        "the gradient with respect to X in units of its training spread "
        f"(`input_gradient_norms`), accuracy per quintile Q1 to Q5: {by_x}. "
        "AURC of rejecting the most sensitive first (lower is better): "
        f"input_sensitivity {aurc['sens']:.4f}, by X {aurc['sens_x']:.4f}; the "
        f"smallest |p - 0.5| first: {aurc['margin']:.4f}.",
        "",
    ]
    return lines


def _reliability_sst5(args):
    from cr_sklearn import CRClassifier

    try:
        X_tr, y_tr, X_te, y_te = load_sst5_embeddings(args.data_dir)
    except FileNotFoundError as exc:
        return [str(exc), ""]
    with one_thread():
        model = CRClassifier(
            hidden_layer_sizes=(64,),
            random_state=0,
            n_threads=1,
            max_iter=args.sst5_max_iter,
        ).fit(X_tr, y_tr)
        sens, pred = model.input_sensitivity(X_te), model.predict(X_te)
        proba = model.predict_proba(X_te).max(axis=1)
    tail = model.gradient_norm_quantiles_[99] / model.gradient_norm_mean_
    q = quintiles(sens)
    columns = {
        "accuracy": pred == y_te,
        "mean max proba": proba,
        "beyond training p99": sens > tail,
    }
    rows = [
        [
            f"Q{k + 1}",
            f"{sens[q == k].min():.2f}-{sens[q == k].max():.2f}",
            int((q == k).sum()),
            *(f"{np.mean(v[q == k]):.3f}" for v in columns.values()),
        ]
        for k in range(5)
    ]
    lines = [
        "### SST-5 (MiniLM embeddings)",
        "",
        f"CRClassifier(hidden_layer_sizes=(64,), max_iter={args.sst5_max_iter}), "
        f"train {len(y_tr)} -> test {len(y_te)}; accuracy "
        f"{np.mean(pred == y_te):.3f}, {model.n_iter_} epochs; sensitivity: the "
        "norm of the 5 x 384 Jacobian over its training mean.",
        "",
    ]
    return lines + markdown_table(
        ["quintile", "sensitivity range", "n", *columns], rows
    )


def run_reliability(args):
    """The ``reliability`` report."""
    note = (
        "input_sensitivity: the gradient norm with respect to the columns the "
        "network's first layer reads (the encoded columns with the default input "
        "encoding), over its training mean."
    )
    lines = header(
        "Is input sensitivity a reliability signal?", args.argv, notes=[note]
    )
    lines += ["", "## Accuracy per input-sensitivity quintile", ""]
    lines += _reliability_pima(args)
    if not args.skip_sst5:
        lines += _reliability_sst5(args)
    return "\n".join(lines) + "\n"


def _reliability_args(parser):
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--sst5-max-iter", type=int, default=200)
    parser.add_argument("--skip-sst5", action="store_true")
    parser.add_argument("--data-dir", type=Path, default=None)


CONFIGS = [
    Config(
        "pima", "Pima: CR defaults against the baselines, 5x5 CV", _pima_args, run_pima
    ),
    Config(
        "fraction",
        "the default data-fraction study on Pima",
        _fraction_args,
        run_fraction,
        "data_fraction.md",
    ),
    Config(
        "factorial",
        "activations x regularisers, clean and messy",
        _factorial_args,
        run_factorial,
    ),
    Config("tau", "tau on Pima across model families, by one rule", _tau_args, run_tau),
    Config(
        "reliability",
        "accuracy per input-sensitivity quintile",
        _reliability_args,
        run_reliability,
    ),
]
