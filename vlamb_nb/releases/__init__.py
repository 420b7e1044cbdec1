"""Each paper's released data, fetched once into the data home and verified (``vlamb-nb data fetch``).

:mod:`.catalog` gathers what each release is from the papers (each paper's ``data.py`` declares its ``RELEASE``);
:mod:`.fetch` downloads or imports it and reports what is there, through :mod:`.transfer` (every byte: retries,
resume, size limits, stalls, Ctrl-C) and :mod:`.folder` (one writer, one folder per revision, names kept inside).
Reading a fetched release is :mod:`vlamb_nb.datahome`'s job.
"""

from __future__ import annotations

from vlamb_nb.release_spec import Release
from vlamb_nb.releases.catalog import release, releases
from vlamb_nb.releases.fetch import FetchInterrupted, fetch, status

__all__ = ["FetchInterrupted", "Release", "fetch", "release", "releases", "status"]
