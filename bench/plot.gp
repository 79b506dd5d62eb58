# The latency distribution of vybench's tiny dispatch (bench/README.md): one cumulative curve
# per side, read from the latency.dat that vybench writes (columns: fraction, vyred, backend
# in-process, raw Vulkan spinning, raw Vulkan sleeping on its fence; microseconds). bench/run.sh
# calls it as
#   gnuplot -e "datafile='DIR/latency.dat'; outfile='DIR/latency.png'" bench/plot.gp
if (!exists("datafile")) datafile = 'latency.dat'
if (!exists("outfile")) outfile = 'latency.png'

set terminal pngcairo size 1100,650 noenhanced font ",11"
set output outfile
set title "tiny dispatch round trip (64 u32, y = x + 1), cumulative distribution"
set xlabel "round trip (us, log scale)"
set ylabel "fraction of dispatches at or below"
set logscale x
set yrange [0:1]
set grid xtics mxtics ytics
set key bottom right
plot datafile using 2:1 with lines linewidth 2 title "vyred through libvyre, end to end", \
     datafile using 3:1 with lines linewidth 2 title "vyred's backend in-process", \
     datafile using 4:1 with lines linewidth 2 title "raw Vulkan submit + spin", \
     datafile using 5:1 with lines linewidth 2 title "raw Vulkan submit + fence wait"
