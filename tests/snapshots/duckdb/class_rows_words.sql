SELECT big.cid AS cid, lv.key % 10 AS sa, lv.n AS n FROM "t_prev" AS lv JOIN "t_large2" AS big ON lv.node = big.node AND lv.key // 10 = big.cls AND "lv"."key1" = "big"."key1"
