#pragma once

namespace tau::cli {

// tau portal [--no-open]: prints the portal's sign-in address (with the
// token) and, when a desktop is there, opens it in the browser.
int RunPortal(bool open_browser);

}  // namespace tau::cli
