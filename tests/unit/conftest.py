"""Fixtures of the unit tests."""

from __future__ import annotations

import copy

import pytest
from support.builders import BACKEND, GLANCE


@pytest.fixture
def glance() -> dict:
    return copy.deepcopy(GLANCE)


@pytest.fixture
def backend() -> dict:
    return copy.deepcopy(BACKEND)
