#include "cli/portal_command.h"

#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>

#include "cli/api_client.h"
#include "cli/command_support.h"
#include "cli/connect.h"
#include "cli/exit_codes.h"

extern char** environ;

namespace tau::cli {

int RunPortal(bool open_browser) {
  auto endpoint = ConnectToServer(/*start_if_needed=*/true);
  if (!endpoint.ok()) return Fail(endpoint.error());
  const std::string url = endpoint->url + "/login?token=" + UrlEscape(endpoint->token);
  std::printf("%s\n", url.c_str());
  std::fflush(stdout);
  // Open it where a desktop session is; otherwise the printed address is
  // for a browser elsewhere (through an SSH tunnel to the port).
  if (open_browser && (std::getenv("DISPLAY") || std::getenv("WAYLAND_DISPLAY"))) {
    pid_t pid = 0;
    const char* argv[] = {"xdg-open", url.c_str(), nullptr};
    if (posix_spawnp(&pid, "xdg-open", nullptr, nullptr, const_cast<char* const*>(argv), environ) == 0) {
      int status = 0;
      waitpid(pid, &status, 0);
    }
  }
  return kExitOk;
}

}  // namespace tau::cli
