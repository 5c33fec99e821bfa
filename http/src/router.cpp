#include <herd/http/router.hpp>

namespace herd::http {

std::optional<std::string_view> bindings::get(std::string_view name) const {
  for (const auto& [k, v] : values)
    if (k == name) return std::string_view(v);
  return std::nullopt;
}

namespace {
// The next '/'-separated segment of *s (s starts after a '/'), consumed.
std::string_view next_segment(std::string_view& s) {
  auto slash = s.find('/');
  std::string_view seg = s.substr(0, slash);
  s = slash == std::string_view::npos ? std::string_view() : s.substr(slash);
  return seg;
}
}  // namespace

bool match_pattern(std::string_view pattern, std::string_view path, bindings* out) {
  std::size_t bound = out ? out->values.size() : 0;
  auto fail = [&] {
    if (out) out->values.resize(bound);
    return false;
  };
  // Segment by segment: both must start with '/' at each step and end together.
  while (!pattern.empty() || !path.empty()) {
    if (pattern.empty() || path.empty() || pattern[0] != '/' || path[0] != '/') return fail();
    pattern.remove_prefix(1);
    path.remove_prefix(1);
    std::string_view want = next_segment(pattern);
    std::string_view got = next_segment(path);
    if (!want.empty() && want[0] == ':') {
      if (got.empty()) return fail();
      if (out) out->values.emplace_back(std::string(want.substr(1)), std::string(got));
    } else if (want != got) {
      return fail();
    }
  }
  return true;
}

}  // namespace herd::http
