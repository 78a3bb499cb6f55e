"""What a release promises: its declared versions, its files, its metadata.

The fast tests read the packaging files (``setup.cfg``, ``setup.py``,
``.ci/minimums.txt``, ``CITATION.cff``, ``CHANGELOG.md``, the README). The
slow ones build the sdist and the wheel as ``python -m build --no-isolation``
does (the sdist from the checkout, the wheel from the unpacked sdist) and read
what they hold; ``.ci/run`` runs them.
"""

import configparser
import fnmatch
import os
import re
import runpy
import subprocess
import sys
import tarfile
import zipfile
from collections import defaultdict
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

import cr_sklearn

ROOT = Path(__file__).resolve().parents[1]
SETUP_CFG = ROOT / "setup.cfg"
MINIMUMS = ROOT / ".ci" / "minimums.txt"
README = ROOT / "README.md"
DATASETS = ROOT / "cr_sklearn" / "datasets"
# The folders of the bundled tables and their descriptions.
DATA_DIRS = ("data", "descr")
# torch is the one dependency whose oldest version CI does not install: it
# keeps the CPU build it installs first.
NOT_PINNED = {"torch"}


def _config():
    config = configparser.ConfigParser()
    config.read(SETUP_CFG, encoding="utf-8")
    return config


def _requirements(value):
    return [Requirement(line) for line in value.strip().splitlines() if line.strip()]


def _install_requires():
    return _requirements(_config()["options"]["install_requires"])


def _extras():
    extras = _config()["options.extras_require"]
    return {name: _requirements(extras[name]) for name in extras}


def _floor(requirement):
    """The version of the requirement's ``>=`` bound."""
    (floor,) = [s.version for s in requirement.specifier if s.operator == ">="]
    return Version(floor)


def _minimums():
    pins = {}
    for line in MINIMUMS.read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if line:
            requirement = Requirement(line)
            (spec,) = requirement.specifier
            assert spec.operator == "==", line
            pins[canonicalize_name(requirement.name)] = Version(spec.version)
    return pins


def _readme_section(title):
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


# --------------------------------------------------------------------------
# Declared versions
# --------------------------------------------------------------------------


def test_minimums_pin_every_floor_at_that_version():
    """CI's minimum-versions run installs exactly the declared floors."""
    floors = {
        canonicalize_name(r.name): _floor(r)
        for r in [*_install_requires(), *_extras()["test"]]
        if r.name not in NOT_PINNED
    }
    assert _minimums() == floors


def test_a_package_has_one_floor_in_every_extra():
    floors = defaultdict(set)
    for requirement in [*_install_requires(), *sum(_extras().values(), [])]:
        for spec in requirement.specifier:
            if spec.operator == ">=":
                floors[canonicalize_name(requirement.name)].add(Version(spec.version))
    assert {name: f for name, f in floors.items() if len(f) > 1} == {}


def test_the_docs_extra_installs_xgboost_like_the_xgboost_extra():
    # The gallery compares against XGBoost: the documentation build needs it.
    extras = _extras()
    xgboost = {str(r) for r in extras["xgboost"]}
    assert xgboost and xgboost <= {str(r) for r in extras["docs"]}


def test_readme_names_the_tested_and_untested_python_versions():
    classifiers = _config()["metadata"]["classifiers"]
    versions = r"Programming Language :: Python :: (3\.\d+)$"
    declared = set(re.findall(versions, classifiers, re.M))
    paragraph = _readme_section("Install").split("Tested versions:")[1].split("\n\n")[0]
    tested_sentence, untested_sentence = paragraph.split(". Python ")
    tested = set(re.findall(r"Python `(3\.\d+)`", tested_sentence))
    untested = set(re.findall(r"`(3\.\d+)`", untested_sentence))
    assert "not tested" in untested_sentence
    assert len(tested) == 1 and not tested & untested
    assert tested | untested == declared
    # python_requires starts at the oldest version the classifiers name.
    python_requires = SpecifierSet(_config()["options"]["python_requires"])
    lowest = min(map(Version, declared))
    assert lowest in python_requires
    assert Version(f"3.{lowest.minor - 1}") not in python_requires


def test_readme_names_the_minimum_versions_ci_runs():
    paragraph = _readme_section("Install").split("Tested versions:")[1].split("\n\n")[0]
    named = {
        canonicalize_name(name): Version(version)
        for name, version in re.findall(r"([A-Za-z][\w-]*) `(\d[\w.]*)`", paragraph)
    }
    pins = _minimums()
    for requirement in _install_requires():
        name = canonicalize_name(requirement.name)
        if requirement.name not in NOT_PINNED:
            assert named.get(name) == pins[name], name
    for name in ("pandas", "matplotlib"):
        assert named[name] == pins[name]
    # The torch CI runs is the CPU build .ci/run installs first.
    ci_run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert f"torch=={named['torch']}" in ci_run


# --------------------------------------------------------------------------
# Package data
# --------------------------------------------------------------------------


def _data_files():
    return sorted(
        path
        for folder in DATA_DIRS
        for path in (DATASETS / folder).iterdir()
        if path.is_file() and not path.name.startswith(".")
    )


def test_package_data_declares_every_bundled_table():
    package_data = _config()["options.package_data"]
    assert _data_files()
    for path in _data_files():
        package = f"cr_sklearn.datasets.{path.parent.name}"
        patterns = [p.strip() for p in package_data[package].split(",")]
        assert any(fnmatch.fnmatch(path.name, p) for p in patterns), path


# --------------------------------------------------------------------------
# The long description, the README's install lines
# --------------------------------------------------------------------------


def _setup_py():
    # Not run as __main__: setup() is not called.
    return runpy.run_path(str(ROOT / "setup.py"), run_name="setup")


def test_long_description_names_the_readme_s_files_without_linking_them():
    setup_py = _setup_py()
    readme = README.read_text(encoding="utf-8")
    relative = setup_py["RELATIVE_LINK"].findall(readme)
    assert relative, "the README links no file: nothing to check"
    for _, target in relative:
        assert (ROOT / target.split("#")[0]).is_file(), f"README links {target}"
    description = setup_py["long_description"](readme)
    assert setup_py["RELATIVE_LINK"].findall(description) == []
    for _, target in relative:
        assert f"`{target}`" in description
    # Absolute links stay links.
    absolute = re.findall(r"\]\((https://[^)\s]+)\)", readme)
    assert absolute
    assert re.findall(r"\]\((https://[^)\s]+)\)", description) == absolute


def test_readme_gives_a_user_s_install_line_beside_the_developer_s():
    install = _readme_section("Install")
    lines = [line.split("#")[0].strip() for line in install.splitlines()]
    torch_line = "pip install torch --index-url https://download.pytorch.org/whl/cpu"
    user = [i for i, line in enumerate(lines) if re.match(r'pip install "?cr-', line)]
    assert user and torch_line in lines[: user[0]]
    assert "pip install -e ." in lines
    # The name a user types is the project's.
    name = _config()["metadata"]["name"]
    assert canonicalize_name(name) == "cr-sklearn"


# --------------------------------------------------------------------------
# Citing, the changelog
# --------------------------------------------------------------------------


def test_citation_file_cites_this_version_and_the_readme_s_references():
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert citation["cff-version"] == "1.2.0"
    assert str(citation["version"]) == cr_sklearn.__version__
    assert citation["authors"] == [{"name": "the cr_sklearn developers"}]
    citing = _readme_section("Citing")
    bibtex = re.search(r"```bibtex\n(.*?)```", citing, re.S).group(1)
    version = re.search(r"version\s*=\s*\{(.*?)\}", bibtex).group(1)
    assert version == cr_sklearn.__version__
    assert re.search(r"title\s*=\s*\{(.*?)\},", bibtex).group(1) == citation["title"]
    references = {
        ref["identifiers"][0]["value"]: ref["title"] for ref in citation["references"]
    }
    assert set(references) == set(re.findall(r"\[`(arXiv:\d{4}\.\d{5})`\]", citing))
    for identifier, title in references.items():
        assert f'"{title}", [`{identifier}`]' in citing
    for ref in citation["references"]:
        assert ref["authors"] and ref["type"] and ref["year"] == 2026


def test_changelog_has_an_unreleased_section_and_this_version():
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## \[(.+?)\]", changelog, re.M)
    assert headings[0] == "Unreleased"
    assert cr_sklearn.__version__ in headings
    policy = changelog.split("## Deprecation policy")[1].split("\n## ")[0]
    assert "FutureWarning" in policy and "one minor release" in policy


# --------------------------------------------------------------------------
# The built sdist and wheel (slow)
# --------------------------------------------------------------------------

_BUILD = (
    "import sys\n"
    "from setuptools import build_meta\n"
    "name = getattr(build_meta, sys.argv[1])(sys.argv[2])\n"
    "print('built:', name)\n"
)


def _build(hook, out, cwd):
    result = subprocess.run(
        [sys.executable, "-c", _BUILD, hook, str(out)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    name = result.stdout.strip().splitlines()[-1].removeprefix("built: ")
    return out / name, result.stdout + result.stderr


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """The sdist built from the checkout and the wheel built from that sdist."""
    out = tmp_path_factory.mktemp("dist")
    sdist, sdist_log = _build("build_sdist", out, ROOT)
    unpacked = tmp_path_factory.mktemp("sdist")
    with tarfile.open(sdist) as archive:
        archive.extractall(unpacked, filter="data")
    (source,) = unpacked.iterdir()
    wheel, wheel_log = _build("build_wheel", out, source)
    return {"sdist": sdist, "wheel": wheel, "log": sdist_log + wheel_log}


@pytest.mark.slow
def test_build_declares_every_package(dist):
    assert "absent from the `packages` configuration" not in dist["log"]


@pytest.mark.slow
def test_wheel_holds_the_bundled_tables_and_loads_them(dist, tmp_path):
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        names = set(wheel.namelist())
        for path in _data_files():
            assert path.relative_to(ROOT).as_posix() in names
        for path in (ROOT / "cr_sklearn").rglob("*.py"):
            assert path.relative_to(ROOT).as_posix() in names
        assert not [n for n in names if n.startswith("tests/") or "__pycache__" in n]
        wheel.extractall(tmp_path / "site")
    # As a user sees it: the unpacked wheel alone, away from the checkout.
    code = (
        "import cr_sklearn\n"
        "from cr_sklearn.datasets import load_pima, load_wine_quality\n"
        "pima = load_pima()\n"
        "wine = load_wine_quality(color='both')\n"
        "print(cr_sklearn.__file__, pima.data.shape, wine.data.shape)\n"
        "assert 'Pima' in pima.DESCR and wine.DESCR\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path / "site")},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    location, rest = result.stdout.split(" ", 1)
    assert Path(location).is_relative_to(tmp_path / "site")
    assert "(768, 8)" in rest


@pytest.mark.slow
def test_metadata_long_description_has_no_relative_link(dist):
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        (metadata,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
        text = wheel.read(metadata).decode("utf-8")
    description = text.split("\n\n", 1)[1]
    setup_py = _setup_py()
    assert setup_py["RELATIVE_LINK"].findall(description) == []
    readme = README.read_text(encoding="utf-8")
    assert description.strip() == setup_py["long_description"](readme).strip()


def _source_files():
    """The files of the checkout that the sdist must hold."""
    if (ROOT / ".git").exists():
        listed = subprocess.run(
            ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.splitlines()
    else:  # an unpacked sdist: its own files
        listed = [
            p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*") if p.is_file()
        ]
    return {
        name
        for name in listed
        if (ROOT / name).is_file()
        and name != ".gitignore"
        and not re.search(r"__pycache__|\.egg-info/|^PKG-INFO$|^build/", name)
    }


@pytest.mark.slow
def test_sdist_holds_what_the_tests_read(dist):
    with tarfile.open(dist["sdist"]) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    missing = _source_files() - names
    assert not missing
    assert {"tests/conftest.py", "CITATION.cff", "CHANGELOG.md"} <= names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
