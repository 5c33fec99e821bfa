// What a whole response and a streamed one write alike: the status line, the
// handler's headers minus the framing ones, the Connection header.
#pragma once
#include <herd/http/request.hpp>
#include <herd/http/response.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace herd::http::detail {

void append_number(std::string& out, std::size_t n, int base = 10);
// 1xx, 204 and 304 carry no body and no framing (RFC 9112 6.3).
inline bool bodiless(int status) { return (status >= 100 && status < 200) || status == 204 || status == 304; }
// Out-of-range statuses become 500.
inline int checked_status(int status) { return status >= 100 && status <= 999 ? status : 500; }
// Status line, headers, Connection; no framing header, no blank line.
void write_head(std::string& out, int status, const std::vector<header>& headers, const write_options& o);

}  // namespace herd::http::detail
