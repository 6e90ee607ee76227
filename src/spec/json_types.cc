#include "spec/json_types.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "spec/fields.h"

namespace tau::spec {
namespace {

using nlohmann::json;

// "the number 5", "true", "null", "an object", "a list".
std::string Described(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return "the number " + v.dump();
  if (v.is_string()) return "the string " + v.dump();
  if (v.is_array()) return "a list";
  return "an object";
}

Status Mismatch(const std::string& path, std::string_view expected, const FieldDoc& field, const json& got) {
  return InvalidArgumentError(
      fmt::format("spec.{}: expected {} ({}), got {}", path, expected, field.type_text, Described(got)));
}

Status Check(const std::string& path, const json& value) {
  const FieldDoc* field = FindField(path);
  if (!field) return Status::Ok();  // unknown: the decoder names it
  switch (field->type) {
    case FieldType::kObject:
      if (!value.is_object()) return Mismatch(path, "an object", *field, value);
      for (auto it = value.begin(); it != value.end(); ++it) {
        TAU_RETURN_IF_ERROR(Check(path + "." + it.key(), it.value()));
      }
      return Status::Ok();
    case FieldType::kInteger:
      if (!value.is_number_integer()) return Mismatch(path, "an integer", *field, value);
      return Status::Ok();
    case FieldType::kQuantity:
      if (!value.is_string() && !value.is_number()) return Mismatch(path, "a string or a number", *field, value);
      return Status::Ok();
    case FieldType::kString:
    case FieldType::kDuration:
    case FieldType::kEnum:
      if (!value.is_string()) return Mismatch(path, "a string", *field, value);
      return Status::Ok();
    case FieldType::kStringList:
      if (!value.is_array()) return Mismatch(path, "a list of strings", *field, value);
      for (size_t i = 0; i < value.size(); ++i) {
        if (!value[i].is_string()) {
          return Mismatch(fmt::format("{}[{}]", path, i), "a string", *field, value[i]);
        }
      }
      return Status::Ok();
    case FieldType::kStringMap:
      if (!value.is_object()) return Mismatch(path, "an object of strings", *field, value);
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (!it.value().is_string()) return Mismatch(path + "." + it.key(), "a string", *field, it.value());
      }
      return Status::Ok();
  }
  return Status::Ok();
}

}  // namespace

Status CheckSpecJsonTypes(const json& spec) {
  if (!spec.is_object()) return InvalidArgumentError(fmt::format("spec: expected an object, got {}", Described(spec)));
  for (auto it = spec.begin(); it != spec.end(); ++it) TAU_RETURN_IF_ERROR(Check(it.key(), it.value()));
  return Status::Ok();
}

}  // namespace tau::spec
