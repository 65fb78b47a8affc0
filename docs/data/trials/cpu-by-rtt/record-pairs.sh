#!/bin/bash
# Alternate recordings of each analysis on lan-ssd and on the WAN at 50 ms: does its CPU grow with the RTT?
cd "$(git rev-parse --show-toplevel)"  # a checkout after make study (its data/files)
for i in 1 2 3; do
 for a in rdf uproot; do
  for s in lan-ssd docs/data/trials/cpu-by-rtt/wan-rtt50.yaml; do
   n=$(basename $s .yaml)
   .venv/bin/instore record --warm-up 1 --site $s --protocol xrootd --file data/files/nano256-ordered-r0.root --out docs/data/trials/cpu-by-rtt/pairs/$a-$n-$i -- .venv/bin/python analyses/agc_ttbar_$a.py --tree Events > /dev/null 2>>record-pairs.err
  done
 done
done
