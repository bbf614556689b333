"""The release layer: the chosen generalization (``release.py``), its typed report
(``report.py``), the independent re-check of the written file (``verify.py``, ``verify_sql.py``) and
placing the release and its report on disk as a pair (``placing.py``; a stopped run's move settled
by ``recovery.py``)."""
