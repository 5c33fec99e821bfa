// The node's logger: asynchronous, bounded, and never woken per report.
//
//   herd::log_report("supervisor <0.3>: child \"db\" <0.7> exited: killed; restarted as <0.9>");
//
// A report is copied into a fixed ring of 4,096 slots of 512 bytes (2 MiB of zero pages until a storm touches them) (lock-free, multi-
// producer; a report longer than a slot is truncated) and log_report returns:
// it never blocks, never makes a syscall on the common path and never
// allocates. When the ring is full the report is dropped and counted; the
// next batch written says how many were lost.
//
// One logger thread (never a herd worker) writes the ring out. It sleeps until
// the first report after an idle period wakes it (one futex wake; later
// reports do not wake it again), waits 10 ms so that whatever follows is
// written in the same batch, writes everything with as few write(2)s as the
// batch needs, and goes back to sleep — so it flushes at most every 10 ms and
// an idle node costs it no CPU. The thread starts with the first report.
//
// Output: stderr by default, a file after set_log_file, nothing after
// set_logging(false). Each line is "[herd HH:MM:SS.mmm] <report>" (UTC wall
// time at the report).
#pragma once
#include <herd/actors/pid.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace herd {

// Any thread, any process. Never blocks; drops (and counts) when full.
void log_report(std::string_view text) noexcept;

// Any thread that is not a herd worker (it opens a file; the switch waits for
// a batch being written). Appends to `path` from now on; false if it cannot
// be opened (the previous destination stays).
bool set_log_file(const std::string& path);
// Any thread that is not a herd worker. Back to stderr.
void set_log_stderr();
// Any thread. Off: reports are discarded (not counted as dropped).
void set_logging(bool on) noexcept;
bool logging_enabled() noexcept;

struct logger_stats {
  uint64_t reported = 0;   // taken into the ring
  uint64_t written = 0;    // lines written out (or discarded while the sink was off)
  uint64_t dropped = 0;    // lost because the ring was full
  uint64_t batches = 0;    // flushes (each one write(2) per 64 KiB of text)
  uint64_t wakeups = 0;    // times a report woke the sleeping logger thread
  uint64_t ring_resident_bytes = 0;  // of the ring's 2 MiB: pages read but not yet given back (mincore)
};
// Any thread.
logger_stats log_stats() noexcept;

// Any thread that is not a herd worker (tests, the end of main): waits until
// every report made before the call has been written, up to 2 s. On a worker
// it returns at once (a worker must not wait for I/O).
void log_flush();

// Any thread: how reports name a process — "<i.g>", plus " (name)" when it is
// alive and registered.
std::string process_label(pid p);

}  // namespace herd
