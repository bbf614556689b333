"""The prepare layer: from a source and a spec to a validated, integer-coded problem — opening
sources (``sources.py``), the one scan and the lookup tables (``problem.py``), and the plan a run
would follow (``plan.py``)."""
