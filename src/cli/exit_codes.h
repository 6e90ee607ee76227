#pragma once

namespace tau::cli {

// Exit codes of every `tau` command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the command ran and something failed
inline constexpr int kExitUsage = 2;    // bad arguments or an invalid spec

}  // namespace tau::cli
