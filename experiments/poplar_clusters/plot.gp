# Simulated TFLOP/s per ZeRO stage, one panel per cluster: poplar, deepspeed, whale, each GPU type alone.
set terminal svg size 1200,420 font "sans,11"
set output out
set datafile separator ","
set multiplot layout 1,3
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel "TFLOP/s"
set xlabel "ZeRO stage"
set key below font ",9" # never over the bars
set yrange [0:*]
do for [c in "A B C"] {
  set title "cluster ".c
  plot sprintf("< grep '^%s,' %s", c, csv) using 3:xtic(2) title "poplar", '' using 4 title "deepspeed", \
       '' using 5 title "whale", '' using 7 title "type 1 alone", '' using 9 title "type 2 alone"
}
unset multiplot
