#!/bin/sh
# echo_epoll with an actor's per-connection memory traffic, in the shape
# compare.py runs a second herd build: `--herd-b tools/connbench/epoll_footprint.sh`
# calls it as `--port P --workers N`. FP=STACK,HEAP (bytes touched per
# message; default 1536,512); ECHO_EPOLL overrides the binary.
# exec: the PID compare.py measures stays the server's.
[ "$1" = --port ] && [ "$3" = --workers ] || { echo "usage: $0 --port P --workers N" >&2; exit 2; }
bin=${ECHO_EPOLL:-$(dirname "$0")/../../build/tools/connbench/echo_epoll}
exec "$bin" --port "$2" --threads "$4" --footprint "${FP:-1536,512}"
