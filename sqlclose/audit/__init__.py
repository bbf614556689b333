"""The audit layer: measuring any table as it is — its classes (``tables.py``), every privacy
model and the attacks (``check.py``), and the sign-off page (``html.py``)."""
