#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cli/api_client.h"
#include "common/result.h"
#include "common/tau_home.h"

namespace tau::cli {

// What TAU_HOME/server.json says about the local server, when it exists.
struct LocalServerInfo {
  int64_t pid = 0;
  std::string url;
  std::string listen;  // ADDR:PORT it listens on ("" from an older taugridd)
};
std::optional<LocalServerInfo> ReadServerJson(const TauHome& home);

// Finds the server to talk to: TAU_SERVER (with TAU_TOKEN) when set, else
// the local one under TAU_HOME. A local server that holds TAU_HOME's lock
// but is slow to answer is waited for, never replaced. When no local
// server runs and `start_if_needed` is set, starts taugridd fully detached (own session,
// output to TAU_HOME/server.log, no inherited descriptors), says so on
// stderr, and waits until it answers.
Result<ServerEndpoint> ConnectToServer(bool start_if_needed);

// Whether a taugridd holds `home`'s lock now (it is running, answering or
// not).
bool DaemonHoldsLock(const TauHome& home);
// Waits (TAU_CONNECT_PATIENCE, default 30s) for the taugridd that holds
// the lock to answer; Unavailable, naming it busy, when it does not.
Result<ServerEndpoint> WaitForBusyServer(const TauHome& home);

// Starts taugridd for `home` in the background and waits until it
// answers; returns its pid.
Result<int64_t> StartBackgroundServer(const TauHome& home, const std::vector<std::string>& daemon_args = {});

// Path of the taugridd binary: beside this tau, else on PATH.
std::string TaugriddPath();

}  // namespace tau::cli
