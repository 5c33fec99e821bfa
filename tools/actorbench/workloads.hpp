// The actorbench workloads. Each runs inside the root process of a node and
// prints its RESULT line(s).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace actorbench {

struct config {
  std::string workload;
  std::vector<uint64_t> args;
  unsigned workers = 2;
  bool hibernate = false;
  uint64_t busy_wait_us = 0;  // node_options::busy_wait
  bool compact = false;       // deferred_calls: the callers are spawned with compact_stack
};

// Runs in the root process.
void run_workload(const config& c);
// workloads_failure.cpp: call, restart. False if c.workload is not one of them.
bool run_failure_workload(const config& c);
// workload_fanout.cpp: runs its own nodes (1 worker, then c.workers); the exit status.
int run_fanout(const config& c);
// workloads_relations.cpp: forkjoin_monitor, links, monitors, deferred_calls.
bool run_relations_workload(const config& c);
// workload_table.cpp: parses its own arguments (argv[1] is "table"), runs its node.
int run_table(int argc, char** argv);
// workload_pg.cpp: pg_fanout and pg_join, the same way.
int run_pg_fanout(int argc, char** argv);
int run_pg_join(int argc, char** argv);
// Printed on every RESULT line.
std::string common_keys(const config& c);

}  // namespace actorbench
