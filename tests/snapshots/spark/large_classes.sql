SELECT c.node AS node, c.cls AS cls, ROW_NUMBER() OVER (ORDER BY c.node, c.cls) - 1 AS cid FROM `t_sizes` AS c JOIN `t_running` AS running ON c.node = running.node WHERE c.size >= 3
