"""Candidate rule sets: CR settings as functions of the data's shape.

A rule set maps what a fit sees (``n`` training rows, ``d`` columns, ``k``
classes) to CR parameters. Every set is written here and committed before it
runs, on the tuning half first::

    python benchmarks/run.py suite --split tune --candidate 'A={"rules": "A"}'

A set the adoption rule keeps moves into ``cr_sklearn/_plan.py`` (``D``, for
the ordinal head). A set leaves what it does not name at the defaults of the
code that runs it (each result file lists them), so ``D``, ``D2`` and ``E``
now coincide for ``CROrdinalRegressor``; verdicts are in ``DECISIONS.md``.
"""

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone

# -- round A (written before it ran) --------------------------------------------
# Probes on one split of the tuning half's tables of 2,000 rows or more
# (results not kept) showed more encoding bins helping where the fit stops on
# a hold-out set (training folds of 2,000 rows or more: wine_white_binary,
# doctoraus, benefits, verbagg) and hurting under the fixed budget of smaller
# folds (schooling, workinghours, tobacco, mid); wider layers, no penalty and
# a weaker penalty did not help on these few-class tables.


def bins_a(n, d):
    """4 bins below 2,000 rows, 16 from there; no encoding above 100 columns."""
    if d > 100:
        return None
    return 4 if n < 2000 else 16


def width_a(k):
    """8 units per class in powers of two, between 64 and 256."""
    width = 64
    while width < 8 * k and width < 256:
        width *= 2
    return width


def rules_a(n, d, k):
    """Bins by rows (:func:`bins_a`), width by classes (:func:`width_a`)."""
    width = width_a(k)
    return {"encoding_bins": bins_a(n, d), "hidden_layer_sizes": (width, width)}


def rules_a4(n, d, k):
    """Round A, the stream on 4 random directions above 4 columns (speed)."""
    return {**rules_a(n, d, k), "n_projections": 4 if d > 4 else "exact"}


def rules_b(n, d, k):
    """Round A, and 4 cross-fitted members from 2,000 rows on."""
    return {**rules_a(n, d, k), "n_members": 4 if n >= 2000 else 1}


# -- round B (written before it ran) --------------------------------------------
# Round A's bins by rows moved the 2,000-20,000 band by +0.12 points and width
# by classes touched only two tables. The probes point at capacity and
# a penalty that does not shrink with the rows: here width grows with the
# training rows, and the penalty's weight falls as 1/sqrt(n) above 2,000 rows.


def width_b(n, k):
    """Round A's width by classes, at least 128 units from 2,000 rows and 256
    from 10,000."""
    floor = 256 if n >= 10_000 else 128 if n >= 2000 else 64
    return max(width_a(k), floor)


def rules_c(n, d, k):
    """Bins by rows (:func:`bins_a`), width by rows and classes (:func:`width_b`)."""
    width = width_b(n, k)
    return {"encoding_bins": bins_a(n, d), "hidden_layer_sizes": (width, width)}


def rules_c2(n, d, k):
    """:func:`rules_c`, and ``dreg_lambda = 0.01 * sqrt(2000 / n)`` above 2,000 rows."""
    return {**rules_c(n, d, k), "dreg_lambda": 0.01 * min(1.0, (2000 / n) ** 0.5)}


# -- round C (written before it ran) --------------------------------------------
# Rounds A and B keyed their rules on 2,000 training rows, so the tables of
# 2,000-4,000 rows (training folds of half that under 5x2 CV) kept the
# defaults. Round A's members (B) moved the 2,000-20,000 band most (+0.23) and
# the tables above 20,000 rows by +0.38; probes on one split of doctorcontacts
# (the tuning half's largest loss above 20,000 rows but one) gave +0.8 points
# for 16 bins with 4 members against +0.2 for 16 bins alone. Round C keys the
# same rules on 1,000 training rows: every table of 2,000 rows or more moves,
# no table under 2,000 does.

#: Training rows from which round C's rules change the defaults.
ROUND_C_ROWS = 1000


def rules_d(n, d, k):
    """16 bins (up to 100 columns) and 4 members from 1,000 training rows;
    width by classes (:func:`width_a`)."""
    width = width_a(k)
    rules = {"hidden_layer_sizes": (width, width)}
    if n >= ROUND_C_ROWS:
        rules.update(n_members=4, encoding_bins=None if d > 100 else 16)
    return rules


def without(rules, name):
    """The rule set ``rules`` without its parameter ``name``."""
    return lambda n, d, k: {p: v for p, v in rules(n, d, k).items() if p != name}


# -- round D (written before it ran) --------------------------------------------
# Round C: D moved the 2,000-20,000 band by +0.26 points and the tables above
# 20,000 rows by +0.38, its bins alone (D2) by -0.17 and +0.14. Round D keeps
# D's members without its bins (E).

# -- issue 46: the gradient the package reports (written before they ran) ---------
# At the defaults the stream differentiates by the encoded columns, and
# CR's tau is above MLPClassifier's and SVC's on every table of the issue.
# The candidates are plain parameters (``--candidate NAME=JSON``) against the
# defaults ("CR") on the same splits; the report's issue-46 section applies
# the adoption rule (a)-(d). Models of both runs: CR, the candidates,
# LogisticRegression, SVC, MLP (tau), XGBoost, HistGradientBoosting and
# LightGBM (the gap to the best); RandomForest, CatBoost and RealMLP-TD are
# left out of these runs for their cost on this machine.
#
# Round 0: the input-space stream at today's dreg_lambda (``S``).
# Round 1, from probes on one repeat of five tuning tables (breast_cancer,
# pima, wine, wine_red_binary, biopsy; results not kept): the spread penalty
# ``spread_lambda`` evened the norms (tau 1.2-1.3 where MLPClassifier was at
# 1.5-1.9); with the encoding kept it lowered tau less and collapsed Pima to
# the majority class from a weight of 0.1; without the encoding 0.1 kept the
# five tables' accuracy within their noise. ``N``: no encoding, spread 0.1
# (dropout "auto" becomes 0.1); ``Q``: the encoding with the input-space
# stream and spread 0.03.
#
#   python benchmarks/run.py suite --split tune --repeats 2 \
#       --models CR,LogisticRegression,SVC,MLP,XGBoost,HistGradientBoosting,LightGBM \
#       --candidate 'S={"dreg_space": "input"}' \
#       --candidate 'N={"encoding_bins": null, "spread_lambda": 0.1}' \
#       --candidate 'Q={"dreg_space": "input", "spread_lambda": 0.03}' \
#       --output benchmarks/results/round_46_tune.md
#
# and the same with ``--split confirm`` (``round_46_confirm.md``) once. Two
# repeats of the 2-fold split (the first 4 of the suite's 10 splits), not 5:
# a first start at 5 repeats measured about 5 minutes per split of adult
# alone on this machine, and SVC's finite-difference tau on the wide tables
# (vietnamh, 202 columns: 223 s per split) made 5 repeats of both halves
# longer than the session. The corrected intervals widen accordingly. The
# confirmation half then ran with one repeat (its first 2 splits:
# ``--split confirm --repeats 1``), started while the tuning half was still
# running, with every candidate of both rounds: the decision is the tuning
# half's, and a candidate's confirmation figures count only if it passed there.
# That run was stopped unfinished to free the machine for the test suite; as
# no candidate passed the tuning half, the confirmation half then ran for
# round 0 alone, against the baselines the rule reads:
#
#   python benchmarks/run.py suite --split confirm --repeats 1 \
#       --models CR,LogisticRegression,SVC,MLP \
#       --candidate 'S={"dreg_space": "input"}' \
#       --output benchmarks/results/round_46_confirm.md
#
# It too was stopped after 20 minutes without finishing the three tables
# above 20,000 rows (movies, hi, vietnami: SVC's finite-difference tau on 204
# columns); what the session had left ran the 26 tables under 20,000 rows
# less sst5 and yelp5 (384 columns: there the encoding is off, so S is the
# defaults by construction, and SVC's tau alone would outlast the session):
#
#   python benchmarks/run.py suite --split confirm --repeats 1 \
#       --models CR,LogisticRegression,SVC,MLP \
#       --candidate 'S={"dreg_space": "input"}' --tables <those 26> \
#       --output benchmarks/results/round_46_confirm.md

#
# Round 2. Rounds 0 and 1 failed (a): the smoother candidates cost accuracy.
# Looking under S's tau: on breast cancer the rows with the largest input
# gradients are those of predicted probability near 0.5 (the median norm
# 0.39, the p99 4.9); without the penalty they are rows far from the
# boundary. A squared-norm penalty at the training rows flattens the
# function where the rows are and leaves it steep in the gap between the
# classes, where the boundary runs: that raises p99 / mean. The stream at
# points between random pairs of a batch's rows (``dreg_points=
# "interpolated"``) puts the penalty there too. Probes on 14 tuning tables
# (S's worst for tau and accuracy: breast_cancer, biopsy, schooling, wine,
# mid, tobacco, mpg, friendfoe, car90, perisk, naturalpark, pima, salaries,
# wine_white_binary; the first 4 splits; results not kept), paired against
# the defaults: S 6 of 14 below MLP and SVC, median tau / min 1.05, accuracy
# -1.13; the interpolated stream 8 of 14, 0.99, -0.70; at dreg_lambda 0.03
# 9 of 14, 0.92, -1.11; S at dreg_lambda 0.03 and 0.1: 7 and 10 of 14, 1.00
# and 0.92, -1.29 and -2.73. The candidate, ``I``: the input-space stream at
# the interpolated points, today's dreg_lambda. The runs read only the models
# the rule needs:
#
#   python benchmarks/run.py suite --split tune --repeats 2 \
#       --models CR,LogisticRegression,SVC,MLP \
#       --candidate 'I={"dreg_space": "input", "dreg_points": "interpolated"}' \
#       --output benchmarks/results/round_46_tune_2.md
#
# and, if it passes, the same with ``--split confirm`` once.
#
# Result (round_46_tune_2.md): I fails (a) (-0.19 [-0.77, +0.39] points;
# log-loss +0.003 [-0.003, +0.010]) and (c) (25 of 36 tables, median ratio
# 0.92), passes (b) and (d) (1.18x); the defaults and every baseline
# reproduce round 1's figures split for split. It is the closest candidate
# of the three rounds, so its confirmation run measures whether the tau it
# gains holds on tables it was not tried on (it is not adopted either way),
# on round 0's 26 confirmation tables, one repeat:
#
#   python benchmarks/run.py suite --split confirm --repeats 1 \
#       --models CR,LogisticRegression,SVC,MLP \
#       --candidate 'I={"dreg_space": "input", "dreg_points": "interpolated"}' \
#       --tables <round_46_confirm.md's 26> \
#       --output benchmarks/results/round_46_confirm_2.md
#
# Result (round_46_confirm_2.md): the tau I gained on the tuning half does
# not hold: below MLP's and SVC's on 11 of 26 tables (the defaults 5, S 12),
# median ratio 1.05 (the defaults 1.29, S 1.03); -0.51 [-1.39, +0.37]
# accuracy points, -3.26 on the nonlinear tables. Probes after it, on 18
# tuning tables (the 14 above and vote92, btheb, slid, doctorcontacts; the
# first 4 splits; results not kept): the interpolated points in the encoded
# space (``dreg_points="interpolated"`` alone) kept accuracy (+0.02) and
# barely moved tau (1 of 18 below both, median ratio 1.28 against the
# defaults' 1.37); I at dreg_lambda 0.02 moved tau (13 of 18, 0.93) for
# accuracy (-1.03 against I's -0.58).
#
# Round 3. Looking under I's tau on the tables where it stayed above the MLP's
# and SVC's: the network's own activation is not the cause (relu in its
# place: breast cancer 2.28, biopsy 2.50; a wider soft bound, 6 against 3:
# 2.53 and 2.70, against I's 3.10 and 2.91; the MLP's 1.83 and 1.73), nor
# the encoding (I without it: 2.97 and 2.00). A squared-norm penalty where
# the stream's points are dense flattens the function there, and the
# steepest gradients stay where the points are sparse: uniform pairs of
# rows put most segments inside a class. ``dreg_points="between_classes"``
# pairs each row with one of another label, so that every segment crosses
# the boundary. Probes on 14 tuning tables (I's worst for tau and accuracy:
# breast_cancer, biopsy, schooling, perisk, vote92, btheb, slid, friendfoe,
# car90, salaries, naturalpark, mpg, stagec, birthwt; the first 4 splits;
# tables below the MLP's and SVC's pooled tau of round 2, median tau / their
# min, accuracy and log-loss against the defaults; results not kept): I 6 of
# 14, 1.02, -0.58, +0.007; I with spread_lambda 0.01 10, 0.91, -1.16 (btheb
# -8.5 points, slid -3.2); I with 2 members 7, 1.00, -0.88; between the
# classes in the input space at dreg_lambda 0.01 (X) 6, 1.01, -0.60, +0.009
# (breast cancer 2.04, biopsy 1.84, schooling 1.43 against I's 3.10, 2.91,
# 2.07); at 0.02 12, 0.94, -1.25, +0.016; at 0.003 (X3) 8, 0.99, -0.17,
# +0.012; at 0.001 5, 1.02, -0.51, +0.024; between the classes in the
# encoded space 1, 1.17, -0.07, -0.002, and at 0.03 4, 1.03, -0.27, +0.002.
# The candidates, X and X3; the runs read only the models the rule needs:
#
#   python benchmarks/run.py suite --split tune --repeats 2 \
#       --models CR,LogisticRegression,SVC,MLP \
#       --candidate 'X={"dreg_space": "input", "dreg_points": "between_classes"}' \
#       --candidate 'X3={"dreg_space": "input", \
#           "dreg_points": "between_classes", "dreg_lambda": 0.003}' \
#       --output benchmarks/results/round_46_tune_3.md
#
# and the confirmation half once, on round 0's 26 tables, one repeat, for
# each candidate (--split confirm --repeats 1 --tables <those 26>,
# round_46_confirm_3.md), whatever the tuning half says: the decision is
# the tuning half's.
#
# Result (round_46_tune_3.md): X fails (a) (-0.22 [-0.72, +0.28] points;
# log-loss +0.004 [-0.003, +0.011]) and, narrowly, (c) (27 of 36 tables,
# median ratio 0.91; six of its nine misses within 6% of the lower of the
# MLP's and SVC's tau), passes (b) (-0.26) and (d) (1.20x; the default Pima
# fit 1.00x, round_46_pima_fit.md). X3 fails (a) on log-loss (+0.009
# [+0.003, +0.015]) and (c) (23 of 36, 0.97). The defaults and baselines
# reproduce round 2's figures split for split. On the confirmation half
# (round_46_confirm_3.md) X is below both on 14 of 26 tables (I 11, the
# defaults 5), median ratio 0.93 (I 1.05), -0.51 [-1.33, +0.30] points,
# log-loss -0.007, -3.23 on the nonlinear tables (fails (b)); X3 15 of 26,
# 0.96, -0.26, -1.77 on the nonlinear tables. Neither is adopted. Probes
# after it (the 14 tables above, results not kept): X with the penalty on
# the output layer's Jacobian alone (the stream's hidden layers unpenalised)
# at the same and a third of the weight: 8 and 6 of 14, 0.98 and 1.00,
# -0.14 and -0.38 points, log-loss +0.009 and +0.015: the same frontier.
#
# Round 1's confirmation half, which its stopped run left out (see round 1
# above), completes the record of every round on both halves; N and Q on
# round 0's 26 confirmation tables, one repeat, against the baselines the
# rule reads:
#
#   python benchmarks/run.py suite --split confirm --repeats 1 \
#       --models CR,LogisticRegression,SVC,MLP \
#       --candidate 'N={"encoding_bins": null, "spread_lambda": 0.1}' \
#       --candidate 'Q={"dreg_space": "input", "spread_lambda": 0.03}' \
#       --tables <round_46_confirm.md's 26> \
#       --output benchmarks/results/round_46_confirm_1.md
#
# Result (round_46_confirm_1.md): N -1.37 [-2.49, -0.25] points, -6.72 on
# the nonlinear tables, tau below MLP's and SVC's on 19 of 26 tables, median
# ratio 0.77; Q -1.87 [-3.18, -0.56], -4.36, 15 of 26, 0.87 (crabs: 64.5%
# against the defaults' 88%, on both splits). Both fail (a), (b) and the
# 80% of (c); the defaults and baselines reproduce round 2's splits.

#: The candidates of issue 46's rounds, by name (the commands above).
ROUNDS_46 = {
    "S": {"dreg_space": "input"},
    "N": {"encoding_bins": None, "spread_lambda": 0.1},
    "Q": {"dreg_space": "input", "spread_lambda": 0.03},
    "I": {"dreg_space": "input", "dreg_points": "interpolated"},
    "X": {"dreg_space": "input", "dreg_points": "between_classes"},
    "X3": {
        "dreg_space": "input",
        "dreg_points": "between_classes",
        "dreg_lambda": 0.003,
    },
}

RULES = {
    "A": rules_a,
    "A4": rules_a4,
    "B": rules_b,
    "C": rules_c,
    "C2": rules_c2,
    "D": rules_d,
    "D2": without(rules_d, "n_members"),  # the bins' share of D's effect
    "E": without(rules_d, "encoding_bins"),
}


class ShapeRules(ClassifierMixin, BaseEstimator):
    """A CR estimator whose parameters a rule set chooses from the data's shape.

    Parameters
    ----------
    estimator : CR estimator
        Its other parameters are kept.
    rules : str
        A key of :data:`RULES`.
    """

    def __init__(self, estimator, rules):
        self.estimator = estimator
        self.rules = rules

    def fit(self, X, y):
        """Fit the estimator with the rule set's parameters for ``X``, ``y``."""
        n, d = np.shape(X)
        k = len(np.unique(y))
        self.params_ = RULES[self.rules](n, d, k)
        self.estimator_ = clone(self.estimator).set_params(**self.params_)
        self.estimator_.fit(X, y)
        self.classes_ = self.estimator_.classes_
        return self

    def predict(self, X):
        """The estimator's predictions."""
        return self.estimator_.predict(X)

    def predict_proba(self, X):
        """The estimator's probabilities."""
        return self.estimator_.predict_proba(X)
