SELECT * FROM "t_large" AS "big" WHERE "big"."cid" >= $1 AND "big"."cid" < $2
