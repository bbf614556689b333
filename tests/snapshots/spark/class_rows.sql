SELECT big.cid AS cid, lv.key % 10 AS sa, lv.n AS n FROM `t_prev` AS lv JOIN `t_large` AS big ON lv.node = big.node AND lv.key DIV 10 = big.cls AND TRUE WHERE `big`.`cid` >= :p1 AND `big`.`cid` < :p2
