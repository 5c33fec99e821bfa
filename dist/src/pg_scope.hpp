// herd::pg scopes shared with other nodes over OTP pg's protocol (OTP 25):
// one process per scope, registered under the scope's name, so that a BEAM
// scope's {discover, Pid} sent to {Scope, Node} reaches it. See pg_scope.cpp.
#pragma once

namespace herd::dist::detail {

// From start(), once distribution runs: a process that starts a scope
// process for every pg scope there is and for each one made later.
void start_pg_sync();
// From stop(), before the connections close: every scope process ends (the
// other nodes' members leave the local lists), and new scopes stay local.
void stop_pg_sync();

}  // namespace herd::dist::detail
