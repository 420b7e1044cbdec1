"""vlamb_nb: reproduce and extend five papers on how VLMs handle ambiguity.

Importing the package is cheap on purpose: torch and transformers are imported only
when a model is built, so notebooks and the CLI start fast.
"""

from __future__ import annotations

__all__ = ["PAPERS", "RunRecord", "__version__", "compare", "get_benchmark", "list_benchmarks"]


def __getattr__(name: str):
    if name == "__version__":  # from the package metadata (pyproject.toml), the one place it is written
        from vlamb_nb.meta import package_version

        return package_version()
    if name == "PAPERS":  # the registry (vlamb_nb.benchmarks.PAPERS) itself: one list of papers, one meaning
        from vlamb_nb.benchmarks import PAPERS

        return PAPERS
    if name == "compare":  # vlamb_nb.compare(runs, ...): the module, callable as its compare(); loaded on first use
        import vlamb_nb.compare as _compare

        return _compare
    if name == "RunRecord":  # vlamb_nb.RunRecord.read(path): one run's record (vlamb_nb.record), loaded on first use
        from vlamb_nb.record import RunRecord

        return RunRecord
    raise AttributeError(f"module 'vlamb_nb' has no attribute {name!r}")


def get_benchmark(name: str):
    """Return the benchmark module registered under ``name`` (see ``vlamb_nb.benchmarks``)."""
    from vlamb_nb.benchmarks import get_benchmark as _get

    return _get(name)


def list_benchmarks() -> list[str]:
    """Names of the registered benchmarks."""
    from vlamb_nb.benchmarks import list_benchmarks as _list

    return _list()
