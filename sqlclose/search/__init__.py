"""Lattice search algorithms. Incognito (LeFevre et al. 2005) is the one the papers use
(``sqlclose.search.incognito.incognito``). The package exports its result types only: exporting
the function too would hide the module of the same name (``import sqlclose.search.incognito as m``
would give the function, and a patch through it would change nothing)."""

from sqlclose.search.incognito import ProgressCallback, SearchProgress, SearchResult

__all__ = ["ProgressCallback", "SearchProgress", "SearchResult"]
