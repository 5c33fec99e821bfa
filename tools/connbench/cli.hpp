// Command-line and start-up helpers shared by the load generators
// (connbench, pushbench): strict number parsing, the 127.0.0.x source
// addresses and binding to them, and the file-descriptor limit check. Each program defines
// usage_error (its own usage text, exit 2).
#pragma once
#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <vector>

namespace connbench {

[[noreturn]] void usage_error(const std::string& msg);

// A number in [lo, hi], else usage_error naming `opt`.
double parse_num(const std::string& opt, const char* v, double lo, double hi);
// An integer in [lo, hi], else usage_error naming `opt`.
int parse_int(const std::string& opt, const char* v, long lo, long hi);
// 127.0.0.1 .. 127.0.0.k: spreading connections over k sources gives each
// its own ephemeral port range.
std::vector<in_addr> loopback_sources(int k);
// Binds a socket about to connect to sources[n % size], the port left to
// connect() (IP_BIND_ADDRESS_NO_PORT), so that one port can serve every
// source; does nothing when `sources` is empty. False when bind fails.
bool bind_source(int fd, const std::vector<in_addr>& sources, uint64_t n);
// Raises the soft fd limit to the hard one when needed; exits 2 with what
// to raise when even the hard limit is under `need` (failing at connection
// 19,990 is worse). `prog` names the program in the message.
void check_fd_limit(const char* prog, long need);

}  // namespace connbench
