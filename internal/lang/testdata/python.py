#!/usr/bin/env python3
# -*- coding: utf-8 -*-
"""Billing helpers.

Everything here is pure.
"""
import os
import os.path as osp, sys
from . import sibling
from .. import parent_mod
from ..pkg.sub import (alpha, beta as b2)
from models import *
from __future__ import annotations

try:
    import json
except ImportError:  # pragma: no cover
    json = None

from typing import Protocol, TypeAlias
from enum import Enum, IntEnum

MAX_RETRIES = 3
TIMEOUT: float = 2.5
Amount: TypeAlias = "int | float"
type Currency = str
first, second = 1, 2
a = b = 0
MAX_RETRIES = 4  # a re-assignment is not a second symbol
if os.environ.get("DEBUG"):
    VERBOSE = True


class Color(Enum):
    RED = 1
    GREEN = 2


class Level(IntEnum):
    LOW = 0


class Store(Protocol):
    def save(self, item) -> None: ...


class Invoice(BaseModel, metaclass=ModelMeta):
    """An invoice.

    Attributes:
        total (int): Sum in cents.
    """

    currency = "EUR"

    def __init__(self, total):
        self.total = total  # stored in cents because floats lose pennies

    @property
    def vat(self):
        """Return the VAT share.

        Returns:
            int: The VAT in cents.
        """
        return compute_vat(self.total, rate=VAT_RATE)

    @staticmethod
    async def fetch(client, number: int) -> "Invoice":
        # TODO: retry on timeouts
        data = await client.get(f"/invoices/{number}")
        return Invoice(data["total"])

    class Meta:
        ordering = ["-id"]


def compute_vat(total, rate=0.2):
    """Compute VAT.

    Parameters
    ----------
    total : int
        Amount in cents.
    rate : float, optional
        The rate.

    Returns
    -------
    int
        The VAT in cents.

    Raises
    ------
    ValueError
        If total is negative.
    """
    if total < 0:
        raise ValueError("negative")
    # FIXME: rounding is wrong for negative totals
    return round(total * rate)


def render(invoice, *, template=None, **options):
    """Render an invoice.

    :param invoice: The invoice to render.
    :type invoice: Invoice
    :param str template: Template name.
    :returns: The HTML.
    :rtype: str
    :raises TemplateError: when the template is missing.
    """
    import jinja2  # imported here to keep startup fast

    def helper(x):
        return osp.join(x, template)

    # HACK: jinja2 caches templates globally, so we clear it
    # before every render.
    env = jinja2.Environment()
    env.cache.clear()
    # NOTE: the environment is cheap to build.

    # See #1234 for the cache story.

    # Rendering happens below.
    return helper(env.render(invoice, [line for line in invoice.lines]))


def legacy(value):
    """Convert a value.

    @param value: the value
    @type value: str
    @return: the converted value
    @rtype: int
    """
    return int(value)  # noqa: E501


def uses_shadowed_format(x):
    return format(x)


def format(x):  # shadows the builtin on purpose
    return str(x)


@decorators.register("vat")
def registered():
    pass
