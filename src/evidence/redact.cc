#include "evidence/redact.h"

#include <cctype>
#include <regex>
#include <vector>

#include "common/strings.h"
#include "evidence/file_list.h"

namespace tau::evidence {
namespace {

bool IsSchemeChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
}

bool EndsAuthority(char c) {
  return c == '/' || c == '?' || c == '#' || std::isspace(static_cast<unsigned char>(c)) || c == '"' || c == '\'';
}

// A word of a command line: its text in the command, and the word sh
// would pass (quotes and backslashes removed).
struct Word {
  size_t begin = 0;
  size_t end = 0;
  std::string text;
};

std::vector<Word> SplitWords(std::string_view command) {
  std::vector<Word> words;
  size_t i = 0;
  while (i < command.size()) {
    while (i < command.size() && std::isspace(static_cast<unsigned char>(command[i]))) ++i;
    if (i >= command.size()) break;
    Word w;
    w.begin = i;
    char quote = 0;
    for (; i < command.size(); ++i) {
      char c = command[i];
      const bool escapable_next = i + 1 < command.size() && std::string_view("\"\\$`").find(command[i + 1]) != std::string_view::npos;
      if (quote == '\'') {
        if (c == '\'') {
          quote = 0;
        } else {
          w.text += c;
        }
      } else if (quote == '"') {
        if (c == '"') {
          quote = 0;
        } else if (c == '\\' && escapable_next) {
          w.text += command[++i];
        } else {
          w.text += c;
        }
      } else if (c == '\'' || c == '"') {
        quote = c;
      } else if (c == '\\' && i + 1 < command.size()) {
        w.text += command[++i];
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        break;
      } else {
        w.text += c;
      }
    }
    w.end = i;
    words.push_back(std::move(w));
  }
  return words;
}

// The name a flag word ("--api-key", "-k") names, without its dashes; ""
// for a word that is not a flag.
std::string_view FlagName(std::string_view word) {
  if (word.size() < 2 || word[0] != '-') return "";
  word.remove_prefix(word[1] == '-' ? 2 : 1);
  return word;
}

// Where the secret value in `word` starts, or npos when it holds none.
size_t SecretValueStart(std::string_view word) {
  size_t from = 0;
  if (!FlagName(word).empty()) {
    size_t eq = word.find('=');
    if (eq == std::string_view::npos) return std::string_view::npos;
    if (IsSecretEnvName(FlagName(word.substr(0, eq)))) return eq + 1;  // --api-key=X
    from = eq + 1;  // --set=PATH=VALUE
  }
  std::string_view rest = word.substr(from);
  size_t eq = rest.find('=');
  if (eq == std::string_view::npos || eq == 0) return std::string_view::npos;
  std::string_view key = rest.substr(0, eq);
  size_t dot = key.rfind('.');
  std::string_view name = dot == std::string_view::npos ? key : key.substr(dot + 1);
  return IsSecretEnvName(name) ? from + eq + 1 : std::string_view::npos;
}

// `text` with the value of every `NAME: VALUE` pair whose NAME is secret
// redacted, as in a YAML or JSON flow mapping (`{HF_TOKEN: x, LR: 1}`).
std::string RedactMappingValues(const std::string& text) {
  static const std::regex kPair(R"re((["']?)([A-Za-z_][A-Za-z0-9_.-]*)\1[ \t]*:[ \t]*("[^"]*"|'[^']*'|[^,{}\[\]]*))re");
  std::string out;
  size_t copied = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kPair); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    if (!IsSecretEnvName(m.str(2)) || m.length(3) == 0) continue;
    const size_t value = static_cast<size_t>(m.position(3));
    out.append(text, copied, value - copied);
    out.append(kRedacted);
    copied = value + static_cast<size_t>(m.length(3));
  }
  out.append(text, copied);
  return out;
}

}  // namespace

std::string RedactUrlCredentials(std::string_view text) {
  std::string out;
  size_t copied = 0;
  size_t pos = 0;
  while ((pos = text.find("://", pos)) != std::string_view::npos) {
    size_t scheme = pos;
    while (scheme > 0 && IsSchemeChar(text[scheme - 1])) --scheme;
    const size_t authority = pos + 3;
    size_t end = authority;
    while (end < text.size() && !EndsAuthority(text[end])) ++end;
    pos = authority;
    if (scheme == pos - 3) continue;  // no scheme before "://"
    std::string_view auth = text.substr(authority, end - authority);
    size_t at = auth.rfind('@');
    if (at == std::string_view::npos) continue;
    size_t colon = auth.substr(0, at).find(':');
    if (colon == std::string_view::npos) continue;
    out.append(text.substr(copied, authority + colon + 1 - copied));
    out.append(kRedacted);
    copied = authority + at;
    pos = end;
  }
  out.append(text.substr(copied));
  return out;
}

std::string RedactEnvValue(std::string_view name, std::string_view value) {
  return IsSecretEnvName(name) ? std::string(kRedacted) : RedactUrlCredentials(value);
}

std::string RedactCommandLine(std::string_view command) {
  std::vector<Word> words = SplitWords(command);
  std::string out;
  size_t copied = 0;
  bool after_secret_flag = false;
  for (const Word& w : words) {
    size_t start = after_secret_flag ? 0 : SecretValueStart(w.text);
    after_secret_flag = false;
    if (!FlagName(w.text).empty() && w.text.find('=') == std::string::npos && IsSecretEnvName(FlagName(w.text))) {
      after_secret_flag = true;  // --api-key VALUE
    }
    if (start == std::string::npos) {
      // A flow mapping holding secrets: --set 'runtime.env={HF_TOKEN: x}'.
      std::string redacted = RedactMappingValues(w.text);
      if (redacted == w.text) continue;
      out.append(command.substr(copied, w.begin - copied));
      out.append(ShellQuote(redacted));
      copied = w.end;
      continue;
    }
    if (start >= w.text.size()) continue;  // nothing to hide
    if (std::string_view(w.text).substr(start) == kRedacted) continue;
    out.append(command.substr(copied, w.begin - copied));
    if (start > 0) out.append(ShellQuote(std::string_view(w.text).substr(0, start)));
    out.append(kRedacted);
    copied = w.end;
  }
  out.append(command.substr(copied));
  return RedactUrlCredentials(out);
}

std::vector<std::string> RedactArgs(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  out.reserve(args.size());
  bool after_secret_flag = false;
  for (const std::string& arg : args) {
    size_t start = after_secret_flag ? 0 : SecretValueStart(arg);
    after_secret_flag = !FlagName(arg).empty() && arg.find('=') == std::string::npos && IsSecretEnvName(FlagName(arg));
    if (start == std::string::npos) {
      out.push_back(RedactUrlCredentials(RedactMappingValues(arg)));
    } else if (start >= arg.size()) {
      out.push_back(arg);
    } else {
      out.push_back(arg.substr(0, start) + std::string(kRedacted));
    }
  }
  return out;
}

}  // namespace tau::evidence
