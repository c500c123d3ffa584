# Simulated samples/s per model and memory limit: osdp, ZeRO-3 everywhere, plain data parallel (0: does not fit).
set terminal svg size 900,420 font "sans,11"
set output out
set datafile separator ","
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel "samples/s"
set key outside right top # never over the bars
set yrange [0:*]
set xtics rotate by -20
plot csv skip 1 using 4:xtic(sprintf("%s %s GiB", strcol(1), strcol(3))) title "osdp", \
     '' skip 1 using 5 title "ZeRO-3 everywhere", '' skip 1 using ($6) title "data parallel"
