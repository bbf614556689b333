"""Search algorithms: Incognito (LeFevre et al. 2005), the lattice search the papers use, and
GAA (Mauger et al. 2023), the greedy multidimensional merge."""

from .gaa import STRATEGIES, GaaInput, GaaResult, fetch_gaa_input, gaa, release_mapping
from .incognito import SearchResult, incognito

__all__ = ["STRATEGIES", "GaaInput", "GaaResult", "SearchResult", "fetch_gaa_input", "gaa", "incognito",
           "release_mapping"]
