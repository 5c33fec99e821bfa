module herd/httpbench/peer

go 1.19
