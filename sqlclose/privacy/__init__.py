"""The privacy layer: distances (EMD and others) and criteria (k, p, l-diversity, t-closeness),
judged per class, vectorized over all classes of a node. numpy only: it knows nothing of SQL or
the search. A new privacy model is one new class in ``criteria.py`` plus its line in
``sensitive_criteria``."""
