"""Each paper's released data, fetched once into the data home and verified (``vlamb-nb data fetch``).

:mod:`.catalog` says what each release is (sources, checksums, counts, metric models); :mod:`.fetch` downloads or
imports it and reports what is there. Reading a fetched release is :mod:`vlamb_nb.datahome`'s job.
"""

from __future__ import annotations

from vlamb_nb.releases.catalog import RELEASES, Release, release
from vlamb_nb.releases.fetch import fetch, status

__all__ = ["RELEASES", "Release", "fetch", "release", "status"]
