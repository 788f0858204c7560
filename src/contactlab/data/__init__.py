"""Data files shipped with contactlab (read at run time, installed with the package).

``fclib/``: frictional contact problems of record from FCLIB and Siconos (Apache-2.0; sources and
licence in ``fclib/README.md``), read by ``contactlab reproduce``'s ``fclib`` section, the FCLIB
benchmark and the tests."""
from __future__ import annotations

from pathlib import Path

from ..errors import ContactlabError

#: the folder of the shipped data files
ROOT = Path(__file__).resolve().parent


def path(*parts: str) -> Path:
    """The path of a shipped data file, e.g. ``path("fclib", "fclib_local_problem_test.hdf5")``;
    an error naming the file when it is not part of the installation."""
    target = ROOT.joinpath(*parts)
    if not target.is_file():
        raise ContactlabError(f"contactlab data file {'/'.join(parts)!r} is not installed "
                                  f"(looked in {ROOT}); reinstall contactlab")
    return target
