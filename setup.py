"""Build script: the metadata is in setup.cfg; this adds the long description.

The long description is README.md with each relative link turned into plain
text naming the file: on the package index a link such as
``docs/user_guide/tau.rst`` would point nowhere, and the project has no public
URL to make it absolute. Links with a scheme (``https://...``) are kept.
"""

import re
from pathlib import Path

# [text](target) where target has no scheme and is not an in-page anchor.
RELATIVE_LINK = re.compile(r"\[([^\]\n]+)\]\((?![a-zA-Z][\w+.-]*:|#)([^)\s]+)\)")


def _plain(match):
    text, target = match.group(1), match.group(2)
    if text.strip("`") == target:
        return f"`{target}`"
    return f"{text} (`{target}`)"


def long_description(readme):
    """Return the README's Markdown with its relative links as plain text."""
    return RELATIVE_LINK.sub(_plain, readme)


if __name__ == "__main__":
    from setuptools import setup

    readme = Path(__file__).with_name("README.md").read_text(encoding="utf-8")
    setup(long_description=long_description(readme))
