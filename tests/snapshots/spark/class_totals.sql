SELECT COALESCE(MAX(`__sqlclose_cls`) + 1, 0) AS classes, COALESCE(SUM(`__sqlclose_n`), 0) AS records, COUNT(*) AS pairs FROM `t_audit`
