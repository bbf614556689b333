"""Lattice search algorithms. Incognito (LeFevre et al. 2005) is the one the papers use."""

from .incognito import ProgressCallback, SearchProgress, SearchResult, incognito

__all__ = ["ProgressCallback", "SearchProgress", "SearchResult", "incognito"]
