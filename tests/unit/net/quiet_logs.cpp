// Listener reports (EMFILE, crashed connections) are off in the net tests:
// tests that provoke them check counters instead.
#include <herd/actors/logger.hpp>

namespace {
const bool quiet = (herd::set_logging(false), true);
}
