#pragma once

// A cancel the database could not record (a full disk), kept in a small
// file of the job's folder, so that a daemon restarted before the database
// records it still honours it (see JobManager::Cancel and Recover).
//
// The file (shims/ID/cancel-request, out of the job's folder) is made, with
// room for its one record, when the job's folder is prepared; keeping a
// cancel rewrites it in place, which needs no new blocks on a full disk.

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "common/tau_home.h"

namespace tau::server {

// Makes the job's cancel-request file (and its folder), keeping nothing yet.
Status ReserveCancelRequest(const TauHome& home, const std::string& id);
// Records, durably (fdatasync), that the cancel of the job's attempt
// `attempt` was asked for. Makes the file when it is missing (a job
// prepared before this file existed), which a full disk may refuse.
Status KeepCancelRequest(const TauHome& home, const std::string& id, int64_t attempt);
// The attempt whose cancel the job's file keeps; nullopt when it keeps
// none (or there is no file).
std::optional<int64_t> KeptCancelRequest(const TauHome& home, const std::string& id);

}  // namespace tau::server
