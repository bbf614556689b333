"""The process's in-memory DuckDB database, which every engine without settings of its own runs on.

A database of its own costs an engine ~25 ms before its first statement (DuckDB builds its catalog
of functions anew) and ~5 ms to close; a connection to a database already made costs ~0.01 ms. A
job, a sweep's point or a check of a release each made one: an API caller running many small jobs
paid it on every one. An engine runs on a connection (a cursor) of its own to the shared database:
its temporary tables, registered tables and ``SET`` settings of the session are its own and go when
the connection closes; what is the database's (an attached database, a table of ``main``, the
``threads`` setting) the engine undoes itself (``DuckDBEngine.close``, ``_one_thread``).
"""

from __future__ import annotations

import ctypes
import os
import threading

import duckdb

_lock = threading.Lock()
_database: duckdb.DuckDBPyConnection | None = None
# ``SET threads`` is the database's, not a connection's: a write that runs on one thread holds this
# lock from the change to its undoing, so that two jobs in threads of one process take turns (else
# the first's undoing put the threads back under the second's write, its files' bytes then following
# the threads' timing).
threads_lock = threading.RLock()


def shared_connection() -> duckdb.DuckDBPyConnection:
    """A new connection of its own to the process's shared in-memory database (made on first use,
    and anew when DuckDB has invalidated it: after a fatal error every statement on it fails, and
    every later job of the process had failed with it)."""
    global _database
    with _lock:
        if _database is None:
            _database = duckdb.connect()
        cursor = _database.cursor()
        try:
            cursor.execute("SELECT 1").fetchall()
        except duckdb.FatalException:
            cursor.close()
            _database = duckdb.connect()  # the old one is left to its open connections, never used again
            cursor = _database.cursor()
        return cursor


def close_shared() -> None:
    """Closes the process's shared database (its spill files go with it); the next engine makes a new
    one. Connections still open keep it alive until they close."""
    global _database
    with _lock:
        if _database is not None:
            _database.close()
            _database = None


def _forget_in_child() -> None:
    """A forked child makes a database of its own. The parent's, copied without its threads, is never
    used nor closed there: closing it would wait for threads the child does not have. The reference
    taken here is never given back, so that not even the interpreter's exit closes it. The locks are
    new too: a thread of the parent's may have held one, and it is not in the child to let it go."""
    global _database, _lock, threads_lock
    _lock, threads_lock = threading.Lock(), threading.RLock()
    if _database is not None:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(_database))
        _database = None


os.register_at_fork(after_in_child=_forget_in_child)
