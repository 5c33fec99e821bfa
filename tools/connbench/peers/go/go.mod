module herd/connbench/echo

go 1.19
