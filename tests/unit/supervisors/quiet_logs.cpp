// Crash reports are off in the supervisor tests unless a test captures them
// (sup_test::log_capture): a test that expects crashes should not fill the
// output with them.
#include <herd/actors/logger.hpp>

namespace {
const bool quiet = (herd::set_logging(false), true);
}
