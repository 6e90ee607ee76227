#pragma once

// What the record of a job (its capsule, its submit command, tau status)
// shows of values that may be secrets. Redacting is idempotent: a redacted
// text comes out unchanged.

#include <string>
#include <string_view>
#include <vector>

namespace tau::evidence {

inline constexpr std::string_view kRedacted = "<redacted>";

// `text` with the password of every credential in a URL replaced:
// "https://user:hunter2@host/x" -> "https://user:<redacted>@host/x". Only
// URLs with a scheme ("SCHEME://") are recognised; a user name without a
// password is kept.
std::string RedactUrlCredentials(std::string_view text);

// The value an environment variable shows in the record: <redacted> for a
// secret name (IsSecretEnvName), else the value with URL passwords
// redacted.
std::string RedactEnvValue(std::string_view name, std::string_view value);

// A command line (words as POSIX sh splits them) as recorded: the value of
// every word NAME=VALUE or PATH.NAME=VALUE with a secret NAME (as in
// `--set runtime.env.HF_TOKEN=...`, also written `--set=...`), of a flag
// with a secret name (`--api-key X`, `--api-key=X`), of a secret NAME in a
// flow mapping (`--set 'runtime.env={HF_TOKEN: X}'`), and URL passwords
// anywhere become <redacted>, exactly as the environment shows them.
std::string RedactCommandLine(std::string_view command);

// Program arguments (run.args) as recorded, by the same rules as the words
// of RedactCommandLine: `--token=X` and the word after `--token` become
// <redacted>, and so do URL passwords.
std::vector<std::string> RedactArgs(const std::vector<std::string>& args);

}  // namespace tau::evidence
