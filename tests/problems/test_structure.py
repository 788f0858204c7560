"""problems/structure.py: a problem's structure is one frozen field given at construction, read
through the names builders used before it was one field."""
import dataclasses

import numpy as np
import pytest

from contactlab.errors import ProblemError
from contactlab.problems import LCP, BoxedLCP, MixedLCP, ProblemStructure


def test_a_structure_is_given_at_construction_and_read_through_the_old_names():
    labels = np.array([0, 0, 1], dtype=np.int64)
    s = ProblemStructure(row_groups={"normal": slice(0, 3)}, islands=(2, labels))
    for p in (BoxedLCP(np.eye(3), -np.ones(3), structure=s), LCP(np.eye(3), -np.ones(3), structure=s),
              BoxedLCP.trusted(np.eye(3), -np.ones(3), np.zeros(3), np.full(3, np.inf), structure=s),
              MixedLCP(np.eye(1), np.zeros((1, 3)), np.zeros((3, 1)), np.eye(3), np.zeros(1), -np.ones(3),
                       structure=s)):
        assert p.structure is s and p.islands is s.islands and p.row_groups is s.row_groups
        assert p.body_groups is None and p.factors is None
    bare = BoxedLCP(np.eye(3), -np.ones(3))
    assert bare.islands is None and bare.row_groups is None and bare.factors is None


def test_a_structure_is_frozen_and_an_old_name_written_replaces_it():
    """Writing ``problem.islands`` (as builders did) gives the problem a new structure with that part
    replaced; the structure it had, which another problem may share, is unchanged."""
    s = ProblemStructure(row_groups={"normal": slice(0, 2)})
    p, q = BoxedLCP(np.eye(2), -np.ones(2), structure=s), BoxedLCP(np.eye(2), np.ones(2), structure=s)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.islands = (1, np.zeros(2, dtype=np.int64))
    p.islands = (1, np.zeros(2, dtype=np.int64))
    assert p.structure is not s and p.structure.row_groups is s.row_groups and p.islands[0] == 1
    assert s.islands is None and q.islands is None


def test_a_structure_of_another_type_is_refused_naming_the_argument():
    with pytest.raises(ProblemError, match="structure must be a contactlab.problems.ProblemStructure"):
        BoxedLCP(np.eye(2), -np.ones(2), structure={"islands": None})
