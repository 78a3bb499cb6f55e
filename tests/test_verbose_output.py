"""What ``verbose`` training prints: no colour codes off a terminal, the
scale of the ``penalty`` column, the epoch number on the per-batch bar."""

import io
import sys

import pytest
from conftest import FAST

from cr_sklearn import CRClassifier
from cr_sklearn._training_output import print_table_line

ESC = "\x1b["


def test_verbose_1_writes_no_escape_codes_off_a_terminal(capsys, binary_data):
    X, y = binary_data
    CRClassifier(**{**FAST, "max_iter": 3, "early_stopping": True, "verbose": 1}).fit(
        X, y
    )
    captured = capsys.readouterr()
    assert "train_loss" in captured.out and "valid_loss" in captured.out
    # skorch colours the best values; captured stdout is not a terminal.
    assert ESC not in captured.out
    assert ESC not in captured.err


def test_the_penalty_column_says_how_it_is_scaled(capsys, binary_data):
    X, y = binary_data
    CRClassifier(**{**FAST, "max_iter": 2, "verbose": 1, "dreg_lambda": 0.03}).fit(X, y)
    captured = capsys.readouterr()
    # The note on standard error; standard output holds the table alone.
    penalty, train_loss = captured.err.splitlines()[:2]
    assert penalty == "penalty: the DREG penalty before scaling by dreg_lambda=0.03"
    assert train_loss == "train_loss: data loss + dreg_lambda * penalty"
    header = captured.out.splitlines()[0].split()
    assert header[:3] == ["epoch", "penalty", "train_loss"]


def test_no_penalty_note_without_dreg(capsys, binary_data):
    X, y = binary_data
    CRClassifier(**{**FAST, "max_iter": 2, "verbose": 1, "dreg": None}).fit(X, y)
    captured = capsys.readouterr()
    assert "before scaling" not in captured.out + captured.err


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_colour_is_kept_on_a_terminal(monkeypatch):
    coloured = f"{ESC}32m0.5000{ESC}0m"
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    print_table_line(coloured)
    assert terminal.getvalue() == coloured + "\n"
    pipe = io.StringIO()
    monkeypatch.setattr(sys, "stdout", pipe)
    print_table_line(coloured)
    assert pipe.getvalue() == "0.5000\n"


def test_verbose_2_bar_names_the_epoch(capsys, binary_data):
    pytest.importorskip("tqdm")
    X, y = binary_data
    CRClassifier(**{**FAST, "max_iter": 2, "verbose": 2, "batch_size": 50}).fit(X, y)
    err = capsys.readouterr().err
    assert "epoch 1:" in err and "epoch 2:" in err


def test_silent_fit_prints_nothing(capsys, binary_data):
    X, y = binary_data
    CRClassifier(**{**FAST, "max_iter": 2}).fit(X, y)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_a_verbose_fit_pickles_and_refits(capsys, binary_data):
    import pickle

    X, y = binary_data
    clf = CRClassifier(**{**FAST, "max_iter": 2, "verbose": 1}).fit(X, y)
    back = pickle.loads(pickle.dumps(clf))
    back.set_params(warm_start=True).fit(X, y)
    assert ESC not in capsys.readouterr().out
