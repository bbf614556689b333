SELECT * FROM `t_large` AS `big` WHERE `big`.`cid` >= :p1 AND `big`.`cid` < :p2
