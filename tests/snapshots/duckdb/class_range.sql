SELECT "__sqlclose_cls", "__sqlclose_v", "__sqlclose_n" FROM "t_audit" WHERE "__sqlclose_cls" >= $1 AND "__sqlclose_cls" < $2
