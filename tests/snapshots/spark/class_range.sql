SELECT `__sqlclose_cls`, `__sqlclose_v`, `__sqlclose_n` FROM `t_audit` WHERE `__sqlclose_cls` >= :p1 AND `__sqlclose_cls` < :p2
