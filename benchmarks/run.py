"""The benchmark runner: ``python benchmarks/run.py <config> [options]``.

Configurations (``run.py <config> --help`` gives each one's options):

=============  ==========================================================
suite          the classification suite: CR against ten baselines, by band
ordinal        the ordinal suite: CROrdinalRegressor against three baselines
pima           Pima, the defaults against the baselines (5x5 CV)
fraction       the default data-fraction study on Pima
factorial      activations x regularisers, clean, noisy labels, noisy inputs
tau            tau across model families on Pima, by one rule
reliability    accuracy per input-sensitivity quintile (Pima, SST-5)
selective      risk-coverage of CR's confidence signals on the suite tables
text           SST-5 and Yelp on frozen sentence embeddings
text-cache     encoder calls of a grid search, with and without the cache
growth         depth growth of residual CR networks
speed          the package's speed targets (fit, prediction, threads, start-up)
threads        one against two torch threads per training step and per fit
load           single-row predictions served from threads
members        a fit with M members against M fits
gpu            the CUDA path against the CPU (on a machine with a GPU)
rounds46       issue 46's candidates on both halves, from the rounds' reports
=============  ==========================================================

Each writes its markdown report to ``benchmarks/results/`` (``--output`` to
write it elsewhere) and prints it; the report's header names the command
and the commit. The library they share is ``harness.py``.
"""

import argparse
import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

MODULES = (
    "suites",
    "bench_studies",
    "bench_selective",
    "bench_text",
    "bench_growth",
    "bench_speed",
    "bench_rounds",
)


def configs():
    """Every configuration by name, in the order of ``MODULES``."""
    found = {}
    for module in MODULES:
        for config in importlib.import_module(module).CONFIGS:
            found[config.name] = config
    return found


def main(argv=None):
    """Run one configuration; the exit status (1 when a check failed).

    Parameters
    ----------
    argv : list of str, default=None
        The configuration's name and its options; ``sys.argv[1:]`` when None.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    found = configs()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="config", required=True, metavar="config")
    for config in found.values():
        child = sub.add_parser(config.name, help=config.help, description=config.help)
        config.add_arguments(child)
        child.add_argument("--output", type=Path, default=None, help="report file")
    args = parser.parse_args(argv)
    args.argv = argv
    config = found[args.config]
    text = config.run(args)
    status = 0
    if isinstance(text, tuple):
        text, status = text
    if text is None:
        return status
    output = args.output or harness.RESULTS / config.output(args)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    print(text, end="")
    print(f"written to {output}")
    return status


if __name__ == "__main__":
    sys.exit(main())
