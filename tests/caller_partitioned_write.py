"""A caller's partitioned write at a memory limit that makes it spill: the spec, the caller's table and the
private database's room shared by the tests of its spilling (test_caller_no_spill.py) and of its spill's
disk (test_caller_spill_disk.py)."""

PARTS = 8
SPEC = {"privacy": {"k": 2}, "quasi_identifiers": {"g": {"tree": {"all": [str(i) for i in range(PARTS)]}}},
        "sensitive": {"s": {"distinct_l": 2}}, "others": "keep"}
# the private database's limit: room for the partitions' buffers, not for the whole release (at it, the
# write spills: tests/test_caller_no_spill.py::test_at_this_limit_a_callers_partitioned_write_spills)
ROOM = "32000000B"
TABLE = (f"CREATE TABLE t AS SELECT (i % {PARTS})::VARCHAR AS g, (i % 3)::VARCHAR AS s, md5(i::VARCHAR) AS h, "
         f"i AS n FROM range(250000) r(i)")
