// The header of a GGUF file (llama.cpp's model format): its metadata and its tensors' names,
// shapes, types and exact sizes, read without reading the weights.
//
// Layout (ggml include/gguf.h and src/gguf.cpp, GGUF versions 2 and 3, little-endian): the magic
// "GGUF", a u32 version, u64 tensor and metadata counts; each metadata pair a string key (u64
// length + bytes), a u32 value type and its value (arrays: u32 element type, u64 count,
// elements); then per tensor a name, a u32 dimension count (at most 4), u64 dimensions, a u32
// ggml type and a u64 offset into the data that follows. Version 1 (u32 counts, 2023) and
// big-endian files are refused with a reason.
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace vramsim::workloads {

// One ggml tensor type: its name and block layout (ggml/src/ggml.c type_traits: weights per block
// and bytes per block, ggml-common.h's block structs).
struct GgmlType {
  const char* name;
  std::int64_t block_weights;
  std::int64_t block_bytes;
};
// The ggml type with this id (ggml.h enum ggml_type); nullopt for an id no GGUF file holds.
std::optional<GgmlType> ggml_type(std::uint32_t id);

// A metadata value. Numbers of every width come as `number` (integers exactly up to 2^53);
// arrays keep their element type and length, and their elements only when they are numbers (bools
// as 0 and 1) and at most kKeptArrayElements of them (per-layer head counts, say; not a
// tokenizer's vocabulary).
struct GgufValue {
  enum class Kind { Number, Bool, String, Array };
  Kind kind = Kind::Number;
  bool integer = false;  // a number of an integer type
  double number = 0;
  bool flag = false;
  std::string text;
  std::uint32_t element_type = 0;  // arrays: the gguf_type of the elements
  std::uint64_t length = 0;        // arrays: the element count
  std::vector<double> numbers;     // arrays of numbers, when kept
};
inline constexpr std::uint64_t kKeptArrayElements = 65536;

struct GgufTensor {
  std::string name;
  std::vector<std::int64_t> dims;  // ggml order: dims[0] is the row length
  std::uint32_t type = 0;
  double elements = 0;
  double bytes = 0;  // elements / block_weights x block_bytes
};

struct GgufHeader {
  std::uint32_t version = 0;
  std::map<std::string, GgufValue> metadata;
  std::vector<GgufTensor> tensors;

  const GgufValue* find(const std::string& key) const {
    auto it = metadata.find(key);
    return it == metadata.end() ? nullptr : &it->second;
  }
};

// Reads the header of the GGUF file at `path`. Errors name the file, the byte offset and what
// was expected there (and the metadata key or tensor being read).
Result<GgufHeader> read_gguf_header(const std::string& path);
// The same from a stream of `size` bytes (`path` only names it in messages). Any bytes end in a
// header or an Error, never anything else; no count in the file makes it allocate more than
// the stream could hold.
Result<GgufHeader> read_gguf_header(std::istream& in, std::uint64_t size, const std::string& path);

}  // namespace vramsim::workloads
