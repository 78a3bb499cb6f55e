"""Is input sensitivity a reliability signal? Accuracy per sensitivity quintile.

For every test sample, ``model.input_sensitivity(X)`` is its input-gradient
norm over the training mean (1.0 = typical). Test samples are split into
quintiles of sensitivity (Q1 lowest, Q5 highest) and, per quintile, we report

- accuracy (Pima: repeated stratified 5-fold CV of CRClassifier; SST-5:
  train -> test on frozen MiniLM embeddings);
- on Pima, how often the prediction flips under small Gaussian input noise
  (sigma = 0.1 and 0.3 feature standard deviations, 10 draws per sample);
- the share of samples beyond the training tail
  (``sensitivity > gradient_norm_quantiles_[99] / gradient_norm_mean_``).

If the claim holds, accuracy falls and flips rise from Q1 to Q5. Caveat:
the gradient norm is large near the decision boundary, where predictions
are uncertain anyway; we also report mean |p - 0.5| per quintile (Pima) to
show how much of the signal the predicted probability already carries.

Run::

    python benchmarks/bench_reliability.py               # Pima 5x5, SST-5
    python benchmarks/bench_reliability.py --repeats 1   # a shorter run

The Markdown tables go to ``benchmarks/results/reliability.md``.
"""

import argparse
import datetime
import shlex
import sys
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.model_selection import RepeatedStratifiedKFold

from cr_sklearn import CRClassifier, __version__, aurc_score
from cr_sklearn.datasets import load_pima

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _suite_runner import git_commit  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SST5 = ROOT.parent / "shared" / "data" / "sst5" / "minilm_embeddings.npz"
RESULTS = ROOT / "benchmarks" / "results" / "reliability.md"
SIGMAS = (0.1, 0.3)
N_DRAWS = 10


def quintiles(sensitivity):
    edges = np.percentile(sensitivity, [20, 40, 60, 80])
    return np.digitize(sensitivity, edges)


def pima_fold(model, X, y, train, test, seed):
    model = clone(model).fit(X[train], y[train])
    Xt, yt = X[test], y[test]
    sens = model.input_sensitivity(Xt)
    pred = model.predict(Xt)
    proba = model.predict_proba(Xt)[:, 1]
    rng = np.random.RandomState(seed)
    std = X[train].std(axis=0)
    flips = {}
    for sigma in SIGMAS:
        changed = np.zeros(len(yt))
        for _ in range(N_DRAWS):
            noise = rng.normal(size=Xt.shape) * sigma * std
            changed += model.predict(Xt + noise) != pred
        flips[sigma] = changed / N_DRAWS
    tail = model.gradient_norm_quantiles_[99] / model.gradient_norm_mean_
    # The same ratio by X in units of its training spread (tau's rule),
    # instead of the encoded columns input_sensitivity reads.
    sens_x = model.input_gradient_norms(Xt) / (
        model.input_gradient_norms(X[train]).mean()
    )
    return dict(
        sens=sens,
        sens_x=sens_x,
        correct=pred == yt,
        margin=np.abs(proba - 0.5),
        flips=flips,
        beyond=sens > tail,
    )


def aurc_of(correct, sensitivity):
    """AURC of rejecting the most sensitive predictions first."""
    return aurc_score(correct.astype(int), np.ones(len(correct), int), -sensitivity)


def quintile_table(title, note, sens, columns):
    q = quintiles(sens)
    header = "| quintile | sensitivity range | n | " + " | ".join(columns) + " |"
    lines = [
        f"### {title}",
        "",
        note,
        "",
        header,
        "|---|---|---|" + "---|" * len(columns),
    ]
    for k in range(5):
        mask = q == k
        cells = [f"{np.mean(v[mask]):.3f}" for v in columns.values()]
        rng = f"{sens[mask].min():.2f}-{sens[mask].max():.2f}"
        lines.append(f"| Q{k + 1} | {rng} | {mask.sum()} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def pima(repeats, n_jobs):
    X, y = load_pima(return_X_y=True)
    model = CRClassifier(random_state=0, n_threads=1)
    cv = RepeatedStratifiedKFold(n_splits=5, n_repeats=repeats, random_state=0)
    folds = Parallel(n_jobs=n_jobs)(
        delayed(pima_fold)(model, X, y, tr, te, i)
        for i, (tr, te) in enumerate(cv.split(X, y))
    )
    # Quintiles within each fold (sensitivity is relative to that fold's
    # model), then pooled.
    for f in folds:
        f["q"] = quintiles(f["sens"])
    cat = {
        k: np.concatenate([f[k] for f in folds])
        for k in ["correct", "margin", "beyond"]
    }
    q = np.concatenate([f["q"] for f in folds])
    sens = np.concatenate([f["sens"] for f in folds])
    columns = {
        "accuracy": cat["correct"].astype(float),
        "mean abs(p-0.5)": cat["margin"],
    }
    for sigma in SIGMAS:
        columns[f"flip rate sigma={sigma}"] = np.concatenate(
            [f["flips"][sigma] for f in folds]
        )
    columns["beyond training p99"] = cat["beyond"].astype(float)
    lines = [
        "### Pima, CRClassifier (defaults, stream DREG)",
        "",
        f"RepeatedStratifiedKFold(5 x {repeats}); quintiles of input_sensitivity "
        "within each test fold, pooled over folds; flips: share of "
        f"{N_DRAWS} Gaussian perturbations (sigma x training std) that change "
        "the prediction.",
        "",
        "| quintile | median sensitivity | n | " + " | ".join(columns) + " |",
        "|---|---|---|" + "---|" * len(columns),
    ]
    for k in range(5):
        mask = q == k
        cells = [f"{np.mean(v[mask]):.3f}" for v in columns.values()]
        lines.append(
            f"| Q{k + 1} | {np.median(sens[mask]):.2f} | {mask.sum()} | "
            + " | ".join(cells)
            + " |"
        )
    corr = np.corrcoef(sens, cat["margin"])[0, 1]
    lines += ["", f"Correlation(sensitivity, |p - 0.5|) = {corr:.2f}.", ""]
    # The same folds ranked by the gradient with respect to X instead.
    q_x = np.concatenate([quintiles(f["sens_x"]) for f in folds])
    accuracy_x = [np.mean(cat["correct"][q_x == k]) for k in range(5)]
    aurc = {
        key: np.mean([aurc_of(f["correct"], f[key]) for f in folds])
        for key in ("sens", "sens_x")
    }
    aurc["margin"] = np.mean([aurc_of(f["correct"], -f["margin"]) for f in folds])
    lines += [
        "The same folds ranked by the gradient norm with respect to X, each "
        "column in units of its training standard deviation (tau's rule, "
        "`input_gradient_norms`), over its training mean, instead of the "
        "encoded columns `input_sensitivity` reads, accuracy per quintile Q1 "
        "to Q5: " + ", ".join(f"{a:.3f}" for a in accuracy_x) + ".",
        "",
        "AURC of rejecting the most sensitive predictions first (error rate, "
        "mean over folds; lower is better): input_sensitivity "
        f"{aurc['sens']:.4f}, by X {aurc['sens_x']:.4f}; "
        f"rejecting the smallest |p - 0.5| first: {aurc['margin']:.4f}.",
        "",
    ]
    return "\n".join(lines)


def sst5(max_iter):
    npz = np.load(SST5)
    X_tr, y_tr, X_te, y_te = (
        npz[k] for k in ["X_train", "y_train", "X_test", "y_test"]
    )
    model = CRClassifier(
        hidden_layer_sizes=(64,), random_state=0, n_threads=1, max_iter=max_iter
    ).fit(X_tr, y_tr)
    sens = model.input_sensitivity(X_te)
    pred = model.predict(X_te)
    proba = model.predict_proba(X_te).max(axis=1)
    tail = model.gradient_norm_quantiles_[99] / model.gradient_norm_mean_
    note = (
        f"CRClassifier(hidden_layer_sizes=(64,), max_iter={max_iter}, stream DREG "
        f"with 4 projections), train {len(y_tr)} -> test {len(y_te)}; overall "
        f"accuracy {np.mean(pred == y_te):.3f}, {model.n_iter_} epochs. The "
        "network outputs 5 logits: sensitivity is the Frobenius norm of the "
        "5 x 384 Jacobian over its training mean."
    )
    columns = {
        "accuracy": (pred == y_te).astype(float),
        "mean max proba": proba,
        "beyond training p99": (sens > tail).astype(float),
    }
    return quintile_table("SST-5 (MiniLM embeddings)", note, sens, columns)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--sst5-max-iter", type=int, default=200)
    parser.add_argument("--skip-sst5", action="store_true")
    args = parser.parse_args()
    command = "python " + " ".join(
        shlex.quote(a) for a in ["benchmarks/bench_reliability.py", *sys.argv[1:]]
    )
    parts = [
        "# Is input sensitivity a reliability signal?",
        "",
        f"Produced by `{command}` (cr_sklearn {__version__}, commit "
        f"{git_commit()}, {datetime.date.today().isoformat()}). "
        "input_sensitivity: the gradient norm with respect to the columns "
        "the network's first layer reads (the encoded columns with the input "
        "encoding of the defaults; X in units of its training standard "
        "deviation without one), over its training mean.",
        "",
        "## Reliability: accuracy per input-sensitivity quintile",
        "",
    ]
    parts.append(pima(args.repeats, args.n_jobs))
    if args.skip_sst5:
        parts.append("SST-5 not run (--skip-sst5).\n")
    elif SST5.exists():
        parts.append(sst5(args.sst5_max_iter))
    else:
        parts.append(f"SST-5 embeddings not found at {SST5}; skipped.\n")
    text = "\n".join(parts)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
