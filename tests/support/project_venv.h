#pragma once

#include <string>

namespace tau::testing {

// The project's Python environment: TAU_TEST_VENV when set, else the
// source tree's .venv, which scripts/install-deps links to an environment
// built from scripts/venv-lock.txt (Ray, a CPU-usable PyTorch, the
// training and checkpoint libraries, pytest).
std::string ProjectVenv();

// ProjectVenv()/bin/NAME.
std::string ProjectVenvProgram(const std::string& name);

// Empty when every module in `modules` ("torch, peft") imports with the
// venv's Python; otherwise why not, with the end of install-deps' log
// (.venv/install.log) when it left one, for a GTEST_SKIP that says what
// to do.
std::string ProjectVenvLacks(const std::string& modules);

}  // namespace tau::testing
