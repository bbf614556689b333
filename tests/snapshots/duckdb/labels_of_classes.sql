SELECT DISTINCT "__sqlclose_cls", "__sqlclose_q0", "__sqlclose_q1" FROM "t_audit" WHERE "__sqlclose_cls" IN (0, 4)
