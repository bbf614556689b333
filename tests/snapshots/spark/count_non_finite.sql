SELECT COUNT(*) AS n FROM `t_floats` WHERE ISNAN(`x`) OR ABS(`x`) = CAST('Infinity' AS DOUBLE)
